//go:build linux

package blitzio

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// h11TTLReceiver is a plain blocking UDP socket (with a receive timeout, so a lost
// datagram fails the test instead of hanging it) that reports the TTL or hop limit each
// datagram arrived with.
type h11TTLReceiver struct {
	fd   int
	v6   bool
	addr *net.UDPAddr
}

func newH11TTLReceiver(t *testing.T, v6 bool) *h11TTLReceiver {
	t.Helper()
	family, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	if v6 {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Addr: [16]byte{15: 1}}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, sa); err != nil {
		t.Skipf("bind: %v", err)
	}
	if v6 {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1)
	} else {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTTL, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(int64(20 * time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	lsa, _ := unix.Getsockname(fd)
	return &h11TTLReceiver{fd: fd, v6: v6, addr: sockaddrToUDP(lsa)}
}

// ttl receives one datagram and returns the TTL (hop limit) it carried.
func (r *h11TTLReceiver) ttl(t *testing.T) int {
	t.Helper()
	buf, oob := make([]byte, 64), make([]byte, 128)
	_, oobn, _, _, err := unix.Recvmsg(r.fd, buf, oob, 0)
	if err != nil {
		t.Fatalf("no datagram arrived: %v", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if (m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TTL) ||
			(m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_HOPLIMIT) {
			return int(m.Data[0])
		}
	}
	t.Fatal("the datagram came without its TTL")
	return 0
}

// TestHostile11NetUDPSetTTLOnTheWire: the TTL a datagram carries is the one SetTTL set:
// on IPv4, on IPv6, and on a dual-stack socket (ListenUDP("udp", nil)) sending to an
// IPv4 address, whose datagrams are IPv4 and carry IP_TTL, not the IPv6 hop limit.
func TestHostile11NetUDPSetTTLOnTheWire(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for _, tc := range []struct {
			name, network string
			laddr         *net.UDPAddr
			v6            bool
			ttl           int
		}{
			{"v4", "udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, false, 7},
			{"v6", "udp6", &net.UDPAddr{IP: net.IPv6loopback}, true, 9},
			{"dual-stack to v4", "udp", nil, false, 11},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rcv := newH11TTLReceiver(t, tc.v6)
				u, err := ListenUDP(tc.network, tc.laddr)
				if err != nil {
					t.Skipf("listen %s: %v", tc.network, err)
				}
				defer u.Close()
				if err := u.SetTTL(tc.ttl); err != nil {
					t.Fatal(err)
				}
				if r := blockOn(t, rt, u.SendTo([]byte("ttl"), rcv.addr)); r.Err != nil {
					t.Fatal(r.Err)
				}
				if got := rcv.ttl(t); got != tc.ttl {
					t.Fatalf("the datagram carried TTL %d after SetTTL(%d)", got, tc.ttl)
				}
			})
		}
		u, err := ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		h11WantOpErr(t, "UDP SetTTL(-5)", u.SetTTL(-5), "set", syscall.EINVAL)
		u.Close()
		h11WantOpErr(t, "UDP SetTTL after Close", u.SetTTL(5), "set", net.ErrClosed)
	})
}

// TestHostile11NetUDPOptions: SetReadBuffer and SetWriteBuffer reach the kernel (which
// doubles the value on Linux); SetMulticastLoopback sets the option of the socket's
// family, and on a dual-stack socket the IPv4 one as well (its IPv4 multicast datagrams
// follow IP_MULTICAST_LOOP); every setter fails with net.ErrClosed after Close.
func TestHostile11NetUDPOptions(t *testing.T) {
	for _, tc := range []struct {
		name, network string
		laddr         *net.UDPAddr
	}{
		{"v4", "udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}},
		{"v6", "udp6", &net.UDPAddr{IP: net.IPv6loopback}},
		{"dual-stack", "udp", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := ListenUDP(tc.network, tc.laddr)
			if err != nil {
				t.Skipf("listen %s: %v", tc.network, err)
			}
			if err := u.SetReadBuffer(96 << 10); err != nil {
				t.Fatal(err)
			}
			if err := u.SetWriteBuffer(80 << 10); err != nil {
				t.Fatal(err)
			}
			if v := h11Sockopt(t, u.fd, unix.SOL_SOCKET, unix.SO_RCVBUF); v < 96<<10 {
				t.Errorf("SO_RCVBUF = %d after SetReadBuffer(96 KiB)", v)
			}
			if v := h11Sockopt(t, u.fd, unix.SOL_SOCKET, unix.SO_SNDBUF); v < 80<<10 {
				t.Errorf("SO_SNDBUF = %d after SetWriteBuffer(80 KiB)", v)
			}
			v6 := u.fd.family == unix.AF_INET6
			dual := v6 && h11Sockopt(t, u.fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY) == 0
			for _, on := range []bool{false, true, false} {
				if err := u.SetMulticastLoopback(on); err != nil {
					t.Fatalf("SetMulticastLoopback(%v): %v", on, err)
				}
				want := boolInt(on)
				if v6 {
					if v := h11Sockopt(t, u.fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_LOOP); v != want {
						t.Errorf("IPV6_MULTICAST_LOOP = %d after SetMulticastLoopback(%v)", v, on)
					}
				}
				if !v6 || dual {
					if v := h11Sockopt(t, u.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP); v != want {
						t.Errorf("IP_MULTICAST_LOOP = %d after SetMulticastLoopback(%v) (dual-stack: %v)", v, on, dual)
					}
				}
			}
			u.Close()
			for name, err := range map[string]error{
				"SetReadBuffer":        u.SetReadBuffer(1 << 16),
				"SetWriteBuffer":       u.SetWriteBuffer(1 << 16),
				"SetMulticastLoopback": u.SetMulticastLoopback(true),
				"SetBroadcast":         u.SetBroadcast(true),
			} {
				h11WantOpErr(t, name+" after Close", err, "set", net.ErrClosed)
			}
		})
	}
}

