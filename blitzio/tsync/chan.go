package tsync

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/blitzgo/blitz/blitzio"
)

// ErrClosed is the error of an operation on a closed channel: a receive after the
// senders have closed and the buffer is drained, a send after every receiver has closed,
// or any operation through a handle that was itself closed. Test for it with errors.Is:
// the *SendError of a failed send matches it too.
var ErrClosed = errors.New("tsync: channel closed")

// ErrFull is the error of TrySend on a bounded channel whose buffer is full. It comes
// wrapped in a *SendError that holds the value that was not sent.
var ErrFull = errors.New("tsync: channel full")

// ErrEmpty is the error of TryRecv when no value is ready (and the channel is open).
var ErrEmpty = errors.New("tsync: channel empty")

// ErrLagged is matched (errors.Is) by the *LagError a broadcast receiver gets when it
// fell so far behind that values it had not read were overwritten.
var ErrLagged = errors.New("tsync: broadcast receiver lagged")

// SendError is the error of a send that did not happen. It gives the value back, so
// that nothing is lost when a channel closes under a sender. Err is ErrClosed or
// ErrFull (TrySend only); errors.Is(err, ErrClosed) works on a *SendError.
type SendError[T any] struct {
	Value T
	Err   error
}

// Error says why the send failed and that the value was not sent.
func (e *SendError[T]) Error() string {
	return fmt.Sprintf("%v (the value was not sent)", e.Err)
}

// Unwrap returns Err, so errors.Is(err, ErrClosed) and errors.Is(err, ErrFull) work.
func (e *SendError[T]) Unwrap() error { return e.Err }

func sendErr[T any](v T, err error) error { return &SendError[T]{Value: v, Err: err} }

// LagError is what a broadcast receiver gets instead of a value when the values it had
// not read yet were overwritten: Missed is how many it lost. The receiver then continues
// from the oldest value still held, as in Tokio. errors.Is(err, ErrLagged) matches it.
type LagError struct{ Missed uint64 }

// Error says how many values the receiver missed.
func (e *LagError) Error() string {
	return fmt.Sprintf("tsync: broadcast receiver lagged and missed %d values", e.Missed)
}

// Is reports whether target is ErrLagged.
func (e *LagError) Is(target error) bool { return target == ErrLagged }

// waitSet is a channel end's list of waiting futures: receivers waiting for a value, or
// senders waiting for room. The fast path of the other side is one atomic load of state
// (the count of waiters) and nothing else when nobody waits, so a channel whose peer is
// not waiting never wakes anyone.
//
// The lost wake-up it prevents is the classic store-buffer race: a receiver finds the
// ring empty and goes to sleep while a sender, having just filled a slot, sees nobody
// waiting. A waiter therefore registers first (the count it publishes when it unlocks
// includes it) and then tries the operation again; the other side publishes its
// operation first (an atomic store) and then loads state. Go's atomics are sequentially
// consistent, so at least one of the two sees the other: the waiter finds the value, or
// the sender finds the waiter. A notifier that finds the set locked with a count of zero
// may leave: whoever holds the lock publishes a new count only by its unlock, after the
// notifier's load, so a waiter registering then retries after the notifier published.
//
// The lock and the count share one word, so a registration or a notification costs one
// CAS (lock) and one store (unlock, publishing the new count), where a sync.Mutex and a
// separate counter cost four atomic writes: a request/reply pays for two of these per
// round trip. Critical sections are a few pointer writes and never call out (wakers run
// after the unlock), so a contender spins briefly and then yields its goroutine.
type waitSet struct {
	state atomic.Uint64 // wsLocked | count<<1
	l     waitList      // guarded by the lock bit
}

const (
	wsLocked uint64 = 1 // state: a goroutine holds the set's lock
	wsOne    uint64 = 2 // state: one queued waiter
)

// waiting reports whether a waiter may be queued (the lock-free check of a notifier).
func (s *waitSet) waiting() bool { return s.state.Load() >= wsOne }

// lock takes the set's lock and returns the state to pass, updated, to unlock.
func (s *waitSet) lock() uint64 {
	// The CAS expects the word unlocked, so it fails (and we wait) if it is locked.
	if st := s.state.Load() &^ wsLocked; s.state.CompareAndSwap(st, st|wsLocked) {
		return st
	}
	return s.lockSlow()
}

