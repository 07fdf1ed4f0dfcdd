//go:build unix

package blitzio

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many tasks and goroutines take and release guards at random while one triggers; Done
// and Idle futures on many tasks (some dropped by a Timeout and re-awaited) all finish;
// Wait, called twice at once with an already expired context while a guard is still
// held, returns promptly with the count and ctx's error; once the last guard goes, Idle
// is ready and a new Wait returns nil.
func TestHostile3ShutdownConcurrentGuardsAndWaits(t *testing.T) {
	rt := fileRT(t)
	s := NewShutdown()
	var hookRuns atomic.Int32
	s.OnShutdown(func(ctx context.Context) error { hookRuns.Add(1); return nil })
	const n = 200
	var waiters []JoinHandle[struct{}]
	for i := range n {
		var f func() Future[struct{}]
		if i%2 == 0 {
			f = s.Done
		} else {
			f = s.Idle
		}
		waiters = append(waiters, Spawn(rt, Async(func(co *Co) struct{} {
			for Await(co, Timeout(time.Duration(rand.IntN(500))*time.Microsecond, f())).Err != nil {
			}
			return struct{}{}
		})))
	}
	held, err := s.Guard() // released only at the end
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var refused atomic.Int32
	for i := range n {
		wg.Add(1)
		work := func() {
			defer wg.Done()
			g, err := s.Guard()
			if err != nil {
				if !errors.Is(err, ErrShuttingDown) {
					t.Errorf("Guard: %v", err)
				}
				refused.Add(1)
				return
			}
			g.Release()
			g.Release() // idempotent
		}
		if i%2 == 0 {
			go work()
		} else {
			Spawn(rt, Lazy(func() struct{} { work(); return struct{}{} }))
		}
		if i == n/2 {
			s.Trigger()
			s.Trigger()
		}
	}
	wg.Wait()
	if !s.Triggered() || refused.Load() == 0 {
		t.Fatalf("Triggered %v, refused %d", s.Triggered(), refused.Load())
	}
	if got := s.InFlight(); got != 1 {
		t.Fatalf("InFlight = %d, want 1", got)
	}
	for i := 0; i < n; i += 2 {
		hostile3Watch(t, 10*time.Second, "a Done waiter was not woken", func() { waiters[i].Wait() })
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- s.Wait(expired) }()
	}
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "1 guarded") {
				t.Fatalf("Wait with an expired context and a guard held = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Wait with an expired context did not return")
		}
	}
	for i := 1; i < n; i += 2 {
		if waiters[i].IsFinished() {
			t.Fatalf("Idle waiter %d finished with a guard held", i)
		}
	}
	held.Release()
	for i := 1; i < n; i += 2 {
		hostile3Watch(t, 10*time.Second, "an Idle waiter was not woken by the last Release", func() { waiters[i].Wait() })
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("Wait after the last release = %v", err)
	}
	if _, err := s.Guard(); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("Guard after the trigger = %v", err)
	}
	if hookRuns.Load() == 0 {
		t.Fatal("hooks never ran")
	}
	if context.Cause(s.Context()) != ErrShuttingDown {
		t.Fatalf("Context cause = %v", context.Cause(s.Context()))
	}
}

// Runtime.Shutdown at once from plain goroutines (one with an already expired context),
// from a task (expired context: only starts it; live context: the documented panic),
// with file operations and children of the coordinator in flight: every call returns,
// none deadlocks.
func TestHostile3RuntimeShutdownFromEverywhere(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for range 50 {
		Spawn(rt, Async(func(co *Co) struct{} {
			for {
				Await(co, Sleep(time.Duration(rand.IntN(200))*time.Microsecond))
			}
		}))
	}
	panicked := make(chan any, 1)
	h := Spawn(rt, Lazy(func() struct{} {
		defer func() { panicked <- recover() }()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rt.Shutdown(ctx)
		return struct{}{}
	}))
	if p := <-panicked; p == nil || !strings.Contains(p.(string), "cannot block from within a runtime") {
		t.Fatalf("Shutdown with a live context from a task: recovered %v, want the documented panic", p)
	}
	h.Wait()
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	fromTask := Spawn(rt, Lazy(func() error { return rt.Shutdown(expired) }))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := expired
			if i%3 != 0 {
				var c context.CancelFunc
				ctx, c = context.WithTimeout(context.Background(), 20*time.Second)
				defer c()
			}
			errs <- rt.Shutdown(ctx)
		}()
	}
	hostile3Watch(t, 30*time.Second, "concurrent Shutdown calls did not all return", wg.Wait)
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown = %v", err)
		}
	}
	if r, err := fromTask.Wait(); err == nil && r != nil && !errors.Is(r, context.Canceled) {
		t.Errorf("Shutdown from a task with an expired context = %v", r)
	}
}