// TestHostile11NetUDPReadableWritable: Writable is ready on a fresh socket; Readable
// waits for a datagram, wakes every task waiting on it (readiness is not a message:
// Tokio's readable() too), consumes nothing (the datagram is then received whole);
// Close wakes a waiting Readable with net.ErrClosed.
func TestHostile11NetUDPReadableWritable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		lo := net.IPv4(127, 0, 0, 1)
		u, err := ListenUDP("udp4", &net.UDPAddr{IP: lo})
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		if err := blockOn(t, rt, u.Writable()); err != nil {
			t.Fatalf("Writable: %v", err)
		}
		pollOnceThenDrop(t, rt, u.Readable())
		h1, h2 := Spawn(rt, u.Readable()), Spawn(rt, u.Readable())
		waitFor(t, "both Readable futures to wait", func() bool { return u.fd.sio.Load().waiters(dirRead) == 2 })
		peer, err := net.DialUDP("udp4", nil, u.UDPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		if _, err := peer.Write([]byte("one")); err != nil {
			t.Fatal(err)
		}
		for i, h := range []JoinHandle[error]{h1, h2} {
			if err, jerr := waitHandleFor(t, h, fmt.Sprintf("Readable %d", i)); err != nil || jerr != nil {
				t.Fatalf("Readable %d: %v, %v", i, err, jerr)
			}
		}
		buf := make([]byte, 8)
		r := blockOn(t, rt, u.RecvFrom(buf))
		if r.Err != nil || string(buf[:r.Value.N]) != "one" || r.Value.From.Port != peer.LocalAddr().(*net.UDPAddr).Port {
			t.Fatalf("RecvFrom after Readable = %+v, %v", r.Value, r.Err)
		}
		// Readiness stays set until a receive finds the queue empty (as in Tokio):
		// Readable may be ready at once here. A receive that finds nothing clears it.
		pollOnceThenDrop(t, rt, u.RecvFrom(buf))
		h3 := Spawn(rt, u.Readable())
		waitFor(t, "Readable to wait", func() bool { return u.fd.sio.Load().waiters(dirRead) == 1 })
		u.Close()
		if err, jerr := waitHandleFor(t, h3, "Readable on a closed socket"); !errors.Is(err, net.ErrClosed) || jerr != nil {
			t.Fatalf("Readable woken by Close: %v, %v", err, jerr)
		}
		if err := blockOn(t, rt, u.Writable()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Writable after Close: %v", err)
		}
	})
}

// h11SameError fails unless ours and ref (package net's error for the same mistake) are
// both *net.OpError with the same Op and Net, and wrap the same errno when ref does.
func h11SameError(t *testing.T, what string, ours, ref error) {
	t.Helper()
	if ref == nil {
		t.Fatalf("%s: the reference (package net) succeeded", what)
	}
	if ours == nil {
		t.Errorf("%s: succeeded; package net fails with %v", what, ref)
		return
	}
	var o, r *net.OpError
	if !errors.As(ours, &o) || !errors.As(ref, &r) {
		t.Errorf("%s: %v (%T), net: %v (%T): want *net.OpError both", what, ours, ours, ref, ref)
		return
	}
	if o.Op != r.Op || o.Net != r.Net {
		t.Errorf("%s: Op/Net %s/%s, net says %s/%s", what, o.Op, o.Net, r.Op, r.Net)
	}
	var errno syscall.Errno
	if errors.As(ref, &errno) && !errors.Is(ours, errno) {
		t.Errorf("%s: %v does not wrap %v (%d) as net's %v does", what, ours, errno, errno, ref)
	}
	var rs, os_ *os.SyscallError
	if errors.As(ref, &rs) && (!errors.As(ours, &os_) || os_.Syscall != rs.Syscall) {
		t.Errorf("%s: %v, net names the system call %q", what, ours, rs.Syscall)
	}
	if errors.As(ref, &errno) {
		return
	}
	if o.Err == nil || r.Err == nil || o.Err.Error() != r.Err.Error() {
		t.Errorf("%s: inner error %v, net's %v", what, o.Err, r.Err)
	}
}

