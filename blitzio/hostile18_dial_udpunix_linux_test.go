//go:build linux

package blitzio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// h18UDPEcho serves one datagram echo on a net UDP socket of network at ip, and
// returns its address.
func h18UDPEcho(t *testing.T, network string, ip net.IP) *net.UDPAddr {
	t.Helper()
	pc, err := net.ListenUDP(network, &net.UDPAddr{IP: ip})
	if err != nil {
		t.Skipf("no %s on %v here: %v", network, ip, err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		b := make([]byte, 512)
		for {
			n, from, err := pc.ReadFromUDP(b)
			if err != nil {
				return
			}
			pc.WriteToUDP(b[:n], from)
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr)
}

// h18UDPRoundTrip sends msg on c and checks that the echo comes back.
func h18UDPRoundTrip(t *testing.T, rt *Runtime, c *UDPConn, msg string) {
	t.Helper()
	if r := blockOn(t, rt, c.Send([]byte(msg))); r.Err != nil {
		t.Fatal(r.Err)
	}
	b := make([]byte, 64)
	r := blockOn(t, rt, c.Recv(b))
	if r.Err != nil || string(b[:r.Value]) != msg {
		t.Fatalf("echo of %q: %q, %v", msg, b[:r.Value], r.Err)
	}
}

// TestHostile18DialerDialUDP: Dialer.DialUDP connects a UDP socket to "host:port" as
// net.Dial("udp", ...) does: a name (localhost, from the hosts file), an IP literal of
// either family, an empty host (the local system), LocalAddr as the source, Control
// before the connect with the socket's family; a literal of the wrong family, a bad
// port and an unknown network fail with net's errors, and so does a Control error,
// which leaves no descriptor open.
func TestHostile18DialerDialUDP(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		echo4 := h18UDPEcho(t, "udp4", net.IPv4(127, 0, 0, 1))
		var d Dialer
		ctx := context.Background()

		for _, address := range []string{echo4.String(), fmt.Sprintf("localhost:%d", echo4.Port), fmt.Sprintf(":%d", echo4.Port)} {
			// "udp4": localhost may list ::1 first, where nothing listens.
			r := blockOn(t, rt, d.DialUDP(ctx, "udp4", address))
			if r.Err != nil {
				t.Fatalf("DialUDP udp4 %s: %v", address, r.Err)
			}
			if ra := r.Value.RemoteAddr().(*net.UDPAddr); ra.Port != echo4.Port {
				t.Fatalf("DialUDP %s: connected to %v", address, ra)
			}
			h18UDPRoundTrip(t, rt, r.Value, "hello "+address)
			r.Value.Close()
		}

		if echo6 := h18UDPEcho(t, "udp6", net.IPv6loopback); echo6 != nil {
			r := blockOn(t, rt, d.DialUDP(ctx, "udp", echo6.String()))
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			h18UDPRoundTrip(t, rt, r.Value, "over IPv6")
			r.Value.Close()
		}

		// LocalAddr is the source.
		ld := &Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		r := blockOn(t, rt, ld.DialUDP(ctx, "udp", echo4.String()))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if ip := r.Value.LocalAddr().(*net.UDPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 2)) {
			t.Fatalf("DialUDP from %v, want LocalAddr 127.0.0.2", ip)
		}
		h18UDPRoundTrip(t, rt, r.Value, "from 127.0.0.2")
		r.Value.Close()
		// A LocalAddr of one family and a literal of the other: no suitable address.
		r = blockOn(t, rt, ld.DialUDP(ctx, "udp", "[::1]:53"))
		var ae *net.AddrError
		if r.Err == nil || !errors.As(r.Err, &ae) {
			t.Fatalf("DialUDP from an IPv4 LocalAddr to ::1: %v, want a *net.AddrError", r.Err)
		}

		// Control runs before the connect, with the family's network and the address.
		var got []string
		cd := &Dialer{Control: func(network, address string, c syscall.RawConn) error {
			got = append(got, network+" "+address)
			var cerr error
			err := c.Control(func(fd uintptr) {
				cerr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 65536)
			})
			if err != nil {
				return err
			}
			return cerr
		}}
		r = blockOn(t, rt, cd.DialUDP(ctx, "udp", echo4.String()))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if want := "udp4 " + echo4.String(); len(got) != 1 || got[0] != want {
			t.Fatalf("Control saw %q, want [%q]", got, want)
		}
		h18UDPRoundTrip(t, rt, r.Value, "controlled")
		r.Value.Close()

		// A Control error fails the dial and closes the socket.
		before := h16CountFDs(t)
		refused := errors.New("h18 control refuses")
		ed := &Dialer{Control: func(string, string, syscall.RawConn) error { return refused }}
		for i := 0; i < 20; i++ {
			if r := blockOn(t, rt, ed.DialUDP(ctx, "udp", echo4.String())); !errors.Is(r.Err, refused) {
				t.Fatalf("DialUDP with a failing Control: %v, want its error", r.Err)
			}
		}
		if after := h16CountFDs(t); after > before {
			t.Fatalf("%d descriptors after 20 dials that Control refused, %d before: the sockets leak", after, before)
		}

		// net's errors for bad input, compared with net.Dial's.
		for _, tc := range []struct{ network, address string }{
			{"udp6", "127.0.0.1:53"},
			{"udp4", "[::1]:53"},
			{"udp", "127.0.0.1:notaport"},
			{"udp", "127.0.0.1"},
			{"udp9", "127.0.0.1:53"},
		} {
			r := blockOn(t, rt, d.DialUDP(ctx, tc.network, tc.address))
			_, nerr := net.Dial(tc.network, tc.address)
			if r.Err == nil || nerr == nil {
				t.Fatalf("DialUDP(%q, %q) = %v; net.Dial: %v; want both to fail", tc.network, tc.address, r.Err, nerr)
			}
			var oe *net.OpError
			if !errors.As(r.Err, &oe) || oe.Op != "dial" || oe.Net != tc.network {
				t.Fatalf("DialUDP(%q, %q): %#v, want a dial *net.OpError", tc.network, tc.address, r.Err)
			}
			var ours, theirs *net.AddrError
			if errors.As(nerr, &theirs) && (!errors.As(r.Err, &ours) || ours.Err != theirs.Err) {
				t.Fatalf("DialUDP(%q, %q): %v; net.Dial: %v", tc.network, tc.address, r.Err, nerr)
			}
			var unk net.UnknownNetworkError
			if errors.As(nerr, &unk) && !errors.As(r.Err, &unk) {
				t.Fatalf("DialUDP(%q, %q): %v; net.Dial: %v", tc.network, tc.address, r.Err, nerr)
			}
		}
	})
}

