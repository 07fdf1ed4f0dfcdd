package tsync

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// unbounded is the state an unbounded channel's handles share: a growable ring of values
// under a mutex. A send never waits, so only the receiver side has waiters. The buffer
// grows by doubling and is reused, so a channel in a steady state allocates nothing per
// message.
type unbounded[T any] struct {
	mu     sync.Mutex
	buf    []T // ring; len(buf) is a power of two or zero
	head   int // index of the oldest value
	n      int // number of values
	closed bool

	recvQ     waitSet
	senders   atomic.Int64
	receivers atomic.Int64 // 1 or 0: the receiver is not cloneable
}

// NewUnbounded returns the two ends of an unbounded channel: Tokio's
// mpsc::unbounded_channel. Sends never wait (the buffer grows as needed, so a receiver
// that stops reading lets memory grow without limit: prefer NewChannel when a producer
// can outrun its consumer). There is one receiver; clone the sender for more producers.
func NewUnbounded[T any]() (*UnboundedSender[T], *UnboundedReceiver[T]) {
	c := &unbounded[T]{}
	c.senders.Store(1)
	c.receivers.Store(1)
	return &UnboundedSender[T]{c: c}, &UnboundedReceiver[T]{c: c}
}

func (c *unbounded[T]) push(v T) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if c.n == len(c.buf) {
		c.grow()
	}
	c.buf[(c.head+c.n)&(len(c.buf)-1)] = v
	c.n++
	c.mu.Unlock()
	return true
}

func (c *unbounded[T]) grow() {
	size := max(2*len(c.buf), 8)
	nb := make([]T, size)
	for i := 0; i < c.n; i++ {
		nb[i] = c.buf[(c.head+i)&(len(c.buf)-1)]
	}
	c.buf, c.head = nb, 0
}

func (c *unbounded[T]) pop() (T, popResult) {
	var zero T
	c.mu.Lock()
	if c.n == 0 {
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return zero, popClosed
		}
		return zero, popEmpty
	}
	v := c.buf[c.head]
	c.buf[c.head] = zero
	c.head = (c.head + 1) & (len(c.buf) - 1)
	c.n--
	c.mu.Unlock()
	return v, popOK
}

// closeChan closes the channel; discard also drops the buffered values (the receiver
// closed: nobody will read them).
func (c *unbounded[T]) closeChan(discard bool) {
	c.mu.Lock()
	c.closed = true
	if discard {
		c.buf, c.head, c.n = nil, 0, 0
	}
	c.mu.Unlock()
	c.recvQ.notifyAll(nil)
}

// UnboundedSender is the sending end of an unbounded channel. Its methods are safe for
// concurrent use; Clone gives another handle, and each handle is closed once.
type UnboundedSender[T any] struct {
	c      *unbounded[T]
	closed atomic.Bool
}

func (s *UnboundedSender[T]) chanFor(op string) *unbounded[T] {
	if s == nil || s.c == nil {
		panic("tsync: " + op + " called on a nil or zero UnboundedSender (use NewUnbounded)")
	}
	return s.c
}

// Send sends v without waiting. It returns a *SendError holding v (Err ErrClosed) if the
// receiver was closed or this handle was. Send never blocks, so it is the same call in
// a task and in a goroutine.
func (s *UnboundedSender[T]) Send(v T) error {
	c := s.chanFor("UnboundedSender.Send")
	if s.closed.Load() || !c.push(v) {
		return sendErr(v, ErrClosed)
	}
	c.recvQ.notifyOne(nil)
	return nil
}

// SendFrom is Send for a task: cx is the Context of the poll making the call, so a
// waiting receiver is woken into the same worker's LIFO slot and runs next.
func (s *UnboundedSender[T]) SendFrom(cx *blitzio.Context, v T) error {
	c := s.chanFor("UnboundedSender.SendFrom")
	if s.closed.Load() || !c.push(v) {
		return sendErr(v, ErrClosed)
	}
	c.recvQ.notifyOne(cx)
	return nil
}

// Clone returns a new handle to the same channel. It panics if s was already closed.
func (s *UnboundedSender[T]) Clone() *UnboundedSender[T] {
	c := s.chanFor("UnboundedSender.Clone")
	if s.closed.Load() {
		panic("tsync: UnboundedSender.Clone of a closed UnboundedSender")
	}
	c.senders.Add(1)
	return &UnboundedSender[T]{c: c}
}

// Close releases this handle; when the last sender handle is closed, the receiver gets
// the values already sent and then ErrClosed. Closing twice is a no-op.
func (s *UnboundedSender[T]) Close() {
	c := s.chanFor("UnboundedSender.Close")
	if s.closed.Swap(true) {
		return
	}
	if c.senders.Add(-1) == 0 {
		c.closeChan(false)
	}
}