func h11LongPath(dir string) string {
	p := dir + "/"
	for len(p) < 120 {
		p += "x"
	}
	return p
}

// TestHostile11NetUnixListenDialErrors: every mistake fails as it does with package net
// (same Op, Net, errno and system call), leaks no descriptor, and a failed listen on the
// path of a live listener leaves that listener's socket file in place.
func TestHostile11NetUnixListenDialErrors(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.sock")
	l, err := ListenUnix("unix", &net.UnixAddr{Name: live, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if a, ok := l.Addr().(*net.UnixAddr); !ok || a.Name != live || a.Net != "unix" {
		t.Fatalf("Addr() = %#v", l.Addr())
	}
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gram := filepath.Join(dir, "gram.sock")
	g, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: gram, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	abstract := fmt.Sprintf("@h11-%d-%d", os.Getpid(), time.Now().UnixNano())
	al, err := ListenUnix("unix", &net.UnixAddr{Name: abstract, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	if a := al.Addr().(*net.UnixAddr); a.Name != abstract {
		t.Fatalf("abstract listener Addr() = %q, want %q", a.Name, abstract)
	}
	ua := func(name string) *net.UnixAddr { return &net.UnixAddr{Name: name, Net: "unix"} }
	fds := openFDs(t)
	listens := []struct {
		name    string
		network string
		laddr   *net.UnixAddr
	}{
		{"path too long", "unix", ua(h11LongPath(dir))},
		{"path of a live listener", "unix", ua(live)},
		{"path of a regular file", "unix", ua(regular)},
		{"missing directory", "unix", ua(filepath.Join(dir, "nodir", "s"))},
		{"abstract name in use", "unix", ua(abstract)},
		{"nil address", "unix", nil},
		{"network unixgram", "unixgram", ua(filepath.Join(dir, "x"))},
		{"network tcp", "tcp", ua(filepath.Join(dir, "y"))},
	}
	for _, c := range listens {
		ours, err := ListenUnix(c.network, c.laddr)
		if ours != nil {
			ours.Close()
		}
		ref, rerr := net.ListenUnix(c.network, c.laddr)
		if ref != nil {
			ref.Close()
		}
		h11SameError(t, "ListenUnix "+c.name, err, rerr)
	}
	// An empty Name is refused (documented); net.ListenUnix would autobind it.
	if ours, err := ListenUnix("unix", ua("")); err == nil || !strings.Contains(err.Error(), "missing address") {
		if ours != nil {
			ours.Close()
		}
		t.Errorf("ListenUnix with an empty name: %v, want a missing address error", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("the live listener's socket file is gone after failed listens on it: %v", err)
	}
	if c, err := net.Dial("unix", live); err != nil {
		t.Fatalf("the live listener no longer accepts: %v", err)
	} else {
		c.Close()
	}
	dials := []struct {
		name         string
		network      string
		laddr, raddr *net.UnixAddr
	}{
		{"no such file", "unix", nil, ua(filepath.Join(dir, "none"))},
		{"regular file", "unix", nil, ua(regular)},
		{"datagram socket", "unix", nil, ua(gram)},
		{"path too long", "unix", nil, ua(h11LongPath(dir))},
		{"local path in use", "unix", ua(live), ua(live)},
		{"nil address", "unix", nil, nil},
		{"network tcp", "tcp", nil, ua(live)},
	}
	for _, c := range dials {
		ours, err := DialUnix(c.network, c.laddr, c.raddr)
		if ours != nil {
			ours.Close()
		}
		ref, rerr := net.DialUnix(c.network, c.laddr, c.raddr)
		if ref != nil {
			ref.Close()
		}
		h11SameError(t, "DialUnix "+c.name, err, rerr)
	}
	if n := openFDs(t); n > fds {
		t.Fatalf("%d descriptors leaked by the failed listens and dials", n-fds)
	}
}

// TestHostile11NetUnixStreamPollAndAddrs: UnixStream's poll forms (it is an AsyncReader
// and AsyncWriter), Readable and Writable, and the addresses of both ends: a client bound
// to a path is named by the accepted side's RemoteAddr; an unnamed one as package net
// names it. After Close the poll forms fail with net.ErrClosed.
func TestHostile11NetUnixStreamPollAndAddrs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		dir := t.TempDir()
		path, cpath := filepath.Join(dir, "srv.sock"), filepath.Join(dir, "cli.sock")
		l, err := ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		c, err := DialUnix("unix", &net.UnixAddr{Name: cpath, Net: "unix"}, &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a := blockOn(t, rt, l.Accept())
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		s := a.Value
		defer s.Close()
		name := func(a net.Addr) string {
			if u, ok := a.(*net.UnixAddr); ok {
				return u.Name
			}
			return fmt.Sprintf("%#v", a)
		}
		if name(c.LocalAddr()) != cpath || name(c.RemoteAddr()) != path || name(s.LocalAddr()) != path || name(s.RemoteAddr()) != cpath {
			t.Fatalf("addresses: client %v -> %v, server %v <- %v", c.LocalAddr(), c.RemoteAddr(), s.LocalAddr(), s.RemoteAddr())
		}
		if err := blockOn(t, rt, c.Writable()); err != nil {
			t.Fatal(err)
		}
		pollOnceThenDrop(t, rt, s.Readable())
		pollOnceThenDrop(t, rt, l.Accept())
		if n := l.fd.sio.Load().waiters(dirRead); n != 0 {
			t.Fatalf("%d waiters left by a dropped Unix accept", n)
		}
		// A hand-written reader waiting in a task is woken by the bytes.
		buf := make([]byte, 5)
		got := 0
		rd := Spawn(rt, PollFn(func(cx *Context) (error, bool) {
			for got < len(buf) {
				r, ok := s.PollRead(cx, buf[got:])
				if !ok {
					return nil, false
				}
				if r.Err != nil {
					return r.Err, true
				}
				got += r.Value
			}
			return nil, true
		}))
		w := blockOn(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return c.PollWrite(cx, []byte("hello")) }))
		if w.Err != nil || w.Value != 5 {
			t.Fatalf("PollWrite = %+v", w)
		}
		if err, jerr := waitHandle(t, rd); err != nil || jerr != nil || string(buf) != "hello" {
			t.Fatalf("PollRead reader: %v, %v, %q", err, jerr, buf)
		}
		if err := blockOn(t, rt, s.Writable()); err != nil {
			t.Fatal(err)
		}
		if r := blockOn(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return c.PollWrite(cx, nil) })); r.Err != nil || r.Value != 0 {
			t.Fatalf("PollWrite(nil) = %+v", r)
		}
		c.Close()
		h11WantOpErr(t, "PollRead after Close", blockOn(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return c.PollRead(cx, buf) })).Err, "read", net.ErrClosed)
		h11WantOpErr(t, "PollWrite after Close", blockOn(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return c.PollWrite(cx, buf) })).Err, "write", net.ErrClosed)
		if err := blockOn(t, rt, c.Readable()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Readable after Close: %v", err)
		}

		// An unnamed client: both sides name it as package net does.
		anon, err := DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer anon.Close()
		a = blockOn(t, rt, l.Accept())
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		defer a.Value.Close()
		ref, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		refAcc := blockOn(t, rt, l.Accept())
		if refAcc.Err != nil {
			t.Fatal(refAcc.Err)
		}
		defer refAcc.Value.Close()
		if anon.LocalAddr().String() != ref.LocalAddr().String() {
			t.Errorf("unnamed client LocalAddr %q, net says %q", anon.LocalAddr(), ref.LocalAddr())
		}
		if a.Value.RemoteAddr().String() != refAcc.Value.RemoteAddr().String() {
			t.Errorf("accepted side's RemoteAddr of an unnamed client %q vs %q", a.Value.RemoteAddr(), refAcc.Value.RemoteAddr())
		}
	})
}

