package blitzio

import (
	"context"
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

// Regression tests for the runtime defects of issue 9 (items 4, 10, 11, 12 and 19).

// watchdog runs f and fails the test with a goroutine dump if it has not returned after
// d: a regression here is a hang, and the test must say so instead of hanging.
func watchdog(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("hung: %s did not finish in %v\n%s", what, d, buf[:n])
	}
}

// newRTLeakOnFailure is newRT for tests whose failure leaves a worker blocked for ever
// (the deadlocks they check for): then the runtime is leaked instead of closed, so the
// failure is reported instead of a hang in the cleanup.
func newRTLeakOnFailure(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			closeWithin(t, rt)
		}
	})
	return rt
}

// closeWithin closes rt under a watchdog.
func closeWithin(t *testing.T, rt *Runtime) {
	t.Helper()
	watchdog(t, 10*time.Second, "Close", func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

// trigger is a future that stays pending until fire is called.
type trigger struct {
	mu    sync.Mutex
	fired bool
	ws    []Waker
}

func (tr *trigger) fire() {
	tr.mu.Lock()
	tr.fired = true
	ws := tr.ws
	tr.ws = nil
	tr.mu.Unlock()
	for _, w := range ws {
		w.Wake()
	}
}

func (tr *trigger) future(v int) Future[int] {
	return PollFn(func(cx *Context) (int, bool) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if tr.fired {
			return v, true
		}
		tr.ws = append(tr.ws, cx.Waker())
		return 0, false
	})
}

// ---- item 4: runtime.Goexit ----

// TestGoexitInPollResolvesHandleAndKeepsWorker: a task whose Poll calls runtime.Goexit
// (what t.Fatal does) completes with ErrGoexit, and the only worker keeps running tasks.
func TestGoexitInPollResolvesHandleAndKeepsWorker(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // more than once: the replacement worker must survive it too
		h := Spawn(rt, PollFn(func(*Context) (int, bool) { runtime.Goexit(); return 0, true }))
		watchdog(t, 10*time.Second, "JoinHandle of a task that called Goexit in Poll", func() {
			if _, err := h.Wait(); !errors.Is(err, ErrGoexit) {
				t.Errorf("err = %v, want ErrGoexit", err)
			}
		})
		watchdog(t, 10*time.Second, "a task after a Goexit (worker replaced)", func() {
			if v, err := Spawn(rt, Ready(7)).Wait(); v != 7 || err != nil {
				t.Errorf("next task: %v, %v", v, err)
			}
		})
	}
	// A task awaiting the exited task's handle is woken (through the worker's LIFO slot).
	h := Spawn(rt, PollFn(func(*Context) (int, bool) { runtime.Goexit(); return 0, true }))
	aw := Spawn(rt, h)
	watchdog(t, 10*time.Second, "a task awaiting the exited task", func() {
		if r, err := aw.Wait(); err != nil || !errors.Is(r.Err, ErrGoexit) {
			t.Errorf("awaiter: %v, %v", r, err)
		}
	})
	closeWithin(t, rt)
}

type goexitDrop struct{ polled *atomic.Bool }

func (g goexitDrop) Poll(*Context) (int, bool) { g.polled.Store(true); return 0, false }
func (goexitDrop) Drop()                       { runtime.Goexit() }

// TestGoexitInDrop: a future whose Drop calls runtime.Goexit, dropped by Abort on a
// worker and by Shutdown: every handle resolves with ErrGoexit (and ErrCancelled), the
// worker survives, and Close returns.
func TestGoexitInDrop(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var polled atomic.Bool
	h := Spawn[goexitDrop, int](rt, goexitDrop{&polled})
	waitFor(t, "first poll", polled.Load)
	h.Abort()
	watchdog(t, 10*time.Second, "handle of an aborted task whose Drop called Goexit", func() {
		_, err := h.Wait()
		if !errors.Is(err, ErrGoexit) || !errors.Is(err, ErrCancelled) {
			t.Errorf("err = %v, want ErrGoexit and ErrCancelled", err)
		}
	})
	watchdog(t, 10*time.Second, "a task after a Goexit in Drop", func() {
		if v, err := Spawn(rt, Ready(1)).Wait(); v != 1 || err != nil {
			t.Errorf("next task: %v, %v", v, err)
		}
	})
	// Shutdown drops several such tasks and a plain one.
	var hs []JoinHandle[int]
	for i := 0; i < 3; i++ {
		var p atomic.Bool
		hs = append(hs, Spawn[goexitDrop, int](rt, goexitDrop{&p}))
	}
	var polls, drops atomic.Int64
	plain := Spawn[dropFuture, int](rt, dropFuture{&polls, &drops})
	closeWithin(t, rt)
	for i, h := range hs {
		if _, err := h.Wait(); !errors.Is(err, ErrGoexit) {
			t.Errorf("task %d dropped by Shutdown: %v, want ErrGoexit", i, err)
		}
	}
	if _, err := plain.Wait(); !errors.Is(err, ErrCancelled) || errors.Is(err, ErrGoexit) {
		t.Errorf("plain task: %v, want ErrCancelled only", err)
	}
}

