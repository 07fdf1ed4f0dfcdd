package blitzio

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAsyncSequential(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	h := Spawn(rt, Async(func(co *Co) string {
		Await(co, Sleep(time.Millisecond))
		child := Await(co, Spawn(co, Lazy(func() int { return 40 })))
		Await(co, YieldNow())
		return fmt.Sprint(child.Value + 2)
	}))
	if v, err := waitHandle(t, h); v != "42" || err != nil {
		t.Fatalf("got %q, %v", v, err)
	}
	// Through BlockOn too, and polled again after ready.
	f := Async(func(co *Co) int { return Await(co, Ready(7)) })
	if v, err := BlockOn(rt, f); v != 7 || err != nil {
		t.Fatalf("BlockOn: %v, %v", v, err)
	}
	if v, ok := f.Poll(NewContext(rt, Waker{})); !ok || v != 7 {
		t.Fatalf("poll after ready: %v, %v", v, ok)
	}
}

// Abort, a lost select and Shutdown while the function is suspended: its deferred calls
// run, the future it awaited is dropped, and its goroutine exits.
func TestAsyncCancellationUnwinds(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var defers, polls, drops, started atomic.Int64
	body := func(co *Co) int {
		started.Add(1)
		defer defers.Add(1)
		Await(co, Future[int](dropFuture{&polls, &drops}))
		t.Error("resumed after cancellation")
		return 0
	}
	// Abort.
	h := Spawn(rt, Async(body))
	waitFor(t, "first poll", func() bool { return polls.Load() >= 1 })
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted: %v", err)
	}
	if defers.Load() != 1 || drops.Load() != 1 {
		t.Fatalf("after Abort: %d defers ran, %d awaited futures dropped; want 1, 1", defers.Load(), drops.Load())
	}
	// The losing arm of a select.
	r, err := waitHandle(t, Spawn(rt, Select2(Async(body), Sleep(time.Millisecond))))
	if err != nil || r.Index != 1 {
		t.Fatalf("select: %+v, %v", r, err)
	}
	if defers.Load() != 2 || drops.Load() != 2 {
		t.Fatalf("after the select: %d defers, %d drops; want 2, 2", defers.Load(), drops.Load())
	}
	// Shutdown, with a deferred call that awaits (it must not resume the function).
	for range 10 {
		Spawn(rt, Async(func(co *Co) int {
			defer func() {
				defer defers.Add(1)
				Await(co, Sleep(time.Hour))
			}()
			return body(co)
		})).Detach()
	}
	// Wait until every function has started and suspended in its Await (polled): a
	// task dropped before its first poll never runs its function, so has no defers.
	waitFor(t, "functions suspended", func() bool { return started.Load() == 12 })
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if defers.Load() != 2+20 || drops.Load() != 12 {
		t.Fatalf("after Close: %d defers, %d drops; want 22, 12", defers.Load(), drops.Load())
	}
	checkNoLeak(t, base)
}

//go:noinline
func asyncPanicker(co *Co) int {
	Await(co, YieldNow())
	panic("async-boom")
}

// A panic keeps the stack of the function's goroutine: the handle's error shows where
// the function panicked, not only the worker's poll. Nested Async functions too.
func TestAsyncPanicKeepsStack(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	for _, f := range []Future[int]{
		Async(asyncPanicker),
		Async(func(co *Co) int { return Await(co, Async(asyncPanicker)) }),
	} {
		_, err := waitHandle(t, Spawn(rt, f))
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "async-boom" {
			t.Fatalf("got %v, want a *PanicError with the value", err)
		}
		if !strings.Contains(string(pe.Stack), "asyncPanicker") {
			t.Fatalf("the stack does not show the panicking function:\n%s", pe.Stack)
		}
		if _, ok := pe.Value.(*PanicError); ok {
			t.Fatalf("nested PanicError: %v", pe)
		}
	}
	// BlockOn too.
	_, err := BlockOn(rt, Async(asyncPanicker))
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(string(pe.Stack), "asyncPanicker") {
		t.Fatalf("BlockOn: %v", err)
	}
	// A deferred call that panics while the function is unwound by Abort: reported.
	h := Spawn(rt, Async(func(co *Co) int {
		defer func() { panic("defer-boom") }()
		return Await(co, Pending[int]())
	}))
	waitFor(t, "suspended", func() bool { return true })
	time.Sleep(time.Millisecond)
	h.Abort()
	_, err = waitHandle(t, h)
	if !errors.Is(err, ErrCancelled) || !errors.As(err, &pe) || !pe.InDrop || pe.Value != "defer-boom" {
		t.Fatalf("panic in a deferred call during cancellation: %v", err)
	}
}

