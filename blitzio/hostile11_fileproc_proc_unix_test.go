//go:build unix

package blitzio

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// h11fRoute returns how many listeners the hub has for s (-1: no route, the default
// action is back).
func h11fRoute(s os.Signal) int {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	r := hub.perSg[s]
	if r == nil {
		return -1
	}
	return len(r.listeners)
}

// TestHostile11FileprocSignalAfterExit: Child.Signal after the child exited and was
// reaped reports os.ErrProcessDone, as Kill does, and never reaches a process that has
// since been given the same id; while the child is exiting, a Signal either reaches it
// or reports os.ErrProcessDone. A kind the platform lacks is an error naming it.
func TestHostile11FileprocSignalAfterExit(t *testing.T) {
	rt := fileRT(t)
	ch, err := Command("true").Stdin(Null).Stdout(Null).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	if st := must(t, rt, ch.Wait()); !st.Success() {
		t.Fatalf("true: %v", st)
	}
	for _, k := range []SignalKind{SignalTerminate, SignalUser1, SignalHangup} {
		if err := ch.Signal(k); !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("Signal(%v) after the child was reaped: %v, want os.ErrProcessDone", k, err)
		}
	}
	if err := ch.Kill(); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Kill after the child was reaped: %v", err)
	}
	if err := ch.Signal(SignalKind(200)); err == nil || !strings.Contains(err.Error(), "SignalKind(200)") {
		t.Errorf("Signal of an unknown kind: %v", err)
	}
	// Racing the exit: each Signal reaches the child (which then dies of it, or has
	// exited already) or reports ErrProcessDone; nothing else, and no hang.
	for range 20 {
		ch, err := Command("true").Stdin(Null).Stdout(Null).Stderr(Null).Spawn()
		if err != nil {
			t.Fatal(err)
		}
		h := Spawn(rt, ch.Wait())
		for !h.IsFinished() {
			if err := ch.Signal(SignalWindowChange); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatalf("Signal while the child exits: %v", err)
			}
			time.Sleep(100 * time.Microsecond)
		}
		if r, err := waitHandle(t, h); err != nil || r.Err != nil {
			t.Fatalf("Wait: %v %v", err, r.Err)
		}
		if err := ch.Signal(SignalWindowChange); !errors.Is(err, os.ErrProcessDone) {
			t.Fatalf("Signal after Wait: %v", err)
		}
	}
}

// TestHostile11FileprocSignalDelivered: a signal the child handles reaches it (its
// handler exits with a chosen code); one it does not handle ends it, and the status
// says by which signal.
func TestHostile11FileprocSignalDelivered(t *testing.T) {
	rt := fileRT(t)
	ch, err := Command("sh", "-c", `trap "exit 7" USR1; echo ready; while :; do sleep 0.01; done`).
		Stdin(Null).Stdout(Piped).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 0, 16)
	p := make([]byte, 16)
	for !strings.Contains(string(line), "ready") {
		r := h11fReadAny(t, rt, ch.Stdout, p)
		if r.Err != nil {
			t.Fatalf("child's stdout: %v", r.Err)
		}
		line = append(line, p[:r.Value]...)
	}
	if err := ch.Signal(SignalUser1); err != nil {
		t.Fatal(err)
	}
	if st := must(t, rt, ch.Wait()); st.ExitCode() != 7 {
		t.Fatalf("child after SIGUSR1: %v, want exit 7 from its handler", st)
	}
	must(t, rt, ch.Stdout.Close())
	ch, err = Command("sleep", "30").Stdin(Null).Stdout(Null).Stderr(Null).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Signal(SignalTerminate); err != nil {
		t.Fatal(err)
	}
	st := must(t, rt, ch.Wait())
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("child after SIGTERM: %v, want killed by SIGTERM", st)
	}
}

// h11fReadAny makes one stream read (the core package cannot use package stream).
func h11fReadAny(t *testing.T, rt *Runtime, f *File, p []byte) Result[int] {
	t.Helper()
	return run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) }))
}

