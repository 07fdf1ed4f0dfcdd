package blitzio

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A JoinSet registers each member as a waiter on the task's JoinHandle. A handle awaited
// by many waiters wakes its whole list once in a while (a spurious wake-up that every
// live waiter answers by re-registering); the set must not take that for the task's
// completion. Before the fix, Next returned the zero value with a nil error for a task
// that was still running, and Len dropped to 0.
func TestHostile8JoinSetSpuriousWakeOfMember(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var set JoinSet[int]
	c, fut := NewCompletion[int]()
	h := memberHandle(t, &set, set.Spawn(rt, fut))
	// Many distinct waiters on the handle (tasks in a select loop, goroutines in Wait):
	// enough to make the handle's waiter list flush. Spawn returns an AbortHandle now, so
	// no user code can do this any more; the member's handle is taken from the set's
	// internals to keep the set's own check covered.
	for range 4 * joinMinPrune {
		cx := NewContext(rt, WakerFunc(func() {}))
		if _, ok := h.Poll(cx); ok {
			t.Fatal("the handle of a pending task was ready")
		}
	}
	cx := NewContext(rt, WakerFunc(func() {}))
	if r, ok := set.Next().Poll(cx); ok {
		t.Fatalf("JoinSet.Next was ready (%v, %v) while its only task is still pending", r.Value, r.Err)
	}
	if n := set.Len(); n != 1 {
		t.Fatalf("Len = %d while the task is still pending, want 1", n)
	}
	c.Complete(7)
	done := make(chan Result[int], 1)
	go func() { v, err := set.WaitNext(); done <- Result[int]{Value: v, Err: err} }()
	select {
	case r := <-done:
		if r.Err != nil || r.Value != 7 {
			t.Fatalf("WaitNext = (%v, %v), want (7, nil)", r.Value, r.Err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitNext did not return after the task completed (its member was lost)")
	}
	if !set.IsEmpty() {
		t.Fatalf("set not empty after the only task was returned: Len %d", set.Len())
	}
}

// The same with goroutines blocked in Wait on the member's handle (which JoinSet.Spawn
// used to return; it returns an AbortHandle now, so the handle is taken from the set).
func TestHostile8JoinSetManyWaitersOnMemberHandle(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var set JoinSet[int]
	c, fut := NewCompletion[int]()
	h := memberHandle(t, &set, set.Spawn(rt, fut))
	const n = 3 * joinMinPrune
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := h.Wait(); err != nil || v != 5 {
				bad.Add(1)
			}
		}()
	}
	// Whatever the interleaving, the set must not report the task before it completes.
	cx := NewContext(rt, WakerFunc(func() {}))
	next := set.Next()
	for range 200 {
		if r, ok := next.Poll(cx); ok {
			t.Fatalf("JoinSet.Next ready (%v, %v) before the task completed", r.Value, r.Err)
		}
		time.Sleep(100 * time.Microsecond)
	}
	c.Complete(5)
	waitFor(t, "Next to be ready after completion", func() bool {
		_, ok := next.Poll(NewContext(rt, WakerFunc(func() {})))
		return ok
	})
	if r, _ := next.Poll(cx); r.Err != nil || r.Value != 5 {
		t.Fatalf("Next = (%v, %v), want (5, nil)", r.Value, r.Err)
	}
	wgWait(t, &wg, "the Wait goroutines")
	if bad.Load() != 0 {
		t.Fatalf("%d Wait calls saw a wrong result", bad.Load())
	}
}

// A waiter of Next whose Waker panics must not stop the other waiters from being woken
// (the JoinHandle gives its waiters the same guarantee): the set had already forgotten
// them, so they would sleep forever.
func TestHostile8JoinSetPanickingWakerDoesNotStrandOthers(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var set JoinSet[int]
	c, fut := NewCompletion[int]()
	set.Spawn(rt, fut)
	// First a waiter whose waker panics, then a goroutine in WaitNext.
	bad := NewContext(rt, WakerFunc(func() { panic("hostile8: waker panics") }))
	if _, ok := set.Next().Poll(bad); ok {
		t.Fatal("Next ready before the task completed")
	}
	got := make(chan Result[int], 1)
	go func() { v, err := set.WaitNext(); got <- Result[int]{Value: v, Err: err} }()
	waitFor(t, "WaitNext to register", func() bool {
		set.mu.Lock()
		defer set.mu.Unlock()
		return len(set.waiters) == 2
	})
	func() {
		defer func() { recover() }() // a completer that is a plain goroutine may see it
		c.Complete(3)
	}()
	select {
	case r := <-got:
		if r.Err != nil || r.Value != 3 {
			t.Fatalf("WaitNext = (%v, %v), want (3, nil)", r.Value, r.Err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitNext was never woken: the panicking waker before it stranded it")
	}
}

// Drop of a set with pollers of Next wakes them all, even past a waker that panics.
func TestHostile8JoinSetDropPanickingWaker(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var set JoinSet[int]
	set.Spawn(rt, Pending[int]())
	bad := NewContext(rt, WakerFunc(func() { panic("hostile8: waker panics") }))
	if _, ok := set.Next().Poll(bad); ok {
		t.Fatal("Next ready")
	}
	got := make(chan error, 1)
	go func() { _, err := set.WaitNext(); got <- err }()
	waitFor(t, "WaitNext to register", func() bool {
		set.mu.Lock()
		defer set.mu.Unlock()
		return len(set.waiters) == 2
	})
	func() {
		defer func() { recover() }()
		set.Drop()
	}()
	select {
	case err := <-got:
		if !errors.Is(err, ErrJoinSetEmpty) {
			t.Fatalf("WaitNext after Drop = %v, want ErrJoinSetEmpty", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitNext was never woken by Drop")
	}
}

// Hostile uses that must keep working: a set fed by two runtimes, one of which closes;
// AbortAll racing completions; Len consistent with what Next returns; goroutines back
// to baseline.
func TestHostile8JoinSetTwoRuntimesAbortAllRace(t *testing.T) {
	base := runtime.NumGoroutine()
	rt1, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	rt2, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var set JoinSet[int]
	const n = 200
	for i := range n {
		sp := rt1
		if i%2 == 1 {
			sp = rt2
		}
		if i%3 == 0 {
			set.Spawn(sp, Pending[int]())
		} else {
			set.Spawn(sp, Lazy(func() int { return i }))
		}
	}
	go set.AbortAll()
	if err := rt2.Close(); err != nil {
		t.Fatal(err)
	}
	got := 0
	for {
		before := set.Len()
		done := make(chan struct{})
		var r Result[int]
		go func() { r.Value, r.Err = set.WaitNext(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("WaitNext hung with Len %d after %d results", set.Len(), got)
		}
		if errors.Is(r.Err, ErrJoinSetEmpty) {
			if before != 0 {
				t.Fatalf("ErrJoinSetEmpty with Len %d before", before)
			}
			break
		}
		got++
		if r.Err == nil && r.Value%3 == 0 {
			t.Fatalf("a Pending task returned a value %d", r.Value)
		}
	}
	if got != n {
		t.Fatalf("got %d results, want %d", got, n)
	}
	if err := rt1.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, base)
}

func wgWait(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
