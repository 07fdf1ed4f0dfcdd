//go:build linux

package blitzio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Differential tests: the same scenario with package net (the oracle) and with
// blitzio, on both Linux backends, comparing the error's shape field by field (the
// Unwrap chain's types, OpError's Op, Net, Source and Addr, the system call and errno,
// net.ErrClosed, timeouts, a bare io.EOF) and the addresses sockets report.

// h12Obs is what one side of a scenario observed: the error, and the addresses that
// name the roles an OpError's Source and Addr may hold (this socket's local and remote
// address, and a destination the scenario sent to).
type h12Obs struct {
	err                 error
	local, remote, dest net.Addr
}

// h12Shape is the comparable form of an error: addresses are named by role, so that
// package net's sockets and ours (on other ports) compare equal when net's rules hold.
type h12Shape struct {
	Chain        string
	Op, Net      string
	Source, Addr string
	Syscall      string
	Errno        syscall.Errno
	Closed       bool // errors.Is(err, net.ErrClosed)
	Deadline     bool // errors.Is(err, os.ErrDeadlineExceeded)
	Timeout      bool // a net.Error with Timeout() true
	BareEOF      bool // err == io.EOF, not wrapped
	Inner        string
}

func h12AddrString(a net.Addr) string {
	if a == nil {
		return "nil"
	}
	if v := reflect.ValueOf(a); v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Sprintf("typed nil %T", a)
	}
	return a.Network() + "|" + a.String()
}

func h12Role(a net.Addr, o h12Obs) string {
	s := h12AddrString(a)
	if s == "nil" || strings.HasPrefix(s, "typed nil") {
		return s
	}
	for _, r := range []struct {
		name string
		a    net.Addr
	}{{"local", o.local}, {"remote", o.remote}, {"dest", o.dest}} {
		if r.a != nil && h12AddrString(r.a) == s {
			return r.name
		}
	}
	return fmt.Sprintf("%T(%s)", a, s)
}

func h12ShapeOf(o h12Obs) h12Shape {
	err := o.err
	if err == nil {
		return h12Shape{Chain: "<nil>"}
	}
	var sh h12Shape
	var chain []string
	inner := err
	for e := err; e != nil; e = errors.Unwrap(e) {
		chain = append(chain, fmt.Sprintf("%T", e))
		inner = e
	}
	sh.Chain = strings.Join(chain, " > ")
	var oe *net.OpError
	if errors.As(err, &oe) {
		sh.Op, sh.Net = oe.Op, oe.Net
		sh.Source, sh.Addr = h12Role(oe.Source, o), h12Role(oe.Addr, o)
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		sh.Syscall = se.Syscall
	}
	if !errors.As(err, &sh.Errno) {
		sh.Inner = inner.Error()
	}
	sh.Closed = errors.Is(err, net.ErrClosed)
	sh.Deadline = errors.Is(err, os.ErrDeadlineExceeded)
	var ne net.Error
	sh.Timeout = errors.As(err, &ne) && ne.Timeout()
	sh.BareEOF = err == io.EOF
	return sh
}

// h12Compare fails t with every field where ours differs from net's.
func h12Compare(t *testing.T, what string, ours, ref h12Obs) {
	t.Helper()
	if ref.err == nil && ours.err == nil {
		t.Fatalf("%s: both sides succeeded: the scenario tests nothing", what)
	}
	o, r := h12ShapeOf(ours), h12ShapeOf(ref)
	if o == r {
		return
	}
	ov, rv := reflect.ValueOf(o), reflect.ValueOf(r)
	var diffs []string
	for i := 0; i < ov.NumField(); i++ {
		if a, b := ov.Field(i).Interface(), rv.Field(i).Interface(); a != b {
			diffs = append(diffs, fmt.Sprintf("  %s: ours %#v, net %#v", ov.Type().Field(i).Name, a, b))
		}
	}
	t.Errorf("%s: error differs from package net's\n  ours: %v\n  net:  %v\n%s", what, ours.err, ref.err, strings.Join(diffs, "\n"))
}