// TestGoexitInSpawnBlocking: a blocking job that calls runtime.Goexit resolves its
// handle with ErrGoexit; the pool (capped at one goroutine) keeps running jobs, and
// Shutdown finishes.
func TestGoexitInSpawnBlocking(t *testing.T) {
	rt, err := New(Config{Workers: 1, MaxBlockingThreads: 1, BlockingKeepAlive: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		h := SpawnBlocking(rt, func() int { runtime.Goexit(); return 1 })
		next := SpawnBlocking(rt, func() int { return 2 })
		watchdog(t, 10*time.Second, "blocking jobs around a Goexit", func() {
			if _, err := h.Wait(); !errors.Is(err, ErrGoexit) {
				t.Errorf("err = %v, want ErrGoexit", err)
			}
			if v, err := next.Wait(); v != 2 || err != nil {
				t.Errorf("next job: %v, %v", v, err)
			}
		})
	}
	closeWithin(t, rt)
	if n := rt.blocking.threadCount(); n != 0 {
		t.Errorf("%d blocking goroutines counted after Close", n)
	}
}

// TestGoexitInBlockOnFuture: the goroutine in BlockOn exits as Goexit says, and the
// runtime is not affected (the future's spawned task still runs, Close returns).
func TestGoexitInBlockOnFuture(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan JoinHandle[int], 1)
	go func() {
		var child JoinHandle[int]
		defer func() { exited <- child }()
		BlockOn(rt, PollFn(func(cx *Context) (int, bool) {
			child = Spawn(cx, Ready(5))
			runtime.Goexit()
			return 0, true
		}))
		t.Error("BlockOn returned after Goexit")
	}()
	var child JoinHandle[int]
	watchdog(t, 10*time.Second, "goroutine in BlockOn to exit", func() { child = <-exited })
	watchdog(t, 10*time.Second, "runtime after a Goexit in BlockOn", func() {
		if v, err := child.Wait(); v != 5 || err != nil {
			t.Errorf("child: %v, %v", v, err)
		}
	})
	closeWithin(t, rt)
}

// ---- item 10: a JoinHandle has any number of waiters ----

// TestJoinHandleManyWaiters: goroutines in Wait, tasks awaiting the handle, JoinAll(h,
// h) and BlockOn, all on one handle, mixed, with random arrival: every one is woken.
func TestJoinHandleManyWaiters(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	rounds := 200
	if raceEnabled {
		rounds = 50
	}
	for round := 0; round < rounds; round++ {
		tr := &trigger{}
		h := Spawn(rt, tr.future(round))
		var wg sync.WaitGroup
		var woken atomic.Int64
		check := func(who string, v int, err error) {
			if v != round || err != nil {
				t.Errorf("round %d, %s: %v, %v", round, who, v, err)
			}
			woken.Add(1)
		}
		n := 2 + rand.IntN(4)
		for i := 0; i < n; i++ {
			wg.Add(1)
			switch i % 4 {
			case 0:
				go func() { defer wg.Done(); v, err := h.Wait(); check("Wait", v, err) }()
			case 1:
				aw := Spawn(rt, h)
				go func() { defer wg.Done(); r, _ := aw.Wait(); check("task", r.Value, r.Err) }()
			case 2:
				go func() {
					defer wg.Done()
					rs, err := BlockOn(rt, JoinAll[Result[int]](h, h))
					if err == nil && len(rs) == 2 && rs[0] == rs[1] {
						check("JoinAll(h, h)", rs[0].Value, rs[0].Err)
					} else {
						t.Errorf("JoinAll(h, h): %v, %v", rs, err)
					}
				}()
			case 3:
				go func() {
					defer wg.Done()
					r, err := BlockOn[Result[int]](rt, h)
					check("BlockOn", r.Value, errors.Join(err, r.Err))
				}()
			}
		}
		for i := rand.IntN(20); i > 0; i-- {
			runtime.Gosched()
		}
		if rand.IntN(2) == 0 {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		}
		tr.fire()
		watchdog(t, 10*time.Second, fmt.Sprintf("round %d: %d waiters of one handle", round, n), wg.Wait)
		if t.Failed() {
			t.Fatalf("round %d: %d of %d waiters saw the result", round, woken.Load(), n)
		}
	}
}

