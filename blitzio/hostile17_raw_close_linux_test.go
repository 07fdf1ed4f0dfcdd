//go:build linux

package blitzio

import (
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHostile17RawConnReadRuntimeClosed: a RawConn Read waiting on a plain goroutine
// for a socket of a runtime that is closed meanwhile returns net.ErrClosed (the
// shutdown closes the runtime's sockets) instead of waiting forever; Control and
// AsyncIO afterwards fail too.
func TestHostile17RawConnReadRuntimeClosed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		other, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { other.Close() })
		x, _ := connPair(t, other)
		rc, _ := x.SyscallConn()
		done := make(chan error, 1)
		go func() {
			done <- rc.Read(func(fd uintptr) bool {
				_, _, err := unix.Recvfrom(int(fd), make([]byte, 1), unix.MSG_DONTWAIT)
				return err != unix.EAGAIN
			})
		}()
		time.Sleep(20 * time.Millisecond) // let it wait (the test holds either way)
		if err := other.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("RawConn.Read when its runtime closed: %v, want net.ErrClosed", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("RawConn.Read still waiting after its runtime closed")
		}
		if err := rc.Control(func(uintptr) { t.Error("Control ran after the runtime closed the socket") }); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Control after the runtime closed: %v", err)
		}
		if err := blockOn(t, rt, x.AsyncIO(InterestWrite, func(uintptr) error { t.Error("AsyncIO ran"); return nil })); err == nil {
			t.Fatal("AsyncIO on a socket of a closed runtime succeeded")
		}
	})
}

// TestHostile17SharedListenerCloseWakesAccept: Close of a listener whose socket is
// also held elsewhere (File was called) does not shut the socket down (see
// netFD.shared), yet an Accept waiting in a task still ends with net.ErrClosed, on
// every backend, and the other holder keeps accepting.
func TestHostile17SharedListenerCloseWakesAccept(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		l, nl := h16DupListener(t)
		h := Spawn(rt, l.Accept())
		time.Sleep(20 * time.Millisecond) // let it wait (the test holds either way)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if r, err := waitHandle(t, h); err != nil || !errors.Is(r.Err, net.ErrClosed) {
			t.Fatalf("Accept waiting at Close of a shared listener: %v %v, want net.ErrClosed", err, r.Err)
		}
		go func() {
			if c, err := net.Dial("tcp4", nl.Addr().String()); err == nil {
				c.Close()
			}
		}()
		c, err := nl.Accept()
		if err != nil {
			t.Fatalf("the other holder's Accept: %v", err)
		}
		c.Close()
	})
}