// h12Await drives f on rt, bounded so that an operation that should fail but waits
// fails the test instead of hanging it.
func h12Await[T any](t *testing.T, rt *Runtime, f Future[Result[T]]) (T, error) {
	t.Helper()
	return blockOn(t, rt, TryTimeout(10*time.Second, f)).Get()
}

func h12Deadline(t *testing.T, c interface{ SetDeadline(time.Time) error }) {
	t.Helper()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
}

// ---- stream fixtures ----

// h12NetPair is a connected pair of package net: c dialed, s accepted.
func h12NetPair(t *testing.T, network string) (ln net.Listener, c, s net.Conn) {
	t.Helper()
	var err error
	switch network {
	case "unix":
		name := filepath.Join(t.TempDir(), "s")
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
		if err == nil {
			c, err = net.DialUnix("unix", nil, &net.UnixAddr{Name: name, Net: "unix"})
		}
	default:
		ip := net.IPv4(127, 0, 0, 1)
		if network == "tcp6" {
			ip = net.IPv6loopback
		}
		var l *net.TCPListener
		l, err = net.ListenTCP(network, &net.TCPAddr{IP: ip})
		if err != nil {
			if network == "tcp6" {
				t.Skipf("no IPv6 loopback: %v", err)
			}
			t.Fatal(err)
		}
		ln = l
		c, err = net.DialTCP(network, nil, l.Addr().(*net.TCPAddr))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); c.Close() })
	if s, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h12Deadline(t, c)
	h12Deadline(t, s)
	return ln, c, s
}

// h12Stream is what TCPStream and UnixStream share.
type h12Stream interface {
	Read([]byte) Future[Result[int]]
	Write([]byte) Future[Result[int]]
	WriteVectored(...[]byte) *WriteAllFuture
	CloseWrite() error
	CloseRead() error
	Close() error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

type h12Listener interface {
	Addr() net.Addr
	Close() error
}

// h12OurPair is h12NetPair with blitzio: c dialed, s accepted, both served by rt.
func h12OurPair(t *testing.T, rt *Runtime, network string) (ln h12Listener, c, s h12Stream) {
	t.Helper()
	switch network {
	case "unix":
		name := filepath.Join(t.TempDir(), "s")
		l, err := ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		cc, err := DialUnix("unix", nil, &net.UnixAddr{Name: name, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		ss, err := h12Await(t, rt, l.Accept())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		return l, cc, ss
	default:
		l := listenLoopback(t, network)
		cc, err := h12Await(t, rt, DialTCP(network, nil, l.TCPAddr()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		a, err := h12Await(t, rt, l.Accept())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Conn.Close() })
		return l, cc, a.Conn
	}
}

// h12StreamOp is one operation on a stream, written once for each side.
type h12StreamOp struct {
	name    string
	tcpOnly bool
	// netSwapsAddrs marks net's SetReadBuffer and SetWriteBuffer, whose errors (alone
	// of a connection's) name Source nil and Addr the local address: an inconsistency
	// in net, not copied (ours name local and remote, as every other operation does).
	netSwapsAddrs bool
	net           func(c net.Conn) error
	ours          func(t *testing.T, rt *Runtime, s h12Stream) error
}

var h12StreamOps = []h12StreamOp{
	{name: "Read", net: func(c net.Conn) error { _, err := c.Read(make([]byte, 8)); return err },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error {
			_, err := h12Await(t, rt, s.Read(make([]byte, 8)))
			return err
		}},
	{name: "Read0", net: func(c net.Conn) error { _, err := c.Read(nil); return err },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error { _, err := h12Await(t, rt, s.Read(nil)); return err }},
	{name: "Write", net: func(c net.Conn) error { _, err := c.Write([]byte("hello")); return err },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error {
			_, err := h12Await(t, rt, s.Write([]byte("hello")))
			return err
		}},
	{name: "Write0", net: func(c net.Conn) error { _, err := c.Write(nil); return err },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error {
			_, err := h12Await(t, rt, s.Write(nil))
			return err
		}},
	{name: "CloseWrite", net: func(c net.Conn) error { return c.(interface{ CloseWrite() error }).CloseWrite() },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error { return s.CloseWrite() }},
	{name: "CloseRead", net: func(c net.Conn) error { return c.(interface{ CloseRead() error }).CloseRead() },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error { return s.CloseRead() }},
	{name: "Close", net: func(c net.Conn) error { return c.Close() },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error { return s.Close() }},
	{name: "SetReadBuffer", net: func(c net.Conn) error { return c.(interface{ SetReadBuffer(int) error }).SetReadBuffer(4096) },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error {
			return s.(interface{ SetReadBuffer(int) error }).SetReadBuffer(4096)
		}, tcpOnly: true, netSwapsAddrs: true},
	{name: "SetWriteBuffer", tcpOnly: true, netSwapsAddrs: true, net: func(c net.Conn) error { return c.(*net.TCPConn).SetWriteBuffer(4096) },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error { return s.(*TCPStream).SetWriteBuffer(4096) }},
	{name: "SetKeepAlive", tcpOnly: true, net: func(c net.Conn) error { return c.(*net.TCPConn).SetKeepAlive(true) },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error { return s.(*TCPStream).SetKeepAlive(true) }},
	{name: "SetKeepAliveConfig", tcpOnly: true,
		net: func(c net.Conn) error {
			return c.(*net.TCPConn).SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: time.Minute})
		},
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error {
			return s.(*TCPStream).SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: time.Minute})
		}},
	{name: "SetNoDelay", tcpOnly: true, net: func(c net.Conn) error { return c.(*net.TCPConn).SetNoDelay(false) },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error { return s.(*TCPStream).SetNoDelay(false) }},
	{name: "SetLinger", tcpOnly: true, net: func(c net.Conn) error { return c.(*net.TCPConn).SetLinger(0) },
		ours: func(t *testing.T, rt *Runtime, s h12Stream) error { return s.(*TCPStream).SetLinger(0) }},
}