// TestHostile18DialerDialUDPContext: a context already ended, a Timeout already past,
// and a cancel while the name is being resolved each end DialUDP with the context's
// error (a timeout net.Error for a deadline), and the cancel ends the lookup itself; a
// DialUDP dropped while resolving cancels the lookup too. The Dialer's Resolver is the
// one asked.
func TestHostile18DialerDialUDPContext(t *testing.T) {
	netWatchdog(t, 90*time.Second)
	rt := newRT(t, Config{})
	var d Dialer
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := blockOn(t, rt, d.DialUDP(cctx, "udp", "127.0.0.1:53")); !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("DialUDP with a cancelled context: %v", r.Err)
	}
	td := &Dialer{Timeout: -1}
	var ne net.Error
	if r := blockOn(t, rt, td.DialUDP(context.Background(), "udp", "127.0.0.1:53")); !errors.As(r.Err, &ne) || !ne.Timeout() {
		t.Fatalf("DialUDP with a negative Timeout: %v, want a timeout", r.Err)
	}

	sr := newStallingResolver()
	rd := &Dialer{Resolver: sr.Resolver}

	// Cancelled while resolving: the context's error, and the lookup ends.
	ctx, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	h := Spawn(rt, rd.DialUDP(ctx, "udp", "blitzio-test.invalid:53"))
	waitAskedFor(t, sr, h)
	cancel2()
	r, err := waitHandle(t, h)
	if err != nil || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("DialUDP cancelled while resolving: %v, %v; want context.Canceled", r.Err, err)
	}
	sr.waitCancelled(t, "a DialUDP cancelled while resolving")
	sr.drain()

	// Dropped (its task aborted) while resolving: the lookup ends.
	h = Spawn(rt, rd.DialUDP(context.Background(), "udp", "blitzio-test.invalid:53"))
	waitAskedFor(t, sr, h)
	h.Abort()
	if _, err := waitHandle(t, h); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted DialUDP: %v", err)
	}
	sr.waitCancelled(t, "a DialUDP dropped while resolving")
}