// runtime.Goexit (t.FailNow) in an Async function: the handle reports ErrGoexit and a
// one-worker runtime keeps running tasks.
func TestAsyncGoexit(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var deferred atomic.Bool
	h := Spawn(rt, Async(func(co *Co) int {
		defer deferred.Store(true)
		Await(co, YieldNow())
		runtime.Goexit()
		return 1
	}))
	if _, err := waitHandle(t, h); !errors.Is(err, ErrGoexit) {
		t.Fatalf("got %v, want ErrGoexit", err)
	}
	if !deferred.Load() {
		t.Fatal("the function's deferred call did not run")
	}
	if v, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int { return Await(co, Ready(3)) }))); v != 3 || err != nil {
		t.Fatalf("after Goexit: %v, %v", v, err)
	}
}

// Blocking calls inside an Async function block the goroutine that polls it: they are
// detected like calls on a worker.
func TestAsyncBlockingCallsPanic(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	other := Spawn(rt, Pending[int]())
	defer other.Abort()
	for name, body := range map[string]func(co *Co) int{
		"Wait":       func(co *Co) int { v, _ := other.Wait(); return v },
		"BlockOn":    func(co *Co) int { v, _ := BlockOn(rt, Pending[int]()); return v },
		"Close":      func(co *Co) int { _ = rt.Close(); return 0 },
		"Await(nil)": func(co *Co) int { return Await[int](co, nil) },
	} {
		_, err := waitHandle(t, Spawn(rt, Async(body)))
		var pe *PanicError
		if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "Async") && !strings.Contains(fmt.Sprint(pe.Value), "nil") {
			t.Errorf("%s inside Async: got %v, want a panic that names Async", name, err)
		}
	}
}

// Many Async tasks on a small runtime, aborted at random points, with sleeps and child
// tasks: every handle resolves, every deferred call runs, no goroutine is left.
func TestAsyncStressRandomAborts(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	var started, deferred atomic.Int64
	hs := make([]JoinHandle[int], n)
	for i := range hs {
		hs[i] = Spawn(rt, Async(func(co *Co) int {
			started.Add(1)
			defer deferred.Add(1)
			sum := 0
			for j := range 1 + i%5 {
				Await(co, Sleep(time.Duration(rand.IntN(200))*time.Microsecond))
				r := Await(co, Spawn(co, Lazy(func() int { return j })))
				sum += r.Value
				Await(co, YieldNow())
			}
			return sum
		}))
	}
	for i := range hs {
		if rand.IntN(3) == 0 {
			if rand.IntN(2) == 0 {
				runtime.Gosched()
			}
			hs[i].Abort()
		}
	}
	for i, h := range hs {
		v, err := waitHandle(t, h)
		want := 0
		for j := range 1 + i%5 {
			want += j
		}
		if err != nil && !errors.Is(err, ErrCancelled) || err == nil && v != want {
			t.Fatalf("task %d: %v, %v (want %d)", i, v, err, want)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if started.Load() != deferred.Load() {
		t.Fatalf("%d functions started, %d deferred calls ran", started.Load(), deferred.Load())
	}
	checkNoLeak(t, base)
}

// Await with a *Co kept past its function's return, or used from another goroutine
// while the function is suspended: a clear panic, not a corrupted coroutine.
func TestAsyncAwaitOutsideFunction(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var kept *Co
	if _, err := waitHandle(t, Spawn(rt, Async(func(co *Co) int { kept = co; return 1 }))); err != nil {
		t.Fatal(err)
	}
	mustPanicWith(t, "Await after return", func() { Await(kept, Ready(1)) }, "Await", "outside")
	gate := make(chan *Co)
	release := &trigger{}
	h := Spawn(rt, Async(func(co *Co) int {
		gate <- co
		return Await(co, release.future(2))
	}))
	co := <-gate
	waitFor(t, "suspended", func() bool { release.mu.Lock(); defer release.mu.Unlock(); return len(release.ws) > 0 })
	mustPanicWith(t, "Await from another goroutine", func() { Await(co, Ready(1)) }, "Await", "outside")
	release.fire()
	if v, err := waitHandle(t, h); v != 2 || err != nil {
		t.Fatalf("the function after the misuse: %v, %v", v, err)
	}
	mustPanicWith(t, "Await(nil Co)", func() { Await(nil, Ready(1)) }, "Await", "nil")
	mustPanicWith(t, "Async(nil)", func() { Async[int](nil) }, "Async", "nil")
}

// An Async function awaiting another: aborting the outer task unwinds both, innermost
// first, and a select inside the inner function drops its arms.
func TestAsyncNestedCancellation(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	var polls, drops atomic.Int64
	h := Spawn(rt, Async(func(co *Co) int {
		defer note("outer")
		return Await(co, Async(func(co *Co) int {
			defer note("inner")
			r := Await(co, Select2[int, struct{}](dropFuture{&polls, &drops}, Sleep(time.Hour)))
			return r.V1
		}))
	}))
	waitFor(t, "inner suspended", func() bool { return polls.Load() > 0 })
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("got %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(order) != "[inner outer]" || drops.Load() != 1 {
		t.Fatalf("deferred calls ran as %v, %d arms dropped; want [inner outer], 1", order, drops.Load())
	}
	if n := rt.timerCount(); n != 0 {
		t.Fatalf("%d timers left registered: the select's sleep was not dropped", n)
	}
}
