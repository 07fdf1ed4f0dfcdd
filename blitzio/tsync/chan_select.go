package tsync

import (
	"context"

	"github.com/blitzgo/blitz/blitzio"
)

// Received is the value of RecvAny: which source it came from (its index in the
// arguments) and what was received there. Err is nil for a value, ErrClosed when that
// source is closed and drained, or a *LagError from a broadcast receiver.
type Received[T any] struct {
	Index int
	Value T
	Err   error
}

// RecvAny returns a future that receives from whichever of srcs has a value first: Go's
// select over several receive cases, for tasks. It is ready with the index of the
// source and its result. When several sources are ready it takes them in turn (each
// poll starts after the source that won last), so one busy source cannot starve the
// others. A closed source is ready with ErrClosed, as a closed Go channel is; as in Go,
// a nil entry (a nil *Receiver, say) is never ready, so a loop sets the entry of a
// source it has finished with to nil. With no non-nil source the future is ready at
// once with Index -1 and ErrClosed instead of waiting forever.
//
// The future waits without allocating (one waiter node per source, made by RecvAny),
// takes at most one value per ready poll, and is reusable: polled again after it was
// ready, it receives the next value. Dropped before it is ready it has taken nothing,
// and a wake it received for a value it did not take goes to the next waiter of that
// source. srcs is used, not copied; do not change it while the future waits.
func RecvAny[T any](srcs ...Source[T]) *RecvAnyFuture[T] {
	return &RecvAnyFuture[T]{srcs: srcs, nodes: make([]waitNode, len(srcs))}
}

// RecvAnyContext is RecvAny for a plain goroutine: it blocks until one source is ready
// and returns its result, or returns ctx.Err() when ctx is done first (nothing taken).
func RecvAnyContext[T any](ctx context.Context, srcs ...Source[T]) (Received[T], error) {
	return waitForCtx[Received[T]]("RecvAnyContext", ctx, RecvAny(srcs...))
}

// RecvAnyFuture is the future of RecvAny: blitzio.Future[Received[T]] and
// blitzio.Dropper.
type RecvAnyFuture[T any] struct {
	srcs    []Source[T]
	nodes   []waitNode
	start   int
	dropped bool
}

func srcIsNil[T any](s Source[T]) bool { return s == nil || s.isNil() }

// Poll receives from the first ready source, or waits on all of them.
func (f *RecvAnyFuture[T]) Poll(cx *blitzio.Context) (Received[T], bool) {
	if f.dropped {
		panic("tsync: RecvAnyFuture polled after Drop")
	}
	if !cx.ConsumeBudget() {
		return Received[T]{}, false
	}
	n := len(f.srcs)
	live := 0
	for _, s := range f.srcs {
		if !srcIsNil(s) {
			live++
		}
	}
	if live == 0 {
		return Received[T]{Index: -1, Err: ErrClosed}, true
	}
	for registered := false; ; registered = true {
		for k := 0; k < n; k++ {
			i := f.start + k
			if i >= n {
				i -= n
			}
			s := f.srcs[i]
			if srcIsNil(s) {
				continue
			}
			woke := f.nodes[i].woken()
			v, err, ok := s.tryRecvSrc()
			if !ok {
				continue
			}
			f.start = i + 1
			if f.start == n {
				f.start = 0
			}
			if err == nil {
				f.nodes[i].took(s.recvWaiters(), cx, woke) // see took: a wake from i that came first was used
			}
			f.leaveAll(cx)
			if err == nil {
				s.afterRecv(cx)
			}
			return Received[T]{Index: i, Value: v, Err: err}, true
		}
		if registered {
			return Received[T]{}, false
		}
		// Nothing ready: register with every source, then look once more (see waitSet).
		for i, s := range f.srcs {
			if !srcIsNil(s) {
				f.nodes[i].register(s.recvWaiters(), cx)
			}
		}
	}
}

// leaveAll deregisters from every source, passing on notifications not used.
func (f *RecvAnyFuture[T]) leaveAll(cx *blitzio.Context) {
	for i, s := range f.srcs {
		if f.nodes[i].registered {
			f.nodes[i].leave(s.recvWaiters(), cx)
		}
	}
}

// Drop abandons the receive: nothing was taken. Drop is idempotent.
func (f *RecvAnyFuture[T]) Drop() {
	if f.dropped {
		return
	}
	f.dropped = true
	f.leaveAll(nil)
}
