package blitz

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostile7SeqGoexitOnCallerWaitsForBatches: when f calls runtime.Goexit (t.FailNow,
// t.Fatal...) on the caller's goroutine, that goroutine ends, but only after the batches
// running on the workers have finished, as Join is left only after its stolen half: the
// deferred calls of the caller's callers must not run while f still runs elsewhere (a
// test's cleanups would run under a still-running f, which may then log to a finished
// test). ForEachSeq runs the last queued batches on the caller's goroutine while it
// waits for the others at the end, and a Goexit there skipped the wait: the caller's
// deferred calls ran at once, while f went on running on the workers.
//
// Three elements, one per batch, on two workers: the caller runs one batch itself, after
// the sequence has ended; its f waits until a worker's f has started, then calls
// Goexit. A worker's f waits (a bounded time) for the caller's deferred call and reports
// whether it ran while f was still running.
func TestHostile7SeqGoexitOnCallerWaitsForBatches(t *testing.T) {
	const hold = 300 * time.Millisecond // how long a worker's f waits for the violation
	forms := []struct {
		name string
		run  func(f func(int), opts []Option)
	}{
		{"ForEachSeq", func(f func(int), opts []Option) { ForEachSeq(seqN(3), f, opts...) }},
		{"MapSeq", func(f func(int), opts []Option) {
			for range MapSeq(seqN(3), func(v int) int { f(v); return v }, opts...) {
			}
		}},
	}
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			p := newPool(t, Config{Workers: 2})
			var (
				caller                    atomic.Int64 // goroutine id of the caller
				workerStarted, goexiting  atomic.Bool
				callerGone                atomic.Bool // the caller's deferred call has run
				noWorker                  atomic.Bool
				overlap, workerRan, leftF atomic.Int64
			)
			f := func(int) {
				if h7Goid() == caller.Load() {
					if !h7Await(workerStarted.Load, watchdogTimeout/2) {
						noWorker.Store(true)
					}
					goexiting.Store(true)
					runtime.Goexit()
				}
				workerRan.Add(1)
				workerStarted.Store(true)
				if h7Await(goexiting.Load, watchdogTimeout/2) {
					if h7Await(callerGone.Load, hold) {
						overlap.Add(1) // the caller's deferred call ran while this f runs
					}
				}
				leftF.Add(1)
			}
			runWithWatchdog(t, form.name, func() {
				done := make(chan struct{})
				go func() {
					defer close(done)
					defer callerGone.Store(true)
					caller.Store(h7Goid())
					form.run(f, []Option{WithPool(p), WithGrain(1)})
					t.Errorf("%s returned normally although f called runtime.Goexit on its goroutine", form.name)
				}()
				<-done
				p.Close() // the workers' f have returned once Close returns
			})
			if noWorker.Load() {
				t.Fatalf("%s: no worker started a batch within %v", form.name, watchdogTimeout/2)
			}
			if !goexiting.Load() {
				t.Fatalf("%s: f never ran on the caller's goroutine (%d batches on the workers); the test did not get its shape", form.name, workerRan.Load())
			}
			if k := overlap.Load(); k != 0 {
				t.Errorf("%s: the caller's goroutine ran its deferred calls while %d calls of f were still running on the workers (f called runtime.Goexit on the caller's goroutine)", form.name, k)
			}
			if leftF.Load() != workerRan.Load() {
				t.Errorf("%s: %d calls of f on the workers, %d returned", form.name, workerRan.Load(), leftF.Load())
			}
		})
	}
}