// TestHostile18DialerDialUnix: Dialer.DialUnix connects to a path and to an abstract
// name as net.Dialer's Dial("unix", ...) does, with Control before the connect; a
// missing socket fails with net's error, and so do a wrong network, an empty address,
// an ended context and a failing Control (which leaves no descriptor open).
func TestHostile18DialerDialUnix(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		path := filepath.Join(t.TempDir(), "s")
		abstract := fmt.Sprintf("@blitzio-h18-%d-%d", unix.Getpid(), time.Now().UnixNano())
		for _, name := range []string{path, abstract} {
			nl, err := net.Listen("unix", name)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := nl.Accept()
				if err != nil {
					return
				}
				b := make([]byte, 64)
				n, _ := c.Read(b)
				c.Write(b[:n])
				c.Close()
			}()
			var seen atomic.Value
			d := &Dialer{Control: func(network, address string, c syscall.RawConn) error {
				seen.Store(network + " " + address)
				return nil
			}}
			r := blockOn(t, rt, d.DialUnix(context.Background(), "unix", name))
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if got, want := seen.Load(), "unix "+name; got != want {
				t.Fatalf("Control saw %v, want %q", got, want)
			}
			if w := blockOn(t, rt, r.Value.WriteAll([]byte("ping"))); w.Err != nil {
				t.Fatal(w.Err)
			}
			b := make([]byte, 4)
			if rr := blockOn(t, rt, r.Value.ReadFull(b)); rr.Err != nil || string(b) != "ping" {
				t.Fatalf("echo over %s: %q, %v", name, b, rr.Err)
			}
			r.Value.Close()
			nl.Close()
			wg.Wait()
		}

		var d Dialer
		missing := filepath.Join(t.TempDir(), "nobody")
		r := blockOn(t, rt, d.DialUnix(context.Background(), "unix", missing))
		_, nerr := net.Dial("unix", missing)
		if r.Err == nil || nerr == nil || r.Err.Error() != nerr.Error() {
			t.Fatalf("DialUnix to a missing socket: %v; net.Dial: %v", r.Err, nerr)
		}
		for _, tc := range []struct{ network, address string }{{"unixgram", path}, {"tcp", path}, {"unix", ""}} {
			r := blockOn(t, rt, d.DialUnix(context.Background(), tc.network, tc.address))
			var oe *net.OpError
			if r.Err == nil || !errors.As(r.Err, &oe) || oe.Op != "dial" {
				t.Fatalf("DialUnix(%q, %q): %v, want a dial *net.OpError", tc.network, tc.address, r.Err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if r := blockOn(t, rt, d.DialUnix(ctx, "unix", missing)); !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("DialUnix with a cancelled context: %v", r.Err)
		}
		var ne net.Error
		if r := blockOn(t, rt, (&Dialer{Timeout: -1}).DialUnix(context.Background(), "unix", missing)); !errors.As(r.Err, &ne) || !ne.Timeout() {
			t.Fatalf("DialUnix with a negative Timeout: %v, want a timeout", r.Err)
		}
		before := h16CountFDs(t)
		refused := errors.New("h18 unix control refuses")
		ed := &Dialer{Control: func(string, string, syscall.RawConn) error { return refused }}
		for i := 0; i < 20; i++ {
			if r := blockOn(t, rt, ed.DialUnix(context.Background(), "unix", missing)); !errors.Is(r.Err, refused) {
				t.Fatalf("DialUnix with a failing Control: %v", r.Err)
			}
		}
		if after := h16CountFDs(t); after > before {
			t.Fatalf("%d descriptors after 20 refused DialUnix, %d before", after, before)
		}
	})
}