// IsClosed reports whether sends can no longer succeed.
func (s *UnboundedSender[T]) IsClosed() bool {
	c := s.chanFor("UnboundedSender.IsClosed")
	if s.closed.Load() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// UnboundedReceiver is the receiving end of an unbounded channel. Close it when done
// (Go has no destructors): only then do sends fail.
type UnboundedReceiver[T any] struct {
	c      *unbounded[T]
	closed atomic.Bool
}

func (r *UnboundedReceiver[T]) chanFor(op string) *unbounded[T] {
	if r == nil || r.c == nil {
		panic("tsync: " + op + " called on a nil or zero UnboundedReceiver (use NewUnbounded)")
	}
	return r.c
}

// Close closes the channel for senders: later sends fail with a *SendError holding their
// value, and values still buffered are discarded. Closing twice is a no-op.
func (r *UnboundedReceiver[T]) Close() {
	c := r.chanFor("UnboundedReceiver.Close")
	if r.closed.Swap(true) {
		return
	}
	c.receivers.Store(0)
	c.closeChan(true)
}

// Len returns the number of buffered values.
func (r *UnboundedReceiver[T]) Len() int {
	c := r.chanFor("UnboundedReceiver.Len")
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TryRecv receives a value if one is ready; otherwise it returns ErrEmpty, or ErrClosed
// once every sender has closed and the buffer is drained.
func (r *UnboundedReceiver[T]) TryRecv() (T, error) {
	v, err, ok := r.tryRecvSrc()
	if !ok {
		return v, ErrEmpty
	}
	return v, err
}

// RecvAsync returns a future that receives the next value (see Receiver.RecvAsync: the
// same guarantees, and it is reusable in the same way).
func (r *UnboundedReceiver[T]) RecvAsync() *SourceFuture[T] {
	r.chanFor("UnboundedReceiver.RecvAsync")
	return &SourceFuture[T]{src: r}
}

// Recv receives from a plain goroutine, blocking until a value arrives or the channel
// is closed and drained (ErrClosed). Do not call it from a task.
func (r *UnboundedReceiver[T]) Recv() (T, error) {
	if v, err, ok := r.tryRecvSrc(); ok {
		return v, err
	}
	res := waitFor[blitzio.Result[T]]("UnboundedReceiver.Recv", &SourceFuture[T]{src: r})
	return res.Value, res.Err
}

// RecvContext is Recv that gives up when ctx is done, returning ctx.Err().
func (r *UnboundedReceiver[T]) RecvContext(ctx context.Context) (T, error) {
	r.chanFor("UnboundedReceiver.RecvContext")
	return waitResultCtx[T]("UnboundedReceiver.RecvContext", ctx, &SourceFuture[T]{src: r})
}

// All returns an iterator over received values for a plain goroutine, ending when the
// channel is closed and drained.
func (r *UnboundedReceiver[T]) All() iter.Seq[T] {
	r.chanFor("UnboundedReceiver.All")
	return recvSeq(r.Recv)
}

func (r *UnboundedReceiver[T]) tryRecvSrc() (T, error, bool) {
	c := r.chanFor("UnboundedReceiver.TryRecv")
	var zero T
	if r.closed.Load() {
		return zero, ErrClosed, true
	}
	v, res := c.pop()
	switch res {
	case popOK:
		return v, nil, true
	case popClosed:
		return zero, ErrClosed, true
	}
	return zero, nil, false
}

func (r *UnboundedReceiver[T]) recvWaiters() *waitSet      { return &r.c.recvQ }
func (r *UnboundedReceiver[T]) afterRecv(*blitzio.Context) {}

// SourceFuture receives from one Source (an unbounded or broadcast receiver): the future
// of their RecvAsync. It implements blitzio.Future[blitzio.Result[T]] and
// blitzio.Dropper, waits without allocating, and is reusable: after it was ready,
// polling it again receives the next value. Dropped before it is ready, it has taken
// nothing.
type SourceFuture[T any] struct {
	src  Source[T]
	node waitNode
}

// Poll receives a value if one is ready and otherwise waits for one.
func (f *SourceFuture[T]) Poll(cx *blitzio.Context) (blitzio.Result[T], bool) {
	if f.src == nil {
		panic("tsync: SourceFuture polled after Drop, or the zero SourceFuture (use RecvAsync)")
	}
	if !cx.ConsumeBudget() {
		return blitzio.Result[T]{}, false
	}
	q := f.src.recvWaiters()
	for registered := false; ; registered = true {
		woke := f.node.woken()
		if v, err, ok := f.src.tryRecvSrc(); ok {
			if err != nil {
				f.node.leave(q, cx) // a closed handle or a lag: pass on a wake not used
			} else {
				f.node.took(q, cx, woke)
			}
			if err == nil {
				f.src.afterRecv(cx)
			}
			return blitzio.Result[T]{Value: v, Err: err}, true
		}
		if registered {
			return blitzio.Result[T]{}, false
		}
		f.node.register(q, cx)
	}
}

// Drop abandons the receive; nothing was taken. Drop is idempotent.
func (f *SourceFuture[T]) Drop() {
	if f.src == nil {
		return
	}
	f.node.leave(f.src.recvWaiters(), nil)
	f.src = nil
}

func (r *UnboundedReceiver[T]) isNil() bool { return r == nil || r.c == nil }