// TestHostile11FileprocCtrlCListeners: several CtrlC futures and a listener of the
// interrupt at once: one dropped before the signal releases its listener (and only
// it), the others all hear the one interrupt, and once every listener has finished or
// closed the interrupt's default action is back (the hub has no route for it). A
// signal handed to a listener that has closed is not reported.
func TestHostile11FileprocCtrlCListeners(t *testing.T) {
	rt := fileRT(t)
	if h11fRoute(syscall.SIGINT) != -1 {
		t.Skip("something else listens for interrupts in this process")
	}
	guard, err := ListenSignals(SignalInterrupt, SignalUser2) // keeps SIGINT caught throughout
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := CtrlC(), CtrlC(), CtrlC()
	if n := h11fRoute(syscall.SIGINT); n != 4 {
		t.Fatalf("listeners of SIGINT after three CtrlC and a guard: %d", n)
	}
	Drop(b)
	Drop(b) // twice: nothing more
	if n := h11fRoute(syscall.SIGINT); n != 3 {
		t.Fatalf("listeners of SIGINT after one CtrlC was dropped: %d, want 3", n)
	}
	ha, hc := Spawn(rt, a), Spawn(rt, c)
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for _, h := range []JoinHandle[Result[struct{}]]{ha, hc} {
		if r, err := waitHandleFor(t, h, "a CtrlC after an interrupt"); err != nil || r.Err != nil {
			t.Fatalf("CtrlC: %v %v", err, r.Err)
		}
	}
	if r := awaitSignal(t, rt, guard); r.Err != nil || r.Value != syscall.SIGINT {
		t.Fatalf("the guard listener: %v %v", r.Value, r.Err)
	}
	if n := h11fRoute(syscall.SIGINT); n != 1 {
		t.Fatalf("listeners of SIGINT after both CtrlC completed: %d, want the guard only", n)
	}
	Drop(a) // after completion: nothing
	// A delivery racing Close (the route took its list of listeners before the Close):
	// the closed listener is not told.
	l, err := ListenSignals(SignalUser2)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	l.deliver(syscall.SIGUSR2)
	if r, ok := l.Recv().Poll(NewContext(nil, WakerFunc(func() {}))); !ok || !errors.Is(r.Err, ErrListenerClosed) {
		t.Fatalf("Recv of a closed listener given a signal: %v %v", ok, r)
	}
	guard.Close()
	if n := h11fRoute(syscall.SIGINT); n != -1 {
		t.Fatalf("a route for SIGINT is left after every listener closed (%d listeners)", n)
	}
}

// TestHostile11FileprocSignalListenerChurn: listeners of one signal made and closed from
// many goroutines at once while the signal keeps arriving: no panic (a route closed
// twice), every listener open at the end hears the next signal, and when the last one
// closes the route is gone.
func TestHostile11FileprocSignalListenerChurn(t *testing.T) {
	rt := fileRT(t)
	if h11fRoute(syscall.SIGUSR1) != -1 {
		t.Skip("something else listens for SIGUSR1 in this process")
	}
	guard, err := ListenSignals(SignalUser1) // SIGUSR1's default action would end the test
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			syscall.Kill(os.Getpid(), syscall.SIGUSR1)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	kept := make([][]*SignalListener, 8)
	for g := range kept {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				kinds := []SignalKind{SignalUser1}
				if i%3 == 0 {
					kinds = append(kinds, SignalUser1) // the same kind twice
				}
				l, err := ListenSignals(kinds...)
				if err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					kept[g] = append(kept[g], l)
				} else {
					l.Close()
					l.Close()
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	for _, ls := range kept {
		for _, l := range ls {
			if r := awaitSignal(t, rt, l); r.Err != nil || r.Value != syscall.SIGUSR1 {
				t.Fatalf("a kept listener: %v %v", r.Value, r.Err)
			}
			l.Close()
		}
	}
	if n := h11fRoute(syscall.SIGUSR1); n != 1 {
		t.Fatalf("listeners of SIGUSR1 with only the guard left: %d", n)
	}
	guard.Close()
	if n := h11fRoute(syscall.SIGUSR1); n != -1 {
		t.Fatalf("route of SIGUSR1 after the last listener closed: %d listeners", n)
	}
}

// TestHostile11FileprocOnShutdownHostileHooks: hooks that trigger the shutdown again,
// register another hook during the run, panic, close a runtime twice, and call Wait on
// their own Shutdown: every hook runs once, in order (the one registered during the run
// last), the panics are reported as *PanicError, every Wait reports the same outcome,
// and a hook registered after the run never runs. OnShutdown(nil) panics saying so;
// the zero Shutdown takes hooks too.
func TestHostile11FileprocOnShutdownHostileHooks(t *testing.T) {
	var zero Shutdown
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "OnShutdown") {
				t.Errorf("OnShutdown(nil) recovered %v, want a panic naming OnShutdown", r)
			}
		}()
		zero.OnShutdown(nil)
	}()
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := &zero
	ctx := hostile7Ctx(t)
	var mu sync.Mutex
	var order []string
	ran := func(name string) {
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
	}
	errPanic := errors.New("hook panic value")
	s.OnShutdown(func(ctx context.Context) error {
		ran("trigger-again")
		s.Trigger()
		s.OnShutdown(func(context.Context) error { ran("registered-during-run"); return nil })
		return nil
	})
	s.OnShutdown(func(context.Context) error { ran("panics"); panic(errPanic) })
	s.OnShutdown(func(ctx context.Context) error {
		ran("closes-runtime")
		if err := rt.Shutdown(ctx); err != nil {
			return err
		}
		return rt.Close()
	})
	s.OnShutdown(func(ctx context.Context) error { ran("waits-on-itself"); return s.Wait(ctx) })
	s.Trigger()
	err1, _ := hostile7Wait(t, s, ctx)
	want := []string{"trigger-again", "panics", "closes-runtime", "waits-on-itself", "registered-during-run"}
	mu.Lock()
	got := append([]string(nil), order...)
	mu.Unlock()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("hooks ran %v, want %v", got, want)
	}
	var pe *PanicError
	if !errors.As(err1, &pe) || !errors.Is(err1, errPanic) && !strings.Contains(err1.Error(), errPanic.Error()) {
		t.Errorf("Wait: %v, want the hook's panic reported as a *PanicError", err1)
	}
	if !strings.Contains(err1.Error(), "hook 2") || !strings.Contains(err1.Error(), "hook 4") {
		t.Errorf("Wait: %v, want hooks 2 and 4 named", err1)
	}
	if !rtClosed(rt) {
		t.Error("the hook's Shutdown did not close the runtime")
	}
	s.OnShutdown(func(context.Context) error { ran("too-late"); return nil })
	err2, _ := hostile7Wait(t, s, ctx)
	if err2 == nil || err2.Error() != err1.Error() {
		t.Errorf("second Wait: %v, want the first's outcome %v", err2, err1)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != len(want) {
		t.Errorf("hooks ran again, or one registered after the run did: %v", order)
	}
}

