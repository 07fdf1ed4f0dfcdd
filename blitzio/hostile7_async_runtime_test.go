package blitzio

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile review of Async and Await: an Async future handed between tasks and runtimes,
// dropped in every state, awaiting across runtimes, racing its own cancellation, in
// large numbers, and caught by Close while it waits.

// hostile7Handoff polls inner once on the task that polls it and, if inner is pending,
// hands it over on ch and finishes: the task after it owns inner from then on.
func hostile7Handoff[T any](inner Future[T], ch chan<- Future[T]) Future[bool] {
	return PollFn(func(cx *Context) (bool, bool) {
		if _, ok := inner.Poll(cx); ok {
			return false, true
		}
		ch <- inner
		return true, true
	})
}

// An Async function started by a task on runtime A (on a coroutine A's worker keeps) and
// finished by a task on runtime B, which awaits the same future: the function resumes
// with B's Context, its awaited future wakes B, and no goroutine is left once both
// runtimes are closed.
func TestHostile7AsyncPolledOnTwoRuntimes(t *testing.T) {
	base := runtime.NumGoroutine()
	a, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	rel := &trigger{}
	var deferred atomic.Int32
	var polledOn [2]*Runtime
	f := Async(func(co *Co) int {
		defer deferred.Add(1)
		polledOn[0] = co.Context().Runtime()
		v := Await(co, rel.future(40))
		polledOn[1] = co.Context().Runtime()
		return v + Await(co, Spawn(co, Lazy(func() int { return 2 }))).Value
	})
	ch := make(chan Future[int], 1)
	if handed, err := waitHandle(t, Spawn(a, hostile7Handoff(f, ch))); !handed || err != nil {
		t.Fatalf("the first poll on A: handed %v, %v", handed, err)
	}
	g := <-ch
	hb := Spawn(b, g)
	waitFor(t, "B's task to wait on the trigger", func() bool {
		rel.mu.Lock()
		defer rel.mu.Unlock()
		return len(rel.ws) == 2
	})
	rel.fire()
	if v, err := waitHandle(t, hb); v != 42 || err != nil {
		t.Fatalf("finished on B: %v, %v; want 42", v, err)
	}
	if polledOn[0] != a || polledOn[1] != b || deferred.Load() != 1 {
		t.Fatalf("polled on %p then %p (A %p, B %p), %d deferred calls", polledOn[0], polledOn[1], a, b, deferred.Load())
	}
	closeWithin(t, a)
	closeWithin(t, b)
	checkNoLeak(t, base)
}

// Every state an Async future can be dropped or polled in: dropped before its first
// poll (fn never runs, a later poll panics), dropped twice (fn unwound once), polled
// after it finished (the same value, fn not run again) and dropped then (nothing).
func TestHostile7AsyncDropAndPollStates(t *testing.T) {
	cx := NewContext(nil, Waker{})
	var runs atomic.Int32
	f := Async(func(co *Co) int { runs.Add(1); return 1 })
	Drop(f)
	Drop(f)
	mustPanicWith(t, "poll after a Drop before the first poll", func() { f.Poll(cx) }, "polled after Drop")
	if runs.Load() != 0 {
		t.Fatal("a future dropped before its first poll ran its function")
	}

	var deferred atomic.Int32
	g := Async(func(co *Co) int {
		defer deferred.Add(1)
		return Await(co, Pending[int]())
	})
	if _, ok := g.Poll(cx); ok {
		t.Fatal("ready at once")
	}
	Drop(g)
	Drop(g)
	if deferred.Load() != 1 {
		t.Fatalf("dropped twice: %d deferred calls, want 1", deferred.Load())
	}
	mustPanicWith(t, "poll after Drop", func() { g.Poll(cx) }, "polled after Drop")

	h := Async(func(co *Co) int { runs.Add(1); Await(co, YieldNow()); return 3 })
	for {
		if v, ok := h.Poll(cx); ok {
			if v != 3 {
				t.Fatalf("got %d", v)
			}
			break
		}
	}
	for range 3 {
		if v, ok := h.Poll(cx); !ok || v != 3 {
			t.Fatalf("polled after it finished: %v, %v", v, ok)
		}
	}
	Drop(h)
	if v, ok := h.Poll(cx); !ok || v != 3 || runs.Load() != 1 {
		t.Fatalf("polled after a Drop of the finished future: %v, %v, %d runs", v, ok, runs.Load())
	}
}