// TestJoinHandleDroppedWaiters: waiters that go away (an aborted task awaiting the
// handle, a select that drops it) neither break the others nor accumulate.
func TestJoinHandleDroppedWaiters(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	tr := &trigger{}
	h := Spawn(rt, tr.future(42))
	// Waiters that stay.
	stay := []JoinHandle[Result[int]]{Spawn(rt, h), Spawn(rt, h)}
	waitFor(t, "two waiters registered", func() bool { return joinWaiterCount(h) == 2 })
	// Many waiters that come and go: tasks awaiting h, aborted.
	const goners = 300
	for i := 0; i < goners; i++ {
		aw := Spawn(rt, h)
		waitFor(t, "awaiter registered", func() bool { return joinRegistered(h, aw) })
		aw.Abort()
		if _, err := waitHandle(t, aw); !errors.Is(err, ErrCancelled) {
			t.Fatalf("aborted awaiter: %v", err)
		}
	}
	// A select that drops h: the other arm wins.
	other := &trigger{}
	sel := Spawn(rt, Select2[Result[int], int](h, other.future(1)))
	other.fire()
	if r, err := waitHandle(t, sel); err != nil || r.Index != 1 {
		t.Fatalf("select: %+v, %v", r, err)
	}
	if n := joinWaiterCount(h); n > 64 {
		t.Errorf("%d wakers registered on the handle with %d live waiters: the gone ones were not pruned", n, len(stay))
	}
	tr.fire()
	for i, s := range stay {
		if r, err := waitHandle(t, s); err != nil || r.Value != 42 || r.Err != nil {
			t.Errorf("waiter %d: %+v, %v", i, r, err)
		}
	}
	if v, err := waitHandle(t, h); v != 42 || err != nil {
		t.Errorf("Wait after all: %v, %v", v, err)
	}
}

// joinRegistered reports whether the task behind aw has registered on h (white-box).
func joinRegistered[T any](h JoinHandle[T], aw JoinHandle[Result[T]]) bool {
	s := h.c.state.v.Load()
	if s&flagJoinWaker == 0 || s&flagJoinLock != 0 {
		return false
	}
	target := &aw.c.header
	if s&flagJoinMulti == 0 {
		return false // the first two are the staying waiters; we always come later
	}
	jw := h.c.joinWaker.t.(*joinWaiters)
	jw.mu.Lock()
	defer jw.mu.Unlock()
	for _, w := range jw.ws {
		if w.t == wakeTarget(target) {
			return true
		}
	}
	return false
}

// joinWaiterCount is the number of wakers registered on h (white-box).
func joinWaiterCount[T any](h JoinHandle[T]) int {
	s := h.c.state.v.Load()
	if s&flagJoinMulti == 0 {
		if s&flagJoinWaker != 0 {
			return 1
		}
		return 0
	}
	jw := h.c.joinWaker.t.(*joinWaiters)
	jw.mu.Lock()
	defer jw.mu.Unlock()
	return len(jw.ws)
}

// ---- item 11: Close and Shutdown from inside, Shutdown's deadline ----

// TestShutdownDeadlineWithStuckPoll: a poll that blocks (against the contract) must not
// hold Shutdown past its deadline.
func TestShutdownDeadlineWithStuckPoll(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	release := gate(rt)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	watchdog(t, 10*time.Second, "Shutdown with a 50ms deadline and a stuck poll", func() {
		if err := rt.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
		}
	})
	release()
	closeWithin(t, rt)
}