var h12StreamNetworks = []string{"tcp4", "tcp6", "unix"}

// h12OpsAfter runs every stream operation after setup on a fresh pair of each side,
// on the dialed and on the accepted end, and compares the errors.
func h12OpsAfter(t *testing.T, ops []h12StreamOp, skip func(network, op string) string,
	netSetup func(t *testing.T, c, peer net.Conn), oursSetup func(t *testing.T, rt *Runtime, c, peer h12Stream)) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		for _, network := range h12StreamNetworks {
			for _, end := range []string{"dialed", "accepted"} {
				for _, op := range ops {
					if op.tcpOnly && network == "unix" {
						continue
					}
					t.Run(network+"/"+end+"/"+op.name, func(t *testing.T) {
						if why := skip(network, op.name); why != "" {
							t.Skip(why)
						}
						_, nc, ns := h12NetPair(t, network)
						_, oc, os_ := h12OurPair(t, rt, network)
						if end == "accepted" {
							nc, ns = ns, nc
							oc, os_ = os_, oc
						}
						// Addresses first: an accepted stream looks its local
						// address up lazily (documented), and forgets it if closed
						// before anyone asked.
						ref := h12Obs{local: nc.LocalAddr(), remote: nc.RemoteAddr()}
						ours := h12Obs{local: oc.LocalAddr(), remote: oc.RemoteAddr()}
						netSetup(t, nc, ns)
						oursSetup(t, rt, oc, os_)
						ref.err = op.net(nc)
						ours.err = op.ours(t, rt, oc)
						if op.netSwapsAddrs {
							h12Unswap(t, ref)
						}
						h12Compare(t, op.name, ours, ref)
					})
				}
			}
		}
	})
}

