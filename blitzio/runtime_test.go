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

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		cfg   Config
		field string
	}{
		{Config{Workers: -1}, "Workers"},
		{Config{Workers: MaxWorkers + 1}, "Workers"},
		{Config{MaxBlockingThreads: -1}, "MaxBlockingThreads"},
		{Config{BlockingKeepAlive: -time.Second}, "BlockingKeepAlive"},
		{Config{Backend: Backend(200)}, "Backend"},
	}
	for _, c := range cases {
		rt, err := New(c.cfg)
		if err == nil {
			rt.Close()
			t.Fatalf("New(%+v) succeeded, want an error naming %s", c.cfg, c.field)
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "Config."+c.field) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig naming Config.%s", c.cfg, err, c.field)
		}
	}
	rt := newRT(t, Config{})
	if rt.Workers() < 1 || rt.Workers() > MaxWorkers {
		t.Errorf("default workers = %d", rt.Workers())
	}
}

func TestSpawnFromOutsideAndInside(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	h := Spawn(rt, Lazy(func() int { return 7 }))
	if v, err := waitHandle(t, h); v != 7 || err != nil {
		t.Fatalf("outside spawn: %v, %v", v, err)
	}
	// A task that spawns children from inside and awaits them all.
	const n = 1000
	var hs []JoinHandle[int]
	next := 0
	sum := 0
	parent := PollFn(func(cx *Context) (int, bool) {
		if hs == nil {
			for i := 0; i < n; i++ {
				i := i
				hs = append(hs, Spawn(cx, Lazy(func() int { return i })))
			}
		}
		for ; next < n; next++ {
			r, ok := hs[next].Poll(cx)
			if !ok {
				return 0, false
			}
			if r.Err != nil {
				t.Errorf("child %d: %v", next, r.Err)
			}
			sum += r.Value
		}
		return sum, true
	})
	if v, err := waitHandle(t, Spawn(rt, parent)); err != nil || v != n*(n-1)/2 {
		t.Fatalf("inside spawn: sum %d, err %v; want %d", v, err, n*(n-1)/2)
	}
}

func TestBlockOn(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	v, err := BlockOn(rt, AndThen(Ready(20), func(x int) Future[int] {
		return Map(Spawn(rt, Ready(x+1)), func(r Result[int]) int { return r.Value * 2 })
	}))
	if err != nil || v != 42 {
		t.Fatalf("BlockOn = %v, %v; want 42", v, err)
	}
	_, err = BlockOn(rt, PollFn(func(*Context) (int, bool) { panic("boom") }))
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("BlockOn of a panicking future = %v, want *PanicError", err)
	}
}

func TestBlockOnRuntimeClosed(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var drops, polls atomic.Int64
	errc := make(chan error, 1)
	go func() {
		_, err := BlockOn[int](rt, dropFuture{&polls, &drops})
		errc <- err
	}()
	waitFor(t, "BlockOn polled", func() bool { return polls.Load() > 0 })
	rt.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrRuntimeClosed) {
			t.Fatalf("BlockOn after Close = %v, want ErrRuntimeClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("BlockOn did not return after Close")
	}
	if drops.Load() != 1 {
		t.Errorf("future dropped %d times, want 1", drops.Load())
	}
	if _, err := BlockOn(rt, Ready(1)); !errors.Is(err, ErrRuntimeClosed) {
		t.Errorf("BlockOn on a closed runtime = %v", err)
	}
}

// TestWakeDuringPoll wakes a task from another goroutine while its Poll is running: the
// wake must not be lost (NOTIFIED makes the worker re-schedule it after the poll).
func TestWakeDuringPoll(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for round := 0; round < 200; round++ {
		polls := 0
		f := PollFn(func(cx *Context) (int, bool) {
			polls++
			if polls == 1 {
				done := make(chan struct{})
				w := cx.Waker()
				go func() { w.Wake(); close(done) }()
				<-done // the wake happens while this poll is still running
				return 0, false
			}
			return polls, true
		})
		if v, err := waitHandle(t, Spawn(rt, f)); err != nil || v != 2 {
			t.Fatalf("round %d: polls=%d err=%v, want 2 polls", round, v, err)
		}
	}
}

func TestWakeAfterComplete(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var polls atomic.Int64
	var saved Waker
	h := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
		polls.Add(1)
		saved = cx.Waker()
		return 1, true
	}))
	waitHandle(t, h)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				saved.Wake()
			}
		}()
	}
	wg.Wait()
	// Give a (wrong) re-poll the chance to happen: a task on the queue would run now.
	if _, err := waitHandle(t, Spawn(rt, YieldNow())); err != nil {
		t.Fatal(err)
	}
	if polls.Load() != 1 {
		t.Fatalf("completed task polled %d times, want 1", polls.Load())
	}
	var zero Waker
	zero.Wake() // harmless
}