// TestHostile11NetUnixgramEdges: ListenUnixgram's mistakes fail as net's do; a nil
// laddr gives an unbound socket (net refuses it: documented), which can send, and whose
// datagrams arrive from an empty Name; SendTo a missing path fails with ENOENT and
// leaves the socket usable; a datagram socket from another runtime is refused.
func TestHostile11NetUnixgramEdges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		dir := t.TempDir()
		path := filepath.Join(dir, "g.sock")
		ua := func(name string) *net.UnixAddr { return &net.UnixAddr{Name: name, Net: "unixgram"} }
		g, err := ListenUnixgram("unixgram", ua(path))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		for _, c := range []struct {
			name, network string
			laddr         *net.UnixAddr
		}{
			{"path in use", "unixgram", ua(path)},
			{"path too long", "unixgram", ua(h11LongPath(dir))},
			{"network unix", "unix", ua(filepath.Join(dir, "z"))},
		} {
			ours, err := ListenUnixgram(c.network, c.laddr)
			if ours != nil {
				ours.Close()
			}
			ref, rerr := net.ListenUnixgram(c.network, c.laddr)
			if ref != nil {
				ref.Close()
			}
			h11SameError(t, "ListenUnixgram "+c.name, err, rerr)
		}
		unbound, err := ListenUnixgram("unixgram", nil)
		if err != nil {
			t.Fatalf("ListenUnixgram(nil): %v", err)
		}
		defer unbound.Close()
		if r := blockOn(t, rt, unbound.SendTo([]byte("x"), ua(filepath.Join(dir, "none")))); !errors.Is(r.Err, syscall.ENOENT) {
			t.Fatalf("SendTo a missing path: %v, want ENOENT", r.Err)
		} else {
			h11WantOpErr(t, "SendTo a missing path", r.Err, "write", syscall.ENOENT)
		}
		if r := blockOn(t, rt, unbound.SendTo([]byte("x"), nil)); r.Err == nil {
			t.Fatal("SendTo(nil) succeeded")
		}
		if r := blockOn(t, rt, unbound.SendTo([]byte("anon"), ua(path))); r.Err != nil || r.Value != 4 {
			t.Fatalf("SendTo from the unbound socket: %+v", r)
		}
		buf := make([]byte, 8)
		r := blockOn(t, rt, g.RecvFrom(buf))
		if r.Err != nil || string(buf[:r.Value.N]) != "anon" || r.Value.From == nil || r.Value.From.Name != "" {
			t.Fatalf("RecvFrom of the unbound sender's datagram: %+v, %v", r.Value, r.Err)
		}
		rt2 := newRT(t, cfg)
		if r := blockOn(t, rt2, g.RecvFrom(buf)); !errors.Is(r.Err, ErrOtherRuntime) {
			t.Fatalf("RecvFrom from another runtime: %v, want ErrOtherRuntime", r.Err)
		}
		if g.LocalAddr().(*net.UnixAddr).Name != path {
			t.Fatalf("LocalAddr = %v", g.LocalAddr())
		}
		g.Close()
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("Close removed the datagram socket's file (documented to stay): %v", err)
		}
	})
}