// h12Unswap puts net's quirk right (see netSwapsAddrs): Source nil and Addr the local
// address become Source the local address and Addr the remote one.
func h12Unswap(t *testing.T, ref h12Obs) {
	t.Helper()
	var oe *net.OpError
	if !errors.As(ref.err, &oe) {
		t.Fatalf("net's error %v is not an *net.OpError", ref.err)
	}
	if oe.Source != nil || h12Role(oe.Addr, ref) != "local" {
		t.Fatalf("net's quirk is gone (%v): drop netSwapsAddrs", ref.err)
	}
	oe.Source, oe.Addr = ref.local, ref.remote
}

func h12NoSkip(string, string) string { return "" }

// TestHostile12NetStreamOpsAfterClose: every stream operation after the stream's own
// Close fails as net's does: an *net.OpError with net's Op ("read", "write", "close"
// for Close, CloseWrite and CloseRead, "set" for options), the stream's network, Source
// the local address and Addr the peer, wrapping net.ErrClosed.
func TestHostile12NetStreamOpsAfterClose(t *testing.T) {
	h12OpsAfter(t, h12StreamOps, h12NoSkip,
		func(t *testing.T, c, _ net.Conn) {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		},
		func(t *testing.T, rt *Runtime, c, _ h12Stream) {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		})
}

// TestHostile12NetStreamAfterOwnShutdown: after the stream's own CloseWrite a write
// fails with EPIPE (named "write" by net), after its own CloseRead a read is a bare
// io.EOF.
func TestHostile12NetStreamAfterOwnShutdown(t *testing.T) {
	var ops []h12StreamOp
	for _, op := range h12StreamOps {
		if op.name == "Write" || op.name == "Read" {
			ops = append(ops, op)
		}
	}
	ops = append(ops, h12WritevOp)
	h12OpsAfter(t, ops, h12NoSkip,
		func(t *testing.T, c, _ net.Conn) {
			if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if err := c.(interface{ CloseRead() error }).CloseRead(); err != nil {
				t.Fatal(err)
			}
		},
		func(t *testing.T, rt *Runtime, c, _ h12Stream) {
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if err := c.CloseRead(); err != nil {
				t.Fatal(err)
			}
		})
}

// h12WritevOp is a vectored write: net.Buffers.WriteTo (writev) against WriteVectored.
var h12WritevOp = h12StreamOp{name: "Writev",
	net: func(c net.Conn) error { _, err := (&net.Buffers{[]byte("he"), []byte("llo")}).WriteTo(c); return err },
	ours: func(t *testing.T, rt *Runtime, s h12Stream) error {
		_, err := h12Await(t, rt, Future[Result[int]](s.WriteVectored([]byte("he"), []byte("llo"))))
		return err
	}}

// TestHostile12NetStreamPeerGone: a read after the peer's CloseWrite is a bare io.EOF;
// after the peer's reset (SO_LINGER 0) ECONNRESET from "read"; a write after the reset
// has been read EPIPE; on a Unix stream a write after the peer's Close is EPIPE.
func TestHostile12NetStreamPeerGone(t *testing.T) {
	read := h12StreamOps[0]
	write := h12StreamOps[2]
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		for _, network := range h12StreamNetworks {
			t.Run(network+"/ReadAfterPeerCloseWrite", func(t *testing.T) {
				_, nc, ns := h12NetPair(t, network)
				_, oc, os_ := h12OurPair(t, rt, network)
				if err := ns.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
					t.Fatal(err)
				}
				if err := os_.CloseWrite(); err != nil {
					t.Fatal(err)
				}
				h12Compare(t, "Read", h12Obs{err: read.ours(t, rt, oc)}, h12Obs{err: read.net(nc)})
			})
			t.Run(network+"/PeerGone", func(t *testing.T) {
				_, nc, ns := h12NetPair(t, network)
				_, oc, os_ := h12OurPair(t, rt, network)
				ref := h12Obs{local: nc.LocalAddr(), remote: nc.RemoteAddr()}
				ours := h12Obs{local: oc.LocalAddr(), remote: oc.RemoteAddr()}
				if network != "unix" {
					if err := ns.(*net.TCPConn).SetLinger(0); err != nil {
						t.Fatal(err)
					}
					if err := os_.(*TCPStream).SetLinger(0); err != nil {
						t.Fatal(err)
					}
				}
				ns.Close()
				os_.Close()
				ref.err, ours.err = read.net(nc), read.ours(t, rt, oc)
				h12Compare(t, "Read after the peer's reset or close", ours, ref)
				ref.err, ours.err = write.net(nc), write.ours(t, rt, oc)
				h12Compare(t, "Write after the peer's reset or close", ours, ref)
			})
		}
	})
}

