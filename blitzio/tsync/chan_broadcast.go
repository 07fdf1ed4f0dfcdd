package tsync

import (
	"context"
	"fmt"
	"iter"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/blitzgo/blitz/blitzio"
)

// broadcast is the state a broadcast channel's handles share: a ring of the last values
// sent and the position of the next one. Every receiver keeps its own position.
//
// Once every open receiver has read every value sent so far, the channel clears the
// values it still holds, so that it keeps nothing alive that nobody will read. Tokio
// counts the receivers yet to read each value and drops the value when its count reaches
// zero; that costs every receive an atomic write to a slot the other receivers and the
// sender share, which made BenchmarkBroadcast a fifth slower. Counting instead the
// receivers that have read everything (atTail) costs one atomic add per receiver each
// time it catches up with the sender, not per value. The receive that completes the
// count (or the Close that does) clears the held values. A value read by every receiver
// while one of them still has later values to read stays until that one catches up,
// closes, or a later send overwrites it.
type broadcast[T any] struct {
	mu     sync.RWMutex // the sender writes, receivers read
	buf    []T
	mask   uint64
	tail   uint64 // position of the next value: values tail-len(buf) .. tail-1 are held
	closed bool   // every sender closed

	// atTail counts the open receivers at position tail (that have read every value
	// sent). A send resets it and Subscribe, Clone and Close adjust it, under mu held for
	// writing; a receive that reads the value before tail adds itself atomically, under
	// mu held for reading.
	atTail int64
	// cleared is the position before which held values have been cleared. It is
	// written only by a clear (see clearRead).
	cleared uint64

	recvQ     waitSet
	senders   atomic.Int64
	receivers atomic.Int64 // changes under mu held for writing
}

// clearRead clears every value held, once every open receiver has read it: called with
// mu held for writing, or held for reading by the receive whose add made atTail equal
// to the number of receivers. In the second case every receiver is at tail (receivers
// change only under mu held for writing), so no receiver reads a slot before tail until
// the next send, and the sender waits for mu; the adds to atTail order the other
// receivers' reads of the slots before the clear.
func (c *broadcast[T]) clearRead() {
	from := max(c.cleared, c.tail-min(c.tail, uint64(len(c.buf))))
	c.cleared = c.tail
	if from == c.tail {
		return
	}
	// The positions from .. tail-1 are at most one ring, in at most two runs of slots.
	i, j := from&c.mask, c.tail&c.mask
	if i < j {
		clear(c.buf[i:j])
	} else {
		clear(c.buf[i:])
		clear(c.buf[:j])
	}
}

// maxBroadcastCap bounds the ring of a broadcast channel (its capacity is rounded up to
// a power of two).
const maxBroadcastCap uint64 = 1 << 40

// NewBroadcast returns the two ends of a broadcast channel: Tokio's broadcast. Every
// receiver gets every value sent after it subscribed, in order. The channel holds the
// last capacity values (rounded up to a power of two); a receiver that falls further
// behind gets a *LagError saying how many values it missed, then continues from the
// oldest value still held. Sends never wait for slow receivers. Once every receiver has
// read every value sent (or closed), the channel lets go of the values it held, so it
// keeps nothing alive that no receiver will read.
//
// capacity must be at least 1 and at most 2^40 (and the ring small enough to allocate);
// NewBroadcast panics, naming the argument, otherwise.
func NewBroadcast[T any](capacity int) (*BroadcastSender[T], *BroadcastReceiver[T]) {
	if capacity < 1 {
		panic(fmt.Sprintf("tsync: NewBroadcast: capacity must be at least 1, got %d", capacity))
	}
	size := uint64(1) << bits.Len64(uint64(capacity)-1)
	var zero T
	if hi, lo := bits.Mul64(size, uint64(unsafe.Sizeof(zero))); uint64(capacity) > maxBroadcastCap ||
		hi != 0 || lo > maxAllocBytes {
		panic(fmt.Sprintf("tsync: NewBroadcast: capacity %d is too large (at most 2^40 values, "+
			"rounded up to a power of two, in at most %d bytes)", capacity, uint64(maxAllocBytes)))
	}
	c := &broadcast[T]{buf: make([]T, size), mask: size - 1}
	c.senders.Store(1)
	c.receivers.Store(1)
	return &BroadcastSender[T]{c: c}, &BroadcastReceiver[T]{c: c}
}

