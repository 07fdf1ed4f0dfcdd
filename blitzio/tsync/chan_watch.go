package tsync

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// watch is the state a watch channel's handles share: the latest value and its version.
type watch[T any] struct {
	mu      sync.RWMutex
	v       T
	version uint64 // incremented by every send
	closed  bool   // every sender closed

	recvQ     waitSet
	senders   atomic.Int64
	receivers atomic.Int64
}

// NewWatch returns the two ends of a watch channel holding initial: Tokio's watch. It
// keeps only the latest value. Receivers read it without copying (Borrow) and wait for
// the next change (Changed); a receiver that was away while several values were sent
// sees only the last one.
func NewWatch[T any](initial T) (*WatchSender[T], *WatchReceiver[T]) {
	c := &watch[T]{v: initial}
	c.senders.Store(1)
	c.receivers.Store(1)
	return &WatchSender[T]{c: c}, &WatchReceiver[T]{c: c}
}

// WatchSender sets the value of a watch channel. Clone it for more senders and Close
// each handle once.
type WatchSender[T any] struct {
	c      *watch[T]
	closed atomic.Bool
}

func (s *WatchSender[T]) chanFor(op string) *watch[T] {
	if s == nil || s.c == nil {
		panic("tsync: " + op + " called on a nil or zero WatchSender (use NewWatch)")
	}
	return s.c
}

// openFor is chanFor for the sends that cannot report an error: they panic on a closed
// handle.
func (s *WatchSender[T]) openFor(op string) *watch[T] {
	c := s.chanFor(op)
	if s.closed.Load() {
		panic("tsync: " + op + " through a closed WatchSender")
	}
	return c
}

// Send replaces the value and wakes the receivers waiting in Changed. As in Tokio it
// fails, returning a *SendError with v and leaving the value unchanged, when every
// receiver is closed (or this handle is); use SendReplace to store regardless.
func (s *WatchSender[T]) Send(v T) error { return s.send(nil, v, "WatchSender.Send") }

// SendFrom is Send for a task: cx is the Context of the poll making the call, so one
// woken receiver runs next on the same worker (its LIFO slot).
func (s *WatchSender[T]) SendFrom(cx *blitzio.Context, v T) error {
	return s.send(cx, v, "WatchSender.SendFrom")
}

func (s *WatchSender[T]) send(cx *blitzio.Context, v T, op string) error {
	c := s.chanFor(op)
	if s.closed.Load() || c.receivers.Load() == 0 {
		return sendErr(v, ErrClosed)
	}
	c.mu.Lock()
	c.v = v
	c.version++
	c.mu.Unlock()
	c.recvQ.notifyAll(cx)
	return nil
}

// SendReplace stores v whether or not anyone listens, and returns the previous value.
// Like a send on a closed Go channel, it panics if s was closed: a closed channel's
// receivers have been told there will be no more changes.
func (s *WatchSender[T]) SendReplace(v T) T {
	c := s.openFor("WatchSender.SendReplace")
	c.mu.Lock()
	old := c.v
	c.v = v
	c.version++
	c.mu.Unlock()
	c.recvQ.notifyAll(nil)
	return old
}

// SendModify changes the value in place with f, under the channel's write lock (no copy
// of a large value), and wakes the waiting receivers, whether or not anyone listens. f
// must not call methods of this channel. If f panics, the value may be half modified,
// but the lock is released and no receiver is told of a change. Like SendReplace, it
// panics if s was closed.
func (s *WatchSender[T]) SendModify(f func(v *T)) {
	c := s.openFor("WatchSender.SendModify")
	c.mu.Lock()
	func() {
		defer c.mu.Unlock()
		f(&c.v)
		c.version++
	}()
	c.recvQ.notifyAll(nil)
}

// Borrow calls f with a pointer to the current value under the read lock: the value is
// read without copying. f must not keep the pointer, modify the value, or call methods
// of this channel.
func (s *WatchSender[T]) Borrow(f func(v *T)) {
	c := s.chanFor("WatchSender.Borrow")
	c.mu.RLock()
	defer c.mu.RUnlock()
	f(&c.v)
}