// ---- listeners ----

// TestHostile12NetListenerAfterClose: Accept and Close after a listener's Close fail
// as net's: Op "accept" or "close", Source nil, Addr the listener's address,
// net.ErrClosed; and Addr still reports the address.
func TestHostile12NetListenerAfterClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for _, network := range h12StreamNetworks {
			for _, accepted := range []bool{false, true} {
				name := network + "/never-used"
				if accepted {
					name = network + "/after-an-accept"
				}
				t.Run(name, func(t *testing.T) {
					nl, _, _ := h12NetPair(t, network)
					ol, _, _ := h12OurPair(t, rt, network)
					if !accepted { // a listener that never accepted (so never registered)
						var err error
						if network == "unix" {
							ol, err = ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "u"), Net: "unix"})
						} else {
							ol, err = ListenTCP(network, &net.TCPAddr{IP: ol.Addr().(*net.TCPAddr).IP})
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					ref := h12Obs{local: nl.Addr()}
					ours := h12Obs{local: ol.Addr()}
					if err := nl.Close(); err != nil {
						t.Fatal(err)
					}
					if err := ol.Close(); err != nil {
						t.Fatal(err)
					}
					if h12AddrString(ol.Addr()) != h12AddrString(ours.local) {
						t.Errorf("Addr after Close: %v, before: %v", ol.Addr(), ours.local)
					}
					_, ref.err = nl.Accept()
					switch l := ol.(type) {
					case *TCPListener:
						_, ours.err = h12Await(t, rt, l.Accept())
					case *UnixListener:
						_, ours.err = h12Await(t, rt, l.Accept())
					}
					h12Compare(t, "Accept after Close", ours, ref)
					ref.err, ours.err = nl.Close(), ol.Close()
					h12Compare(t, "Close after Close", ours, ref)
				})
			}
		}
	})
}

// ---- dial and listen ----

// h12ClosedPort returns a loopback TCP address nobody listens on.
func h12ClosedPort(t *testing.T, network string) *net.TCPAddr {
	t.Helper()
	ip := net.IPv4(127, 0, 0, 1).To4()
	if network == "tcp6" {
		ip = net.IPv6loopback
	}
	l, err := net.ListenTCP(network, &net.TCPAddr{IP: ip})
	if err != nil {
		t.Skipf("listen %s: %v", network, err)
	}
	a := l.Addr().(*net.TCPAddr)
	l.Close()
	return a
}

