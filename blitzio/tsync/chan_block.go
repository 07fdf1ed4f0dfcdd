package tsync

import (
	"context"
	"iter"

	"github.com/blitzgo/blitz/blitzio"
)

// The blocking forms of the channels (Send, Recv, Changed, RecvAnyContext and their
// Context variants) park the calling goroutine. Called from a task's code they would
// park a runtime worker instead, and a runtime whose workers all wait that way
// deadlocks; blitzio's BlockOn refuses the same mistake. Go has no goroutine-local
// storage, so, like BlockOn, we look at the bottom frames of the stack for the entry
// function of a worker or of an Async function's coroutine. The walk costs about a
// microsecond, so it runs only when the call is about to block (the try-first fast paths
// return before it).

// panicIfInRuntime panics, naming op, if the caller is a blitzio worker or an Async
// function's coroutine (see refuseInRuntime). f, already polled once and so queued as a
// waiter, is dropped first: left queued, it would take a wake-up meant for a live
// waiter.
func panicIfInRuntime(op string, f any) {
	refuseInRuntimeDrop(op, "RecvAsync, SendAsync, ...", f)
}

// waitFor drives f from a plain goroutine, refusing (with a panic naming op) to park a
// runtime worker.
func waitFor[T any](op string, f blitzio.Future[T]) T {
	if v, ok := f.Poll(probeContext); ok {
		return v
	}
	panicIfInRuntime(op, f)
	return blockOn(f)
}

// waitForCtx is waitFor that gives up when ctx is done (see blockOnCtx). A ctx that is
// done already ends the call before the refusal: nothing would wait, so a task may make
// it too, as it may Mutex.LockContext, Semaphore.AcquireContext and the other Context
// forms (the package's rule refuses only a call that would have to wait).
func waitForCtx[T any](op string, ctx context.Context, f blitzio.Future[T]) (T, error) {
	if v, ok := f.Poll(probeContext); ok {
		return v, nil
	}
	if err := ctx.Err(); err != nil {
		blitzio.Drop(f) // queued by the probe: what it was handed passes on
		var zero T
		return zero, err
	}
	panicIfInRuntime(op, f)
	return blockOnCtx(ctx, f)
}

// waitResultCtx is waitForCtx for a future of a Result: it returns the value and the
// error in Go's order, ctx.Err() when ctx ended the wait.
func waitResultCtx[T any](op string, ctx context.Context, f blitzio.Future[blitzio.Result[T]]) (T, error) {
	res, err := waitForCtx(op, ctx, f)
	if err != nil {
		var zero T
		return zero, err
	}
	return res.Value, res.Err
}

// recvSeq is the iterator of a receiver's All: recv blocks for each value, and the
// iteration ends at its first error (closed and drained) or when the loop breaks.
func recvSeq[T any](recv func() (T, error)) iter.Seq[T] {
	return func(yield func(T) bool) {
		for {
			v, err := recv()
			if err != nil || !yield(v) {
				return
			}
		}
	}
}