// gate occupies the only worker of a runtime until released (it blocks in Poll, which real
// futures must not do; here it makes "queued but not yet polled" deterministic).
func gate(rt *Runtime) (release func()) {
	ch := make(chan struct{})
	started := make(chan struct{})
	Spawn(rt, PollFn(func(*Context) (int, bool) {
		close(started)
		<-ch
		return 0, true
	})).Detach()
	<-started
	return func() { close(ch) }
}

func TestAbortBeforePoll(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	release := gate(rt)
	var polls, drops atomic.Int64
	h := Spawn[dropFuture, int](rt, dropFuture{&polls, &drops})
	h.Abort()
	release()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted task: %v, want ErrCancelled", err)
	}
	if polls.Load() != 0 || drops.Load() != 1 {
		t.Fatalf("polls=%d drops=%d, want 0 and 1", polls.Load(), drops.Load())
	}
}

func TestAbortDuringPoll(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for _, finish := range []bool{false, true} {
		inPoll := make(chan struct{})
		aborted := make(chan struct{})
		var drops atomic.Int64
		f := &abortable{inPoll: inPoll, aborted: aborted, finish: finish, drops: &drops}
		h := Spawn(rt, f)
		<-inPoll
		h.Abort()
		close(aborted)
		v, err := waitHandle(t, h)
		if finish {
			if err != nil || v != 9 {
				t.Errorf("task that completed during Abort: %v, %v; want its value", v, err)
			}
		} else if !errors.Is(err, ErrCancelled) || drops.Load() != 1 {
			t.Errorf("task aborted during poll: err=%v drops=%d; want ErrCancelled and 1 drop", err, drops.Load())
		}
	}
}

type abortable struct {
	inPoll, aborted chan struct{}
	finish          bool
	drops           *atomic.Int64
}

func (a *abortable) Poll(cx *Context) (int, bool) {
	close(a.inPoll)
	<-a.aborted
	return 9, a.finish
}

func (a *abortable) Drop() { a.drops.Add(1) }

func TestAbortAfterPollAndAfterComplete(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	var polls, drops atomic.Int64
	h := Spawn[dropFuture, int](rt, dropFuture{&polls, &drops})
	waitFor(t, "first poll", func() bool { return polls.Load() == 1 })
	h.Abort()
	h.Abort() // twice is harmless
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("idle task aborted: %v", err)
	}
	if drops.Load() != 1 || polls.Load() != 1 || !h.IsFinished() {
		t.Fatalf("polls=%d drops=%d finished=%v", polls.Load(), drops.Load(), h.IsFinished())
	}
	h2 := Spawn(rt, Ready(5))
	waitHandle(t, h2)
	h2.Abort()
	if v, err := h2.Wait(); v != 5 || err != nil {
		t.Fatalf("Abort after completion changed the result: %v, %v", v, err)
	}
}

func TestPanicBecomesError(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	sentinel := errors.New("sentinel")
	h := Spawn(rt, PollFn(func(*Context) (int, bool) { panic(sentinel) }))
	_, err := waitHandle(t, h)
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want *PanicError wrapping sentinel", err)
	}
	if !strings.Contains(string(pe.Stack), "TestPanicBecomesError") {
		t.Errorf("panic stack does not show the panicking function:\n%s", pe.Stack)
	}
	// The only worker survived.
	if v, err := waitHandle(t, Spawn(rt, Ready(3))); v != 3 || err != nil {
		t.Fatalf("worker dead after panic: %v, %v", v, err)
	}
}

func TestJoinHandleAwaitedByTaskAndDetach(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	slow := Spawn(rt, Map(Sleep(5*time.Millisecond), func(struct{}) string { return "late" }))
	waiter := Spawn(rt, Map(slow, func(r Result[string]) string { return r.Value + "!" }))
	if v, err := waitHandle(t, waiter); v != "late!" || err != nil {
		t.Fatalf("await handle: %q, %v", v, err)
	}
	var ran atomic.Bool
	d := Spawn(rt, Lazy(func() int { ran.Store(true); return 1 }))
	d.Detach()
	waitFor(t, "detached task runs", ran.Load)
}

// TestBudgetYields: on one worker, a task looping over always-ready futures must let a
// second task run (it stops only when the second task has run).
func TestBudgetYields(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var flag atomic.Bool
	var yields atomic.Int64
	spinner := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
		yields.Add(1)
		r := Ready(1)
		for !flag.Load() {
			if _, ok := r.Poll(cx); !ok {
				return 0, false // budget spent: the task was re-scheduled
			}
		}
		return 1, true
	}))
	setter := Spawn(rt, Lazy(func() int { flag.Store(true); return 1 }))
	waitHandle(t, setter)
	waitHandle(t, spinner)
	if yields.Load() < 2 {
		t.Fatalf("spinner polled %d times: it should have yielded", yields.Load())
	}
}