// lockSlow waits for the lock. The holder runs a few pointer writes (or, for notifyAll,
// one unlink per waiter) and never blocks, so a short spin usually suffices; after it
// we yield, so a holder that was preempted gets a CPU (the pattern of blitzio's join
// lock).
//
//go:noinline
func (s *waitSet) lockSlow() uint64 {
	for i := 0; ; i++ {
		st := s.state.Load()
		if st&wsLocked == 0 && s.state.CompareAndSwap(st, st|wsLocked) {
			return st
		}
		if i >= wsSpins {
			runtime.Gosched()
		}
	}
}

// wsSpins is how many times lockSlow looks at the lock before it starts yielding.
const wsSpins = 32

// unlock releases the lock, publishing st (the state lock returned, with the count
// changed by what the holder did) in the same store.
func (s *waitSet) unlock(st uint64) { s.state.Store(st &^ wsLocked) }

// register queues n with waker wk, or refreshes the waker of an already queued n. A
// node that was notified since its last registration is queued again at the back (what
// it was woken for was taken by someone else first).
func (s *waitSet) register(n *waitNode, wk blitzio.Waker) {
	w := &n.w
	st := s.lock()
	if w.queued {
		if !w.waker.WillWake(wk) {
			w.waker = wk
		}
	} else {
		// A new registration: pop's mark of an earlier one (popped == the old gen) no
		// longer matches, so nothing needs resetting (one atomic write fewer).
		n.gen++
		w.notified = false
		w.waker = wk
		s.l.pushBack(w)
		st += wsOne
	}
	s.unlock(st)
}

// deregister takes n out of the set and reports whether it had been notified (unlinked
// by a notifier) since it registered: a waiter that leaves without using what it was
// woken for must pass the notification on (see passOn).
func (s *waitSet) deregister(n *waitNode) (notified bool) {
	if n.popped.Load() == n.gen {
		// A notifier unlinked n in this registration, and its last write to n was
		// popped (under the lock, which orders it after everything else it did to n):
		// nothing to undo, no lock needed. This is the common case of a receiver
		// woken for a value.
		return true
	}
	return s.deregisterSlow(n)
}

//go:noinline
func (s *waitSet) deregisterSlow(n *waitNode) (notified bool) {
	w := &n.w
	st := s.lock()
	if w.queued {
		s.l.remove(w)
		st -= wsOne
	} else {
		notified = w.notified
	}
	w.notified = false
	w.waker = blitzio.Waker{}
	s.unlock(st)
	return notified
}

// nodeOf returns the waitNode a queued waiter belongs to: every waiter in a waitSet is
// the first field of a waitNode (register takes only waitNodes), so the two addresses
// are the same.
func nodeOf(w *waiter) *waitNode { return (*waitNode)(unsafe.Pointer(w)) }

// pop unlinks the oldest waiter and returns its waker; the caller holds the lock and
// passes the state lock returned, which pop updates.
func (s *waitSet) pop(st *uint64) (blitzio.Waker, bool) {
	w := s.l.popFront()
	if w == nil {
		return blitzio.Waker{}, false
	}
	*st -= wsOne
	w.notified = true
	wk := w.waker
	w.waker = blitzio.Waker{}
	n := nodeOf(w)
	n.popped.Store(n.gen) // last write to the node: see deregister
	return wk, true
}

// notifyOne wakes the oldest waiter, if any. cx is the caller's poll Context or nil: a
// task handing a value to another wakes it into its worker's LIFO slot. When nobody
// waits it costs one atomic load and no call.
func (s *waitSet) notifyOne(cx *blitzio.Context) {
	if s.waiting() {
		s.notifyOneSlow(cx)
	}
}

//go:noinline
func (s *waitSet) notifyOneSlow(cx *blitzio.Context) {
	st := s.lock()
	wk, ok := s.pop(&st)
	s.unlock(st)
	if !ok {
		return
	}
	if cx != nil {
		wk.WakeFrom(cx)
	} else {
		wk.Wake()
	}
}