// BroadcastSender is the sending end of a broadcast channel; Clone it for more senders
// and Close each handle once.
type BroadcastSender[T any] struct {
	c      *broadcast[T]
	closed atomic.Bool
}

func (s *BroadcastSender[T]) chanFor(op string) *broadcast[T] {
	if s == nil || s.c == nil {
		panic("tsync: " + op + " called on a nil or zero BroadcastSender (use NewBroadcast)")
	}
	return s.c
}

// Send sends v to every receiver and never waits. It returns a *SendError holding v
// (Err ErrClosed) if there is no open receiver (as in Tokio: the value would reach
// nobody) or this handle was closed. The channel lets go of v once every receiver has
// read every value sent so far (or closed), or once a later send overwrites it.
func (s *BroadcastSender[T]) Send(v T) error { return s.send(nil, v, "BroadcastSender.Send") }

// SendFrom is Send for a task: cx is the Context of the poll making the call, so one
// woken receiver runs next on the same worker.
func (s *BroadcastSender[T]) SendFrom(cx *blitzio.Context, v T) error {
	return s.send(cx, v, "BroadcastSender.SendFrom")
}

func (s *BroadcastSender[T]) send(cx *blitzio.Context, v T, op string) error {
	c := s.chanFor(op)
	if s.closed.Load() {
		return sendErr(v, ErrClosed)
	}
	c.mu.Lock()
	if c.receivers.Load() == 0 {
		c.mu.Unlock()
		return sendErr(v, ErrClosed)
	}
	c.buf[c.tail&c.mask] = v
	c.tail++
	c.atTail = 0
	c.mu.Unlock()
	c.recvQ.notifyAll(cx)
	return nil
}

// Subscribe returns a new receiver that gets the values sent from now on.
func (s *BroadcastSender[T]) Subscribe() *BroadcastReceiver[T] {
	c := s.chanFor("BroadcastSender.Subscribe")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.receivers.Add(1)
	c.atTail++
	return &BroadcastReceiver[T]{c: c, next: c.tail}
}

// ReceiverCount returns the number of open receivers.
func (s *BroadcastSender[T]) ReceiverCount() int {
	return int(s.chanFor("BroadcastSender.ReceiverCount").receivers.Load())
}

// Clone returns another sender handle. It panics if s was already closed.
func (s *BroadcastSender[T]) Clone() *BroadcastSender[T] {
	c := s.chanFor("BroadcastSender.Clone")
	if s.closed.Load() {
		panic("tsync: BroadcastSender.Clone of a closed BroadcastSender")
	}
	c.senders.Add(1)
	return &BroadcastSender[T]{c: c}
}

