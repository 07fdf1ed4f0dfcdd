//go:build linux

package blitzio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// h16SockInt reads an integer socket option of s.
func h16SockInt(t *testing.T, s *TCPStream, level, opt int) int {
	t.Helper()
	rc, _ := s.SyscallConn()
	var v int
	var err error
	if cerr := rc.Control(func(fd uintptr) { v, err = unix.GetsockoptInt(int(fd), level, opt) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return v
}

// TestHostile16Dialer: the options of a Dialer, as net.Dialer's. Timeout ends a dial
// to an address that never answers with a net.Error whose Timeout() is true; LocalAddr
// is the connection's source, and a name with no address of its family fails with "no
// suitable address"; KeepAlive and KeepAliveConfig set the probes as net's (on with
// 15 s by default, off when negative); Control runs before the connect with the
// family and the address, and its error fails the dial.
func TestHostile16Dialer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		silent := h16Blackhole(t, net.IPv4(127, 0, 0, 1))
		d := &Dialer{Timeout: 300 * time.Millisecond}
		r := blockOn(t, rt, d.Dial("tcp4", silent.String()))
		var ne net.Error
		if r.Err == nil || !errors.As(r.Err, &ne) || !ne.Timeout() {
			t.Fatalf("Dialer.Timeout on a silent address: %v, want a net.Error with Timeout()", r.Err)
		}

		live := h16Live(t, net.IPv4(127, 0, 0, 1))
		d = &Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		r = blockOn(t, rt, d.Dial("tcp", live.String()))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if ip := r.Value.LocalAddr().(*net.TCPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 2)) {
			t.Fatalf("connection from %v, want the Dialer's LocalAddr 127.0.0.2", ip)
		}
		r.Value.Close()
		r = blockOn(t, rt, d.Dial("tcp", "[::1]:80"))
		var ae *net.AddrError
		if !errors.As(r.Err, &ae) || ae.Err != "no suitable address found" {
			t.Fatalf("IPv4 LocalAddr, IPv6 address: %v, want no suitable address", r.Err)
		}

		for _, c := range []struct {
			name             string
			d                Dialer
			on               bool
			idle, intvl, cnt int
		}{
			{"default", Dialer{}, true, 15, 15, 9},
			{"KeepAlive 30s", Dialer{KeepAlive: 30 * time.Second}, true, 30, 15, 9},
			{"KeepAlive off", Dialer{KeepAlive: -1}, false, 0, 0, 0},
			{"KeepAliveConfig", Dialer{KeepAlive: -1, KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 45 * time.Second, Interval: 5 * time.Second, Count: 3}}, true, 45, 5, 3},
		} {
			r := blockOn(t, rt, c.d.Dial("tcp4", live.String()))
			if r.Err != nil {
				t.Fatalf("%s: %v", c.name, r.Err)
			}
			s := r.Value
			on := h16SockInt(t, s, unix.SOL_SOCKET, unix.SO_KEEPALIVE) != 0
			if on != c.on {
				t.Errorf("%s: SO_KEEPALIVE %v, want %v", c.name, on, c.on)
			} else if on {
				idle := h16SockInt(t, s, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
				intvl := h16SockInt(t, s, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
				cnt := h16SockInt(t, s, unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
				if idle != c.idle || intvl != c.intvl || cnt != c.cnt {
					t.Errorf("%s: idle %d, interval %d, count %d; want %d, %d, %d", c.name, idle, intvl, cnt, c.idle, c.intvl, c.cnt)
				}
			}
			s.Close()
		}

		type call struct{ network, address string }
		var calls []call
		var notYet bool
		d = &Dialer{Control: func(network, address string, c syscall.RawConn) error {
			calls = append(calls, call{network, address})
			c.Control(func(fd uintptr) {
				_, err := unix.Getpeername(int(fd))
				notYet = err == unix.ENOTCONN
			})
			return nil
		}}
		r = blockOn(t, rt, d.Dial("tcp", live.String()))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		r.Value.Close()
		if len(calls) != 1 || calls[0] != (call{"tcp4", live.String()}) || !notYet {
			t.Fatalf("Dialer.Control calls %+v (before the connect: %v); want one, tcp4 %v, before", calls, notYet, live)
		}
		mine := errors.New("refused by Control")
		d = &Dialer{Control: func(string, string, syscall.RawConn) error { return mine }}
		r = blockOn(t, rt, d.Dial("tcp", live.String()))
		var oe *net.OpError
		if !errors.Is(r.Err, mine) || !errors.As(r.Err, &oe) || oe.Op != "dial" {
			t.Fatalf("dial whose Control failed: %v; want a dial *net.OpError wrapping its error", r.Err)
		}
	})
}

