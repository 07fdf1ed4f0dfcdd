package blitzio

import (
	"errors"
	"fmt"
	"log"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// A Close called by a task's code panics; it must not also stop the runtime behind the
// caller's back (the panic message tells the user to call Shutdown with a cancelled
// context "to only start the shutdown", i.e. Close did not). It used to start the
// shutdown, then panic: every later Spawn was cancelled.
func TestHostileCloseInTaskLeavesRuntimeRunning(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	h := Spawn(rt, PollFn(func(*Context) (int, bool) { _ = rt.Close(); return 0, true }))
	_, err := waitHandle(t, h)
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "cannot block from within a runtime") {
		t.Fatalf("Close in a task: %v", err)
	}
	v, err := waitHandle(t, Spawn(rt, Lazy(func() int { return 5 })))
	if err != nil || v != 5 {
		t.Fatalf("after a Close that panicked in a task, a new task got %v, %v: the runtime was shut down", v, err)
	}
	select {
	case <-rt.done:
		t.Fatal("the runtime's shutdown started")
	case <-time.After(time.Millisecond):
	}
}

// A waker that panics when the task it waits for completes (a hand-written adapter
// polling a JoinHandle with a WakerFunc) used to kill the process: the panic escaped
// the completing worker. And the waiters after it in the handle's list were never woken.
// Now every waiter is woken, the panic is logged, and the runtime carries on.
func TestHostileJoinWakerPanics(t *testing.T) {
	for _, waiters := range []int{1, 3} {
		rt := newRT(t, Config{Workers: 1})
		tr := &trigger{}
		h := Spawn(rt, tr.future(9))
		// The panicking waker first, then others that record their wake-up.
		woke := make(chan int, waiters)
		cx := NewContext(nil, WakerFunc(func() { panic("waker-boom") }))
		if _, ok := h.Poll(cx); ok {
			t.Fatal("ready before the trigger")
		}
		for i := 1; i < waiters; i++ {
			if _, ok := h.Poll(NewContext(nil, WakerFunc(func() { woke <- i }))); ok {
				t.Fatal("ready before the trigger")
			}
		}
		restore := captureLog(t)
		tr.fire()
		for i := 1; i < waiters; i++ {
			select {
			case <-woke:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d waiters: a waiter after the panicking one was never woken", waiters)
			}
		}
		if v, err := waitHandle(t, Spawn(rt, Lazy(func() int { return 1 }))); v != 1 || err != nil {
			t.Fatalf("after a waker panic the runtime does not run tasks: %v, %v", v, err)
		}
		if logged := restore(); !strings.Contains(logged, "waker-boom") {
			t.Errorf("the waker's panic was not reported; log: %q", logged)
		}
	}
}

