package blitzio

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// waitErr waits for h with a watchdog and a message naming what hung.
func waitErr[T any](t *testing.T, h JoinHandle[T], what string) (T, error) {
	t.Helper()
	return waitHandleFor(t, h, what)
}

// A blocking job queued behind a saturated pool has not started: Abort cancels it, and
// its handle reports ErrCancelled then, not only once a pool goroutine frees up (which,
// with jobs that block for long, may be never).
func TestHostile8BlockingAbortQueuedJobSaturatedPool(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 1, MaxBlockingThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }); rt.Close() })
	started := make(chan struct{})
	running := SpawnBlocking(rt, func() int { close(started); <-release; return 1 })
	<-started
	ran := make(chan struct{}, 1)
	queued := SpawnBlocking(rt, func() int { ran <- struct{}{}; return 2 })
	queued.Abort()
	if _, err := waitErr(t, queued, "the aborted queued job's handle while the pool is saturated"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted queued job = %v, want ErrCancelled", err)
	}
	if running.IsFinished() {
		t.Fatal("the running job finished before it was released")
	}
	// Waiting on the running job from several goroutines; an Abort of a running job does
	// not lie: the job runs to the end and its value is kept.
	running.Abort()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := running.Wait(); err != nil || v != 1 {
				t.Errorf("running job after Abort = (%v, %v), want (1, nil)", v, err)
			}
		}()
	}
	releaseOnce.Do(func() { close(release) })
	wgWait(t, &wg, "the waiters of the running job")
	// The pool goes on working, and never runs the aborted job.
	if v, err := waitErr(t, SpawnBlocking(rt, func() int { return 3 }), "a later job"); err != nil || v != 3 {
		t.Fatalf("later job = (%v, %v)", v, err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
		t.Fatal("the aborted job ran")
	default:
	}
	checkNoLeak(t, base)
}

// Abort of a queued job racing the pool taking it: the job either runs to the end (and
// keeps its value) or is cancelled without running; never both, never neither.
func TestHostile8BlockingAbortRacesStart(t *testing.T) {
	rt := newRT(t, Config{Workers: 1, MaxBlockingThreads: 2})
	for range 300 {
		var ran bool
		h := SpawnBlocking(rt, func() int { ran = true; return 5 })
		go h.Abort()
		v, err := waitErr(t, h, "a job racing its Abort")
		switch {
		case err == nil:
			if v != 5 || !ran {
				t.Fatalf("job = %v (ran %v)", v, ran)
			}
		case errors.Is(err, ErrCancelled):
			if ran {
				t.Fatal("a job reported cancelled after it ran")
			}
		default:
			t.Fatal(err)
		}
	}
}

// Hostile jobs: a panic, runtime.Goexit, nested SpawnBlocking and BlockOn, a nil func;
// the pool keeps working, and after Close every goroutine is gone.
func TestHostile8BlockingHostileJobs(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 1, MaxBlockingThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("SpawnBlocking with a nil func did not panic")
			}
		}()
		SpawnBlocking[int](rt, nil)
	}()
	_, err = waitErr(t, SpawnBlocking(rt, func() int { panic("hostile8") }), "a panicking job")
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("panicking job = %v, want a *PanicError", err)
	}
	_, err = waitErr(t, SpawnBlocking(rt, func() int { runtime.Goexit(); return 0 }), "a job calling Goexit")
	if !errors.Is(err, ErrGoexit) {
		t.Fatalf("Goexit job = %v, want ErrGoexit", err)
	}
	nested := SpawnBlocking(rt, func() int {
		v, err := SpawnBlocking(rt, func() int { return 20 }).Wait()
		if err != nil {
			return -1
		}
		r, err := BlockOn(rt, Future[Result[int]](Spawn(rt, Ready(22))))
		if err != nil || r.Err != nil {
			return -2
		}
		return v + r.Value
	})
	if v, err := waitErr(t, nested, "a job nesting SpawnBlocking and BlockOn"); err != nil || v != 42 {
		t.Fatalf("nested job = (%v, %v), want (42, nil)", v, err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	// On a closed runtime: cancelled at once, the func never runs.
	if _, err := waitErr(t, SpawnBlocking(rt, func() int { panic("ran after Close") }), "a job after Close"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("job after Close = %v, want ErrCancelled", err)
	}
	checkNoLeak(t, base)
}

// A saturated pool with jobs queued, then Shutdown: the queued jobs are cancelled, the
// running ones (blocked) are waited for, so Shutdown with a deadline reports it and a
// later Close returns once they are released.
func TestHostile8BlockingSaturatedShutdown(t *testing.T) {
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 1, MaxBlockingThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var started sync.WaitGroup
	var running []JoinHandle[int]
	for i := range 2 {
		started.Add(1)
		running = append(running, SpawnBlocking(rt, func() int { started.Done(); <-release; return i }))
	}
	wgWait(t, &started, "the running jobs to start")
	var queued []JoinHandle[int]
	for range 10 {
		queued = append(queued, SpawnBlocking(rt, func() int { panic("a queued job ran") }))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := rt.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with blocked jobs = %v, want DeadlineExceeded", err)
	}
	for i, h := range queued {
		if _, err := waitErr(t, h, "a queued job at shutdown"); !errors.Is(err, ErrCancelled) {
			t.Fatalf("queued job %d = %v, want ErrCancelled", i, err)
		}
	}
	close(release)
	closed := make(chan error, 1)
	go func() { closed <- rt.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return after the blocked jobs were released")
	}
	for i, h := range running {
		if v, err := waitErr(t, h, "a running job"); err != nil || v != i {
			t.Fatalf("running job %d = (%v, %v)", i, v, err)
		}
	}
	checkNoLeak(t, base)
}