// An Async function on runtime B awaiting the JoinHandle of a task on runtime A: it
// gets the value; and when A is closed under it, the handle's ErrCancelled (B's task
// finishes normally with it).
func TestHostile7AsyncAwaitsHandleOfOtherRuntime(t *testing.T) {
	b := newRT(t, Config{Workers: 1})
	a, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, cf := NewCompletion[int]()
	ha := Spawn(a, cf)
	hb := Spawn(b, Async(func(co *Co) Result[int] { return Await(co, ha) }))
	go func() { time.Sleep(time.Millisecond); c.Complete(5) }()
	if r, err := waitHandle(t, hb); err != nil || r.Value != 5 || r.Err != nil {
		t.Fatalf("got %+v, %v", r, err)
	}
	hp := Spawn(a, Pending[int]())
	var waiting atomic.Bool
	hb = Spawn(b, Async(func(co *Co) Result[int] { waiting.Store(true); return Await(co, hp) }))
	waitFor(t, "B's function to await", waiting.Load)
	closeWithin(t, a)
	if r, err := waitHandle(t, hb); err != nil || !errors.Is(r.Err, ErrCancelled) {
		t.Fatalf("A closed under the await: %+v, %v; want the handle's ErrCancelled", r, err)
	}
}

// Blocking calls inside an Async function that a plain goroutine polls by hand (with
// NewContext, no runtime): still refused with the "cannot block" panic, not a deadlock.
func TestHostile7AsyncBlockingCallPolledByHand(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	pending := Spawn(rt, Pending[int]())
	defer pending.Abort()
	for name, body := range map[string]func(co *Co) int{
		"BlockOn": func(co *Co) int { v, _ := BlockOn(rt, Ready(1)); return v },
		"Wait":    func(co *Co) int { v, _ := pending.Wait(); return v },
		"Close":   func(co *Co) int { _ = rt.Close(); return 0 },
	} {
		var p any
		watchdog(t, 10*time.Second, name+" inside a hand-polled Async function", func() {
			p = hostile7Recover(func() { Async(body).Poll(NewContext(nil, Waker{})) })
		})
		var pe *PanicError
		if !errors.As(asError(p), &pe) || !strings.Contains(pe.Error(), "cannot block") {
			t.Errorf("%s: got %v, want the cannot-block panic", name, p)
		}
	}
}

// asError returns p as an error (nil if it is not one).
func asError(p any) error {
	err, _ := p.(error)
	return err
}

// The awaited future completes at the moment the task is aborted: either the function
// finished with the value or it was unwound without resuming, its deferred call ran
// exactly once, and nothing is left behind.
func TestHostile7AsyncCompletesAsItIsDropped(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 300
	var deferred, resumed, started atomic.Int64
	hs := make([]JoinHandle[int], rounds)
	cs := make([]*Completion[int], rounds)
	for i := range hs {
		c, cf := NewCompletion[int]()
		cs[i] = c
		hs[i] = Spawn(rt, Async(func(co *Co) int {
			started.Add(1)
			defer deferred.Add(1)
			v := Await(co, cf)
			resumed.Add(1)
			return v
		}))
	}
	waitFor(t, "every function to start", func() bool { return started.Load() == rounds })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, c := range cs {
			c.Complete(i + 1)
		}
	}()
	for _, h := range hs {
		h.Abort()
	}
	<-done
	ok := int64(0)
	for i, h := range hs {
		v, err := waitHandle(t, h)
		switch {
		case err == nil && v == i+1:
			ok++
		case errors.Is(err, ErrCancelled) && v == 0:
		default:
			t.Fatalf("task %d: %v, %v", i, v, err)
		}
	}
	closeWithin(t, rt)
	if deferred.Load() != rounds || resumed.Load() != ok {
		t.Fatalf("%d deferred calls (want %d), %d functions resumed, %d finished with the value",
			deferred.Load(), rounds, resumed.Load(), ok)
	}
	checkNoLeak(t, base)
}

