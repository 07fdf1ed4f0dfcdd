package blitzio

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// JoinSet.Spawn used to return the task's full JoinHandle. The set reads each task's
// result through that handle, so a caller who Detached it (or awaited it elsewhere)
// broke the set: Next could only panic on reaching that task. Like Tokio's
// JoinSet::spawn, Spawn must return a handle that can only abort and query the task: no
// Detach, Wait, Poll, or any other way to read or release the result.
func TestHostile9JoinSetSpawnReturnsAbortOnlyHandle(t *testing.T) {
	out := reflect.TypeOf((*JoinSet[int]).Spawn).Out(0)
	if out.Name() != "AbortHandle" {
		t.Fatalf("JoinSet.Spawn returns %v, want AbortHandle", out)
	}
	for _, m := range []string{"Detach", "Wait", "Poll"} {
		if _, ok := out.MethodByName(m); ok {
			t.Errorf("the handle JoinSet.Spawn returns (%v) has method %s, which would let a caller read or release the result the set owns", out, m)
		}
	}
	for _, m := range []string{"Abort", "IsFinished"} {
		if _, ok := out.MethodByName(m); !ok {
			t.Errorf("the handle JoinSet.Spawn returns (%v) lacks method %s", out, m)
		}
	}
}

// waitNextWithin is set.WaitNext with a watchdog that fails the test clearly.
func waitNextWithin[T any](t *testing.T, set *JoinSet[T], what string) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := set.WaitNext(); ch <- res{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out in JoinSet.WaitNext waiting for %s (Len %d)", what, set.Len())
		panic("unreachable")
	}
}

// Abort through the handle Spawn returned cancels that task only: Next returns it with
// ErrCancelled, IsFinished goes from false to true, and the other members are untouched.
func TestHostile9JoinSetAbortHandleAbortsMember(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var set JoinSet[int]
	var drops atomic.Int64
	h := set.Spawn(rt, WithDrop(Pending[int](), func() { drops.Add(1) }))
	c, fut := NewCompletion[int]()
	other := set.Spawn(rt, fut)
	if h.IsFinished() {
		t.Fatal("IsFinished true for a pending task before Abort")
	}
	h.Abort()
	v, err := waitNextWithin(t, &set, "the aborted task")
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("Next after Abort = (%v, %v), want ErrCancelled", v, err)
	}
	if !h.IsFinished() {
		t.Fatal("IsFinished false after Next returned the aborted task")
	}
	if drops.Load() != 1 {
		t.Fatalf("the aborted task's future was dropped %d times, want 1", drops.Load())
	}
	if other.IsFinished() {
		t.Fatal("the other member finished although only the first was aborted")
	}
	if n := set.Len(); n != 1 {
		t.Fatalf("Len = %d after the aborted task was returned, want 1", n)
	}
	c.Complete(9)
	if v, err := waitNextWithin(t, &set, "the other task"); err != nil || v != 9 {
		t.Fatalf("the other member: (%v, %v), want (9, nil)", v, err)
	}
	if !other.IsFinished() {
		t.Fatal("IsFinished false after the task completed and was returned")
	}
	h.Abort() // after the task was taken from the set: nothing happens
	if _, err := set.WaitNext(); !errors.Is(err, ErrJoinSetEmpty) {
		t.Fatalf("WaitNext on the drained set = %v, want ErrJoinSetEmpty", err)
	}
}

// Abort after the task completed does nothing: the set still returns the task's value.
func TestHostile9JoinSetAbortHandleAfterCompletionIsNoop(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var set JoinSet[int]
	h := set.Spawn(rt, Ready(5))
	waitFor(t, "the task to finish", h.IsFinished)
	h.Abort()
	h.Abort()
	if v, err := waitNextWithin(t, &set, "the completed task"); err != nil || v != 5 {
		t.Fatalf("Next after Abort of a finished task = (%v, %v), want (5, nil)", v, err)
	}
	if !h.IsFinished() {
		t.Fatal("IsFinished went back to false")
	}
	h.Abort() // and after it was returned
	if !set.IsEmpty() {
		t.Fatalf("Len %d after the only task was returned", set.Len())
	}
}