// h11LinkLocal returns an interface with an IPv6 link-local address, or skips.
func h11LinkLocal(t *testing.T) (*net.Interface, net.IP) {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Skip(err)
	}
	for i := range ifs {
		if ifs[i].Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := ifs[i].Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() == nil && ipn.IP.IsLinkLocalUnicast() {
				return &ifs[i], ipn.IP
			}
		}
	}
	t.Skip("no interface with an IPv6 link-local address")
	return nil, nil
}

// TestHostile11NetIPv6LinkLocalZones: link-local addresses need their zone. Given by
// name or by index it reaches the kernel; the addresses reported back (LocalAddr, a
// sender, an accepted peer, RemoteAddr) carry the interface's name, as package net's do.
// A zone naming no interface fails with a *net.AddrError.
func TestHostile11NetIPv6LinkLocalZones(t *testing.T) {
	ifi, ll := h11LinkLocal(t)
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		u1, err := ListenUDP("udp6", &net.UDPAddr{IP: ll, Zone: ifi.Name})
		if err != nil {
			t.Fatalf("listen on %s%%%s: %v", ll, ifi.Name, err)
		}
		defer u1.Close()
		u2, err := ListenUDP("udp6", &net.UDPAddr{IP: ll, Zone: strconv.Itoa(ifi.Index)})
		if err != nil {
			t.Fatalf("listen on %s%%%d: %v", ll, ifi.Index, err)
		}
		defer u2.Close()
		for _, u := range []*UDPConn{u1, u2} {
			if a := u.UDPAddr(); a.Zone != ifi.Name || !a.IP.Equal(ll) {
				t.Fatalf("LocalAddr = %v, want %s%%%s", a, ll, ifi.Name)
			}
		}
		if r := blockOn(t, rt, u2.SendTo([]byte("z"), u1.UDPAddr())); r.Err != nil {
			t.Fatal(r.Err)
		}
		buf := make([]byte, 8)
		r := blockOn(t, rt, u1.RecvFrom(buf))
		if r.Err != nil || r.Value.From.Zone != ifi.Name || r.Value.From.Port != u2.UDPAddr().Port || !r.Value.From.IP.Equal(ll) {
			t.Fatalf("sender = %v, %v; want %s%%%s port %d", r.Value.From, r.Err, ll, ifi.Name, u2.UDPAddr().Port)
		}
		to := netip.AddrPortFrom(netip.MustParseAddr(ll.String()).WithZone(ifi.Name), uint16(u2.UDPAddr().Port))
		if s := blockOn(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return u1.PollSendToAddrPort(cx, []byte("ap"), to) })); s.Err != nil {
			t.Fatal(s.Err)
		}
		ap := blockOn(t, rt, PollFn(func(cx *Context) (Result[AddrPortDatagram], bool) { return u2.PollRecvFromAddrPort(cx, buf) }))
		if ap.Err != nil || ap.Value.From.Addr().Zone() != ifi.Name || ap.Value.From.Port() != uint16(u1.UDPAddr().Port) {
			t.Fatalf("AddrPort sender = %v, %v", ap.Value.From, ap.Err)
		}

		var ae *net.AddrError
		if _, err := ListenUDP("udp6", &net.UDPAddr{IP: ll, Zone: "h11nosuchif"}); !errors.As(err, &ae) {
			t.Fatalf("listen with an unknown zone: %v, want a *net.AddrError", err)
		}
		bad := netip.AddrPortFrom(netip.MustParseAddr(ll.String()).WithZone("h11nosuchif"), 9)
		if s := blockOn(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return u1.PollSendToAddrPort(cx, []byte("x"), bad) })); !errors.As(s.Err, &ae) {
			t.Fatalf("send to an unknown zone: %v, want a *net.AddrError", s.Err)
		}

		// TCP: listen and dial with the zone, by name, by index, and in a string.
		l, err := ListenTCP("tcp6", &net.TCPAddr{IP: ll, Zone: ifi.Name})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		port := l.TCPAddr().Port
		for _, f := range []Future[Result[*TCPStream]]{
			DialTCP("tcp6", nil, &net.TCPAddr{IP: ll, Port: port, Zone: ifi.Name}),
			DialTCP("tcp6", nil, &net.TCPAddr{IP: ll, Port: port, Zone: strconv.Itoa(ifi.Index)}),
			Dial("tcp6", net.JoinHostPort(ll.String()+"%"+ifi.Name, strconv.Itoa(port))),
		} {
			acc := Spawn(rt, l.Accept())
			c, err := blockOn(t, rt, f).Get()
			if err != nil {
				t.Fatal(err)
			}
			a, jerr := waitHandle(t, acc)
			if jerr != nil || a.Err != nil {
				t.Fatal(jerr, a.Err)
			}
			if a.Value.Peer.Zone != ifi.Name || c.LocalAddr().(*net.TCPAddr).Zone != ifi.Name {
				t.Errorf("zones: peer %v, client local %v; want %%%s", a.Value.Peer, c.LocalAddr(), ifi.Name)
			}
			c.Close()
			a.Value.Conn.Close()
		}
	})
}