// Many Async tasks at once on two workers: some return, some panic, some Goexit, some
// nest, some are still suspended when the runtime closes. Every deferred call runs,
// every handle resolves, and the goroutine count comes back once the runtime is closed
// (the workers' kept coroutines included).
func TestHostile7AsyncManyTasksThenClose(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := 10000
	if raceEnabled {
		n = 1200 // the race detector allows 8128 live goroutines
	}
	var started, deferred atomic.Int64
	rel := &trigger{}
	hs := make([]JoinHandle[int], n)
	for i := range hs {
		hs[i] = Spawn(rt, Async(func(co *Co) int {
			started.Add(1)
			defer deferred.Add(1)
			Await(co, YieldNow())
			switch i % 5 {
			case 0:
				panic("boom")
			case 1:
				runtime.Goexit()
			case 2:
				return Await(co, Async(func(inner *Co) int { Await(inner, YieldNow()); return i }))
			case 3:
				return Await(co, rel.future(i)) // still waiting at Close
			}
			return i
		}))
	}
	for i, h := range hs {
		if i%5 == 3 {
			continue
		}
		v, err := waitHandle(t, h)
		var pe *PanicError
		switch i % 5 {
		case 0:
			if !errors.As(err, &pe) || pe.Value != "boom" {
				t.Fatalf("task %d: %v", i, err)
			}
		case 1:
			if !errors.Is(err, ErrGoexit) {
				t.Fatalf("task %d: %v", i, err)
			}
		default:
			if err != nil || v != i {
				t.Fatalf("task %d: %v, %v", i, v, err)
			}
		}
	}
	waitFor(t, "every function to start", func() bool { return started.Load() == int64(n) })
	closeWithin(t, rt)
	for i := 3; i < n; i += 5 {
		if _, err := waitHandle(t, hs[i]); !errors.Is(err, ErrCancelled) {
			t.Fatalf("task %d, waiting at Close: %v", i, err)
		}
	}
	if deferred.Load() != int64(n) {
		t.Fatalf("%d of %d deferred calls ran", deferred.Load(), n)
	}
	checkNoLeak(t, base)
}

// Close while Async functions wait in Await on every kind of future (a timer, a handle,
// a Completion, a nested Async function, a select, a future that never wakes), some
// with deferred calls that await, one driven by BlockOn on a goroutine of its own, and
// one whose function started the shutdown itself: every deferred call runs, BlockOn
// returns ErrRuntimeClosed, and no goroutine is left.
func TestHostile7AsyncCloseWhileParked(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var started, deferred atomic.Int64
	_, never := NewCompletion[int]()
	waits := []func(co *Co) int{
		func(co *Co) int { Await(co, Sleep(time.Hour)); return 0 },
		func(co *Co) int { return Await(co, Spawn(co, Pending[int]())).Value },
		func(co *Co) int { return Await(co, never) },
		func(co *Co) int {
			return Await(co, Async(func(inner *Co) int {
				defer deferred.Add(1)
				return Await(inner, Pending[int]())
			}))
		},
		func(co *Co) int { return Await(co, Select2(Sleep(time.Hour), Pending[int]())).V2 },
		func(co *Co) int {
			defer func() { Await(co, Sleep(time.Millisecond)) }()
			return Await(co, Pending[int]())
		},
	}
	const copies = 20
	for range copies {
		for _, w := range waits {
			Spawn(rt, Async(func(co *Co) int {
				defer deferred.Add(1)
				started.Add(1)
				return w(co)
			})).Detach()
		}
	}
	blockOnDone := make(chan error, 1)
	go func() {
		_, err := BlockOn(rt, Async(func(co *Co) int {
			defer deferred.Add(1)
			started.Add(1)
			return Await(co, Pending[int]())
		}))
		blockOnDone <- err
	}()
	total := int64(copies*len(waits) + 2)
	// The function that starts the shutdown goes last: a task the shutdown drops before
	// its first poll never runs its function (see Async).
	waitFor(t, "every function to start", func() bool { return started.Load() == total-1 })
	self := Spawn(rt, Async(func(co *Co) int {
		defer deferred.Add(1)
		started.Add(1)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = co.Context().Runtime().Shutdown(ctx) // starts the shutdown, does not wait
		return Await(co, Pending[int]())
	}))
	waitFor(t, "the last function to start", func() bool { return started.Load() == total })
	closeWithin(t, rt)
	select {
	case err := <-blockOnDone:
		if !errors.Is(err, ErrRuntimeClosed) {
			t.Fatalf("BlockOn: %v, want ErrRuntimeClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("BlockOn did not return after Close")
	}
	if _, err := waitHandle(t, self); !errors.Is(err, ErrCancelled) {
		t.Fatalf("the function that started the shutdown: %v", err)
	}
	if want := total + copies; deferred.Load() != want { // + the nested functions
		t.Fatalf("%d deferred calls ran, want %d", deferred.Load(), want)
	}
	checkNoLeak(t, base)
}