// rtClosed reports whether rt has been shut down.
func rtClosed(rt *Runtime) bool { return rt.closed.Load() }

// TestHostile11FileprocOnShutdownConcurrent: hooks registered from many goroutines
// while Waits run the hooks: each hook runs at most once, every hook registered before
// the trigger runs, and every Wait returns the same outcome.
func TestHostile11FileprocOnShutdownConcurrent(t *testing.T) {
	for range 20 {
		s := NewShutdown()
		var runs [64]atomic.Int32
		for i := range 16 {
			s.OnShutdown(func(context.Context) error { runs[i].Add(1); return nil })
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 16 + g*12; i < 16+(g+1)*12; i++ {
					s.OnShutdown(func(context.Context) error { runs[i].Add(1); return nil })
				}
			}()
		}
		s.Trigger()
		ctx := hostile7Ctx(t)
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- s.Wait(ctx) }()
		}
		for range 3 {
			select {
			case err := <-errs:
				if err != nil {
					t.Fatalf("Wait: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("watchdog: concurrent Waits did not return")
			}
		}
		wg.Wait()
		for i := range runs {
			if n := runs[i].Load(); n > 1 || i < 16 && n != 1 {
				t.Fatalf("hook %d ran %d times", i, n)
			}
		}
	}
}

// TestHostile11FileprocSpawnBlockingRacesClose: SpawnBlocking from goroutines and from
// tasks while the runtime closes: each handle reports the job's result if and only if
// the job ran (a running job runs to its end and keeps its result; a job cancelled
// before it started never runs), nothing hangs, and the pool's goroutines all exit.
func TestHostile11FileprocSpawnBlockingRacesClose(t *testing.T) {
	for round := range 30 {
		rt, err := New(Config{Workers: 2, MaxBlockingThreads: 1 + round%3})
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int64
		job := func() int { ran.Add(1); time.Sleep(50 * time.Microsecond); return 1 }
		var mu sync.Mutex
		var hs []JoinHandle[int]
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 30 {
					h := SpawnBlocking(rt, job)
					mu.Lock()
					hs = append(hs, h)
					mu.Unlock()
				}
			}()
		}
		var fromTasks []JoinHandle[JoinHandle[int]]
		for range 10 {
			fromTasks = append(fromTasks, Spawn(rt, PollFn(func(cx *Context) (JoinHandle[int], bool) {
				return SpawnBlocking(cx, job), true
			})))
		}
		time.Sleep(time.Duration(round%4) * 100 * time.Microsecond)
		hostile3Watch(t, 20*time.Second, "Close racing SpawnBlocking", func() { rt.Close() })
		wg.Wait()
		for _, th := range fromTasks {
			if h, err := th.Wait(); err == nil {
				hs = append(hs, h)
			}
		}
		got := int64(0)
		for _, h := range hs {
			v, err := waitHandleFor(t, h, "a blocking job's handle after Close")
			switch {
			case err == nil && v == 1:
				got++
			case errors.Is(err, ErrCancelled) && v == 0:
			default:
				t.Fatalf("round %d: a blocking job's handle: %v, %v", round, v, err)
			}
		}
		if got != ran.Load() {
			t.Fatalf("round %d: %d jobs ran, %d handles report a result", round, ran.Load(), got)
		}
		if n := rt.blocking.threadCount(); n != 0 {
			t.Fatalf("round %d: %d pool goroutines alive after Close", round, n)
		}
	}
}

