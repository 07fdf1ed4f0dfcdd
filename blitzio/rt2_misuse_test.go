package blitzio

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// mustPanicWith runs f and fails unless it panics, within a watchdog, with a message
// containing every one of want. A call that hangs instead fails the test with a clear
// message.
func mustPanicWith(t *testing.T, what string, f func(), want ...string) {
	t.Helper()
	type outcome struct {
		panicked bool
		msg      string
	}
	ch := make(chan outcome, 1)
	go func() {
		done := false
		defer func() {
			if done {
				return
			}
			r := recover()
			ch <- outcome{true, fmt.Sprint(r)}
		}()
		f()
		done = true
		ch <- outcome{false, ""}
	}()
	select {
	case o := <-ch:
		if !o.panicked {
			t.Errorf("%s: returned normally, want a panic naming %q", what, want)
			return
		}
		if strings.Contains(o.msg, "nil pointer dereference") {
			t.Errorf("%s: panicked with a nil dereference instead of a clear message: %s", what, o.msg)
			return
		}
		for _, w := range want {
			if !strings.Contains(o.msg, w) {
				t.Errorf("%s: panic %q does not mention %q", what, o.msg, w)
			}
		}
	case <-time.After(10 * time.Second):
		t.Errorf("%s: hung for 10s, want a panic naming %q", what, want)
	}
}

func TestMisuseNilArguments(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var nilFut Future[int]
	mustPanicWith(t, "Spawn(rt, nil Future)", func() { Spawn(rt, nilFut) }, "Spawn", "nil")
	mustPanicWith(t, "Spawn(rt, nil *SleepFuture)", func() { Spawn(rt, (*SleepFuture)(nil)) }, "Spawn", "nil")
	mustPanicWith(t, "Spawn(rt, nil PollFunc)", func() { Spawn(rt, PollFunc[int](nil)) }, "Spawn", "nil")
	mustPanicWith(t, "Spawn(rt, Future holding a nil *SleepFuture)", func() { Spawn(rt, Future[struct{}]((*SleepFuture)(nil))) }, "Spawn", "nil")
	mustPanicWith(t, "Spawn(rt, Future holding a nil PollFunc)", func() { Spawn(rt, Future[int](PollFunc[int](nil))) }, "Spawn", "nil")
	mustPanicWith(t, "SpawnBlocking(rt, nil)", func() { SpawnBlocking[int](rt, nil) }, "SpawnBlocking", "nil")
	mustPanicWith(t, "Spawn(nil, f)", func() { Spawn(nil, Ready(1)) }, "Spawn", "nil")
	mustPanicWith(t, "Spawn((*Runtime)(nil), f)", func() { Spawn((*Runtime)(nil), Ready(1)) }, "Spawn", "nil")
	mustPanicWith(t, "Spawn((*Context)(nil), f)", func() { Spawn((*Context)(nil), Ready(1)) }, "Spawn", "nil")
	mustPanicWith(t, "SpawnBlocking(nil, f)", func() { SpawnBlocking(nil, func() int { return 1 }) }, "SpawnBlocking", "nil")
	mustPanicWith(t, "BlockOn(nil, f)", func() { _, _ = BlockOn(nil, Ready(1)) }, "BlockOn", "nil")
	mustPanicWith(t, "BlockOn(rt, nil)", func() { _, _ = BlockOn(rt, nilFut) }, "BlockOn", "nil")
	//lint:ignore SA1012 a nil context is the misuse under test
	mustPanicWith(t, "Shutdown(nil)", func() { _ = rt.Shutdown(nil) }, "Shutdown", "nil")
	// The runtime is still fine afterwards.
	if v, err := waitHandle(t, Spawn(rt, Ready(7))); v != 7 || err != nil {
		t.Fatalf("after misuse: got %v, %v", v, err)
	}
}

func TestMisuseZeroJoinHandle(t *testing.T) {
	var h JoinHandle[int]
	cx := NewContext(nil, Waker{})
	mustPanicWith(t, "zero JoinHandle.Wait", func() { _, _ = h.Wait() }, "zero JoinHandle", "Wait")
	mustPanicWith(t, "zero JoinHandle.Poll", func() { h.Poll(cx) }, "zero JoinHandle", "Poll")
	mustPanicWith(t, "zero JoinHandle.Abort", func() { h.Abort() }, "zero JoinHandle", "Abort")
	mustPanicWith(t, "zero JoinHandle.Detach", func() { h.Detach() }, "zero JoinHandle", "Detach")
	mustPanicWith(t, "zero JoinHandle.IsFinished", func() { h.IsFinished() }, "zero JoinHandle", "IsFinished")
}

// Wait or await after Detach used to hang forever (the completer no longer wakes a
// detached handle's waiters). Now it panics at the call, whether the task has finished
// or not, and a waiter already blocked when another copy is detached is woken and
// panics too, instead of sleeping forever.
func TestMisuseWaitAfterDetach(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	// Detached while running, then Wait.
	tr := &trigger{}
	h := Spawn(rt, tr.future(1))
	h.Detach()
	mustPanicWith(t, "Wait after Detach (running)", func() { _, _ = h.Wait() }, "after Detach")
	tr.fire()
	// Detached after finishing, then Wait.
	h2 := Spawn(rt, Ready(2))
	waitFor(t, "task done", h2.IsFinished)
	h2.Detach()
	mustPanicWith(t, "Wait after Detach (finished)", func() { _, _ = h2.Wait() }, "after Detach")
	// Awaited by a task after Detach: the awaiting task fails with the panic.
	h3 := Spawn(rt, Pending[int]())
	h3.Detach()
	_, err := waitHandle(t, Spawn(rt, h3))
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "after Detach") {
		t.Errorf("await after Detach: got %v, want a *PanicError naming Detach", err)
	}
	h3.Abort()
	// A goroutine already in Wait when another copy is detached.
	tr4 := &trigger{}
	h4 := Spawn(rt, tr4.future(4))
	waited := make(chan any, 1)
	go func() {
		defer func() { waited <- recover() }()
		_, _ = h4.Wait()
	}()
	waitFor(t, "waiter registered", func() bool { return h4.c.state.v.Load()&flagJoinWaker != 0 })
	h4.Detach()
	tr4.fire()
	select {
	case r := <-waited:
		if r == nil || !strings.Contains(fmt.Sprint(r), "after Detach") {
			t.Errorf("waiter blocked before Detach: recovered %v, want a panic naming Detach", r)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("a Wait blocked before another copy's Detach hung after the task finished")
	}
}

func TestMisuseBackendUnavailable(t *testing.T) {
	var bad []Backend
	switch runtime.GOOS {
	case "linux":
		bad = []Backend{BackendKqueue}
	case "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
		bad = []Backend{BackendIOUring, BackendEpoll}
	default:
		bad = []Backend{BackendIOUring, BackendEpoll, BackendKqueue}
	}
	for _, b := range bad {
		rt, err := New(Config{Backend: b})
		if err == nil {
			rt.Close()
			t.Errorf("New(Config{Backend: %v}) on %s: no error", b, runtime.GOOS)
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrBackendUnavailable) ||
			!strings.Contains(err.Error(), "Config.Backend") {
			t.Errorf("New(Config{Backend: %v}): error %q, want ErrInvalidConfig and ErrBackendUnavailable naming Config.Backend", b, err)
		}
	}
	for _, b := range []Backend{BackendAuto, BackendPortable} {
		rt, err := New(Config{Backend: b, Workers: 1})
		if err != nil {
			t.Errorf("New(Config{Backend: %v}): %v", b, err)
			continue
		}
		rt.Close()
	}
}