// TestHostile11NetZoneIndexOutOfRange: a numeric zone beyond 32 bits names no
// interface. It must not be truncated to one that exists (4294967296+i is not
// interface i): package net never maps it to a real interface either.
func TestHostile11NetZoneIndexOutOfRange(t *testing.T) {
	ifi, ll := h11LinkLocal(t)
	wrapped := strconv.FormatUint(uint64(ifi.Index)+1<<32, 10)
	negative := strconv.FormatInt(int64(ifi.Index)-1<<32, 10)
	for _, zone := range []string{wrapped, negative} {
		if u, err := ListenUDP("udp6", &net.UDPAddr{IP: ll, Zone: zone}); err == nil {
			a := u.UDPAddr()
			u.Close()
			t.Errorf("ListenUDP with zone %s bound to %v (interface %s)", zone, a, a.Zone)
		}
		if id, err := zoneIndex(zone); err == nil {
			t.Errorf("zoneIndex(%s) = %d, want an error", zone, id)
		}
	}
	if id, err := zoneIndex(strconv.Itoa(ifi.Index)); err != nil || id != uint32(ifi.Index) {
		t.Fatalf("zoneIndex(%d) = %d, %v", ifi.Index, id, err)
	}
	if id, err := zoneIndex(ifi.Name); err != nil || id != uint32(ifi.Index) {
		t.Fatalf("zoneIndex(%s) = %d, %v", ifi.Name, id, err)
	}
}

// TestHostile11NetSockaddrAddrPort: the portable conversion used on the BSDs: IPv4,
// IPv6 with a zone that is an interface (its name) or not (its number, as net prints an
// unknown index), no zone, and a non-IP address (the invalid AddrPort).
func TestHostile11NetSockaddrAddrPort(t *testing.T) {
	ifs, _ := net.Interfaces()
	if got := sockaddrAddrPort(&unix.SockaddrInet4{Addr: [4]byte{10, 1, 2, 3}, Port: 80}); got != netip.MustParseAddrPort("10.1.2.3:80") {
		t.Errorf("IPv4: %v", got)
	}
	sa6 := &unix.SockaddrInet6{Addr: [16]byte{0: 0xfe, 1: 0x80, 15: 1}, Port: 443}
	if got := sockaddrAddrPort(sa6); got != netip.MustParseAddrPort("[fe80::1]:443") {
		t.Errorf("IPv6 without zone: %v", got)
	}
	sa6.ZoneId = 0xFFFFFF
	if got := sockaddrAddrPort(sa6); got.Addr().Zone() != "16777215" {
		t.Errorf("IPv6 with an unknown zone index: %v", got)
	}
	if len(ifs) > 0 {
		sa6.ZoneId = uint32(ifs[0].Index)
		if got := sockaddrAddrPort(sa6); got.Addr().Zone() != ifs[0].Name {
			t.Errorf("IPv6 with zone %d: %v, want %%%s", ifs[0].Index, got, ifs[0].Name)
		}
	}
	if got := sockaddrAddrPort(&unix.SockaddrUnix{Name: "/x"}); got.IsValid() {
		t.Errorf("a Unix address converted to %v", got)
	}
	if zoneName(0) != "" || !strings.HasPrefix(zoneName(0xFFFFFE), "1677") {
		t.Errorf("zoneName(0) = %q, zoneName(unknown) = %q", zoneName(0), zoneName(0xFFFFFE))
	}
}

