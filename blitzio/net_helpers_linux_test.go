//go:build linux

package blitzio

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// netBackends are the Linux backends the network suite runs on. io_uring is skipped
// while its Poller is not available on this kernel or build.
var netBackends = []Backend{BackendEpoll, BackendIOUring}

// forEachBackend runs body once per Linux backend, as a subtest with a fresh runtime's
// Config (the body creates the runtime, so it can also test Close). io_uring runs twice:
// with the one-shot readiness polls armed on demand (the default) and, as
// "io_uring-multishot", with one multishot poll per socket (BLITZIO_IOURING_MULTISHOT=1,
// read when the body creates a runtime).
func forEachBackend(t *testing.T, body func(t *testing.T, cfg Config)) {
	type variant struct {
		name      string
		b         Backend
		multishot bool
	}
	var variants []variant
	for _, b := range netBackends {
		variants = append(variants, variant{b.String(), b, false})
		if b == BackendIOUring {
			variants = append(variants, variant{"io_uring-multishot", b, true})
		}
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if v.multishot {
				t.Setenv(uringMultishotEnv, "1")
			}
			cfg := Config{Workers: 2, Backend: v.b}
			rt, err := New(cfg)
			if err != nil {
				if v.b == BackendIOUring && errors.Is(err, ErrBackendUnavailable) {
					t.Skipf("io_uring unavailable: %v", err)
				}
				t.Fatal(err)
			}
			if v.b == BackendIOUring && (rt.io.armer == nil) != v.multishot {
				rt.Close()
				t.Fatalf("io_uring runtime with %s=%v: armer %v, want one-shot readiness %v", uringMultishotEnv, v.multishot, rt.io.armer, !v.multishot)
			}
			rt.Close()
			body(t, cfg)
		})
	}
}

// netWatchdog fails the test with a goroutine dump if it is still running after d.
func netWatchdog(t *testing.T, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	timer := time.AfterFunc(d, func() {
		select {
		case <-done:
			return
		default:
		}
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		os.Stderr.Write(buf[:n]) // the dump first, the name last: CI logs keep the tail
		panic("watchdog: " + t.Name() + " still running after " + d.String())
	})
	t.Cleanup(func() { close(done); timer.Stop() })
}

// blockOn runs f on rt with a watchdog and returns its value.
func blockOn[T any](t *testing.T, rt *Runtime, f Future[T]) T {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := BlockOn(rt, f); ch <- res{v, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("BlockOn: %v", r.err)
		}
		return r.v
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("BlockOn did not finish in 30s\n%s", buf[:n])
		panic("unreachable")
	}
}

// listenLoopback opens a listener on 127.0.0.1 (or ::1 for "tcp6").
func listenLoopback(t *testing.T, network string) *TCPListener {
	t.Helper()
	ip := net.IPv4(127, 0, 0, 1)
	if network == "tcp6" {
		ip = net.IPv6loopback
	}
	l, err := ListenTCP(network, &net.TCPAddr{IP: ip})
	if err != nil {
		if network == "tcp6" {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

type pollerIface = poller.Poller

var errUnsupportedPoller = poller.ErrUnsupported

func contextWithDeadlinePassed() (context.Context, context.CancelFunc) {
	return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
}
