//go:build linux

package blitzio

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestHostile4UDPDatagramEdges: truncation like Go's ReadFrom (n == len(p), the rest
// discarded, no error), zero-length datagrams, peek then receive, and ECONNREFUSED on a
// connected socket after sending to a closed port.
func TestHostile4UDPDatagramEdges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 20*time.Second)
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		lo := net.IPv4(127, 0, 0, 1)
		c, err := ListenUDP("udp4", &net.UDPAddr{IP: lo})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		snd, err := ListenUDP("udp4", &net.UDPAddr{IP: lo})
		if err != nil {
			t.Fatal(err)
		}
		defer snd.Close()
		send := func(p []byte) {
			t.Helper()
			if r := blockOn(t, rt, snd.SendTo(p, c.UDPAddr())); r.Err != nil || r.Value != len(p) {
				t.Fatalf("send %d: %+v", len(p), r)
			}
		}
		send([]byte("0123456789"))
		send(nil)
		send([]byte("after"))
		small := make([]byte, 4)
		r := blockOn(t, rt, c.RecvFrom(small))
		if r.Err != nil || r.Value.N != 4 || string(small) != "0123" || r.Value.From.Port != snd.UDPAddr().Port {
			t.Fatalf("truncated recv: %+v %q", r, small)
		}
		// the zero-length datagram is a datagram of its own
		big := make([]byte, 64)
		r = blockOn(t, rt, c.PeekFrom(big))
		if r.Err != nil || r.Value.N != 0 {
			t.Fatalf("peek of empty datagram: %+v", r)
		}
		r = blockOn(t, rt, c.RecvFrom(big))
		if r.Err != nil || r.Value.N != 0 {
			t.Fatalf("empty datagram: %+v", r)
		}
		r = blockOn(t, rt, c.PeekFrom(big))
		if r.Err != nil || string(big[:r.Value.N]) != "after" {
			t.Fatalf("peek: %+v %q", r, big[:r.Value.N])
		}
		r = blockOn(t, rt, c.RecvFrom(big))
		if r.Err != nil || string(big[:r.Value.N]) != "after" {
			t.Fatalf("recv after peek: %+v %q", r, big[:r.Value.N])
		}

		// connected socket to a port nobody listens on. It dials while dead still
		// holds the port, and only then is dead closed: dialed after the close, the
		// new socket could be given that same ephemeral port and be connected to
		// itself (its "x" would come back instead of ECONNREFUSED).
		dead, err := net.ListenUDP("udp4", &net.UDPAddr{IP: lo})
		if err != nil {
			t.Fatal(err)
		}
		deadAddr := dead.LocalAddr().(*net.UDPAddr)
		cc, err := DialUDP("udp4", nil, deadAddr)
		dead.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		if r := blockOn(t, rt, cc.Send([]byte("x"))); r.Err != nil {
			t.Fatalf("first send: %v", r.Err)
		}
		got := blockOn(t, rt, Timeout(10*time.Second, cc.Recv(big)))
		if got.Err != nil {
			t.Fatalf("Recv after ICMP port unreachable hung: %v", got.Err)
		}
		var oe *net.OpError
		if !errors.Is(got.Value.Err, syscall.ECONNREFUSED) || !errors.As(got.Value.Err, &oe) {
			t.Fatalf("Recv: %+v, want *net.OpError wrapping ECONNREFUSED", got.Value)
		}
	})
}

// TestHostile4CloseWakesEveryWaiter: Close in one task while other tasks wait in a UDP
// receive, a Unix accept, a Unix stream read, a Readable and a WriteAll on a full
// buffer: every one fails with an error wrapping net.ErrClosed, none hangs.
func TestHostile4CloseWakesEveryWaiter(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 20*time.Second)
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		dir := t.TempDir()
		u, err := ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "s"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(dir, "s"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		acc := blockOn(t, rt, ln.Accept())
		if acc.Err != nil {
			t.Fatal(acc.Err)
		}
		srv := acc.Value
		defer srv.Close()
		tc, ts := connPair(t, rt)
		ts.SetReadBuffer(4096)
		tc.SetWriteBuffer(4096)

		type waiter struct {
			name  string
			h     JoinHandle[error]
			close func() error
		}
		errOf := func(f Future[Result[int]]) Future[error] {
			return Map(f, func(r Result[int]) error { return r.Err })
		}
		big := make([]byte, 8<<20)
		ws := []waiter{
			{"udp recv", Spawn(rt, Map(u.RecvFrom(make([]byte, 8)), func(r Result[Datagram[*net.UDPAddr]]) error { return r.Err })), u.Close},
			{"unix accept", Spawn(rt, Map(ln.Accept(), func(r Result[*UnixStream]) error { return r.Err })), ln.Close},
			{"unix read", Spawn(rt, errOf(srv.Read(make([]byte, 8)))), srv.Close},
			{"tcp readable", Spawn(rt, tc.Readable()), nil},
			{"tcp write-all", Spawn(rt, Map(tc.WriteAll(big), func(r Result[int]) error { return r.Err })), tc.Close},
		}
		// let every task reach its wait (they cannot finish: nothing arrives)
		for range 20 {
			blockOn(t, rt, YieldNow())
		}
		time.Sleep(20 * time.Millisecond)
		for _, w := range ws {
			if w.close != nil {
				if err := w.close(); err != nil {
					t.Fatalf("%s: close: %v", w.name, err)
				}
			}
		}
		for _, w := range ws {
			done := make(chan error, 1)
			go func() { v, err := w.h.Wait(); done <- errors.Join(v, err) }()
			select {
			case err := <-done:
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("%s: %v, want net.ErrClosed", w.name, err)
				}
				var oe *net.OpError
				if !errors.As(err, &oe) {
					t.Errorf("%s: %T is not a *net.OpError", w.name, err)
				}
			case <-time.After(hangBound):
				t.Errorf("%s: still waiting %v after Close", w.name, hangBound)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "s")); !os.IsNotExist(err) {
			t.Errorf("socket file left after UnixListener.Close: %v", err)
		}
	})
}
