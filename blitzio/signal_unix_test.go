//go:build unix

package blitzio

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// awaitSignal polls l.Recv on rt with a watchdog.
func awaitSignal(t *testing.T, rt *Runtime, l *SignalListener) Result[os.Signal] {
	t.Helper()
	h := Spawn(rt, l.Recv())
	done := make(chan struct{})
	var r Result[os.Signal]
	var err error
	go func() { r, err = h.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("watchdog: Recv not ready after 20s\n%s", buf[:runtime.Stack(buf, true)])
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSignalKindsHaveThePlatformNumbers(t *testing.T) {
	for k, want := range map[SignalKind]syscall.Signal{
		SignalInterrupt: syscall.SIGINT, SignalTerminate: syscall.SIGTERM, SignalHangup: syscall.SIGHUP,
		SignalUser1: syscall.SIGUSR1, SignalUser2: syscall.SIGUSR2, SignalChild: syscall.SIGCHLD,
		SignalWindowChange: syscall.SIGWINCH, SignalQuit: syscall.SIGQUIT, SignalPipe: syscall.SIGPIPE, SignalAlarm: syscall.SIGALRM,
	} {
		if got := k.Signal(); got != want || !k.Supported() {
			t.Errorf("%v.Signal() = %v, want %v (%d)", k, got, want, int(want))
		}
	}
	if runtime.GOOS == "linux" && SignalUser1.Signal() != syscall.Signal(10) {
		t.Errorf("User1 on Linux is %v, want signal 10", SignalUser1.Signal())
	}
	if _, err := ListenSignals(SignalKind(200)); err == nil {
		t.Error("ListenSignals accepted an unknown kind")
	}
	if _, err := ListenSignals(); err == nil {
		t.Error("ListenSignals accepted no kinds")
	}
	if SignalKind(200).String() != "SignalKind(200)" || SignalUser2.String() != "user2" {
		t.Errorf("String: %q %q", SignalKind(200).String(), SignalUser2.String())
	}
}

// TestSignalEveryListenerHears: several listeners of one signal are all told, and a
// listener of two kinds learns which one arrived.
func TestSignalEveryListenerHears(t *testing.T) {
	rt := newSignalRuntime(t)
	var ls []*SignalListener
	for range 3 {
		l, err := ListenSignals(SignalUser1)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls = append(ls, l)
	}
	both, err := ListenSignals(SignalUser2, SignalUser1)
	if err != nil {
		t.Fatal(err)
	}
	defer both.Close()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for i, l := range append(ls, both) {
		if r := awaitSignal(t, rt, l); r.Err != nil || r.Value != syscall.SIGUSR1 {
			t.Errorf("listener %d: %v, %v; want SIGUSR1", i, r.Value, r.Err)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	if r := awaitSignal(t, rt, both); r.Err != nil || r.Value != syscall.SIGUSR2 {
		t.Errorf("listener of two kinds: %v, %v; want SIGUSR2", r.Value, r.Err)
	}
}

// TestSignalDroppedRecvLosesNothing polls Recv once, abandons it, and checks that a
// signal arriving then is reported by the next Recv.
func TestSignalDroppedRecvLosesNothing(t *testing.T) {
	rt := newSignalRuntime(t)
	l, err := ListenSignals(SignalUser2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cx := NewContext(nil, WakerFunc(func() {}))
	if _, ok := l.Recv().Poll(cx); ok {
		t.Fatal("Recv ready before any signal")
	}
	Drop(l.Recv())
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	if r := awaitSignal(t, rt, l); r.Err != nil || r.Value != syscall.SIGUSR2 {
		t.Fatalf("Recv after a dropped one: %v, %v", r.Value, r.Err)
	}
}

func TestSignalCloseWakesRecv(t *testing.T) {
	rt := newSignalRuntime(t)
	l, err := ListenSignals(SignalHangup)
	if err != nil {
		t.Fatal(err)
	}
	h := Spawn(rt, l.Recv())
	time.Sleep(10 * time.Millisecond) // let it wait (the test holds either way)
	l.Close()
	l.Close()
	done := make(chan Result[os.Signal], 1)
	go func() { r, _ := h.Wait(); done <- r }()
	select {
	case r := <-done:
		if !errors.Is(r.Err, ErrListenerClosed) {
			t.Fatalf("Recv after Close: %v, %v; want ErrListenerClosed", r.Value, r.Err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watchdog: Close did not wake the waiting Recv")
	}
}

// TestCtrlC sends the process an interrupt while a CtrlC future waits: the future is
// ready and the process lives on.
func TestCtrlC(t *testing.T) {
	rt := newSignalRuntime(t)
	f := CtrlC()
	h := Spawn(rt, f)
	// A second listener keeps SIGINT handled after CtrlC releases it, so a stray second
	// interrupt cannot end the test binary.
	guard, err := ListenSignals(SignalInterrupt)
	if err != nil {
		t.Fatal(err)
	}
	defer guard.Close()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan Result[struct{}], 1)
	go func() { r, _ := h.Wait(); done <- r }()
	select {
	case r := <-done:
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watchdog: CtrlC not ready after an interrupt")
	}
}

func newSignalRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}