// TestHostile16DialerFallbackDelay: a negative FallbackDelay turns the race of address
// families off: the second family's address is tried only once the first's attempt
// ended (here at its share of the deadline, 2 s), never 300 ms in.
func TestHostile16DialerFallbackDelay(t *testing.T) {
	netWatchdog(t, 60*time.Second)
	rt := newRT(t, Config{})
	silent6, live4 := h16Blackhole(t, net.IPv6loopback), h16Live(t, net.IPv4(127, 0, 0, 1))
	var mu sync.Mutex
	var order []string
	var at []time.Time
	control := func(network, address string, c syscall.RawConn) error {
		mu.Lock()
		order = append(order, network)
		at = append(at, time.Now())
		mu.Unlock()
		return nil
	}
	// The attempts' start times are compared, not sampled after a fixed sleep: a
	// loaded machine may poll the dial late, but never starts the second attempt
	// early. 4 s leaves tcp4 its 2 s even when the first poll comes late.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	f := &dialFuture{ctx: ctx, network: "tcp", addrs: []*net.TCPAddr{silent6, live4}, keepAlive: defaultKeepAlive, fallbackDelay: -1, control: control}
	h := Spawn(rt, Future[Result[*TCPStream]](f))
	r, err := waitHandle(t, h)
	if err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	r.Value.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 2 || order[0] != "tcp6" || order[1] != "tcp4" {
		t.Fatalf("attempts %v; want tcp6, then tcp4 once it gave up", order)
	}
	// The race of families would start tcp4 dialFallbackDelay (300 ms) in; the
	// first attempt's share of the deadline is 2 s.
	if gap := at[1].Sub(at[0]); gap < time.Second {
		t.Fatalf("tcp4 started %v after tcp6; want it only once tcp6's attempt ended (2 s)", gap)
	}
}

// TestHostile16ListenConfigKeepAlive: ListenConfig's KeepAlive and KeepAliveConfig set
// the accepted connections' probes as net.ListenConfig's do.
func TestHostile16ListenConfigKeepAlive(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for _, c := range []struct {
			name     string
			lc       ListenConfig
			on       bool
			idle, ct int
		}{
			{"default", ListenConfig{}, true, 15, 9},
			{"KeepAlive 20s", ListenConfig{KeepAlive: 20 * time.Second}, true, 20, 9},
			{"KeepAlive off", ListenConfig{KeepAlive: -1}, false, 0, 0},
			{"KeepAliveConfig", ListenConfig{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 40 * time.Second, Count: 2}}, true, 40, 2},
		} {
			l, err := c.lc.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			acc := Spawn(rt, l.Accept())
			nc, err := net.Dial("tcp4", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			a, err := waitHandle(t, acc)
			if err != nil || a.Err != nil {
				t.Fatal(err, a.Err)
			}
			s := a.Value.Conn
			on := h16SockInt(t, s, unix.SOL_SOCKET, unix.SO_KEEPALIVE) != 0
			if on != c.on {
				t.Errorf("%s: SO_KEEPALIVE %v, want %v", c.name, on, c.on)
			} else if on {
				if idle, ct := h16SockInt(t, s, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE), h16SockInt(t, s, unix.IPPROTO_TCP, unix.TCP_KEEPCNT); idle != c.idle || ct != c.ct {
					t.Errorf("%s: idle %d, count %d; want %d, %d", c.name, idle, ct, c.idle, c.ct)
				}
			}
			s.Close()
			nc.Close()
			l.Close()
		}
	})
}

