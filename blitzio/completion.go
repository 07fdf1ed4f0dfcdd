package blitzio

import (
	"sync"
	"sync/atomic"
)

// Completion is the sending half of a one-shot completion (Tokio's oneshot channel, a
// promise): a value that any goroutine provides once and a task awaits without blocking
// its worker. It is the bridge from plain Go code (a goroutine, a blitz pool, a callback
// API) into a task:
//
//	c, fut := blitzio.NewCompletion[int]()
//	go func() { c.Complete(work()) }() // or pool.Go(...), a callback, ...
//	v := blitzio.Await(co, fut)        // inside a task: the worker is free meanwhile
//
// Complete may be called from any goroutine, including a task's Poll. The first call
// wins: it stores the value and wakes the awaiting task; later calls (and calls racing
// with it) do nothing and return false, so several producers may race to answer and
// exactly one does. Completing after the receiving future was dropped (its task aborted,
// a select lost) is fine: the value is kept until the Completion and its future are
// garbage.
//
// A Completion that is never completed leaves its future pending forever, like a
// channel nobody sends on: a producer that can fail should complete with a Result (or
// another type that carries the error), recovering its own panics.
type Completion[T any] struct {
	s *completionState[T]
}

// CompletionFuture is the receiving half of a Completion: a Future[T] ready with the
// completed value. It is meant to be awaited by one task; a copy awaited by several
// tasks or goroutines at once works too (each is woken, and one awaiter dropping its
// copy does not strand the others: see Drop). Polled again after ready it returns the
// same value. Its Drop tells the producer that nobody waits any more
// (Completion.Closed).
type CompletionFuture[T any] struct {
	s *completionState[T]
}

// completionWaiter is a receiving future with a registration of its own: unlike copies
// of one *CompletionFuture, which cannot tell their awaiters apart, each waiter has one
// waker slot, and its Drop removes that slot and nothing else (like a clone of
// futures::future::Shared in Rust, which keeps its own waker key). The package hands
// out one per awaiting future where several independent futures wait for the same
// completion (Child.Wait).
type completionWaiter[T any] struct {
	s *completionState[T]
}

// completionState is the state both halves share.
type completionState[T any] struct {
	// won is set by the Complete call that wins, before it stores the value: the race
	// between producers is decided by one CAS, without the mutex.
	won atomic.Bool
	// done is set (under mu) after v is stored, so a poller that loads it true may read
	// v without the lock.
	done   atomic.Bool
	closed atomic.Bool // the receiver was dropped

	mu sync.Mutex
	v  T
	// ws holds the wakers of pending polls of the CompletionFuture. Its copies are one
	// pointer shared by their awaiters, so an entry does not say which awaiter it
	// belongs to (see CompletionFuture.Drop).
	ws []Waker
	// hs holds the waker of each pending completionWaiter, keyed by the waiter: a
	// waiter's Drop deletes its own entry only.
	hs map[*completionWaiter[T]]Waker
}

// NewCompletion returns a new one-shot completion and the future that receives its
// value.
func NewCompletion[T any]() (*Completion[T], *CompletionFuture[T]) {
	s := &completionState[T]{}
	return &Completion[T]{s: s}, &CompletionFuture[T]{s: s}
}

// Complete stores v and wakes the task awaiting the future. It reports whether this call
// completed it: false if another call did first (v is then discarded). Safe from any
// goroutine.
func (c *Completion[T]) Complete(v T) bool {
	s := c.s
	if !s.won.CompareAndSwap(false, true) {
		return false
	}
	s.mu.Lock()
	s.v = v
	ws := s.ws
	for _, w := range s.hs {
		ws = append(ws, w)
	}
	s.ws, s.hs = nil, nil
	s.done.Store(true)
	s.mu.Unlock()
	// Wake outside the lock: a waker may run user code (WakerFunc) that polls again.
	// The wakers were taken from the state, so one skipped would sleep forever: wakeEach
	// wakes every one even if a waker panics (the panic is logged, as for a JoinHandle's
	// waiters), and the winning producer is not unwound by an awaiter's panic.
	wakeEach(ws, nil)
	return true
}

// IsCompleted reports whether Complete has been called (by any goroutine).
func (c *Completion[T]) IsCompleted() bool { return c.s.won.Load() }

