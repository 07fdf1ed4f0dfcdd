//go:build linux

package poller

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newTestUring creates an io_uring Completer, or skips the test with the kernel's
// reason when this machine refuses io_uring.
func newTestUring(t testing.TB, cfg IOUringConfig) *ioUring {
	t.Helper()
	p, err := NewIOUringConfig(cfg)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			t.Skipf("io_uring unavailable here: %v", err)
		}
		t.Fatalf("NewIOUringConfig: %v", err)
	}
	r := p.(*ioUring)
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// watchdog fails the test with a goroutine dump if it is not stopped within d.
func watchdog(t testing.TB, d time.Duration) (stop func()) {
	t.Helper()
	timer := time.AfterFunc(d, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		os.Stderr.Write(buf[:n])
		panic("watchdog: " + t.Name() + " still running after " + d.String())
	})
	return func() { timer.Stop() }
}

// pollUntil polls until cond, fed every event, returns true; it fails after a
// generous deadline (a missing event is a bug, not slowness).
func pollUntil(t testing.TB, r *ioUring, what string, cond func(Event) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	evs := make([]Event, 64)
	for time.Now().Before(deadline) {
		n, err := r.Poll(evs, 100*time.Millisecond)
		if err != nil {
			t.Fatalf("Poll waiting for %s: %v", what, err)
		}
		for _, ev := range evs[:n] {
			if cond(ev) {
				return
			}
		}
	}
	t.Fatalf("no event for %s within 10s", what)
}

// drainEvents polls with zero timeout until nothing comes, returning what came.
func drainEvents(t testing.TB, r *ioUring) []Event {
	t.Helper()
	var out []Event
	evs := make([]Event, 64)
	for range 100 {
		// A short wait lets task work posted from other threads land.
		n, err := r.Poll(evs, 20*time.Millisecond)
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		if n == 0 {
			return out
		}
		out = append(out, evs[:n]...)
	}
	t.Fatalf("events keep coming: %v", out)
	return nil
}

func socketpair(t testing.TB) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	return fds[0], fds[1]
}

func closeFd(t testing.TB, fd int) {
	t.Helper()
	if err := unix.Close(fd); err != nil {
		t.Errorf("close(%d): %v", fd, err)
	}
}

// loopbackListener returns a listening non-blocking TCP socket on 127.0.0.1 and its port.
func loopbackListener(t testing.TB) (int, int) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := unix.Listen(fd, 1024); err != nil {
		t.Fatalf("listen: %v", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatalf("getsockname: %v", err)
	}
	return fd, sa.(*unix.SockaddrInet4).Port
}

// dialLoopback connects a blocking TCP socket to 127.0.0.1:port.
func dialLoopback(t testing.TB, port int) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != nil {
		t.Fatalf("connect: %v", err)
	}
	return fd
}

func errnoName(res int32) string {
	if res >= 0 {
		return "ok"
	}
	return strings.ToUpper(unix.ErrnoName(unix.Errno(-res)))
}
