package blitzio

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestShutdownGuardsAndHooks(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := NewShutdown()
	var order []string
	s.OnShutdown(func(ctx context.Context) error { order = append(order, "server"); return nil })
	s.OnShutdown(func(ctx context.Context) error { order = append(order, "runtime"); return rt.Shutdown(ctx) })

	// Three requests in flight, each holding a guard until it has slept.
	var handles []JoinHandle[struct{}]
	for i := range 3 {
		g, err := s.Guard()
		if err != nil {
			t.Fatal(err)
		}
		d := time.Duration(i+1) * 5 * time.Millisecond
		handles = append(handles, Spawn(rt, Map(Sleep(d), func(struct{}) struct{} {
			g.Release()
			g.Release() // a second Release does nothing
			return struct{}{}
		})))
	}
	if s.InFlight() != 3 {
		t.Fatalf("InFlight = %d, want 3", s.InFlight())
	}
	s.Trigger()
	s.Trigger()
	if _, err := s.Guard(); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("Guard after Trigger: %v, want ErrShuttingDown", err)
	}
	if !errors.Is(context.Cause(s.Context()), ErrShuttingDown) {
		t.Fatalf("Context cause = %v", context.Cause(s.Context()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	for i, h := range handles {
		if _, err := h.Wait(); err != nil {
			t.Errorf("request %d did not finish before the runtime shut down: %v", i, err)
		}
	}
	if len(order) != 2 || order[0] != "server" || order[1] != "runtime" {
		t.Fatalf("hooks ran as %v", order)
	}
}

func TestShutdownWaitDeadlineReportsInFlight(t *testing.T) {
	s := NewShutdown()
	g, _ := s.Guard()
	defer g.Release()
	hookCtxErr := make(chan error, 1)
	s.OnShutdown(func(ctx context.Context) error { hookCtxErr <- ctx.Err(); return errors.New("hook failed") })
	s.Trigger()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	err := s.Wait(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || err == nil {
		t.Fatalf("Wait past its deadline: %v, want DeadlineExceeded", err)
	}
	if got := err.Error(); !strings.Contains(got, "1 guarded operations still in flight") || !strings.Contains(got, "hook failed") {
		t.Fatalf("Wait error %q should name the work in flight and the hook's error", got)
	}
	if e := <-hookCtxErr; e == nil {
		t.Fatal("the hook ran with a live context after the deadline passed")
	}
}

// TestShutdownDoneInSelectLoop races Done against a ready future many times (an accept
// loop): dropped Done futures must not pile up, and Done wakes a waiting task.
func TestShutdownDoneInSelectLoop(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s := NewShutdown()
	h := Spawn(rt, Async(func(co *Co) int {
		n := 0
		for {
			sel := Await(co, Select2(s.Done(), YieldNow()))
			if sel.Index == 0 {
				return n
			}
			n++
		}
	}))
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	pending := len(s.waiters)
	s.mu.Unlock()
	if pending > 1 {
		t.Fatalf("%d Done waiters registered by one loop: dropped ones were not removed", pending)
	}
	s.Trigger()
	done := make(chan struct{})
	go func() { h.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("watchdog: Done did not stop the loop")
	}
}