// TestHostile12NetDialErrors: failed dials, by address and by string, fail as net's:
// Op "dial", the network, Source the local address given (or nil), Addr the address
// dialed (nil when none was resolved), and the same inner error.
func TestHostile12NetDialErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		type row struct {
			name         string
			network      string
			laddr, raddr *net.TCPAddr
			address      string // Dial's string form when raddr is nil
			byString     bool
		}
		closed4, closed6 := h12ClosedPort(t, "tcp4"), h12ClosedPort(t, "tcp6")
		rows := []row{
			{name: "refused tcp4", network: "tcp4", raddr: closed4},
			{name: "refused tcp6", network: "tcp6", raddr: closed6},
			{name: "refused tcp", network: "tcp", raddr: closed4},
			{name: "refused from a local address", network: "tcp4", laddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, raddr: closed4},
			{name: "nil raddr", network: "tcp"},
			{name: "unknown network", network: "tcpx", raddr: closed4},
			{name: "refused by string", network: "tcp", address: closed4.String(), byString: true},
			{name: "refused by string tcp6", network: "tcp6", address: closed6.String(), byString: true},
			{name: "unresolvable name", network: "tcp", address: "a..b:80", byString: true},
			{name: "missing port", network: "tcp", address: "127.0.0.1", byString: true},
			{name: "unknown port name", network: "tcp", address: "127.0.0.1:h12-no-such-service", byString: true},
			{name: "port out of range", network: "tcp", address: "127.0.0.1:70000", byString: true},
			{name: "missing bracket", network: "tcp", address: "[::1:80", byString: true},
			{name: "unknown network by string", network: "tcpx", address: closed4.String(), byString: true},
			{name: "IPv6 literal on tcp4", network: "tcp4", address: closed6.String(), byString: true},
			{name: "IPv4 literal on tcp6", network: "tcp6", address: closed4.String(), byString: true},
			{name: "IPv4-mapped literal on tcp6", network: "tcp6", address: fmt.Sprintf("[::ffff:127.0.0.1]:%d", closed4.Port), byString: true},
			{name: "IPv4-mapped literal on tcp4", network: "tcp4", address: fmt.Sprintf("[::ffff:127.0.0.1]:%d", closed4.Port), byString: true},
			{name: "DialTCP tcp4 to an IPv6 address", network: "tcp4", raddr: closed6},
			{name: "DialTCP tcp4 from an IPv6 address", network: "tcp4", laddr: &net.TCPAddr{IP: net.IPv6loopback}, raddr: closed4},
			{name: "unknown network from a local address", network: "tcpx", laddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, raddr: closed4},
			{name: "nil raddr from a local address", network: "tcp4", laddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}},
		}
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				var ref, ours h12Obs
				ref.dest, ours.dest = r.raddr, r.raddr
				if r.laddr != nil {
					ref.local, ours.local = r.laddr, r.laddr
				}
				var nc net.Conn
				var oc *TCPStream
				if r.byString {
					nc, ref.err = net.DialTimeout(r.network, r.address, 10*time.Second)
					oc, ours.err = h12Await(t, rt, Dial(r.network, r.address))
				} else {
					var tc *net.TCPConn
					tc, ref.err = net.DialTCP(r.network, r.laddr, r.raddr)
					if tc != nil {
						nc = tc
					}
					oc, ours.err = h12Await(t, rt, DialTCP(r.network, r.laddr, r.raddr))
				}
				if nc != nil {
					nc.Close()
				}
				if oc != nil {
					oc.Close()
				}
				h12Compare(t, "dial "+r.name, ours, ref)
			})
		}
	})
}

// TestHostile12NetListenErrors: failed listens (port in use, address not local,
// privileged port) fail as net's: Op "listen", Source nil, Addr the address asked for.
func TestHostile12NetListenErrors(t *testing.T) {
	used4, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer used4.Close()
	usedU, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer usedU.Close()
	rows := []struct {
		name    string
		network string
		addr    string
		root    bool // the row needs an unprivileged process
	}{
		{"tcp4 port in use", "tcp4", used4.Addr().String(), false},
		{"tcp port in use", "tcp", used4.Addr().String(), false},
		{"udp4 port in use", "udp4", usedU.LocalAddr().String(), false},
		{"tcp4 address not local", "tcp4", "192.0.2.99:0", false},
		{"udp4 address not local", "udp4", "192.0.2.99:0", false},
		{"tcp4 privileged port", "tcp4", "127.0.0.1:1", true},
		{"udp4 privileged port", "udp4", "127.0.0.1:1", true},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if r.root && os.Geteuid() == 0 {
				t.Skip("running as root: privileged ports are allowed")
			}
			var ref, ours h12Obs
			if strings.HasPrefix(r.network, "udp") {
				a, err := net.ResolveUDPAddr(r.network, r.addr)
				if err != nil {
					t.Fatal(err)
				}
				ref.dest, ours.dest = a, a
				if c, err := net.ListenUDP(r.network, a); err != nil {
					ref.err = err
				} else {
					c.Close()
				}
				if c, err := ListenUDP(r.network, a); err != nil {
					ours.err = err
				} else {
					c.Close()
				}
			} else {
				a, err := net.ResolveTCPAddr(r.network, r.addr)
				if err != nil {
					t.Fatal(err)
				}
				ref.dest, ours.dest = a, a
				if l, err := net.ListenTCP(r.network, a); err != nil {
					ref.err = err
				} else {
					l.Close()
				}
				if l, err := ListenTCP(r.network, a); err != nil {
					ours.err = err
				} else {
					l.Close()
				}
			}
			h12Compare(t, "listen "+r.name, ours, ref)
		})
	}
}