// Subscribe returns a new receiver. The current value counts as seen by it: its Changed
// waits for the next send.
func (s *WatchSender[T]) Subscribe() *WatchReceiver[T] {
	c := s.chanFor("WatchSender.Subscribe")
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.receivers.Add(1)
	r := &WatchReceiver[T]{c: c}
	r.seen.Store(c.version)
	return r
}

// ReceiverCount returns the number of open receivers.
func (s *WatchSender[T]) ReceiverCount() int {
	return int(s.chanFor("WatchSender.ReceiverCount").receivers.Load())
}

// Clone returns another sender handle. It panics if s was already closed.
func (s *WatchSender[T]) Clone() *WatchSender[T] {
	c := s.chanFor("WatchSender.Clone")
	if s.closed.Load() {
		panic("tsync: WatchSender.Clone of a closed WatchSender")
	}
	c.senders.Add(1)
	return &WatchSender[T]{c: c}
}

// Close releases this handle. When the last sender is closed, Changed returns
// ErrClosed (the last value can still be borrowed). Closing twice is a no-op.
func (s *WatchSender[T]) Close() {
	c := s.chanFor("WatchSender.Close")
	if s.closed.Swap(true) {
		return
	}
	if c.senders.Add(-1) == 0 {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.recvQ.notifyAll(nil)
	}
}

// WatchReceiver observes a watch channel. Close it when done (Go has no destructors).
// Its methods are safe for concurrent use, but the version it has seen is one per
// handle: concurrent Changed waits through one handle share it, so a change completes
// one of them (the first to look marks it seen) and the others wait for the next. Give
// each waiter its own Subscribe or Clone, as Tokio's receiver (which cannot be shared)
// requires.
type WatchReceiver[T any] struct {
	c      *watch[T]
	seen   atomic.Uint64 // the version this receiver has seen
	closed atomic.Bool
}

func (r *WatchReceiver[T]) chanFor(op string) *watch[T] {
	if r == nil || r.c == nil {
		panic("tsync: " + op + " called on a nil or zero WatchReceiver (use NewWatch)")
	}
	return r.c
}

// Borrow calls f with a pointer to the latest value under the read lock, without
// copying it, and without marking it seen. f must not keep the pointer, modify the
// value, or call methods of this channel (a send waits for f to return).
func (r *WatchReceiver[T]) Borrow(f func(v *T)) {
	c := r.chanFor("WatchReceiver.Borrow")
	c.mu.RLock()
	defer c.mu.RUnlock()
	f(&c.v)
}

// BorrowAndUpdate is Borrow that also marks the value seen, so Changed waits for the
// next send.
func (r *WatchReceiver[T]) BorrowAndUpdate(f func(v *T)) {
	c := r.chanFor("WatchReceiver.BorrowAndUpdate")
	c.mu.RLock()
	defer c.mu.RUnlock()
	r.seen.Store(c.version)
	f(&c.v)
}

// Get returns a copy of the latest value and marks it seen.
func (r *WatchReceiver[T]) Get() T {
	c := r.chanFor("WatchReceiver.Get")
	c.mu.RLock()
	defer c.mu.RUnlock()
	r.seen.Store(c.version)
	return c.v
}

// HasChanged reports whether a value this receiver has not seen was sent. Its error is
// ErrClosed when every sender closed (or r was closed).
func (r *WatchReceiver[T]) HasChanged() (bool, error) {
	c := r.chanFor("WatchReceiver.HasChanged")
	if r.closed.Load() {
		return false, ErrClosed
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return false, ErrClosed
	}
	return c.version != r.seen.Load(), nil
}

// check returns (nil, true) and marks the value seen if it changed, (ErrClosed, true)
// if the channel or the handle is closed, and (nil, false) otherwise.
func (r *WatchReceiver[T]) check() (error, bool) {
	if r.closed.Load() {
		return ErrClosed, true
	}
	c := r.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	if v := c.version; v != r.seen.Load() {
		r.seen.Store(v)
		return nil, true
	}
	if c.closed {
		return ErrClosed, true
	}
	return nil, false
}

