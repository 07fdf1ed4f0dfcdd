package blitzio

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostile7Wait calls s.Wait(ctx) on a goroutine of its own and returns its error, or
// fails the test if it has not returned within 20 s. A panic in Wait is returned as a
// failure too; a runtime.Goexit is reported in exited.
func hostile7Wait(t *testing.T, s *Shutdown, ctx context.Context) (err error, exited bool) {
	t.Helper()
	type out struct {
		err    error
		p      any
		exited bool
	}
	ch := make(chan out, 1)
	go func() {
		normal := false
		var o out
		defer func() {
			if !normal {
				if o.p = recover(); o.p == nil {
					o.exited = true
				}
			}
			ch <- o
		}()
		o.err = s.Wait(ctx)
		normal = true
	}()
	select {
	case o := <-ch:
		if o.p != nil {
			t.Fatalf("Shutdown.Wait panicked: %v", o.p)
		}
		return o.err, o.exited
	case <-time.After(20 * time.Second):
		s.Trigger() // let a Wait stuck on the trigger go, so the test binary can end
		t.Fatal("watchdog: Shutdown.Wait did not return within 20s")
		panic("unreachable")
	}
}

func hostile7Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Wait called twice runs the hooks once; the second call returns the same outcome of
// the hooks (their errors), as sync.Once-style callers expect.
func TestHostile7ShutdownWaitTwiceRunsHooksOnce(t *testing.T) {
	s := NewShutdown()
	var runs atomic.Int32
	hookErr := errors.New("hook failed")
	s.OnShutdown(func(context.Context) error { runs.Add(1); return hookErr })
	s.Trigger()
	ctx := hostile7Ctx(t)
	err1, _ := hostile7Wait(t, s, ctx)
	err2, _ := hostile7Wait(t, s, ctx)
	if n := runs.Load(); n != 1 {
		t.Fatalf("hooks ran %d times after two Waits, want once", n)
	}
	if !errors.Is(err1, hookErr) || !errors.Is(err2, hookErr) {
		t.Fatalf("Wait errors %v and %v, want both to report the hook's error", err1, err2)
	}
}