// A waker that calls runtime.Goexit when woken by a completing task: the worker is
// replaced, and the other waiters are still woken.
func TestHostileJoinWakerGoexit(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	tr := &trigger{}
	h := Spawn(rt, tr.future(9))
	if _, ok := h.Poll(NewContext(nil, WakerFunc(func() { runtime.Goexit() }))); ok {
		t.Fatal("ready before the trigger")
	}
	woke := make(chan struct{}, 1)
	if _, ok := h.Poll(NewContext(nil, WakerFunc(func() { woke <- struct{}{} }))); ok {
		t.Fatal("ready before the trigger")
	}
	tr.fire()
	select {
	case <-woke:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter after a waker that called Goexit was never woken")
	}
	if v, err := waitHandle(t, Spawn(rt, Lazy(func() int { return 1 }))); v != 1 || err != nil {
		t.Fatalf("after a waker's Goexit: %v, %v", v, err)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// captureLog sends the standard logger's output to a buffer until the returned function
// is called; that function restores the output and returns what was logged. It waits
// a little for output written by runtime goroutines.
func captureLog(t *testing.T) func() string {
	b := &syncBuffer{}
	prev := log.Writer()
	log.SetOutput(b)
	return func() string {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			b.mu.Lock()
			n := b.buf.Len()
			b.mu.Unlock()
			if n > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		log.SetOutput(prev)
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.buf.String()
	}
}

// A task that selects over a JoinHandle and something else in a loop (a handle against a
// ticker, say) registered a new combinator child waker on the handle at every
// iteration, and the handle kept them all until the task finished: memory grew with the
// number of iterations (20,000 entries after 20,000 selects). Meanwhile live waiters
// (tasks and goroutines) must all still get the result.
func TestHostileJoinWaitersBoundedUnderSelectLoop(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	tr := &trigger{}
	h := Spawn(rt, tr.future(7))
	// Live waiters: tasks, goroutines in Wait, and JoinAll(h, h).
	var live []JoinHandle[Result[int]]
	for range 100 {
		live = append(live, Spawn(rt, h))
	}
	both := Spawn(rt, JoinAll[Result[int]](h, h))
	waits := make(chan int, 10)
	for range 10 {
		go func() { v, _ := h.Wait(); waits <- v }()
	}
	const iters = 20000
	i := 0
	var sel Future[Selected[Result[int]]]
	loop := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
		for i < iters {
			if sel == nil {
				sel = SelectN[Result[int], Future[Result[int]]](h, Map(YieldNow(), func(struct{}) Result[int] { return Result[int]{Value: -1} }))
			}
			r, ok := sel.Poll(cx)
			if !ok {
				return 0, false
			}
			sel = nil
			if r.Index == 0 {
				return -1, true // h finished early: impossible here
			}
			i++
		}
		return i, true
	}))
	if n, err := waitHandle(t, loop); n != iters || err != nil {
		t.Fatalf("select loop: %d, %v", n, err)
	}
	if n := joinWaiterCount(h); n > 400 {
		t.Errorf("%d wakers registered on the handle after %d selects with 112 live waiters: the list grows with the iterations", n, iters)
	}
	tr.fire()
	for k, l := range live {
		if r, err := waitHandle(t, l); err != nil || r.Value != 7 {
			t.Fatalf("live waiter %d: %+v, %v", k, r, err)
		}
	}
	if rs, err := waitHandle(t, both); err != nil || len(rs) != 2 || rs[0].Value != 7 || rs[1].Value != 7 {
		t.Fatalf("JoinAll(h, h): %+v, %v", rs, err)
	}
	for range 10 {
		select {
		case v := <-waits:
			if v != 7 {
				t.Fatalf("Wait: %d", v)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a goroutine in Wait was never woken")
		}
	}
}

// Probes of the merged fixes that held (kept as tests): several blocking jobs closing
// their runtime at once, and an Async function whose deferred call exits the goroutine
// while it is unwound by Abort or by the shutdown.
func TestHostileSeveralBlockingJobsClose(t *testing.T) {
	for round := range 20 {
		rt, _ := New(Config{Workers: 1})
		hs := []JoinHandle[error]{}
		for range 3 {
			hs = append(hs, SpawnBlocking(rt, func() error { time.Sleep(time.Millisecond); return rt.Close() }))
		}
		done := make(chan struct{})
		go func() {
			for _, h := range hs {
				h.Wait()
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("round %d: blocking jobs closing the runtime hung\n%s", round, buf[:n])
		}
		closeWithin(t, rt)
	}
}

func TestHostileAsyncGoexitInDeferredCallOnAbort(t *testing.T) {
	for _, viaShutdown := range []bool{false, true} {
		rt, _ := New(Config{Workers: 1})
		h := Spawn(rt, Async(func(co *Co) int {
			defer runtime.Goexit()
			return Await(co, Pending[int]())
		}))
		time.Sleep(2 * time.Millisecond)
		if viaShutdown {
			closeWithin(t, rt)
		} else {
			h.Abort()
		}
		_, err := waitHandle(t, h)
		if !errors.Is(err, ErrCancelled) || !errors.Is(err, ErrGoexit) {
			t.Errorf("shutdown=%v: %v", viaShutdown, err)
		}
		if !viaShutdown {
			if v, err := waitHandle(t, Spawn(rt, Ready(1))); v != 1 || err != nil {
				t.Errorf("after: %v %v", v, err)
			}
			closeWithin(t, rt)
		}
	}
}