// TestCloseFromInsideTaskPanics: Close (or Shutdown that would block) called by a task's
// Poll panics with a message that says why, instead of deadlocking.
func TestCloseFromInsideTaskPanics(t *testing.T) {
	for _, workers := range []int{1, 2} {
		rt, err := New(Config{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		h := Spawn(rt, PollFn(func(*Context) (int, bool) { rt.Close(); return 0, true }))
		watchdog(t, 10*time.Second, "Close called inside a task", func() {
			_, err := h.Wait()
			var pe *PanicError
			if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "cannot block from within a runtime") {
				t.Errorf("Workers: %d: err = %v, want a panic saying Close cannot block from within a runtime", workers, err)
			}
		})
		closeWithin(t, rt)
	}
}

// TestShutdownFromTaskWithCancelledContext: a task stops its own runtime by calling
// Shutdown with a cancelled context, which starts the shutdown and returns at once.
func TestShutdownFromTaskWithCancelledContext(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var got atomic.Value
	var polls, drops atomic.Int64
	other := Spawn[dropFuture, int](rt, dropFuture{&polls, &drops})
	Spawn(rt, PollFn(func(*Context) (int, bool) {
		got.Store(fmt.Sprint(rt.Shutdown(ctx)))
		return 0, true
	})).Detach()
	watchdog(t, 10*time.Second, "other task dropped by the shutdown a task started", func() {
		if _, err := other.Wait(); !errors.Is(err, ErrCancelled) {
			t.Errorf("other task: %v", err)
		}
	})
	closeWithin(t, rt)
	if got.Load() != context.Canceled.Error() {
		t.Errorf("Shutdown in the task returned %v, want %v", got.Load(), context.Canceled)
	}
}

// TestCloseFromBlockingJob: a SpawnBlocking job that closes its own runtime returns
// once everything else has stopped; other blocking jobs are waited for.
func TestCloseFromBlockingJob(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var slowDone atomic.Bool
	started := make(chan struct{})
	slow := SpawnBlocking(rt, func() int {
		close(started)
		time.Sleep(20 * time.Millisecond)
		slowDone.Store(true)
		return 1
	})
	<-started
	var polls, drops atomic.Int64
	task := Spawn[dropFuture, int](rt, dropFuture{&polls, &drops})
	closer := SpawnBlocking(rt, func() error {
		err := rt.Close()
		if !slowDone.Load() {
			return errors.New("Close returned before the other blocking job finished")
		}
		return err
	})
	watchdog(t, 10*time.Second, "Close called by a blocking job", func() {
		if err, werr := closer.Wait(); err != nil || werr != nil {
			t.Errorf("closing job: %v, %v", err, werr)
		}
	})
	if _, err := task.Wait(); !errors.Is(err, ErrCancelled) {
		t.Errorf("task: %v", err)
	}
	if v, err := slow.Wait(); v != 1 || err != nil {
		t.Errorf("slow job: %v %v", v, err)
	}
	closeWithin(t, rt)
}

// TestCloseOtherRuntimeFromBlockingJob: a blocking job of one runtime may close another
// (and waits for all of its goroutines).
func TestCloseOtherRuntimeFromBlockingJob(t *testing.T) {
	a := newRT(t, Config{Workers: 1})
	b, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var bDone atomic.Bool
	started := make(chan struct{})
	SpawnBlocking(b, func() int {
		close(started)
		time.Sleep(10 * time.Millisecond)
		bDone.Store(true)
		return 0
	}).Detach()
	<-started // a job still queued at Close is cancelled, not waited for
	h := SpawnBlocking(a, func() bool { return b.Close() == nil && bDone.Load() })
	watchdog(t, 10*time.Second, "Close of another runtime from a blocking job", func() {
		if ok, err := h.Wait(); !ok || err != nil {
			t.Errorf("Close of b from a job of a: %v, %v", ok, err)
		}
	})
}

// ---- item 12: blocking from inside a task ----

// TestBlockOnInsideTaskPanics: BlockOn called by a task's Poll, on a one-worker
// runtime, would wait for a task queued behind it forever; it panics instead.
func TestBlockOnInsideTaskPanics(t *testing.T) {
	rt := newRTLeakOnFailure(t, Config{Workers: 1})
	h := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
		child := Spawn(cx, Ready(1))
		r, _ := BlockOn[Result[int]](rt, child)
		return r.Value, true
	}))
	watchdog(t, 10*time.Second, "BlockOn inside a task", func() {
		_, err := h.Wait()
		var pe *PanicError
		if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "cannot block from within a runtime") {
			t.Errorf("err = %v, want a panic saying it cannot block from within a runtime", err)
		}
	})
}

