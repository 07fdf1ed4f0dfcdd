package blitzio

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// newRT starts a runtime and closes it when the test ends.
func newRT(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	rt, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

// waitFor polls cond until it holds, failing the test with msg after 20 s: tests never
// hang and never assert on timing.
func waitFor(t testing.TB, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", msg)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitHandle waits for h with a watchdog.
func waitHandle[T any](t testing.TB, h JoinHandle[T]) (T, error) {
	t.Helper()
	return waitHandleFor(t, h, "a task")
}

// waitHandleFor waits for h with a watchdog whose failure names what hung.
func waitHandleFor[T any](t testing.TB, h JoinHandle[T], what string) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := h.Wait(); ch <- res{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// checkNoLeak fails if the goroutine count does not return to base.
func checkNoLeak(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutine leak: %d goroutines, want <= %d\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(time.Millisecond)
	}
}

// dropFuture is a future that stays pending forever (it never arranges a wake-up) and
// counts polls and drops.
type dropFuture struct {
	polls, drops *atomic.Int64
}

func (f dropFuture) Poll(*Context) (int, bool) {
	f.polls.Add(1)
	return 0, false
}

func (f dropFuture) Drop() { f.drops.Add(1) }
