//go:build linux

package blitzio

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// h16Blackhole returns an address on ip where a connect hangs, as toward a host that
// drops packets: a listener with a backlog of 0 whose one accept-queue place is taken
// by a connection nobody accepts, so that the kernel drops later SYNs (and the
// connect retries them for minutes).
func h16Blackhole(t *testing.T, ip net.IP) *net.TCPAddr {
	t.Helper()
	family := unix.AF_INET
	if ip.To4() == nil {
		family = unix.AF_INET6
	}
	s, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(s) })
	var sa unix.Sockaddr
	if family == unix.AF_INET {
		sa4 := &unix.SockaddrInet4{}
		copy(sa4.Addr[:], ip.To4())
		sa = sa4
	} else {
		sa6 := &unix.SockaddrInet6{}
		copy(sa6.Addr[:], ip.To16())
		sa = sa6
	}
	if err := unix.Bind(s, sa); err != nil {
		t.Skipf("bind %v: %v", ip, err)
	}
	if err := unix.Listen(s, 0); err != nil {
		t.Fatal(err)
	}
	lsa, err := unix.Getsockname(s)
	if err != nil {
		t.Fatal(err)
	}
	addr := sockaddrToTCP(lsa)
	filler, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatalf("filling the accept queue: %v", err)
	}
	t.Cleanup(func() { filler.Close() })
	// The queue is full now: a probe must not connect within a moment.
	if c, err := net.DialTimeout("tcp", addr.String(), 200*time.Millisecond); err == nil {
		c.Close()
		t.Skip("this kernel answers connects to a listener with a full accept queue")
	}
	return addr
}

// h16Refused is an address on ip where nothing listens.
func h16Refused(t *testing.T, ip net.IP) *net.TCPAddr {
	t.Helper()
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip})
	if err != nil {
		t.Skipf("listen on %v: %v", ip, err)
	}
	a := l.Addr().(*net.TCPAddr)
	l.Close()
	return a
}

// h16Live is an address on ip with a listener that accepts (and closes what it
// accepts).
func h16Live(t *testing.T, ip net.IP) *net.TCPAddr {
	t.Helper()
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip})
	if err != nil {
		t.Skipf("listen on %v: %v", ip, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close() // the tests count this process's descriptors
		}
	}()
	return l.Addr().(*net.TCPAddr)
}

// h16Dial dials the address list addrs as Dial does once a name resolved to them.
func h16Dial(ctx context.Context, network string, addrs ...*net.TCPAddr) Future[Result[*TCPStream]] {
	return &dialFuture{ctx: ctx, network: network, addrs: addrs}
}

func h16CountFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestHostile16DialHappyEyeballs: a name that resolves to both address families is
// dialed as net.Dialer does (RFC 6555): when the first family's address does not
// answer, the other family's starts after the fallback delay and its connection wins
// (before, the dial waited minutes on the silent address); when the first fails at
// once, the other starts at once; when both fail, the error is the first address's.
func TestHostile16DialHappyEyeballs(t *testing.T) {
	v4, v6 := net.IPv4(127, 0, 0, 1), net.IPv6loopback
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		for _, tc := range []struct {
			name             string
			primary, backup  func(t *testing.T) *net.TCPAddr
			wantPrimary      bool // the connection made is to the primary
			wantErrOnPrimary bool // both fail: the error names the primary
		}{
			{name: "IPv6 silent, IPv4 answers", primary: func(t *testing.T) *net.TCPAddr { return h16Blackhole(t, v6) }, backup: func(t *testing.T) *net.TCPAddr { return h16Live(t, v4) }},
			{name: "IPv4 silent, IPv6 answers", primary: func(t *testing.T) *net.TCPAddr { return h16Blackhole(t, v4) }, backup: func(t *testing.T) *net.TCPAddr { return h16Live(t, v6) }},
			{name: "IPv6 refused, IPv4 answers", primary: func(t *testing.T) *net.TCPAddr { return h16Refused(t, v6) }, backup: func(t *testing.T) *net.TCPAddr { return h16Live(t, v4) }},
			{name: "IPv6 answers, IPv4 silent", primary: func(t *testing.T) *net.TCPAddr { return h16Live(t, v6) }, backup: func(t *testing.T) *net.TCPAddr { return h16Blackhole(t, v4) }, wantPrimary: true},
			{name: "both refused", primary: func(t *testing.T) *net.TCPAddr { return h16Refused(t, v6) }, backup: func(t *testing.T) *net.TCPAddr { return h16Refused(t, v4) }, wantErrOnPrimary: true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p, b := tc.primary(t), tc.backup(t)
				fds := h16CountFDs(t)
				r := blockOn(t, rt, h16Dial(context.Background(), "tcp", p, b))
				if tc.wantErrOnPrimary {
					var oe *net.OpError
					if r.Err == nil || !errors.As(r.Err, &oe) || oe.Addr == nil || oe.Addr.String() != p.String() || !errors.Is(r.Err, unix.ECONNREFUSED) {
						t.Fatalf("dial of two refused addresses: %v; want the first one's refusal (%v)", r.Err, p)
					}
				} else {
					if r.Err != nil {
						t.Fatalf("dial of %v then %v: %v", p, b, r.Err)
					}
					want := b
					if tc.wantPrimary {
						want = p
					}
					got := r.Value.RemoteAddr().String()
					r.Value.Close()
					if got != want.String() {
						t.Fatalf("connected to %v; want %v", got, want)
					}
				}
				// The losing attempt's socket is closed with the dial.
				waitFor(t, "the losing attempt's socket closed", func() bool { return h16CountFDs(t) <= fds })
			})
		}
	})
}

