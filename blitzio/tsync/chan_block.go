package tsync

import (
	"context"
	"runtime"
	"strings"

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

// Entry functions of the blitzio goroutines that must not block. A rename in blitzio is
// caught by TestChannelBlockingFormsRefuseWorkers.
const (
	workerEntry    = "github.com/blitzgo/blitz/blitzio.(*worker).run"
	coroutineEntry = "github.com/blitzgo/blitz/blitzio.runCoroutine"
)

// panicIfInRuntime panics, naming op, if the caller is a blitzio worker or an Async
// function's coroutine.
func panicIfInRuntime(op string) {
	var buf [64]uintptr
	pcs := buf[:]
	n := runtime.Callers(2, pcs)
	for n == len(pcs) && len(pcs) < 1<<20 {
		pcs = make([]uintptr, 4*len(pcs))
		n = runtime.Callers(2, pcs)
	}
	for _, pc := range pcs[max(0, n-6):n] {
		f := runtime.FuncForPC(pc - 1) // pc-1: a return address may start the next function
		if f == nil {
			continue
		}
		switch name := f.Name(); {
		case name == workerEntry:
			panic("tsync: cannot block from within a runtime: " + op + " called by a task's code " +
				"would block its worker; await the future form (RecvAsync, SendAsync, ...) instead")
		case name == coroutineEntry || strings.HasPrefix(name, coroutineEntry+"["):
			panic("tsync: cannot block from within a runtime: " + op + " called inside an Async " +
				"function would block the goroutine polling it; Await the future form instead")
		}
	}
}

// probeCx polls a blocking form's future once before the caller is checked and parked:
// a channel that is ready costs no stack walk. Its zero Waker means a wake that lands
// between this poll and blockOn's first poll is not delivered, which is harmless: that
// poll tries the operation again (and registers the parker's waker) before parking.
// The Context is shared: polling with it only reads it.
var probeCx = blitzio.NewContext(nil, blitzio.Waker{})

// waitFor drives f from a plain goroutine, refusing (with a panic naming op) to park a
// runtime worker.
func waitFor[T any](op string, f blitzio.Future[T]) T {
	if v, ok := f.Poll(probeCx); ok {
		return v
	}
	panicIfInRuntime(op)
	return blockOn(f)
}

// waitForCtx is waitFor that gives up when ctx is done (see blockOnCtx).
func waitForCtx[T any](op string, ctx context.Context, f blitzio.Future[T]) (T, error) {
	if v, ok := f.Poll(probeCx); ok {
		return v, nil
	}
	panicIfInRuntime(op)
	return blockOnCtx(ctx, f)
}