// TestHostile11FileprocBlockingAbortQueued: a job aborted while queued behind a busy
// pool reports ErrCancelled at once; when a pool goroutine later reaches it, it is
// skipped (its function never runs), and the pool goes on with the next job.
func TestHostile11FileprocBlockingAbortQueued(t *testing.T) {
	rt := newRT(t, Config{Workers: 1, MaxBlockingThreads: 1})
	var j blockingJob = &blockingTask[int]{}
	j.isBlockingJob()
	gate := make(chan struct{})
	blocker := SpawnBlocking(rt, func() int { <-gate; return 1 })
	var abortedRan atomic.Bool
	queued := SpawnBlocking(rt, func() int { abortedRan.Store(true); return 2 })
	next := SpawnBlocking(rt, func() int { return 3 })
	queued.Abort()
	if v, err := waitHandleFor(t, queued, "an aborted queued job"); !errors.Is(err, ErrCancelled) || v != 0 {
		t.Fatalf("aborted queued job: %v %v", v, err)
	}
	close(gate)
	if v, err := waitHandleFor(t, blocker, "the blocker"); err != nil || v != 1 {
		t.Fatalf("blocker: %v %v", v, err)
	}
	if v, err := waitHandleFor(t, next, "the job after the aborted one"); err != nil || v != 3 {
		t.Fatalf("job after the aborted one: %v %v", v, err)
	}
	if abortedRan.Load() {
		t.Fatal("an aborted job ran")
	}
}

// TestHostile11FileprocItoa: the package's itoa is strconv.Itoa, at the edges too
// (math.MinInt, whose negation overflows, came out as "-").
func TestHostile11FileprocItoa(t *testing.T) {
	for _, n := range []int{0, 7, -7, 10, 12345, -100, math.MaxInt, math.MinInt, math.MinInt + 1} {
		if got, want := itoa(n), strconv.Itoa(n); got != want {
			t.Errorf("itoa(%d) = %q, want %q", n, got, want)
		}
	}
	if got := SignalKind(255).String(); got != "SignalKind(255)" {
		t.Errorf("SignalKind(255).String() = %q", got)
	}
}

// TestHostile11FileprocWriteErrorAtNextRead: a stream write is write-behind; when it
// fails (a file open for reading only), the next operation reports the failure, a
// read included (File's doc), exactly once: the read after it, and a Flush, succeed,
// and the read did not lose the file's first bytes.
func TestHostile11FileprocWriteErrorAtNextRead(t *testing.T) {
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	os.WriteFile(name, []byte("abcdef"), 0o644)
	f := must(t, rt, Open(name))
	defer run(t, rt, f.Close())
	if r := run(t, rt, writeAll(f, []byte("xyz"))); r.Err != nil {
		t.Fatalf("the write was refused at once: %v (it is write-behind)", r.Err)
	}
	p := make([]byte, 3)
	r := h11fReadAny(t, rt, f, p)
	if !errors.Is(r.Err, syscall.EBADF) || r.Value != 0 {
		t.Fatalf("read after a failed write: %d %v, want the write's EBADF", r.Value, r.Err)
	}
	if r := h11fReadAny(t, rt, f, p); r.Err != nil || string(p[:r.Value]) != "abc"[:r.Value] || r.Value == 0 {
		t.Fatalf("the read after: %q %v", p[:r.Value], r.Err)
	}
	if err := run(t, rt, f.Flush()).Err; err != nil {
		t.Fatalf("Flush after the error was reported: %v", err)
	}
}

// TestHostile11FileprocBlockingAbortRacesStart: Abort of a job the moment a pool
// goroutine takes it: the handle reports the job's result if and only if the job ran.
func TestHostile11FileprocBlockingAbortRacesStart(t *testing.T) {
	rt := newRT(t, Config{Workers: 1, MaxBlockingThreads: 2})
	for i := range 2000 {
		var ran atomic.Bool
		h := SpawnBlocking(rt, func() int { ran.Store(true); return 1 })
		if i%2 == 0 {
			runtime.Gosched()
		}
		h.Abort()
		v, err := waitHandleFor(t, h, "an aborted blocking job")
		switch {
		case err == nil && v == 1 && ran.Load():
		case errors.Is(err, ErrCancelled) && v == 0 && !ran.Load():
		default:
			t.Fatalf("job %d: handle (%v, %v), ran %v", i, v, err, ran.Load())
		}
	}
}