// Closed reports whether the receiving future was dropped (its task aborted or dropped by
// a shutdown, the losing arm of a select) and not polled since: a producer may check it
// to skip work whose result nobody will read. When copies of the future are awaited by
// several tasks and one of them drops its copy, Closed is true until the others, woken
// by that Drop, poll again: it is a hint, and a producer that skips the work should
// still complete (with an error, say) rather than leave awaiters pending.
func (c *Completion[T]) Closed() bool { return c.s.closed.Load() }

// Poll is ready with the completed value.
func (f *CompletionFuture[T]) Poll(cx *Context) (T, bool) {
	s := f.s
	var zero T
	if !s.done.Load() {
		s.mu.Lock()
		if !s.done.Load() {
			// Register our waker unless it is there already: a task polled many times
			// before completion keeps one entry, several awaiters one each.
			w := cx.Waker()
			found := false
			for _, x := range s.ws {
				if x.WillWake(w) {
					found = true
					break
				}
			}
			if !found {
				s.ws = append(s.ws, w)
			}
			// Polled again after a Drop (a select over the future in a loop drops it
			// each time another arm wins): somebody is waiting after all.
			s.closed.Store(false)
			s.mu.Unlock()
			return zero, false
		}
		s.mu.Unlock()
	}
	if !cx.ConsumeBudget() {
		return zero, false
	}
	return s.v, true
}

// IsCompleted reports whether the value is there (a poll would be ready).
func (f *CompletionFuture[T]) IsCompleted() bool { return f.s.done.Load() }

// Drop tells the producer that the value will probably not be read (Completion.Closed).
// It is idempotent. Unlike most futures, a CompletionFuture may be polled again after
// Drop (a select over it in a loop drops it each time another arm wins): the value is
// kept, and the poll clears Closed.
//
// The registered wakers are not simply forgotten: copies of the future are one pointer,
// so Drop cannot tell the dropping awaiter's registration from those of other tasks
// still awaiting a copy, and forgetting theirs would leave them asleep forever. Drop
// wakes them all instead and starts the list afresh: an awaiter that still waits polls
// again and re-registers (clearing Closed), one that is gone ignores the wake-up (a
// spurious wake-up, which every future tolerates). So the list does not keep the
// wakers of dropped awaiters, and a live one is never stranded.
func (f *CompletionFuture[T]) Drop() {
	s := f.s
	s.mu.Lock()
	if len(s.hs) == 0 {
		// Nobody with a registration of its own waits either.
		s.closed.Store(true)
	}
	ws := s.ws
	s.ws = nil
	s.mu.Unlock()
	// Outside the lock, as in Complete: a waker may poll again; and every one is woken,
	// even past a waker that panics, since the list was forgotten.
	wakeEach(ws, nil)
}

// waiter returns a new receiving future with a registration of its own (see
// completionWaiter), for one more awaiter of the same completion.
func (f *CompletionFuture[T]) waiter() *completionWaiter[T] {
	return &completionWaiter[T]{s: f.s}
}

// Poll is ready with the completed value. A pending poll stores the waker in the
// waiter's own slot, replacing the one of an earlier poll (as a Tokio future keeps only
// the waker of its latest poll).
func (h *completionWaiter[T]) Poll(cx *Context) (T, bool) {
	s := h.s
	var zero T
	if !s.done.Load() {
		s.mu.Lock()
		if !s.done.Load() {
			w := cx.Waker()
			if old, ok := s.hs[h]; !ok || !old.WillWake(w) {
				if s.hs == nil {
					s.hs = make(map[*completionWaiter[T]]Waker)
				}
				s.hs[h] = w
			}
			s.closed.Store(false)
			s.mu.Unlock()
			return zero, false
		}
		s.mu.Unlock()
	}
	if !cx.ConsumeBudget() {
		return zero, false
	}
	return s.v, true
}

// Drop removes this waiter's registration, and only it: other awaiters of the same
// completion are still woken when it completes. When no registration is left, the
// producer sees Completion.Closed. It is idempotent, and a later Poll registers again.
func (h *completionWaiter[T]) Drop() {
	s := h.s
	s.mu.Lock()
	delete(s.hs, h)
	if len(s.hs) == 0 && len(s.ws) == 0 {
		s.closed.Store(true)
	}
	s.mu.Unlock()
}