// ChangedAsync returns a future that is ready with nil when a value this receiver has
// not seen is sent (marking it seen), or with ErrClosed when every sender has closed.
// A change that happened before the call counts: it is ready at once then. The future
// is reusable: polled again after it was ready, it waits for the next change.
func (r *WatchReceiver[T]) ChangedAsync() *ChangedFuture[T] {
	r.chanFor("WatchReceiver.ChangedAsync")
	return &ChangedFuture[T]{r: r}
}

// Changed waits from a plain goroutine for a value this receiver has not seen, and marks
// it seen; it returns ErrClosed when every sender has closed. Do not call it from a
// task: await ChangedAsync there.
func (r *WatchReceiver[T]) Changed() error {
	r.chanFor("WatchReceiver.Changed")
	return waitFor[error]("WatchReceiver.Changed", &ChangedFuture[T]{r: r})
}

// ChangedContext is Changed that gives up when ctx is done, returning ctx.Err().
func (r *WatchReceiver[T]) ChangedContext(ctx context.Context) error {
	r.chanFor("WatchReceiver.ChangedContext")
	err, cerr := waitForCtx[error]("WatchReceiver.ChangedContext", ctx, &ChangedFuture[T]{r: r})
	if cerr != nil {
		return cerr
	}
	return err
}

// All returns an iterator for a plain goroutine over the channel's values: the current
// value first, then the latest value after each change, until every sender has closed
// (or the loop breaks). Values sent in quick succession are seen once, as the last of
// them: a watch keeps only the latest.
func (r *WatchReceiver[T]) All() iter.Seq[T] {
	r.chanFor("WatchReceiver.All")
	return func(yield func(T) bool) {
		if !yield(r.Get()) {
			return
		}
		for r.Changed() == nil {
			if !yield(r.Get()) {
				return
			}
		}
	}
}

// Clone returns a receiver that has seen what r has seen. It panics if r was closed.
func (r *WatchReceiver[T]) Clone() *WatchReceiver[T] {
	c := r.chanFor("WatchReceiver.Clone")
	if r.closed.Load() {
		panic("tsync: WatchReceiver.Clone of a closed WatchReceiver")
	}
	c.receivers.Add(1)
	n := &WatchReceiver[T]{c: c}
	n.seen.Store(r.seen.Load())
	return n
}

// Close releases this receiver; when every receiver is closed, WatchSender.Send fails.
// Closing twice is a no-op.
func (r *WatchReceiver[T]) Close() {
	c := r.chanFor("WatchReceiver.Close")
	if r.closed.Swap(true) {
		return
	}
	c.receivers.Add(-1)
	c.recvQ.notifyAll(nil) // a Changed waiting through this handle returns ErrClosed
}

// ChangedFuture is the future of WatchReceiver.ChangedAsync: blitzio.Future[error] and
// blitzio.Dropper, waiting without allocating.
type ChangedFuture[T any] struct {
	r    *WatchReceiver[T]
	node waitNode
}

// Poll is ready when the value changed since the receiver last saw it.
func (f *ChangedFuture[T]) Poll(cx *blitzio.Context) (error, bool) {
	if f.r == nil {
		panic("tsync: ChangedFuture polled after Drop, or the zero ChangedFuture (use ChangedAsync)")
	}
	if !cx.ConsumeBudget() {
		return nil, false
	}
	q := &f.r.c.recvQ
	for registered := false; ; registered = true {
		if err, ok := f.r.check(); ok {
			f.node.quiet(q)
			return err, true
		}
		if registered {
			return nil, false
		}
		f.node.register(q, cx)
	}
}

// Drop abandons the wait. Drop is idempotent.
func (f *ChangedFuture[T]) Drop() {
	if f.r == nil {
		return
	}
	f.node.quiet(&f.r.c.recvQ) // notifications go to every waiter: nothing to pass on
	f.r = nil
}
