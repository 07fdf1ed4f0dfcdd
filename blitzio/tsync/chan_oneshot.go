package tsync

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// oneshot state bits. The whole protocol is one atomic word, with no lock, in the manner
// of Tokio's oneshot:
//
//   - v is written only by the sender that set osClaimed (a CAS makes it the only one),
//     and read only by the receiver that saw osSent and set osTaken (a CAS too).
//   - waker is written only by the receiver while osWaker is clear, and read only by the
//     sender whose own atomic operation (setting osSent or osTxClosed) returned a state
//     with osWaker set, or by the receiver's Close whose setting of osRxClosed did. To
//     replace or forget its waker the receiver clears osWaker with a CAS from a state
//     without osSent, osTxClosed and osRxClosed: if the sender or Close acted first, the
//     CAS fails and the receiver takes the result instead, so the two never touch waker
//     at once.
//     After writing waker the receiver sets osWaker and looks at what that returned: a
//     sender that acted in between did not see the bit, so the receiver does not sleep.
//   - Several waits on one receiver (two goroutines in Recv, a Recv while a task awaits
//     it) are a misuse that Tokio's types rule out and Go's cannot, so they must work:
//     a receive holds osRxLock while it looks at or changes waker, so two receives never
//     touch it at once, and a receive that finds the slot held by another waiter's waker
//     waits in oneshotWaiters, a side table, and sets osMore. The sender and Close wake
//     the table's waiters when the state they made final had osMore; a waiter that set
//     osMore after that removes itself and takes the result. The common single wait
//     pays one more atomic operation (the CAS taking osRxLock; setting osWaker releases
//     it) and never touches the table. blitzio/spin/oneshot.pml models this with two
//     receives, one of which may give up, and a Drop by a poller that never polled.
const (
	osClaimed  uint32 = 1 << iota // a sender is writing v
	osSent                        // v is published
	osTxClosed                    // the sender closed without sending
	osRxClosed                    // the receiver closed
	osTaken                       // the receiver took v
	osWaker                       // waker holds the receiver's waker
	osKept                        // with osTaken: Poll took v and left it in v, for a re-poll
	osRxLock                      // a receive is looking at or changing waker
	osMore                        // oneshotWaiters may hold waiters of this oneshot
)

// osFinal are the bits after which a receive waits no more.
const osFinal = osSent | osTxClosed | osRxClosed

// oneshotWaiters holds the wakers of the waits on a oneshot beyond the one in its slot,
// keyed by the oneshot's state word. It is used only when one receiver is waited on from
// several places at once.
var oneshotWaiters = struct {
	mu sync.Mutex
	m  map[*atomic.Uint32][]blitzio.Waker
}{m: make(map[*atomic.Uint32][]blitzio.Waker)}

// addOneshotWaiter records wk as a waiter of the oneshot whose state is key, unless a
// waker that wakes the same task is there already.
func addOneshotWaiter(key *atomic.Uint32, wk blitzio.Waker) {
	oneshotWaiters.mu.Lock()
	defer oneshotWaiters.mu.Unlock()
	for _, w := range oneshotWaiters.m[key] {
		if w.WillWake(wk) {
			return
		}
	}
	oneshotWaiters.m[key] = append(oneshotWaiters.m[key], wk)
}