// TestWaitInsideTaskPanics: JoinHandle.Wait called by a task's Poll (also from a nested
// combinator and a Drop) panics instead of deadlocking; Wait on a finished handle is fine.
func TestWaitInsideTaskPanics(t *testing.T) {
	rt := newRTLeakOnFailure(t, Config{Workers: 1})
	done := Spawn(rt, Ready(3))
	waitHandle(t, done)
	h := Spawn(rt, Map(Join2[int, int](Ready(1), PollFn(func(cx *Context) (int, bool) {
		if v, err := done.Wait(); v != 3 || err != nil { // finished: no blocking, allowed
			t.Errorf("Wait on a finished handle inside a task: %v, %v", v, err)
		}
		child := Spawn(cx, Ready(2))
		v, _ := child.Wait()
		return v, true
	})), func(t Tuple2[int, int]) int { return t.V2 }))
	watchdog(t, 10*time.Second, "Wait inside a task", func() {
		_, err := h.Wait()
		var pe *PanicError
		if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "cannot block from within a runtime") {
			t.Errorf("err = %v, want a panic saying it cannot block from within a runtime", err)
		}
	})
	// Blocking from a SpawnBlocking job is fine.
	b := SpawnBlocking(rt, func() int {
		v, err := BlockOn(rt, Ready(4))
		w, err2 := Spawn(rt, Ready(5)).Wait()
		if err != nil || err2 != nil {
			return -1
		}
		return v + w
	})
	if v, err := waitHandle(t, b); v != 9 || err != nil {
		t.Errorf("BlockOn/Wait in a blocking job: %v, %v", v, err)
	}
}

// ---- item 19 ----

// TestPollStatsUseRealClock: the scheduler's poll-time average must not read a
// TestClock (a fake hour per poll would make the worker check the global queue on every
// other tick, for ever).
func TestPollStatsUseRealClock(t *testing.T) {
	tc := NewTestClock(time.Unix(1000, 0))
	rt, err := New(Config{Workers: 1, Clock: tc})
	if err != nil {
		t.Fatal(err)
	}
	n := 2000
	h := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
		tc.Advance(time.Hour)
		if n--; n == 0 {
			return 0, true
		}
		cx.Yield()
		return 0, false
	}))
	waitHandle(t, h)
	closeWithin(t, rt) // joins the workers: their fields are safe to read
	w := rt.workers[0]
	if w.pollTimeEWMA > float64(time.Second) {
		t.Errorf("mean poll time %v: the scheduler read the test clock", time.Duration(w.pollTimeEWMA))
	}
}

type panicOnDrop struct{ polled *atomic.Bool }

func (p panicOnDrop) Poll(*Context) (int, bool) { p.polled.Store(true); return 0, false }
func (panicOnDrop) Drop()                       { panic("drop-boom") }

// TestDropPanicIsReported: a Drop that panics when its task is aborted, or dropped by
// Shutdown, or after its Poll panicked, is reported on the JoinHandle, not swallowed.
func TestDropPanicIsReported(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	dropPanic := func(err error) bool {
		for _, e := range []error{err} {
			var pe *PanicError
			if errors.As(e, &pe) && pe.Value == "drop-boom" {
				return true
			}
			// errors.As finds the first *PanicError; look through a join too.
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				for _, x := range j.Unwrap() {
					if errors.As(x, &pe) && pe.Value == "drop-boom" {
						return true
					}
				}
			}
		}
		return false
	}
	var polled atomic.Bool
	h := Spawn[panicOnDrop, int](rt, panicOnDrop{&polled})
	waitFor(t, "first poll", polled.Load)
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) || !dropPanic(err) {
		t.Errorf("aborted task whose Drop panicked: %v, want ErrCancelled and the Drop's panic", err)
	}
	both := Spawn(rt, WithDrop(PollFn(func(*Context) (int, bool) { panic("poll-boom") }), func() { panic("drop-boom") }))
	_, err = waitHandle(t, both)
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "poll-boom" || !dropPanic(err) {
		t.Errorf("Poll and Drop panicked: %v, want both panics", err)
	}
	var p2 atomic.Bool
	atShutdown := Spawn[panicOnDrop, int](rt, panicOnDrop{&p2})
	waitFor(t, "first poll", p2.Load)
	closeWithin(t, rt)
	if _, err := atShutdown.Wait(); !errors.Is(err, ErrCancelled) || !dropPanic(err) {
		t.Errorf("task whose Drop panicked at Shutdown: %v, want ErrCancelled and the Drop's panic", err)
	}
}

