//go:build linux

package blitzio

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHostile16DialSelfConnect: a dial with no local port asked for whose socket the
// kernel binds to the very port it dials (nothing listening there) is connected to
// itself by TCP's simultaneous open. net.DialTCP notices and dials again; ours
// returned the self-connected stream, a "server" that echoes the caller's own bytes.
// The hook makes the first attempt bind to the dialed port, as the kernel may.
func TestHostile16DialSelfConnect(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		l := listenLoopback(t, "tcp4")
		addr := l.TCPAddr()
		l.Close()
		var attempts atomic.Int32
		testHookDialBind = func(raddr *net.TCPAddr) *net.TCPAddr {
			if attempts.Add(1) == 1 {
				return raddr
			}
			return nil
		}
		defer func() { testHookDialBind = nil }()
		rt := newRT(t, cfg)
		r := blockOn(t, rt, DialTCP("tcp4", nil, addr))
		if r.Err == nil {
			la, ra := r.Value.LocalAddr(), r.Value.RemoteAddr()
			r.Value.Close()
			t.Fatalf("dial to a closed port connected %v -> %v; want it dialed again and refused", la, ra)
		}
		if !errors.Is(r.Err, unix.ECONNREFUSED) {
			t.Fatalf("dial = %v; want ECONNREFUSED from the attempt made again", r.Err)
		}
		if n := attempts.Load(); n != 2 {
			t.Fatalf("%d attempts; want 2 (the self-connected one, then one more)", n)
		}
		// A local port asked for is the caller's choice: no retry, as net.DialTCP.
		// (A fresh port: the first self-connection, closed, holds its own in TIME_WAIT.)
		attempts.Store(0)
		l = listenLoopback(t, "tcp4")
		addr = l.TCPAddr()
		l.Close()
		r = blockOn(t, rt, DialTCP("tcp4", addr, addr))
		if r.Err != nil {
			t.Fatalf("dial from %v to itself: %v; want the self-connection net.DialTCP also gives", addr, r.Err)
		}
		r.Value.Close()
		if n := attempts.Load(); n != 0 {
			t.Fatalf("the hook ran %d times for a dial with a local address", n)
		}
	})
}