// removeOneshotWaiter forgets wk as a waiter of key's oneshot (a wait that gave up).
func removeOneshotWaiter(key *atomic.Uint32, wk blitzio.Waker) {
	oneshotWaiters.mu.Lock()
	defer oneshotWaiters.mu.Unlock()
	list := oneshotWaiters.m[key]
	for i, w := range list {
		if w.WillWake(wk) {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(oneshotWaiters.m, key)
	} else {
		oneshotWaiters.m[key] = list
	}
}

// wakeOneshotWaiters wakes and forgets every waiter of key's oneshot in the table.
func wakeOneshotWaiters(key *atomic.Uint32) {
	oneshotWaiters.mu.Lock()
	list := oneshotWaiters.m[key]
	delete(oneshotWaiters.m, key)
	oneshotWaiters.mu.Unlock()
	for _, w := range list {
		w.Wake()
	}
}

// lockRx takes osRxLock unless the state is final; it reports whether it did.
func (c *oneshot[T]) lockRx() bool {
	for {
		st := c.state.Load()
		if st&osFinal != 0 {
			return false
		}
		if st&osRxLock != 0 {
			runtime.Gosched() // another receive holds it for a few instructions
			continue
		}
		if c.state.CompareAndSwap(st, st|osRxLock) {
			return true
		}
	}
}

func (c *oneshot[T]) unlockRx() { c.state.And(^osRxLock) }

type oneshot[T any] struct {
	state atomic.Uint32
	v     T
	waker blitzio.Waker
}

// NewOneshot returns the two ends of a channel that carries one value: Tokio's
// oneshot, the reply half of a request. The receiver is itself a future.
func NewOneshot[T any]() (*OneshotSender[T], *OneshotReceiver[T]) {
	// One allocation for the state and both handles: a request/reply pays it per request.
	p := &struct {
		c oneshot[T]
		s OneshotSender[T]
		r OneshotReceiver[T]
	}{}
	p.s.c, p.r.c = &p.c, &p.c
	return &p.s, &p.r
}

// OneshotSender sends the one value. Send (or Close) may be called once; later calls
// fail (Send) or do nothing (Close).
type OneshotSender[T any] struct{ c *oneshot[T] }

func (s *OneshotSender[T]) chanFor(op string) *oneshot[T] {
	if s == nil || s.c == nil {
		panic("tsync: " + op + " called on a nil or zero OneshotSender (use NewOneshot)")
	}
	return s.c
}

// Send delivers v and wakes the receiver. It never waits. It returns a *SendError
// holding v (Err ErrClosed) if the receiver was closed, or if this sender already sent
// or closed.
func (s *OneshotSender[T]) Send(v T) error { return s.send(nil, v, "OneshotSender.Send") }

// SendFrom is Send for a task: cx is the Context of the poll making the call, so the
// receiving task runs next on the same worker (its LIFO slot).
func (s *OneshotSender[T]) SendFrom(cx *blitzio.Context, v T) error {
	return s.send(cx, v, "OneshotSender.SendFrom")
}

func (s *OneshotSender[T]) send(cx *blitzio.Context, v T, op string) error {
	c := s.chanFor(op)
	for {
		st := c.state.Load()
		if st&(osClaimed|osTxClosed|osRxClosed) != 0 {
			return sendErr(v, ErrClosed)
		}
		if c.state.CompareAndSwap(st, st|osClaimed) {
			break
		}
	}
	c.v = v
	prev := c.state.Or(osSent) // publishes v
	if prev&osRxClosed != 0 {
		// The receiver closed before the value was published: it will never read it.
		var zero T
		c.v = zero
		return sendErr(v, ErrClosed)
	}
	if prev&osWaker != 0 {
		if cx != nil {
			c.waker.WakeFrom(cx)
		} else {
			c.waker.Wake()
		}
	}
	if prev&osMore != 0 {
		wakeOneshotWaiters(&c.state)
	}
	return nil
}

// Close gives up sending: the receiver gets ErrClosed. After a Send it does nothing.
func (s *OneshotSender[T]) Close() {
	c := s.chanFor("OneshotSender.Close")
	for {
		st := c.state.Load()
		if st&(osClaimed|osTxClosed) != 0 {
			return // sent (or being sent), or closed already
		}
		if c.state.CompareAndSwap(st, st|osTxClosed) {
			if st&osWaker != 0 {
				c.waker.Wake()
			}
			if st&osMore != 0 {
				wakeOneshotWaiters(&c.state)
			}
			return
		}
	}
}

// IsClosed reports whether a Send would fail: the receiver was closed, or a value was
// already sent or the sender closed.
func (s *OneshotSender[T]) IsClosed() bool {
	c := s.chanFor("OneshotSender.IsClosed")
	return c.state.Load()&(osClaimed|osTxClosed|osRxClosed) != 0
}

// OneshotReceiver receives the one value. It is itself the receive future: it implements
// blitzio.Future[blitzio.Result[T]] (ready with the value, or ErrClosed if the sender
// closed without sending) and blitzio.Dropper (Drop closes it). Polled again after it
// was ready, it returns the same result. Close it if you stop waiting, so that the
// sender can see nobody listens.
//
// A receiver is meant to have one waiter, as Tokio's (whose receiver cannot be shared).
// Several at once (Recv in two goroutines, a Recv while a task awaits it) still all end:
// one Recv gets the value and the others ErrClosed, as a receive after the value was
// taken does (tasks awaiting the receiver itself all get the value, as a re-poll does).
// Waits beyond the first go through a mutex-guarded side table, so to let several
// goroutines learn that something happened, prefer a CancelToken, a Notify's
// NotifyWaiters, or a watch channel. Close may be called from anywhere: it wakes the waiting receives.
type OneshotReceiver[T any] struct {
	// c is all the receiver holds: what a ready Poll returned is in c's state (osKept:
	// the value, left in c.v; or a closed state, which never changes back), so a later
	// Poll returns it again. Keeping no copy and no flag here makes NewOneshot one
	// allocation of 48 bytes for a word-sized T (a request/reply pays it per request).
	c *oneshot[T]
}

func (r *OneshotReceiver[T]) chanFor(op string) *oneshot[T] {
	if r == nil || r.c == nil {
		panic("tsync: " + op + " called on a nil or zero OneshotReceiver (use NewOneshot)")
	}
	return r.c
}

// take returns the result if the value was sent or the sender closed; with reg, it
// otherwise stores wk so that the sender wakes it. With keep, a value taken stays in
// c.v, where a later Poll reads it again (osKept marks it); otherwise it is cleared, so
// that the oneshot does not keep it alive.
func (r *OneshotReceiver[T]) take(wk blitzio.Waker, reg, keep bool) (blitzio.Result[T], bool) {
	c := r.c
	for {
		st := c.state.Load()
		switch {
		case keep && st&osKept != 0:
			// Another Poll took v and kept it (often the one whose CAS beat ours just
			// now, two tasks woken by the Send together): every Poll returns it, as
			// Poll's own fast path does.
			return blitzio.Result[T]{Value: c.v}, true
		case st&(osRxClosed|osTaken) != 0:
			return blitzio.Result[T]{Err: ErrClosed}, true // closed, or taken earlier
		case st&osSent != 0:
			next := st | osTaken
			if keep {
				next |= osKept
			}
			if !c.state.CompareAndSwap(st, next) {
				continue
			}
			v := c.v
			if !keep {
				var zero T
				c.v = zero
			}
			return blitzio.Result[T]{Value: v}, true
		case st&osTxClosed != 0:
			return blitzio.Result[T]{Err: ErrClosed}, true
		case !reg:
			return blitzio.Result[T]{}, false
		}
		if !c.lockRx() {
			continue // final now: take the result
		}
		if c.register(wk) {
			return blitzio.Result[T]{}, false
		}
	}
}

// register records wk as the waker of a receive. It is called with osRxLock held and
// releases it. It reports false when the sender or Close acted meanwhile and the receive
// must look at the state again.
func (c *oneshot[T]) register(wk blitzio.Waker) bool {
	st := c.state.Load()
	if st&osWaker != 0 {
		defer c.unlockRx()
		if st&osFinal != 0 {
			return false
		}
		if c.waker.WillWake(wk) {
			return true
		}
		if !c.waker.IsZero() {
			if wk.IsZero() {
				return true // a probe's zero waker wakes nobody: nothing to record
			}
			// Another waiter's waker is in the slot: wait in the side table.
			addOneshotWaiter(&c.state, wk)
			if prev := c.state.Or(osMore); prev&osFinal != 0 {
				// Whoever made the state final may not have seen osMore.
				removeOneshotWaiter(&c.state, wk)
				return false
			}
			return true
		}
		// The slot holds a waker that wakes nobody (a first poll's probe): take the slot
		// back before replacing the waker (see osWaker).
		if !c.state.CompareAndSwap(st, st&^osWaker) {
			return false
		}
	}
	c.waker = wk
	// Set osWaker and release osRxLock in one step: osRxLock is set and osWaker clear,
	// so adding their difference does both. A final bit in the result: the sender or
	// Close acted meanwhile without seeing the waker, look again.
	return c.state.Add(^(osRxLock-osWaker-1))&osFinal == 0 // osWaker-osRxLock, mod 2^32
}

// Poll receives the value, or waits for it.
func (r *OneshotReceiver[T]) Poll(cx *blitzio.Context) (blitzio.Result[T], bool) {
	c := r.chanFor("OneshotReceiver.Poll")
	st := c.state.Load()
	switch {
	case st&osKept != 0:
		// Ready before: the same value again. Nothing writes c.v after the CAS that
		// set osKept (Close leaves a taken value alone).
		return blitzio.Result[T]{Value: c.v}, true
	case st&(osTaken|osTxClosed|osRxClosed) != 0:
		// Closed, or the value went to TryRecv or Recv (osTxClosed never comes with a
		// value): these states are final, so a Poll that returned ErrClosed returns it
		// again.
		return blitzio.Result[T]{Err: ErrClosed}, true
	}
	if !cx.ConsumeBudget() {
		return blitzio.Result[T]{}, false
	}
	return r.take(cx.Waker(), true, true)
}

// Drop closes the receiver (blitzio.Dropper): a value not yet received is discarded.
// It is called by the receiver's poller (a Select dropping a loser, an aborted task),
// which has stopped waiting; like Close it still wakes a receive waiting on r, since the
// dropper may never have polled r (a Select whose other branch was ready first, or
// panicked) while a Recv or another task waits, and that wait would otherwise never end.
// When the dropper's own task was the waiter, this costs it one spurious wake-up.
func (r *OneshotReceiver[T]) Drop() { r.close("OneshotReceiver.Drop") }

// Close stops receiving: a later Send fails and gives its value back, and a value
// already sent but not received is discarded. A receive waiting on r (a Recv or
// RecvContext in another goroutine, a task awaiting r) is woken and returns ErrClosed,
// as one waiting through a closed Receiver handle does. Closing twice is a no-op.
func (r *OneshotReceiver[T]) Close() { r.close("OneshotReceiver.Close") }

func (r *OneshotReceiver[T]) close(op string) {
	c := r.chanFor(op)
	prev := c.state.Or(osRxClosed)
	if prev&(osSent|osTaken|osRxClosed) == osSent {
		// A value was sent and not received: release it (the sender is done with v,
		// and no receive takes it once osRxClosed is set).
		if c.state.Or(osTaken)&osTaken == 0 {
			var zero T
			c.v = zero
		}
	}
	// Close is the receiver side's counterpart of the sender's wake: the waiting poll
	// would otherwise sleep until the sender closes, and a Send after this Close fails
	// without waking it. The waker may be read here for the same reason the sender may
	// read it (see osWaker): the state this Or returned has osWaker set, so no receive
	// is writing waker, and every path that clears osWaker to replace or forget the
	// waker does so by a CAS from a state without osRxClosed, which now fails. If the
	// sender already sent or closed, it woke the waiter itself.
	if prev&osFinal == 0 {
		if prev&osWaker != 0 {
			// Drop wakes the slot too: osMore tells only that two waits registered,
			// and a dropper that never polled r (a Select whose other branch won
			// first) leaves a lone waiter of another task or goroutine in the slot
			// with osMore clear. The dropper cannot tell that waker from its own.
			c.waker.Wake()
		}
		if prev&osMore != 0 {
			wakeOneshotWaiters(&c.state)
		}
	}
}

// TryRecv returns the value if it was sent. Otherwise it returns ErrEmpty, or ErrClosed
// if the sender closed without sending, the receiver was closed, or the value was
// already received.
func (r *OneshotReceiver[T]) TryRecv() (T, error) {
	r.chanFor("OneshotReceiver.TryRecv")
	res, ok := r.take(blitzio.Waker{}, false, false)
	if !ok {
		return res.Value, ErrEmpty
	}
	return res.Value, res.Err
}

// Recv waits for the value from a plain goroutine. Do not call it from a task: await the
// receiver itself there.
func (r *OneshotReceiver[T]) Recv() (T, error) {
	r.chanFor("OneshotReceiver.Recv")
	res := waitFor[blitzio.Result[T]]("OneshotReceiver.Recv", &oneshotRecv[T]{r: r})
	return res.Value, res.Err
}

// RecvContext is Recv that gives up when ctx is done, returning ctx.Err(); the receiver
// stays open, so the value can still be received later.
func (r *OneshotReceiver[T]) RecvContext(ctx context.Context) (T, error) {
	r.chanFor("OneshotReceiver.RecvContext")
	return waitResultCtx[T]("OneshotReceiver.RecvContext", ctx, &oneshotRecv[T]{r: r})
}

// oneshotRecv is the receiver's future without its Drop, for the blocking forms: a
// RecvContext that gives up must not close the receiver. wk is the waker it registered.
type oneshotRecv[T any] struct {
	r  *OneshotReceiver[T]
	wk blitzio.Waker
}

func (o *oneshotRecv[T]) Poll(cx *blitzio.Context) (blitzio.Result[T], bool) {
	o.wk = cx.Waker()
	return o.r.take(o.wk, true, false)
}

// Drop forgets the registered waker (the goroutine gave up); the receiver stays open.
// Once the state is final there is nothing to forget: the sender or Close has woken the
// waiters and emptied the side table.
func (o *oneshotRecv[T]) Drop() {
	c := o.r.c
	if o.wk.IsZero() || !c.lockRx() {
		return
	}
	defer c.unlockRx()
	st := c.state.Load()
	if st&osWaker != 0 && c.waker.WillWake(o.wk) {
		if c.state.CompareAndSwap(st, st&^osWaker) {
			c.waker = blitzio.Waker{}
		}
		return // a failed CAS: the state is final (only the lock holder clears osWaker)
	}
	if st&osMore != 0 {
		removeOneshotWaiter(&c.state, o.wk)
	}
}