// TestHostile16DialDeadlineShares: a dial with a context deadline gives each address an
// equal share of the time left (at least 2 s), as net's: an address that never answers
// does not use up the whole deadline, and the next one connects. Dropping a dial, or
// ending its context, while both families' attempts are in flight closes both sockets.
func TestHostile16DialDeadlineShares(t *testing.T) {
	v4, v6 := net.IPv4(127, 0, 0, 1), net.IPv6loopback
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		silent, live := h16Blackhole(t, v4), h16Live(t, v4)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := blockOn(t, rt, h16Dial(ctx, "tcp4", silent, live))
		if r.Err != nil {
			t.Fatalf("dial of a silent address then a live one within 5 s: %v; want the live one reached after the silent one's share", r.Err)
		}
		if got := r.Value.RemoteAddr().String(); got != live.String() {
			t.Fatalf("connected to %v; want %v", got, live)
		}
		r.Value.Close()

		// Both racing, then dropped: no socket left behind.
		silent6 := h16Blackhole(t, v6)
		fds := h16CountFDs(t)
		tr := blockOn(t, rt, Timeout(600*time.Millisecond, h16Dial(context.Background(), "tcp", silent6, silent)))
		if tr.Err == nil {
			t.Fatalf("dial of two silent addresses finished: %+v", tr.Value.Value)
		}
		waitFor(t, "both attempts' sockets closed", func() bool { return h16CountFDs(t) <= fds })

		// Both racing, then the context ends: its error, and no socket left behind.
		cctx, ccancel := context.WithCancel(context.Background())
		time.AfterFunc(600*time.Millisecond, ccancel)
		r = blockOn(t, rt, h16Dial(cctx, "tcp", silent6, silent))
		if !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("dial of two silent addresses whose context was canceled: %v, %v; want context.Canceled", r.Value, r.Err)
		}
		waitFor(t, "both attempts' sockets closed after the cancel", func() bool { return h16CountFDs(t) <= fds })
	})
}

// TestHostile16DialPartialDeadline checks the shares themselves, as net's.
func TestHostile16DialPartialDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		left  time.Duration
		addrs int
		want  time.Duration
		ok    bool
	}{
		{10 * time.Second, 2, 5 * time.Second, true},
		{10 * time.Second, 10, 2 * time.Second, true}, // at least 2 s
		{time.Second, 3, time.Second, true},           // less left than 2 s: all of it
		{0, 1, 0, false},
		{-time.Second, 1, 0, false},
	} {
		got, ok := partialDeadline(now, now.Add(c.left), c.addrs)
		if ok != c.ok || (ok && got.Sub(now) != c.want) {
			t.Errorf("partialDeadline(%v left, %d addresses) = %v, %v; want %v, %v", c.left, c.addrs, got.Sub(now), ok, c.want, c.ok)
		}
	}
	if !strings.Contains(dialFallbackDelay.String(), "300ms") {
		t.Errorf("dialFallbackDelay = %v; want net.Dialer's 300ms", dialFallbackDelay)
	}
}
