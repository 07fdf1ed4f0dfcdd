package blitzio

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// Tests of the coroutines a worker keeps for the next Async function (see coroutine).

// asyncGID runs an Async function as a task on rt and returns the id of the goroutine
// its body ran on.
func asyncGID(t *testing.T, rt *Runtime) uint64 {
	t.Helper()
	id, err := waitHandle(t, Spawn(rt, Async(func(co *Co) uint64 {
		Await(co, YieldNow()) // suspend once: the body resumes on its coroutine
		return goroutineID()
	})))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// One Async function after another on one worker runs on the same coroutine: the first
// one's goroutine is kept and started again. (It fails if coroutines are not reused.)
func TestAsyncCoroutineReused(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	first := asyncGID(t, rt)
	for i := range 5 {
		if got := asyncGID(t, rt); got != first {
			t.Fatalf("Async function %d ran on goroutine %d, want the kept coroutine %d", i+1, got, first)
		}
	}
}

// A body that panicked leaves its coroutine reusable: the panic is reported by the
// handle, and the next function runs (on the same goroutine) with a clean Co.
func TestAsyncCoroutineReusedAfterPanic(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	first := asyncGID(t, rt)
	_, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int {
		Await(co, YieldNow())
		panic("boom")
	})))
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("panicking Async: err %v, want a *PanicError with boom", err)
	}
	if got := asyncGID(t, rt); got != first {
		t.Fatalf("after a recovered panic the next function ran on goroutine %d, want %d", got, first)
	}
}

// A coroutine unwound by Drop, or ended by runtime.Goexit, is not kept: the next
// function starts on a new goroutine and runs normally.
func TestAsyncCoroutineNotKeptAfterDropOrGoexit(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	first := asyncGID(t, rt)

	// Dropped while suspended (the task aborted): its deferred call runs during Drop.
	started := make(chan uint64, 1)
	unwound := make(chan struct{})
	h := Spawn(rt, Async(func(co *Co) int {
		defer close(unwound)
		started <- goroutineID()
		Await(co, Sleep(time.Hour))
		return 0
	}))
	var droppedOn uint64
	select {
	case droppedOn = <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the Async function never started")
	}
	if droppedOn != first {
		t.Fatalf("the function to drop ran on goroutine %d, want the kept coroutine %d", droppedOn, first)
	}
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted Async: %v, want ErrCancelled", err)
	}
	select {
	case <-unwound:
	case <-time.After(20 * time.Second):
		t.Fatal("the dropped function was not unwound")
	}
	second := asyncGID(t, rt)
	if second == first {
		t.Fatal("a coroutine unwound by Drop was started again")
	}

	// runtime.Goexit in the body ends the coroutine (and the worker goroutine, which is
	// replaced): the next function gets a new one.
	_, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int {
		Await(co, YieldNow())
		runtime.Goexit()
		return 0
	})))
	if !errors.Is(err, ErrGoexit) {
		t.Fatalf("Goexit in Async: %v, want ErrGoexit", err)
	}
	if got := asyncGID(t, rt); got == second {
		t.Fatal("a coroutine ended by runtime.Goexit was started again")
	}
}

// A worker keeps at most maxIdleCoroutines, and Close ends them: the goroutine count
// comes back to what it was before the runtime.
func TestAsyncIdleCoroutinesBoundedAndClosed(t *testing.T) {
	before := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := 4 * maxIdleCoroutines
	release := make(chan struct{})
	hs := make([]JoinHandle[int], n)
	for i := range hs {
		hs[i] = Spawn(rt, Async(func(co *Co) int {
			Await(co, SpawnBlocking(co, func() int { <-release; return i }))
			return i
		}))
	}
	close(release)
	for i, h := range hs {
		if v, err := waitHandle(t, h); err != nil || v != i {
			t.Fatalf("task %d: %v, %v", i, v, err)
		}
	}
	// The workers' pools are read here only while no task runs: every handle is done.
	for _, w := range rt.workers {
		if len(w.coros) > maxIdleCoroutines {
			t.Fatalf("worker %d keeps %d coroutines, more than %d", w.id, len(w.coros), maxIdleCoroutines)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range rt.workers {
		if len(w.coros) != 0 {
			t.Fatalf("worker %d still keeps %d coroutines after Close", w.id, len(w.coros))
		}
	}
	waitFor(t, "the kept coroutines to end after Close", func() bool { return runtime.NumGoroutine() <= before+2 })
}

// Nested Async functions: the inner one is polled from the outer one's coroutine with
// the worker's Context, so it takes and returns coroutines from the worker's pool while
// the worker waits; results and panics stay with their own functions.
func TestAsyncNestedUsesPool(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for round := range 20 {
		v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int {
			sum := 0
			for i := range 10 {
				sum += Await(co, Async(func(co *Co) int {
					Await(co, YieldNow())
					return i
				}))
			}
			return sum
		})))
		if err != nil || v != 45 {
			t.Fatalf("round %d: %v, %v; want 45", round, v, err)
		}
	}
}