// The handles are used at once from plain goroutines and from tasks of another runtime
// while the set's tasks complete on their own runtime and the set is drained: the race
// detector checks the handle, and every task is returned exactly once, a pending one
// always with ErrCancelled.
func TestHostile9JoinSetAbortHandleConcurrentUse(t *testing.T) {
	rt1 := newRT(t, Config{Workers: 2})
	rt2 := newRT(t, Config{Workers: 2})
	var set JoinSet[int]
	const n = 300
	type abortIsFinished interface {
		Abort()
		IsFinished() bool
	}
	hs := make([]abortIsFinished, n)
	for i := range n {
		switch i % 3 {
		case 0:
			hs[i] = set.Spawn(rt1, Pending[int]())
		case 1:
			hs[i] = set.Spawn(rt1, Lazy(func() int { return i }))
		default:
			hs[i] = set.Spawn(rt1, Map(YieldNow(), func(struct{}) int { return i }))
		}
	}
	var wg sync.WaitGroup
	var finishedSeen atomic.Int64
	// Goroutines abort every other task and poll IsFinished on all.
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 4 {
				if i%3 == 0 || i%2 == 0 {
					hs[i].Abort()
				}
				if hs[i].IsFinished() {
					finishedSeen.Add(1)
				}
			}
		}()
	}
	// Tasks on the other runtime do the same from worker goroutines.
	rt2Tasks := make([]JoinHandle[struct{}], 4)
	for g := range rt2Tasks {
		rt2Tasks[g] = Spawn(rt2, Lazy(func() struct{} {
			for i := n - 1 - g; i >= 0; i -= 4 {
				if i%3 == 0 || i%5 == 0 {
					hs[i].Abort()
				}
				if hs[i].IsFinished() {
					finishedSeen.Add(1)
				}
			}
			return struct{}{}
		}))
	}
	got := 0
	for {
		v, err := waitNextWithin(t, &set, "a member")
		if errors.Is(err, ErrJoinSetEmpty) {
			break
		}
		got++
		if err != nil && !errors.Is(err, ErrCancelled) {
			t.Fatalf("member result error %v, want nil or ErrCancelled", err)
		}
		if err == nil && v%3 == 0 {
			t.Fatalf("a Pending task returned a value %d", v)
		}
	}
	if got != n {
		t.Fatalf("got %d results, want %d", got, n)
	}
	wgWait(t, &wg, "the aborting goroutines")
	for _, h := range rt2Tasks {
		if _, err := waitHandle(t, h); err != nil {
			t.Fatalf("an aborting task on the other runtime: %v", err)
		}
	}
	for i, h := range hs {
		if !h.IsFinished() {
			t.Fatalf("task %d not finished after the set returned it", i)
		}
	}
}

// memberHandle returns the JoinHandle that set holds for the task of a, for tests that
// need to read a member's result or await its handle directly (JoinSet.Spawn gives out
// only the AbortHandle).
func memberHandle[T any](t testing.TB, set *JoinSet[T], a AbortHandle) JoinHandle[T] {
	t.Helper()
	set.mu.Lock()
	defer set.mu.Unlock()
	for _, m := range set.live {
		if &m.h.c.header == a.h {
			return m.h
		}
	}
	t.Fatal("memberHandle: the task is not in the set")
	panic("unreachable")
}

// JoinHandle.AbortHandle gives an abort-only handle to any task: Abort through it is
// seen by the JoinHandle as ErrCancelled, IsFinished agrees with the JoinHandle's, and it
// keeps working after the JoinHandle is detached.
func TestHostile9JoinHandleAbortHandle(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	h := Spawn(rt, Pending[int]())
	a := h.AbortHandle()
	if a.IsFinished() || h.IsFinished() {
		t.Fatal("a pending task reported finished")
	}
	a.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("the JoinHandle after AbortHandle.Abort: %v, want ErrCancelled", err)
	}
	if !a.IsFinished() {
		t.Fatal("AbortHandle.IsFinished false after the task was cancelled")
	}
	a.Abort() // finished: nothing happens

	// After Detach, the AbortHandle (taken before or after) still cancels the task.
	var drops atomic.Int64
	h2 := Spawn(rt, WithDrop(Pending[int](), func() { drops.Add(1) }))
	before := h2.AbortHandle()
	h2.Detach()
	after := h2.AbortHandle()
	before.Abort()
	waitFor(t, "the detached task to be cancelled", after.IsFinished)
	if drops.Load() != 1 {
		t.Fatalf("the detached task's future was dropped %d times, want 1", drops.Load())
	}
}

// A SpawnBlocking job still queued behind a busy pool is cancelled at once through an
// AbortHandle, as through its JoinHandle.
func TestHostile9AbortHandleQueuedBlockingJob(t *testing.T) {
	rt := newRT(t, Config{Workers: 1, MaxBlockingThreads: 1})
	release := make(chan struct{})
	busy := SpawnBlocking(rt, func() int { <-release; return 1 })
	var ran atomic.Bool
	queued := SpawnBlocking(rt, func() int { ran.Store(true); return 2 })
	queued.AbortHandle().Abort()
	if _, err := waitHandleFor(t, queued, "the aborted queued job"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("queued job after AbortHandle.Abort: %v, want ErrCancelled", err)
	}
	close(release)
	if v, err := waitHandle(t, busy); err != nil || v != 1 {
		t.Fatalf("busy job: (%v, %v), want (1, nil)", v, err)
	}
	if ran.Load() {
		t.Fatal("the aborted queued job ran")
	}
}

// The zero AbortHandle panics with a message that names it.
func TestHostile9ZeroAbortHandlePanics(t *testing.T) {
	var a AbortHandle
	for name, f := range map[string]func(){
		"Abort":      a.Abort,
		"IsFinished": func() { a.IsFinished() },
	} {
		func() {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if want := "AbortHandle." + name + " called on the zero AbortHandle"; !strings.Contains(msg, want) {
					t.Errorf("zero AbortHandle.%s panicked with %v, want a message containing %q", name, r, want)
				}
			}()
			f()
		}()
	}
	var h JoinHandle[int]
	func() {
		defer func() {
			if msg, _ := recover().(string); !strings.Contains(msg, "JoinHandle.AbortHandle called on the zero JoinHandle") {
				t.Errorf("zero JoinHandle.AbortHandle panicked with %q", msg)
			}
		}()
		h.AbortHandle()
	}()
}