// notifyAll wakes every waiter (a close, a broadcast value, a watch change).
func (s *waitSet) notifyAll(cx *blitzio.Context) {
	if !s.waiting() {
		return
	}
	var wl wakeList
	st := s.lock()
	for {
		wk, ok := s.pop(&st)
		if !ok {
			break
		}
		wl.add(wk)
	}
	s.unlock(st)
	if len(wl.more) == 0 {
		wl.wake(cx) // one waiter: nobody else to strand if its waker panics
		return
	}
	wakeEvery(&wl, cx)
}

// wakeEvery calls every waker of wl, the first from cx. A waker that panics or calls
// runtime.Goexit (a WakerFunc breaking its contract) does not stop the others: the
// waiters were unlinked already, so one left unwoken would sleep forever. The first
// panic is re-raised after (see wakeAll).
func wakeEvery(wl *wakeList, cx *blitzio.Context) {
	wakeAll(unsafe.Slice(&wl.one, 1), wl.more, cx)
}

// passOn is called by a waiter that was notified but leaves without taking anything (it
// was dropped, or it took from another channel in a RecvAny): the notification goes to
// the next waiter, so a value or a free slot is never left with every taker asleep.
func (s *waitSet) passOn(cx *blitzio.Context) { s.notifyOne(cx) }

// Source is a receiving end that RecvAny can wait on together with others: a
// *Receiver, an *UnboundedReceiver or a *BroadcastReceiver of the same element type.
type Source[T any] interface {
	// tryRecvSrc receives a value if one is ready: ok reports a result (a value, or an
	// error such as ErrClosed or a *LagError); !ok means nothing yet.
	tryRecvSrc() (v T, err error, ok bool)
	// recvWaiters is the set a receiver that found nothing registers in.
	recvWaiters() *waitSet
	// afterRecv wakes a sender waiting for the room a receive freed (bounded only).
	afterRecv(cx *blitzio.Context)
	// isNil reports a nil or zero handle, which RecvAny treats as never ready.
	isNil() bool
}

// waitNode is the state every waiting future keeps: the waiter node (so waiting
// allocates nothing) and whether it is registered.
type waitNode struct {
	w waiter // first field: see nodeOf
	// gen counts the node's registrations (written by the owner under the set's lock,
	// read by notifiers under it). popped is set to gen by the notifier that unlinked
	// the node, so the owner can tell without the lock that it is no longer queued: it
	// compares the two, and a new registration needs no reset. 64 bits never wrap.
	gen        uint64
	popped     atomic.Uint64
	registered bool // owned by the future
}

// leave deregisters the node from s and passes on a notification it did not use.
func (n *waitNode) leave(s *waitSet, cx *blitzio.Context) {
	if !n.registered {
		return
	}
	n.registered = false
	if s.deregister(n) {
		s.passOn(cx)
	}
}

// woken reports whether a notifier has unlinked n in its current registration (its wake
// is on its way, or has run). Read before a future tries its operation, it tells took
// whether the notification came first.
func (n *waitNode) woken() bool { return n.registered && n.popped.Load() == n.gen }

// took deregisters the node after its future took what it waited for (a value, a free
// slot). woke is woken() from before the take: a notification that came first is what
// the take used, and nothing is passed on. One that came later reached a node still
// queued while its future helped itself (a retry right after registering, or a poll for
// another reason): it announced something else, which could otherwise sit with every
// other waiter asleep, so it is passed on (at worst a spurious wake-up, if it announced
// the very value taken).
func (n *waitNode) took(s *waitSet, cx *blitzio.Context, woke bool) {
	if woke {
		n.quiet(s)
	} else {
		n.leave(s, cx)
	}
}

// quiet deregisters the node after it took what it waited for, having been notified
// before it took it (see took): that notification was used, so nothing is passed on.
func (n *waitNode) quiet(s *waitSet) {
	if n.registered {
		n.registered = false
		if n.popped.Load() != n.gen { // else popped: see deregister
			s.deregisterSlow(n)
		}
	}
}

func (n *waitNode) register(s *waitSet, cx *blitzio.Context) {
	n.registered = true
	s.register(n, cx.Waker())
}