// TestHostile11NetInetErrorsLikeNet: the same address mistakes fail with the same
// *net.OpError (Op, Net, errno, system call, or the same inner error) as package net's.
// (One deliberate difference is left out: "tcp6" with an IPv4 address is a
// *net.AddrError here, where net's bind fails with EINVAL.)
func TestHostile11NetInetErrorsLikeNet(t *testing.T) {
	rt := newRT(t, Config{Workers: 1, Backend: BackendEpoll})
	lo4, lo6 := net.IPv4(127, 0, 0, 1), net.IPv6loopback
	used, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: lo4})
	if err != nil {
		t.Fatal(err)
	}
	defer used.Close()
	usedU, err := net.ListenUDP("udp4", &net.UDPAddr{IP: lo4})
	if err != nil {
		t.Fatal(err)
	}
	defer usedU.Close()
	fds := openFDs(t)
	for _, c := range []struct {
		name    string
		network string
		laddr   *net.TCPAddr
	}{
		{"tcp4 with an IPv6 address", "tcp4", &net.TCPAddr{IP: lo6}},
		{"network udp", "udp", nil},
		{"address not local", "tcp4", &net.TCPAddr{IP: net.IPv4(192, 0, 2, 99)}},
		{"port in use", "tcp4", used.Addr().(*net.TCPAddr)},
	} {
		ours, err := ListenTCP(c.network, c.laddr)
		if ours != nil {
			ours.Close()
		}
		ref, rerr := net.ListenTCP(c.network, c.laddr)
		if ref != nil {
			ref.Close()
		}
		h11SameError(t, "ListenTCP "+c.name, err, rerr)
	}
	var ae *net.AddrError
	if l, err := ListenTCP("tcp6", &net.TCPAddr{IP: lo4}); !errors.As(err, &ae) {
		if l != nil {
			l.Close()
		}
		t.Errorf("ListenTCP tcp6 with an IPv4 address: %v, want a *net.AddrError", err)
	}
	if l, err := ListenTCP("tcp", &net.TCPAddr{IP: lo6}); err != nil {
		t.Errorf("ListenTCP tcp on ::1: %v", err)
	} else {
		if l.fd.family != unix.AF_INET6 || !l.TCPAddr().IP.Equal(lo6) {
			t.Errorf("ListenTCP tcp on ::1: family %d, address %v", l.fd.family, l.Addr())
		}
		l.Close()
	}
	for _, c := range []struct {
		name         string
		network      string
		laddr, raddr *net.UDPAddr
	}{
		{"listen udp4 with an IPv6 address", "udp4", &net.UDPAddr{IP: lo6}, nil},
		{"listen on a port in use", "udp4", usedU.LocalAddr().(*net.UDPAddr), nil},
		{"listen network tcp", "tcp", nil, nil},
		{"dial udp4 to an IPv6 address", "udp4", nil, &net.UDPAddr{IP: lo6, Port: 9}},
		{"dial from a port in use", "udp4", usedU.LocalAddr().(*net.UDPAddr), &net.UDPAddr{IP: lo4, Port: 9}},
	} {
		var ours *UDPConn
		var ref *net.UDPConn
		var err, rerr error
		if c.raddr == nil {
			ours, err = ListenUDP(c.network, c.laddr)
			ref, rerr = net.ListenUDP(c.network, c.laddr)
		} else {
			ours, err = DialUDP(c.network, c.laddr, c.raddr)
			ref, rerr = net.DialUDP(c.network, c.laddr, c.raddr)
		}
		if ours != nil {
			ours.Close()
		}
		if ref != nil {
			ref.Close()
		}
		h11SameError(t, c.name, err, rerr)
	}
	for _, c := range []struct {
		name         string
		network      string
		laddr, raddr *net.TCPAddr
	}{
		{"tcp4 to an IPv6 address", "tcp4", nil, &net.TCPAddr{IP: lo6, Port: 9}},
		{"from a port in use", "tcp4", used.Addr().(*net.TCPAddr), &net.TCPAddr{IP: lo4, Port: 9}},
		{"network udp", "udp", nil, &net.TCPAddr{IP: lo4, Port: 9}},
	} {
		ours, err := blockOn(t, rt, DialTCP(c.network, c.laddr, c.raddr)).Get()
		if ours != nil {
			ours.Close()
		}
		ref, rerr := net.DialTCP(c.network, c.laddr, c.raddr)
		if ref != nil {
			ref.Close()
		}
		h11SameError(t, "DialTCP "+c.name, err, rerr)
	}
	if n := openFDs(t); n > fds {
		t.Fatalf("%d descriptors leaked by the failed calls", n-fds)
	}
}