func TestYieldNowLetsOthersRun(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var order []string
	var mu sync.Mutex
	log := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	release := gate(rt)
	a := Spawn(rt, AndThen(Lazy(func() int { log("a1"); return 0 }), func(int) Future[int] {
		return AndThen(YieldNow(), func(struct{}) Future[int] { return Lazy(func() int { log("a2"); return 0 }) })
	}))
	b := Spawn(rt, Lazy(func() int { log("b"); return 0 }))
	release()
	waitHandle(t, a)
	waitHandle(t, b)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(order, ",") != "a1,b,a2" {
		t.Fatalf("order %v, want a1,b,a2 (YieldNow lets b run)", order)
	}
}

func TestSpawnBlocking(t *testing.T) {
	rt := newRT(t, Config{Workers: 1, MaxBlockingThreads: 4, BlockingKeepAlive: 20 * time.Millisecond})
	const n = 32
	var running, peak atomic.Int64
	hs := make([]JoinHandle[int], n)
	for i := range hs {
		i := i
		hs[i] = SpawnBlocking(rt, func() int {
			c := running.Add(1)
			for p := peak.Load(); c > p && !peak.CompareAndSwap(p, c); p = peak.Load() {
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			return i
		})
	}
	for i, h := range hs {
		if v, err := waitHandle(t, h); v != i || err != nil {
			t.Fatalf("blocking %d: %v, %v", i, v, err)
		}
	}
	if peak.Load() > 4 {
		t.Fatalf("%d blocking jobs ran at once, cap is 4", peak.Load())
	}
	// Await a blocking job from a task, and a panic in one.
	v, err := BlockOn(rt, SpawnBlocking(rt, func() string { return "io" }))
	if err != nil || v.Value != "io" {
		t.Fatalf("await blocking: %v %v", v, err)
	}
	_, err = waitHandle(t, SpawnBlocking(rt, func() int { panic("bad") }))
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("panicking blocking job: %v", err)
	}
	// Idle goroutines retire after the keep-alive.
	waitFor(t, "blocking goroutines retire", func() bool { return rt.blocking.threadCount() == 0 })
}

func TestShutdownDropsEverythingNoLeak(t *testing.T) {
	n := 100_000
	if raceEnabled || testing.Short() {
		n = 10_000
	}
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 4, BlockingKeepAlive: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var polls, drops atomic.Int64
	hs := make([]JoinHandle[int], n)
	for i := range hs {
		switch i % 3 {
		case 0:
			hs[i] = Spawn[dropFuture, int](rt, dropFuture{&polls, &drops})
		case 1:
			hs[i] = Spawn(rt, Map(Sleep(time.Hour), func(struct{}) int { return 1 }))
		default:
			hs[i] = Spawn(rt, Pending[int]())
		}
	}
	// A few blocking goroutines that will be idle at shutdown.
	for i := 0; i < 4; i++ {
		waitHandle(t, SpawnBlocking(rt, func() int { return 0 }))
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Shutdown(context.Background()); err != nil { // idempotent
		t.Fatal(err)
	}
	for i, h := range hs {
		if !h.IsFinished() {
			t.Fatalf("task %d not finished after Close", i)
		}
		if _, err := h.Wait(); !errors.Is(err, ErrCancelled) {
			t.Fatalf("task %d: %v, want ErrCancelled", i, err)
		}
	}
	if want := int64((n + 2) / 3); drops.Load() != want {
		t.Errorf("drops = %d, want %d", drops.Load(), want)
	}
	if rt.owned.len() != 0 || int64(rt.timerCount()) != 0 {
		t.Errorf("runtime still holds %d tasks, %d timers", rt.owned.len(), int64(rt.timerCount()))
	}
	// Spawning after Close reports ErrCancelled instead of hanging.
	if _, err := Spawn(rt, Ready(1)).Wait(); !errors.Is(err, ErrCancelled) {
		t.Errorf("spawn after close: %v", err)
	}
	if _, err := SpawnBlocking(rt, func() int { return 1 }).Wait(); !errors.Is(err, ErrCancelled) {
		t.Errorf("spawn blocking after close: %v", err)
	}
	checkNoLeak(t, base)
}

func TestShutdownWaitsForBlockingWithContext(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	h := SpawnBlocking(rt, func() int { close(started); <-release; return 1 })
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := rt.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a running blocking job = %v, want DeadlineExceeded", err)
	}
	close(release)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := h.Wait(); v != 1 || err != nil {
		t.Fatalf("running blocking job should finish: %v %v", v, err)
	}
}