// TestSpinModelsMatchJoinProtocol keeps the join-waker bits of the spin models
// (taskstate.pml and taskjoin.pml, which checks several waiters) in step with the code.
func TestSpinModelsMatchJoinProtocol(t *testing.T) {
	want := map[string]uint64{
		"COMPLETE": stComplete, "LIFEMASK": lifeMask, "JOIN_WAKER": flagJoinWaker,
		"JOIN_LOCK": flagJoinLock, "JOIN_MULTI": flagJoinMulti,
	}
	checkSpinDefines(t, []string{"spin/taskstate.pml", "spin/taskstate.broken.pml",
		"spin/taskjoin.pml", "spin/taskjoin.broken.pml"}, want)
}

// TestJoinHandleWaitersRaceCompletion: many waiters (more than the list's index
// threshold) register while the task completes on its own, at random moments.
func TestJoinHandleWaitersRaceCompletion(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	rounds := 100
	if raceEnabled {
		rounds = 30
	}
	for round := 0; round < rounds; round++ {
		yields := rand.IntN(50)
		h := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
			if yields == 0 {
				return round, true
			}
			yields--
			cx.Yield()
			return 0, false
		}))
		n := 1 + rand.IntN(40)
		var wg sync.WaitGroup
		var seen atomic.Int64
		for i := 0; i < n; i++ {
			wg.Add(1)
			if i%2 == 0 {
				go func() {
					defer wg.Done()
					if v, err := h.Wait(); v == round && err == nil {
						seen.Add(1)
					}
				}()
				continue
			}
			aw := Spawn(rt, h)
			go func() {
				defer wg.Done()
				if r, err := aw.Wait(); err == nil && r.Value == round && r.Err == nil {
					seen.Add(1)
				}
			}()
		}
		watchdog(t, 10*time.Second, fmt.Sprintf("round %d: %d waiters racing the completion", round, n), wg.Wait)
		if seen.Load() != int64(n) {
			t.Fatalf("round %d: %d of %d waiters saw the result", round, seen.Load(), n)
		}
	}
}

// closingDrop is a pending future whose Drop blocks on its own runtime: Close, or Wait on
// another task of the runtime, both of which the shutdown running the Drop would have to
// finish first.
type closingDrop struct {
	rt     *Runtime
	other  *JoinHandle[int]
	polled *atomic.Bool
}

func (c closingDrop) Poll(*Context) (int, bool) { c.polled.Store(true); return 0, false }
func (c closingDrop) Drop() {
	if c.other != nil {
		c.other.Wait()
		return
	}
	c.rt.Close()
}

// TestBlockingInDropAtShutdown: a Drop run by Shutdown that closes the runtime or waits
// for one of its tasks panics (reported on the task's handle) instead of deadlocking the
// shutdown.
func TestBlockingInDropAtShutdown(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var p1, p2 atomic.Bool
	var self JoinHandle[int]
	hs := []JoinHandle[int]{
		Spawn[closingDrop, int](rt, closingDrop{rt: rt, polled: &p1}), // its Drop closes rt
		// Its Drop waits for its own task, which is being dropped: the order in which
		// Shutdown drops tasks is not known, but this one cannot be finished yet.
		Spawn[closingDrop, int](rt, closingDrop{rt: rt, other: &self, polled: &p2}),
	}
	self = hs[1]
	waitFor(t, "first polls", func() bool { return p1.Load() && p2.Load() })
	closeWithin(t, rt)
	for i, h := range hs {
		_, err := h.Wait()
		if !errors.Is(err, ErrCancelled) || !strings.Contains(fmt.Sprint(err), "would wait for itself") {
			t.Errorf("task %d: %v, want ErrCancelled and a Drop panic saying it would wait for itself", i, err)
		}
	}
}