// TestHostile12NetDialContextEnded: a dial whose context has already ended fails as
// net's in everything a caller tests: an *net.OpError "dial" on the network, naming
// the address dialed, with errors.Is context.Canceled (cancelled) or
// os.ErrDeadlineExceeded and Timeout() (deadline). The inner error's type and text
// are blitzio's own (documented on DialContext and ErrTimeout), so they are not
// compared.
func TestHostile12NetDialContextEnded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		addr := h12ClosedPort(t, "tcp4")
		for _, deadline := range []bool{false, true} {
			t.Run(fmt.Sprintf("deadline=%v", deadline), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				if deadline {
					ctx, cancel = contextWithDeadlinePassed()
				}
				cancel()
				var d net.Dialer
				_, rerr := d.DialContext(ctx, "tcp", addr.String())
				oc, oerr := h12Await(t, rt, DialContext(ctx, "tcp", addr.String()))
				if oc != nil {
					oc.Close()
				}
				ref, ours := h12ShapeOf(h12Obs{err: rerr, dest: addr}), h12ShapeOf(h12Obs{err: oerr, dest: addr})
				// net's deadline error is its own "i/o timeout", not
				// os.ErrDeadlineExceeded; ErrTimeout is both (a superset).
				ref.Chain, ours.Chain, ref.Inner, ours.Inner = "", "", "", ""
				ref.Deadline, ours.Deadline = false, false
				if ours != ref {
					t.Errorf("ours %v\n%+v\nnet %v\n%+v", oerr, ours, rerr, ref)
				}
				if errors.Is(rerr, context.Canceled) != errors.Is(oerr, context.Canceled) {
					t.Errorf("errors.Is(context.Canceled): ours %v, net %v", errors.Is(oerr, context.Canceled), errors.Is(rerr, context.Canceled))
				}
			})
		}
	})
}

// TestHostile12NetReadFullEnds: ReadFull ends as io.ReadFull over a net.Conn does: a
// bare io.EOF when the stream ended before the first byte, io.ErrUnexpectedEOF with
// the count when it ended part way.
func TestHostile12NetReadFullEnds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for _, network := range h12StreamNetworks {
			for _, sent := range []int{0, 3} {
				t.Run(fmt.Sprintf("%s/%d", network, sent), func(t *testing.T) {
					_, nc, ns := h12NetPair(t, network)
					_, oc, os_ := h12OurPair(t, rt, network)
					if _, err := ns.Write(make([]byte, sent)); err != nil {
						t.Fatal(err)
					}
					if _, err := h12Await(t, rt, os_.Write(make([]byte, sent))); err != nil {
						t.Fatal(err)
					}
					ns.(interface{ CloseWrite() error }).CloseWrite()
					if err := os_.CloseWrite(); err != nil {
						t.Fatal(err)
					}
					rn, rerr := io.ReadFull(nc, make([]byte, 8))
					var on int
					var oerr error
					switch s := oc.(type) {
					case *TCPStream:
						on, oerr = h12Await(t, rt, Future[Result[int]](s.ReadFull(make([]byte, 8))))
					case *UnixStream:
						on, oerr = h12Await(t, rt, Future[Result[int]](s.ReadFull(make([]byte, 8))))
					}
					if on != rn || oerr != rerr {
						t.Errorf("ReadFull: ours %d, %v; io.ReadFull over net: %d, %v", on, oerr, rn, rerr)
					}
				})
			}
		}
	})
}