// TestHostile16Listen: Listen with a "host:port" string, as net.Listen: ":0" is the
// wildcard (dual-stack on "tcp"), a literal and "localhost" listen where net's would,
// and bad input fails as net's does (an unknown network, a missing port, a malformed
// address), each a listen *net.OpError.
func TestHostile16Listen(t *testing.T) {
	rt := newRT(t, Config{})
	for _, c := range []struct{ network, address string }{
		{"tcp4", "127.0.0.1:0"}, {"tcp", ":0"}, {"tcp4", "localhost:0"},
	} {
		l, err := Listen(c.network, c.address)
		if err != nil {
			t.Fatalf("Listen(%q, %q): %v", c.network, c.address, err)
		}
		nl, err := net.Listen(c.network, c.address)
		if err != nil {
			t.Fatal(err)
		}
		ours, theirs := l.TCPAddr(), nl.Addr().(*net.TCPAddr)
		nl.Close()
		if !ours.IP.Equal(theirs.IP) || ours.Port == 0 {
			t.Errorf("Listen(%q, %q) on %v; net's on %v", c.network, c.address, ours, theirs)
		}
		acc := Spawn(rt, l.Accept())
		dial := ours.String()
		if ours.IP.IsUnspecified() {
			dial = net.JoinHostPort("127.0.0.1", fmt.Sprint(ours.Port))
		}
		nc, err := net.Dial("tcp", dial)
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
		if a, err := waitHandle(t, acc); err != nil || a.Err != nil {
			t.Fatal(err, a.Err)
		} else {
			a.Value.Conn.Close()
		}
		l.Close()
	}
	for _, c := range []struct{ network, address string }{
		{"udp", ":0"}, {"tcp", "127.0.0.1"}, {"tcp", "[::1:80"},
	} {
		_, err := Listen(c.network, c.address)
		_, nerr := net.Listen(c.network, c.address)
		var oe *net.OpError
		if err == nil || nerr == nil || !errors.As(err, &oe) || oe.Op != "listen" {
			t.Errorf("Listen(%q, %q) = %v; net's %v; want both to fail, ours as a listen *net.OpError", c.network, c.address, err, nerr)
		}
	}
}

// TestHostile16DialerResolver: a Dialer's Resolver resolves its names (here one whose
// DNS connection fails, so the dial fails with its error).
func TestHostile16DialerResolver(t *testing.T) {
	rt := newRT(t, Config{})
	noDNS := errors.New("no DNS here")
	var asked atomic.Bool
	d := &Dialer{Resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		asked.Store(true)
		return nil, noDNS
	}}}
	r := blockOn(t, rt, d.Dial("tcp", "blitzio-test.invalid:80"))
	if r.Err != nil && !asked.Load() {
		t.Skipf("this system's name service switch does not ask DNS: %v", r.Err)
	}
	if r.Err == nil || !asked.Load() {
		t.Fatalf("dial through a Resolver whose DNS fails: %v (asked: %v); want its failure", r.Err, asked.Load())
	}
	// The port is looked up by it too: a numeric one needs no lookup at all.
	l := h16Live(t, net.IPv4(127, 0, 0, 1))
	asked.Store(false)
	r = blockOn(t, rt, d.Dial("tcp", l.String()))
	if r.Err != nil || asked.Load() {
		t.Fatalf("dial of an IP literal through the Resolver: %v (asked: %v)", r.Err, asked.Load())
	}
	r.Value.Close()
}
