package tsync

import (
	"context"
	"sync"

	"github.com/blitzgo/blitz/blitzio"
)

// oneshot states.
const (
	osEmpty  uint8 = iota // nothing sent yet
	osFull                // a value is waiting for the receiver
	osTaken               // the receiver took the value
	osClosed              // the sender closed without sending, or the receiver closed
)

type oneshot[T any] struct {
	mu       sync.Mutex
	state    uint8
	rxClosed bool // the receiver closed: a send fails
	v        T
	waker    blitzio.Waker // the receiver's, while it waits
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
	c.mu.Lock()
	if c.rxClosed || c.state != osEmpty {
		c.mu.Unlock()
		return sendErr(v, ErrClosed)
	}
	c.v, c.state = v, osFull
	w := c.waker
	c.waker = blitzio.Waker{}
	c.mu.Unlock()
	if cx != nil {
		w.WakeFrom(cx)
	} else {
		w.Wake()
	}
	return nil
}

// Close gives up sending: the receiver gets ErrClosed. After a Send it does nothing.
func (s *OneshotSender[T]) Close() {
	c := s.chanFor("OneshotSender.Close")
	c.mu.Lock()
	if c.state != osEmpty {
		c.mu.Unlock()
		return
	}
	c.state = osClosed
	w := c.waker
	c.waker = blitzio.Waker{}
	c.mu.Unlock()
	w.Wake()
}

// IsClosed reports whether a Send would fail: the receiver was closed, or a value was
// already sent or the sender closed.
func (s *OneshotSender[T]) IsClosed() bool {
	c := s.chanFor("OneshotSender.IsClosed")
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rxClosed || c.state != osEmpty
}

// OneshotReceiver receives the one value. It is itself the receive future: it implements
// blitzio.Future[blitzio.Result[T]] (ready with the value, or ErrClosed if the sender
// closed without sending) and blitzio.Dropper (Drop closes it). Polled again after it
// was ready, it returns the same result. Close it if you stop waiting, so that the
// sender can see nobody listens.
type OneshotReceiver[T any] struct {
	c    *oneshot[T]
	res  blitzio.Result[T]
	done bool
}

func (r *OneshotReceiver[T]) chanFor(op string) *oneshot[T] {
	if r == nil || r.c == nil {
		panic("tsync: " + op + " called on a nil or zero OneshotReceiver (use NewOneshot)")
	}
	return r.c
}

// take returns the result if the value was sent or the sender closed; with reg, it
// otherwise stores wk so that the sender wakes it.
func (r *OneshotReceiver[T]) take(wk blitzio.Waker, reg bool) (blitzio.Result[T], bool) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rxClosed {
		return blitzio.Result[T]{Err: ErrClosed}, true
	}
	switch c.state {
	case osFull:
		v := c.v
		var zero T
		c.v, c.state = zero, osTaken
		return blitzio.Result[T]{Value: v}, true
	case osEmpty:
		if reg && !c.waker.WillWake(wk) {
			c.waker = wk
		}
		return blitzio.Result[T]{}, false
	}
	return blitzio.Result[T]{Err: ErrClosed}, true // closed, or taken by an earlier receive
}

// Poll receives the value, or waits for it.
func (r *OneshotReceiver[T]) Poll(cx *blitzio.Context) (blitzio.Result[T], bool) {
	r.chanFor("OneshotReceiver.Poll")
	if r.done {
		return r.res, true
	}
	if !cx.ConsumeBudget() {
		return blitzio.Result[T]{}, false
	}
	res, ok := r.take(cx.Waker(), true)
	if ok {
		r.res, r.done = res, true
	}
	return res, ok
}

// Drop closes the receiver (blitzio.Dropper): a value not yet received is discarded.
func (r *OneshotReceiver[T]) Drop() { r.Close() }

// Close stops receiving: a later Send fails and gives its value back, and a value
// already sent but not received is discarded. Closing twice is a no-op.
func (r *OneshotReceiver[T]) Close() {
	c := r.chanFor("OneshotReceiver.Close")
	c.mu.Lock()
	c.rxClosed = true
	c.waker = blitzio.Waker{}
	if c.state == osFull {
		var zero T
		c.v, c.state = zero, osClosed
	}
	c.mu.Unlock()
}

// TryRecv returns the value if it was sent. Otherwise it returns ErrEmpty, or ErrClosed
// if the sender closed without sending, the receiver was closed, or the value was
// already received.
func (r *OneshotReceiver[T]) TryRecv() (T, error) {
	r.chanFor("OneshotReceiver.TryRecv")
	res, ok := r.take(blitzio.Waker{}, false)
	if !ok {
		return res.Value, ErrEmpty
	}
	return res.Value, res.Err
}

// Recv waits for the value from a plain goroutine. Do not call it from a task: await the
// receiver itself there.
func (r *OneshotReceiver[T]) Recv() (T, error) {
	r.chanFor("OneshotReceiver.Recv")
	res := waitFor[blitzio.Result[T]]("OneshotReceiver.Recv", oneshotRecv[T]{r})
	return res.Value, res.Err
}

// RecvContext is Recv that gives up when ctx is done, returning ctx.Err(); the receiver
// stays open, so the value can still be received later.
func (r *OneshotReceiver[T]) RecvContext(ctx context.Context) (T, error) {
	r.chanFor("OneshotReceiver.RecvContext")
	res, err := waitForCtx[blitzio.Result[T]]("OneshotReceiver.RecvContext", ctx, oneshotRecv[T]{r})
	if err != nil {
		var zero T
		return zero, err
	}
	return res.Value, res.Err
}

// oneshotRecv is the receiver's future without its Drop, for the blocking forms: a
// RecvContext that gives up must not close the receiver.
type oneshotRecv[T any] struct{ r *OneshotReceiver[T] }

func (o oneshotRecv[T]) Poll(cx *blitzio.Context) (blitzio.Result[T], bool) {
	return o.r.take(cx.Waker(), true)
}

// Drop forgets the registered waker (the goroutine gave up); the receiver stays open.
func (o oneshotRecv[T]) Drop() {
	c := o.r.c
	c.mu.Lock()
	c.waker = blitzio.Waker{}
	c.mu.Unlock()
}