// Many callers at once, from goroutines and blocking-pool jobs: the hooks run once, and
// none of the callers returns before the run has finished.
func TestHostile7ShutdownConcurrentWaitsRunHooksOnce(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	s := NewShutdown()
	var runs, finished atomic.Int32
	var entered sync.WaitGroup
	const n = 16
	entered.Add(n)
	hookErr := errors.New("slow hook failed")
	s.OnShutdown(func(context.Context) error {
		runs.Add(1)
		done := make(chan struct{})
		go func() { entered.Wait(); close(done) }()
		select { // give the other callers time to pile up; not needed for correctness
		case <-done:
		case <-time.After(5 * time.Second):
		}
		time.Sleep(time.Millisecond)
		finished.Add(1)
		return hookErr
	})
	s.OnShutdown(func(context.Context) error { runs.Add(1); return nil })
	s.Trigger()
	ctx := hostile7Ctx(t)
	errs := make(chan error, n)
	for i := range n {
		call := func() struct{} {
			entered.Done()
			err := s.Wait(ctx)
			if finished.Load() != 1 {
				err = errors.Join(err, errors.New("Wait returned before the hooks had finished"))
			}
			errs <- err
			return struct{}{}
		}
		if i%2 == 0 {
			go call()
		} else {
			SpawnBlocking(rt, call)
		}
	}
	for range n {
		select {
		case err := <-errs:
			if !errors.Is(err, hookErr) || strings.Contains(err.Error(), "before the hooks") {
				t.Errorf("Wait = %v, want the slow hook's error, after the hooks finished", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("watchdog: concurrent Waits did not all return")
		}
	}
	if got := runs.Load(); got != 2 {
		t.Fatalf("%d hook calls for 2 hooks and %d concurrent Waits, want 2", got, n)
	}
}

// A later caller waits for the run another Wait started, but only within its own
// context: it does not hang on a hook that takes longer than its deadline.
func TestHostile7ShutdownLaterWaitHonoursItsContext(t *testing.T) {
	s := NewShutdown()
	inHook, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	s.OnShutdown(func(context.Context) error {
		runs.Add(1)
		close(inHook)
		<-release
		return nil
	})
	s.Trigger()
	first := make(chan error, 1)
	go func() { first <- s.Wait(context.Background()) }()
	select {
	case <-inHook:
	case <-time.After(20 * time.Second):
		t.Fatal("watchdog: the first Wait did not run the hook")
	}
	short, cancel := context.WithCancel(context.Background())
	cancel()
	err, _ := hostile7Wait(t, s, short)
	close(release)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a second Wait with a cancelled context while the hooks run = %v, want context.Canceled", err)
	}
	select {
	case err := <-first:
		if err != nil {
			t.Fatalf("first Wait = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watchdog: the first Wait did not return")
	}
	if err, _ := hostile7Wait(t, s, context.Background()); err != nil {
		t.Fatalf("a Wait after the run = %v, want the run's nil", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the hook ran %d times, want once", runs.Load())
	}
}

// A hook that panics: the panic is reported by Wait (a *PanicError carrying the value),
// the hooks after it still run, and a second Wait returns the same report without
// hanging.
func TestHostile7ShutdownHookPanicIsReported(t *testing.T) {
	s := NewShutdown()
	var before, after atomic.Int32
	s.OnShutdown(func(context.Context) error { before.Add(1); return nil })
	s.OnShutdown(func(context.Context) error { panic("hook boom") })
	s.OnShutdown(func(context.Context) error { after.Add(1); return nil })
	s.Trigger()
	ctx := hostile7Ctx(t)
	for i := range 2 {
		err, _ := hostile7Wait(t, s, ctx)
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "hook boom" || len(pe.Stack) == 0 {
			t.Fatalf("Wait %d = %v, want a *PanicError with the hook's value and stack", i, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "hook boom") || !strings.Contains(msg, "shutdown hook 2") {
			t.Fatalf("Wait %d error %q should name the hook and its panic value", i, msg)
		}
	}
	if before.Load() != 1 || after.Load() != 1 {
		t.Fatalf("hooks around the panicking one ran %d and %d times, want once each", before.Load(), after.Load())
	}
}

// A hook that calls runtime.Goexit (t.FailNow in a test): the goroutine that called
// Wait exits, as Goexit says, but the hooks after it still run, and other callers get
// the run's outcome (ErrGoexit) instead of hanging or running the hooks again.
func TestHostile7ShutdownHookGoexit(t *testing.T) {
	s := NewShutdown()
	var goexits, after atomic.Int32
	s.OnShutdown(func(context.Context) error { goexits.Add(1); runtime.Goexit(); return nil })
	s.OnShutdown(func(context.Context) error { after.Add(1); return errors.New("after") })
	s.Trigger()
	ctx := hostile7Ctx(t)
	if _, exited := hostile7Wait(t, s, ctx); !exited {
		t.Fatal("the goroutine whose Wait ran a hook calling runtime.Goexit did not exit")
	}
	err, exited := hostile7Wait(t, s, ctx)
	if exited {
		t.Fatal("a second Wait ran the Goexit hook again")
	}
	if !errors.Is(err, ErrGoexit) || !strings.Contains(err.Error(), "after") {
		t.Fatalf("second Wait = %v, want ErrGoexit and the next hook's error", err)
	}
	if goexits.Load() != 1 || after.Load() != 1 {
		t.Fatalf("hooks ran %d and %d times, want once each", goexits.Load(), after.Load())
	}
}

// A hook that calls Wait on its own Shutdown would wait for itself: the inner call
// panics with a message saying so, which Wait reports; nothing recurses or hangs.
func TestHostile7ShutdownWaitFromItsOwnHook(t *testing.T) {
	s := NewShutdown()
	var depth, runs atomic.Int32
	s.OnShutdown(func(ctx context.Context) error {
		runs.Add(1)
		if depth.Add(1) > 1 {
			return errors.New("the hooks were run again by the hook's own Wait")
		}
		defer depth.Add(-1)
		return s.Wait(ctx)
	})
	s.Trigger()
	err, _ := hostile7Wait(t, s, hostile7Ctx(t))
	if err == nil || !strings.Contains(err.Error(), "its own hook") {
		t.Fatalf("Wait whose hook calls Wait = %v, want the inner Wait's panic reported", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the hook ran %d times, want once", runs.Load())
	}
}

// A hook registered by a hook, or while Wait drains the work in flight, runs too.
func TestHostile7ShutdownHookRegisteredLateRuns(t *testing.T) {
	s := NewShutdown()
	var inner atomic.Int32
	s.OnShutdown(func(context.Context) error {
		s.OnShutdown(func(context.Context) error { inner.Add(1); return nil })
		return nil
	})
	g, err := s.Guard()
	if err != nil {
		t.Fatal(err)
	}
	s.Trigger()
	done := make(chan error, 1)
	go func() { done <- s.Wait(context.Background()) }()
	var drained atomic.Int32
	s.OnShutdown(func(context.Context) error { drained.Add(1); return nil })
	g.Release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watchdog: Wait did not return")
	}
	if inner.Load() != 1 || drained.Load() != 1 {
		t.Fatalf("hook registered by a hook ran %d times, one registered during the drain %d times; want once each",
			inner.Load(), drained.Load())
	}
}

// Wait honours its context before the trigger too: a cancelled context ends the wait
// for a trigger that may never come; the hooks run at a later Wait after the trigger.
func TestHostile7ShutdownWaitContextBeforeTrigger(t *testing.T) {
	s := NewShutdown()
	var runs atomic.Int32
	s.OnShutdown(func(context.Context) error { runs.Add(1); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(time.Millisecond); cancel() }()
	err, _ := hostile7Wait(t, s, ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait cancelled before the trigger = %v, want context.Canceled", err)
	}
	if runs.Load() != 0 {
		t.Fatal("the hooks ran without a trigger")
	}
	s.Trigger()
	if err, _ := hostile7Wait(t, s, hostile7Ctx(t)); err != nil || runs.Load() != 1 {
		t.Fatalf("Wait after the trigger = %v, hooks ran %d times", err, runs.Load())
	}
}

// Wait with a live context from a task's code (a worker goroutine) or inside an Async
// function would block the runtime: it panics with the package's "cannot block from
// within a runtime" message, as BlockOn and Runtime.Shutdown do. With a cancelled
// context it does not block, so it is allowed (as Runtime.Shutdown is).
func TestHostile7ShutdownWaitFromTask(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	s := NewShutdown()
	var runs atomic.Int32
	s.OnShutdown(func(context.Context) error { runs.Add(1); return nil })
	live := hostile7Ctx(t)
	check := func(name string, h JoinHandle[any]) {
		t.Helper()
		done := make(chan any, 1)
		go func() { p, _ := h.Wait(); done <- p }()
		select {
		case p := <-done:
			if msg, _ := p.(string); !strings.Contains(msg, "cannot block from within a runtime") || !strings.Contains(msg, "Shutdown.Wait") {
				t.Fatalf("%s: recovered %v, want the \"cannot block from within a runtime\" panic naming Shutdown.Wait", name, p)
			}
		case <-time.After(20 * time.Second):
			s.Trigger() // let the blocked worker go
			t.Fatalf("watchdog: %s blocked its worker", name)
		}
	}
	check("Wait in a task", Spawn(rt, Lazy(func() any { return hostile7Recover(func() { s.Wait(live) }) })))
	check("Wait in an Async function", Spawn(rt, Async(func(co *Co) any { return hostile7Recover(func() { s.Wait(live) }) })))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	h := Spawn(rt, Lazy(func() error { return s.Wait(cancelled) }))
	r, err := waitHandle(t, h)
	if err != nil || !errors.Is(r, context.Canceled) {
		t.Fatalf("Wait with a cancelled context in a task, before the trigger = %v %v, want context.Canceled", r, err)
	}
	s.Trigger()
	h = Spawn(rt, Lazy(func() error { return s.Wait(cancelled) }))
	if r, err := waitHandle(t, h); err != nil || r != nil {
		t.Fatalf("Wait with a cancelled context in a task, after the trigger, nothing in flight = %v %v", r, err)
	}
	if runs.Load() != 1 {
		t.Fatalf("hooks ran %d times, want once", runs.Load())
	}
	//lint:ignore SA1012 a nil context is the misuse under test
	if p := hostile7Recover(func() { s.Wait(nil) }); p == nil || !strings.Contains(p.(string), "nil context") {
		t.Fatalf("Wait(nil): recovered %v, want a panic naming the nil context", p)
	}
}

// The zero Shutdown is ready to use, as the zero values of sync's types and
// http.Server are; a nil *WorkGuard (what Guard returns with its error) may be
// released, so `g, err := s.Guard(); defer g.Release()` does not crash.
func TestHostile7ShutdownZeroValue(t *testing.T) {
	var s Shutdown
	if p := hostile7Recover(func() {
		var runs atomic.Int32
		s.OnShutdown(func(context.Context) error { runs.Add(1); return nil })
		g, err := s.Guard()
		if err != nil {
			t.Fatal(err)
		}
		if s.Context().Err() != nil {
			t.Error("the zero Shutdown's Context is done before the trigger")
		}
		s.Trigger()
		if context.Cause(s.Context()) != ErrShuttingDown {
			t.Errorf("Context cause after the trigger = %v", context.Cause(s.Context()))
		}
		g2, err := s.Guard()
		if !errors.Is(err, ErrShuttingDown) || g2 != nil {
			t.Errorf("Guard after the trigger = %v, %v", g2, err)
		}
		g2.Release() // a nil guard: nothing to release
		g.Release()
		var zero WorkGuard
		zero.Release()
		if err, _ := hostile7Wait(t, &s, hostile7Ctx(t)); err != nil || runs.Load() != 1 {
			t.Errorf("Wait = %v, hooks ran %d times", err, runs.Load())
		}
	}); p != nil {
		t.Fatalf("the zero Shutdown panicked: %v", p)
	}
}

// hostile7Recover calls f and returns what it panicked with (nil if it returned).
func hostile7Recover(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}