func TestSeveralRuntimes(t *testing.T) {
	a := newRT(t, Config{Workers: 2})
	b := newRT(t, Config{Workers: 1})
	hb := Spawn(b, Map(Sleep(time.Millisecond), func(struct{}) int { return 2 }))
	ha := Spawn(a, Map(hb, func(r Result[int]) int { return r.Value + 1 }))
	if v, err := waitHandle(t, ha); v != 3 || err != nil {
		t.Fatalf("cross-runtime await: %v %v", v, err)
	}
}

func TestConcurrentSpawnWakeAbort(t *testing.T) {
	rt := newRT(t, Config{Workers: 4})
	goroutines, per := 16, 500
	if raceEnabled || testing.Short() {
		per = 100
	}
	var wg sync.WaitGroup
	var completed atomic.Int64
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				steps := 0
				var w Waker
				ready := make(chan struct{})
				h := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
					steps++
					if steps == 1 {
						w = cx.Waker()
						close(ready)
						return 0, false
					}
					return steps, true
				}))
				<-ready
				if (g+i)%4 == 0 {
					h.Abort()
				}
				w.Wake()
				w.Wake()
				_, err := h.Wait()
				if err == nil || errors.Is(err, ErrCancelled) {
					completed.Add(1)
				} else {
					t.Errorf("task error %v", err)
				}
			}
		}(g)
	}
	wg.Wait()
	if completed.Load() != int64(goroutines*per) {
		t.Fatalf("completed %d of %d", completed.Load(), goroutines*per)
	}
}

// panicDrop panics in Poll and again in Drop: the worker must survive both.
type panicDrop struct{}

func (panicDrop) Poll(*Context) (int, bool) { panic("poll") }
func (panicDrop) Drop()                     { panic("drop") }

func TestPanicInPollAndDrop(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	_, err := waitHandle(t, Spawn[panicDrop, int](rt, panicDrop{}))
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "poll" {
		t.Fatalf("err = %v", err)
	}
	if v, err := waitHandle(t, Spawn(rt, Ready(1))); v != 1 || err != nil {
		t.Fatalf("worker died: %v %v", v, err)
	}
}

// treeTask spawns its children from inside the task (local queue, LIFO slot, overflow to
// the injection queue once 256 are queued) and awaits them, while the other workers
// steal. Every task must run exactly once.
type treeTask struct {
	depth, fan int
	runs       *atomic.Int64
	kids       []JoinHandle[int]
	next       int
	sum        int
}

func (t *treeTask) Poll(cx *Context) (int, bool) {
	if t.kids == nil {
		t.runs.Add(1)
		t.kids = make([]JoinHandle[int], 0, t.fan)
		if t.depth > 0 {
			for i := 0; i < t.fan; i++ {
				t.kids = append(t.kids, Spawn[*treeTask, int](cx, &treeTask{depth: t.depth - 1, fan: t.fan, runs: t.runs}))
			}
		}
	}
	for ; t.next < len(t.kids); t.next++ {
		r, ok := t.kids[t.next].Poll(cx)
		if !ok {
			return 0, false
		}
		t.sum += r.Value
	}
	return t.sum + 1, true
}

func TestWorkStealingTreeRunsEveryTaskOnce(t *testing.T) {
	depth, fan := 3, 40 // 1 + 40 + 1,600 + 64,000 tasks
	if raceEnabled || testing.Short() {
		depth, fan = 2, 40
	}
	want := 1
	for d, n := 0, 1; d < depth; d++ {
		n *= fan
		want += n
	}
	rt := newRT(t, Config{Workers: 4})
	var runs atomic.Int64
	v, err := waitHandle(t, Spawn[*treeTask, int](rt, &treeTask{depth: depth, fan: fan, runs: &runs}))
	if err != nil || v != want || runs.Load() != int64(want) {
		t.Fatalf("tree: value %d, runs %d, err %v; want %d", v, runs.Load(), err, want)
	}
}

// TestMaxWorkers runs the widest runtime: worker 63 uses the top bit of the parked
// bitmap.
func TestMaxWorkers(t *testing.T) {
	rt := newRT(t, Config{Workers: MaxWorkers})
	hs := make([]JoinHandle[int], 2000)
	for i := range hs {
		i := i
		hs[i] = Spawn(rt, AndThen(YieldNow(), func(struct{}) Future[int] { return Ready(i) }))
	}
	for i, h := range hs {
		if v, err := waitHandle(t, h); v != i || err != nil {
			t.Fatalf("task %d: %v %v", i, v, err)
		}
	}
	// Let every worker park, then wake them all with a burst and a timer.
	time.Sleep(5 * time.Millisecond)
	if _, err := BlockOn(rt, Sleep(2*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
}