// TestHostile11NetAddressFreeAfterClose: the address of a UDP socket or an abstract-name
// Unix listener closed while a task waits on it can be bound again. On epoll it is free
// when Close returns. On io_uring the kernel releases the socket when the cancelled
// readiness poll's completion has run on the thread that armed it, normally within
// milliseconds (the Close docs say so): there an immediate re-bind may fail with
// EADDRINUSE, and the test requires the address to come free within a few seconds, so
// that a socket the ring never lets go fails it.
func TestHostile11NetAddressFreeAfterClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		uring := cfg.Backend == BackendIOUring
		late := 0
		// rebind binds again at once, or on io_uring retries until the address is free.
		rebind := func(what string, round int, bind func() (func() error, error)) {
			t.Helper()
			deadline := time.Now().Add(5 * time.Second)
			for first := true; ; first = false {
				closeIt, err := bind()
				if err == nil {
					closeIt()
					return
				}
				if !uring || !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
					t.Fatalf("round %d: %s of a socket just closed: %v", round, what, err)
				}
				if first {
					late++
				}
				time.Sleep(time.Millisecond)
			}
		}
		for i := range 50 {
			u, err := ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			addr := u.UDPAddr()
			h := Spawn(rt, u.RecvFrom(make([]byte, 4)))
			waitFor(t, "the receive to wait", func() bool { s := u.fd.sio.Load(); return s != nil && s.waiters(dirRead) > 0 })
			u.Close()
			rebind("ListenUDP on the port", i, func() (func() error, error) {
				u2, err := ListenUDP("udp4", addr)
				if err != nil {
					return nil, err
				}
				return u2.Close, nil
			})
			waitHandle(t, h)

			name := fmt.Sprintf("@h11-rebind-%d-%d-%d", os.Getpid(), time.Now().UnixNano(), i)
			l, err := ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			ha := Spawn(rt, l.Accept())
			waitFor(t, "the accept to wait", func() bool { s := l.fd.sio.Load(); return s != nil && s.waiters(dirRead) > 0 })
			l.Close()
			rebind("ListenUnix on the abstract name", i, func() (func() error, error) {
				l2, err := ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
				if err != nil {
					return nil, err
				}
				return l2.Close, nil
			})
			waitHandle(t, ha)
		}
		if late > 0 {
			t.Logf("%d of 100 re-binds found the address still held for a moment after Close (io_uring)", late)
		}
	})
}

// TestHostile11NetUnixgramSendPending: a Unix datagram send to a receiver whose queue is
// full goes pending (the kernel refuses with EAGAIN); dropped, it leaves no waiter and
// sends nothing; a waiting one sends its datagram once the receiver has taken some
// (no wake-up comes to an unconnected sender: it retries on a backing-off timer). Every
// datagram arrives once.
func TestHostile11NetUnixgramSendPending(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		dir := t.TempDir()
		ua := func(name string) *net.UnixAddr { return &net.UnixAddr{Name: filepath.Join(dir, name), Net: "unixgram"} }
		g, err := ListenUnixgram("unixgram", ua("g"))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		s, err := ListenUnixgram("unixgram", ua("s"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		queued := blockOn(t, rt, PollFn(func(cx *Context) (int, bool) {
			for n := 0; n < 100000; n++ {
				f := s.SendTo([]byte{byte(n)}, ua("g"))
				r, ok := f.Poll(cx)
				if !ok {
					Drop(f)
					return n, true
				}
				if r.Err != nil {
					t.Errorf("SendTo %d: %v", n, r.Err)
					return n, true
				}
			}
			t.Error("100000 datagrams queued to a receiver that does not read: the send never went pending")
			return 0, true
		}))
		if n := s.fd.sio.Load().waiters(dirWrite); n != 0 {
			t.Fatalf("%d write waiters left by the dropped SendTo", n)
		}
		h := Spawn(rt, s.SendTo([]byte{0xEE}, ua("g")))
		// The send waits for readiness, or (the receiver's queue full while this
		// socket's buffer has room) on its backing-off retry timer, which no waiter count
		// shows: give it a moment.
		t0 := time.Now()
		waitFor(t, "the send to wait", func() bool {
			return s.fd.sio.Load().waiters(dirWrite) == 1 || h.IsFinished() || time.Since(t0) > 20*time.Millisecond
		})
		buf := make([]byte, 4)
		var got []byte
		for len(got) < queued+1 {
			r := blockOn(t, rt, g.RecvFrom(buf))
			if r.Err != nil || r.Value.N != 1 || r.Value.From.Name != ua("s").Name {
				t.Fatalf("RecvFrom: %+v, %v", r.Value, r.Err)
			}
			got = append(got, buf[0])
		}
		if r, err := waitHandleFor(t, h, "the send woken by the receiver"); err != nil || r.Err != nil || r.Value != 1 {
			t.Fatalf("the pending SendTo: %+v, %v", r, err)
		}
		for i := range queued {
			if got[i] != byte(i) {
				t.Fatalf("datagram %d = %d (a dropped send must send nothing)", i, got[i])
			}
		}
		if got[queued] != 0xEE {
			t.Fatalf("last datagram %#x, want the pending send's 0xEE", got[queued])
		}
	})
}
