package tsync

import (
	"context"
	"iter"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// bounded is the state a bounded channel's handles share.
type bounded[T any] struct {
	r     *ring[T]
	recvQ waitSet // receivers waiting for a value or the close
	sendQ waitSet // senders waiting for room or the close
	// senders and receivers count the open handles; the last Close of either side
	// closes the channel.
	senders   atomic.Int64
	receivers atomic.Int64
}

// NewChannel returns the two ends of a bounded channel that holds at most capacity
// values: Tokio's mpsc::channel, with any number of receivers as well (clone either
// end). A send waits while the channel is full; a receive waits while it is empty.
// Values are received in the order their sends took their place in the buffer, each by
// exactly one receiver. A send takes its place first and then stores its value, so for
// the instant between the two (longer if its goroutine is descheduled right there) the
// values sent after it wait behind it: a send that has returned is not yet receivable,
// and TryRecv reports ErrEmpty while Len counts its value. Receivers that wait are woken
// when the earlier send completes.
//
// capacity must be at least 1 (there is no unbuffered rendezvous; Tokio's channel(0)
// panics too) and small enough for the buffer to be allocated: NewChannel panics,
// naming the argument, otherwise. The buffer is allocated once; sends and receives
// allocate nothing.
func NewChannel[T any](capacity int) (*Sender[T], *Receiver[T]) {
	c := &bounded[T]{r: newRing[T]("NewChannel", capacity)}
	c.senders.Store(1)
	c.receivers.Store(1)
	return &Sender[T]{c: c}, &Receiver[T]{c: c}
}

// closeChan closes the channel (from either side) and wakes every waiter, who then sees
// the close. It returns whether this call closed it.
func (c *bounded[T]) closeChan() bool {
	if !c.r.close() {
		return false
	}
	c.recvQ.notifyAll(nil)
	c.sendQ.notifyAll(nil)
	return true
}

// trySend is a send that does not wait; on success it wakes a waiting receiver.
func (c *bounded[T]) trySend(v T, cx *blitzio.Context) pushResult {
	res := c.r.push(v)
	if res == pushOK {
		c.recvQ.notifyOne(cx) // one atomic load when no receiver waits
		c.chainSend(cx)
	}
	return res
}

// tryRecv is a receive that does not wait; on success it wakes a waiting sender.
func (c *bounded[T]) tryRecv(cx *blitzio.Context) (T, popResult) {
	v, res := c.r.pop()
	if res == popOK {
		c.sendQ.notifyOne(cx)
		c.chainRecv(cx)
	}
	return v, res
}

// chainRecv, after a value was taken, wakes one more waiting receiver if another value
// is ready: one that a slot claimed ahead of it hid from receivers that registered while
// its sender woke nobody (see ring). One atomic load when no receiver waits.
func (c *bounded[T]) chainRecv(cx *blitzio.Context) {
	if c.recvQ.waiting() && c.r.readyNow() {
		c.recvQ.notifyOne(cx)
	}
}

// chainSend is chainRecv for senders: after a slot was filled, it wakes one more
// waiting sender if the next slot is free.
func (c *bounded[T]) chainSend(cx *blitzio.Context) {
	if c.sendQ.waiting() && c.r.roomNow() {
		c.sendQ.notifyOne(cx)
	}
}

// ---- Sender ----

// Sender is the sending end of a bounded channel. Its methods are safe for concurrent
// use; Clone gives another handle, and each handle is closed with Close once.
type Sender[T any] struct {
	c      *bounded[T]
	closed atomic.Bool
}

func (s *Sender[T]) chanFor(op string) *bounded[T] {
	if s == nil || s.c == nil {
		panic("tsync: " + op + " called on a nil or zero Sender (use NewChannel)")
	}
	return s.c
}

// Clone returns a new handle to the same channel: the channel stays open for receivers
// until every handle has been closed. Clone panics if s itself was already closed.
func (s *Sender[T]) Clone() *Sender[T] {
	c := s.chanFor("Sender.Clone")
	if s.closed.Load() {
		panic("tsync: Sender.Clone of a closed Sender")
	}
	c.senders.Add(1)
	return &Sender[T]{c: c}
}

// Close releases this handle. When the last sender handle is closed the channel closes:
// receivers get the values already sent, then ErrClosed. Closing a handle twice is a
// no-op. A send through a closed handle fails with ErrClosed.
func (s *Sender[T]) Close() {
	c := s.chanFor("Sender.Close")
	if s.closed.Swap(true) {
		return
	}
	if c.senders.Add(-1) == 0 {
		c.closeChan()
		return
	}
	// A send future through this handle may be waiting for room: wake the waiting
	// senders so that it sees its handle closed (the others wait again).
	c.sendQ.notifyAll(nil)
}

// IsClosed reports whether sends can no longer succeed: this handle was closed, or the
// channel was (every receiver closed, or every sender).
func (s *Sender[T]) IsClosed() bool {
	return s.chanFor("Sender.IsClosed").r.isClosed() || s.closed.Load()
}

// Len returns the number of values in the channel's buffer.
func (s *Sender[T]) Len() int { return s.chanFor("Sender.Len").r.len() }

// Cap returns the channel's capacity.
func (s *Sender[T]) Cap() int { return int(s.chanFor("Sender.Cap").r.cap) }

// TrySend sends v if there is room now. Otherwise it returns a *SendError holding v,
// whose Err is ErrFull or ErrClosed.
func (s *Sender[T]) TrySend(v T) error {
	c := s.chanFor("Sender.TrySend")
	if s.closed.Load() {
		return sendErr(v, ErrClosed)
	}
	switch c.trySend(v, nil) {
	case pushOK:
		return nil
	case pushFull:
		return sendErr(v, ErrFull)
	}
	return sendErr(v, ErrClosed)
}

// SendAsync returns a future that sends v, waiting while the channel is full. It is
// ready with nil once v is in the channel, or with a *SendError holding v (Err
// ErrClosed) if the channel closes first. Dropped before it is ready, it has sent
// nothing (and a free slot it was woken for goes to the next waiting sender).
func (s *Sender[T]) SendAsync(v T) *SendFuture[T] {
	s.chanFor("Sender.SendAsync")
	return &SendFuture[T]{s: s, v: v}
}

// Send sends v from a plain goroutine, blocking while the channel is full. It returns a
// *SendError holding v if the channel is closed. Do not call it from a task (it would
// block a worker): await SendAsync there.
func (s *Sender[T]) Send(v T) error {
	c := s.chanFor("Sender.Send")
	if !s.closed.Load() {
		switch c.trySend(v, nil) {
		case pushOK:
			return nil
		case pushClosed:
			return sendErr(v, ErrClosed)
		}
	}
	return waitFor[error]("Sender.Send", &SendFuture[T]{s: s, v: v})
}

// SendContext is Send that gives up when ctx is done: it returns ctx.Err() and v has
// not been sent.
func (s *Sender[T]) SendContext(ctx context.Context, v T) error {
	s.chanFor("Sender.SendContext")
	err, cerr := waitForCtx[error]("Sender.SendContext", ctx, &SendFuture[T]{s: s, v: v})
	if cerr != nil {
		return cerr
	}
	return err
}

// SendFuture is the future of Sender.SendAsync. It implements blitzio.Future[error] and
// blitzio.Dropper. Waiting allocates nothing: its waiter node is part of it. Polled again
// after it was ready, it returns the same result; polled after Drop (unless Reset since),
// it panics, as the package's other futures do.
type SendFuture[T any] struct {
	s       *Sender[T]
	v       T
	node    waitNode
	done    bool
	dropped bool // Drop abandoned it before it was ready; Reset clears it
	// started is set by the first Poll: a started, unfinished future may hold a
	// registration or be about to retry, so Reset refuses it.
	started bool
	err     error
}

// Poll tries to send and, if the channel is full, waits for room.
func (f *SendFuture[T]) Poll(cx *blitzio.Context) (error, bool) {
	if f.done {
		return f.err, true
	}
	if f.dropped {
		panic("tsync: SendFuture polled after Drop (Reset it to send again)")
	}
	if f.s == nil {
		panic("tsync: the zero SendFuture polled (use Sender.SendAsync)")
	}
	f.started = true
	if f.s.closed.Load() {
		// Leave the queue, passing on a free slot this future was woken for.
		f.node.leave(&f.s.c.sendQ, cx)
		return f.finish(sendErr(f.v, ErrClosed))
	}
	// Budget first: once the value is in the channel the send must report ready.
	if !cx.ConsumeBudget() {
		return nil, false
	}
	c := f.s.c
	for registered := false; ; registered = true {
		woke := f.node.woken()
		// c.trySend, written out: the call per message is measurable on a busy channel.
		switch c.r.push(f.v) {
		case pushOK:
			c.recvQ.notifyOne(cx)
			f.node.took(&c.sendQ, cx, woke)
			c.chainSend(cx)
			return f.finish(nil)
		case pushClosed:
			f.node.quiet(&c.sendQ)
			return f.finish(sendErr(f.v, ErrClosed))
		}
		if registered {
			return nil, false
		}
		// Full: register, then try once more (see waitSet for the race this closes).
		f.node.register(&c.sendQ, cx)
	}
}

// Reset makes f send v, so a task sending in a loop reuses one future and allocates
// nothing per message. f must be finished (ready or dropped) or new; Reset panics if f
// is waiting, since that would lose the value it holds.
func (f *SendFuture[T]) Reset(v T) {
	if f.s == nil {
		panic("tsync: SendFuture.Reset on the zero SendFuture (use Sender.SendAsync)")
	}
	if f.started && !f.done && !f.dropped {
		panic("tsync: SendFuture.Reset while the future is still sending")
	}
	f.v, f.done, f.dropped, f.started, f.err = v, false, false, false, nil
}

func (f *SendFuture[T]) finish(err error) (error, bool) {
	f.done, f.err = true, err
	var zero T
	f.v = zero
	return err, true
}

// Drop abandons the send: nothing was sent. A free slot this future was woken for
// passes to the next waiting sender. Drop is idempotent and does nothing to a future
// that was ready; a dropped future must not be polled again (Poll panics) unless Reset
// first.
func (f *SendFuture[T]) Drop() {
	if f.done || f.dropped || f.s == nil {
		return
	}
	f.dropped = true
	f.node.leave(&f.s.c.sendQ, nil)
	var zero T
	f.v = zero
}

// ---- Receiver ----

// Receiver is the receiving end of a bounded channel. Several goroutines and tasks may
// receive from one handle or from clones; each value goes to exactly one of them.
// Close it when done: Go has no destructors, and senders see the channel closed only
// when every receiver handle has been closed.
type Receiver[T any] struct {
	c      *bounded[T]
	closed atomic.Bool
}

func (r *Receiver[T]) chanFor(op string) *bounded[T] {
	if r == nil || r.c == nil {
		panic("tsync: " + op + " called on a nil or zero Receiver (use NewChannel)")
	}
	return r.c
}

// Clone returns a new handle to the same channel. Clone panics if r was already closed.
func (r *Receiver[T]) Clone() *Receiver[T] {
	c := r.chanFor("Receiver.Clone")
	if r.closed.Load() {
		panic("tsync: Receiver.Clone of a closed Receiver")
	}
	c.receivers.Add(1)
	return &Receiver[T]{c: c}
}

// Close releases this handle. When the last receiver handle is closed the channel
// closes: waiting and later sends fail with a *SendError holding their value, and the
// values still buffered are discarded. Closing twice is a no-op; a receive through a
// closed handle returns ErrClosed.
func (r *Receiver[T]) Close() {
	c := r.chanFor("Receiver.Close")
	if r.closed.Swap(true) {
		return
	}
	if c.receivers.Add(-1) != 0 {
		// A receive future through this handle may be waiting: wake the waiting
		// receivers so that it sees its handle closed (the others wait again).
		c.recvQ.notifyAll(nil)
		return
	}
	c.closeChan()
	// Nobody can receive any more: release the buffered values to the collector.
	for {
		if _, res := c.r.pop(); res != popOK {
			break
		}
	}
}

// Len returns the number of values in the channel's buffer.
func (r *Receiver[T]) Len() int { return r.chanFor("Receiver.Len").r.len() }

// Cap returns the channel's capacity.
func (r *Receiver[T]) Cap() int { return int(r.chanFor("Receiver.Cap").r.cap) }

// TryRecv receives a value if one is ready. Otherwise it returns ErrEmpty, or ErrClosed
// once the channel is closed and drained.
func (r *Receiver[T]) TryRecv() (T, error) {
	c := r.chanFor("Receiver.TryRecv")
	var zero T
	if r.closed.Load() {
		return zero, ErrClosed
	}
	v, res := c.tryRecv(nil)
	switch res {
	case popOK:
		return v, nil
	case popEmpty:
		return zero, ErrEmpty
	}
	return zero, ErrClosed
}

// RecvAsync returns a future that receives the next value: ready with it, or with
// ErrClosed once the channel is closed and drained. Dropped before it is ready, it has
// taken no value (one it was woken for goes to the next waiting receiver).
//
// The future can be reused: after it was ready, polling it again receives the next
// value, so a task that keeps one RecvFuture receives without allocating.
func (r *Receiver[T]) RecvAsync() *RecvFuture[T] {
	r.chanFor("Receiver.RecvAsync")
	return &RecvFuture[T]{r: r}
}

// Recv receives from a plain goroutine, blocking until a value arrives; it returns
// ErrClosed once the channel is closed and drained. Do not call it from a task: await
// RecvAsync there.
func (r *Receiver[T]) Recv() (T, error) {
	c := r.chanFor("Receiver.Recv")
	if !r.closed.Load() {
		if v, res := c.tryRecv(nil); res == popOK {
			return v, nil
		}
	}
	res := waitFor[blitzio.Result[T]]("Receiver.Recv", &RecvFuture[T]{r: r})
	return res.Value, res.Err
}

// RecvContext is Recv that gives up when ctx is done, returning ctx.Err(); no value is
// taken then.
func (r *Receiver[T]) RecvContext(ctx context.Context) (T, error) {
	r.chanFor("Receiver.RecvContext")
	return waitResultCtx[T]("Receiver.RecvContext", ctx, &RecvFuture[T]{r: r})
}

// All returns an iterator over received values for a plain goroutine: it blocks for
// each value and ends when the channel is closed and drained (or the loop breaks).
// It is Go's `for v := range ch`.
func (r *Receiver[T]) All() iter.Seq[T] {
	r.chanFor("Receiver.All")
	return recvSeq(r.Recv)
}

func (r *Receiver[T]) tryRecvSrc() (T, error, bool) {
	var zero T
	if r.closed.Load() {
		return zero, ErrClosed, true
	}
	v, res := r.c.r.pop()
	switch res {
	case popOK:
		return v, nil, true
	case popClosed:
		return zero, ErrClosed, true
	}
	return zero, nil, false
}

func (r *Receiver[T]) recvWaiters() *waitSet { return &r.c.recvQ }
func (r *Receiver[T]) afterRecv(cx *blitzio.Context) {
	r.c.sendQ.notifyOne(cx)
	r.c.chainRecv(cx)
}

// RecvFuture is the future of Receiver.RecvAsync: it implements
// blitzio.Future[blitzio.Result[T]] and blitzio.Dropper, and waits without allocating.
type RecvFuture[T any] struct {
	r    *Receiver[T]
	node waitNode
}

// Poll receives a value if one is ready and otherwise waits for one. Each ready poll
// consumes one unit of the task's cooperative budget, so a task draining a busy channel
// yields its worker in turn.
func (f *RecvFuture[T]) Poll(cx *blitzio.Context) (blitzio.Result[T], bool) {
	if f.r == nil {
		panic("tsync: RecvFuture polled after Drop, or the zero RecvFuture (use Receiver.RecvAsync)")
	}
	r := f.r
	if r.closed.Load() {
		// Leave the queue, passing on a value this future was woken for.
		f.node.leave(&r.c.recvQ, cx)
		return blitzio.Result[T]{Err: ErrClosed}, true
	}
	// Budget first, so that a value taken is always returned, never held back.
	if !cx.ConsumeBudget() {
		return blitzio.Result[T]{}, false
	}
	c := r.c
	for registered := false; ; registered = true {
		woke := f.node.woken()
		v, res := c.r.pop() // c.tryRecv, written out as in SendFuture.Poll
		switch res {
		case popOK:
			c.sendQ.notifyOne(cx)
			f.node.took(&c.recvQ, cx, woke)
			c.chainRecv(cx)
			return blitzio.Result[T]{Value: v}, true
		case popClosed:
			f.node.quiet(&c.recvQ)
			return blitzio.Result[T]{Err: ErrClosed}, true
		}
		if registered {
			return blitzio.Result[T]{}, false
		}
		f.node.register(&c.recvQ, cx)
	}
}

// Drop abandons the receive: no value was taken. A value this future was woken for is
// left for the next waiting receiver, which is woken. Drop is idempotent; the future
// must not be polled afterwards.
func (f *RecvFuture[T]) Drop() {
	if f.r == nil {
		return
	}
	f.node.leave(&f.r.c.recvQ, nil)
	f.r = nil
}

func (r *Receiver[T]) isNil() bool { return r == nil || r.c == nil }