// Close releases this handle; when the last sender is closed, receivers get the values
// still held for them and then ErrClosed. Closing twice is a no-op.
func (s *BroadcastSender[T]) Close() {
	c := s.chanFor("BroadcastSender.Close")
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

// BroadcastReceiver is one subscriber of a broadcast channel. Its methods are safe for
// concurrent use, but concurrent receives through one handle share its position (each
// value goes to one of them): give each consumer its own Subscribe or Clone. Close it
// when done: senders fail only once every receiver is closed.
type BroadcastReceiver[T any] struct {
	c      *broadcast[T]
	mu     sync.Mutex // guards next
	next   uint64     // position of the next value to read
	closed bool       // guarded by mu
}

func (r *BroadcastReceiver[T]) chanFor(op string) *broadcast[T] {
	if r == nil || r.c == nil {
		panic("tsync: " + op + " called on a nil or zero BroadcastReceiver (use NewBroadcast or Subscribe)")
	}
	return r.c
}

// Clone returns a receiver at the same position: it gets the same values r has not read
// yet. It panics if r was closed.
func (r *BroadcastReceiver[T]) Clone() *BroadcastReceiver[T] {
	c := r.chanFor("BroadcastReceiver.Clone")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		panic("tsync: BroadcastReceiver.Clone of a closed BroadcastReceiver")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.receivers.Add(1)
	if r.next == c.tail {
		c.atTail++
	}
	return &BroadcastReceiver[T]{c: c, next: r.next}
}

// Close unsubscribes. Closing twice is a no-op; a receive through a closed handle
// returns ErrClosed.
func (r *BroadcastReceiver[T]) Close() {
	c := r.chanFor("BroadcastReceiver.Close")
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	c.mu.Lock()
	if r.next == c.tail {
		c.atTail--
	}
	if c.receivers.Add(-1) == c.atTail {
		c.clearRead() // r was the last to read what is held
	}
	c.mu.Unlock()
	r.mu.Unlock()
	// A receive waiting through this handle returns ErrClosed. After the unlock: a waker
	// may run any code, a receive through r included.
	c.recvQ.notifyAll(nil)
}

func (r *BroadcastReceiver[T]) tryRecvSrc() (T, error, bool) {
	c := r.c
	var zero T
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return zero, ErrClosed, true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	next, tail := r.next, c.tail
	if next == tail {
		if c.closed {
			return zero, ErrClosed, true
		}
		return zero, nil, false
	}
	size := uint64(len(c.buf))
	if tail-next > size {
		oldest := tail - size
		r.next = oldest
		return zero, &LagError{Missed: oldest - next}, true
	}
	r.next = next + 1
	v := c.buf[next&c.mask]
	if next+1 == tail && atomic.AddInt64(&c.atTail, 1) == c.receivers.Load() {
		c.clearRead() // every receiver has read everything held
	}
	return v, nil, true
}

func (r *BroadcastReceiver[T]) recvWaiters() *waitSet      { return &r.c.recvQ }
func (r *BroadcastReceiver[T]) afterRecv(*blitzio.Context) {}

// TryRecv receives the next value if one is ready. Otherwise it returns ErrEmpty, a
// *LagError if values were missed, or ErrClosed once every sender closed and every
// held value was read.
func (r *BroadcastReceiver[T]) TryRecv() (T, error) {
	r.chanFor("BroadcastReceiver.TryRecv")
	v, err, ok := r.tryRecvSrc()
	if !ok {
		return v, ErrEmpty
	}
	return v, err
}

// RecvAsync returns a future that receives the next value, a *LagError, or ErrClosed.
// It is reusable like Receiver.RecvAsync's, and dropped before it is ready it has taken
// nothing.
func (r *BroadcastReceiver[T]) RecvAsync() *SourceFuture[T] {
	r.chanFor("BroadcastReceiver.RecvAsync")
	return &SourceFuture[T]{src: r}
}

// Recv receives from a plain goroutine, blocking until a value arrives; it returns a
// *LagError if values were missed (the next Recv continues), ErrClosed at the end.
func (r *BroadcastReceiver[T]) Recv() (T, error) {
	r.chanFor("BroadcastReceiver.Recv")
	if v, err, ok := r.tryRecvSrc(); ok {
		return v, err
	}
	res := waitFor[blitzio.Result[T]]("BroadcastReceiver.Recv", &SourceFuture[T]{src: r})
	return res.Value, res.Err
}

// RecvContext is Recv that gives up when ctx is done, returning ctx.Err().
func (r *BroadcastReceiver[T]) RecvContext(ctx context.Context) (T, error) {
	r.chanFor("BroadcastReceiver.RecvContext")
	return waitResultCtx[T]("BroadcastReceiver.RecvContext", ctx, &SourceFuture[T]{src: r})
}

// All returns an iterator over received values for a plain goroutine. Missed values
// (lag) are skipped silently; the iteration ends when the channel is closed and read.
func (r *BroadcastReceiver[T]) All() iter.Seq[T] {
	r.chanFor("BroadcastReceiver.All")
	return func(yield func(T) bool) {
		for {
			v, err := r.Recv()
			if err != nil {
				if _, lagged := err.(*LagError); lagged {
					continue
				}
				return
			}
			if !yield(v) {
				return
			}
		}
	}
}

func (r *BroadcastReceiver[T]) isNil() bool { return r == nil || r.c == nil }
