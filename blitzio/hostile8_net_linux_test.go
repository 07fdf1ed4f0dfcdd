//go:build linux

package blitzio

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHostile8NetZeroLengthOnClosedStream: a read or write of zero bytes on a closed
// TCP or Unix stream fails with an error wrapping net.ErrClosed, as net.Conn's do
// (internal/poll takes the read or write lock, which fails, before it looks at len(p)).
// On an open stream both still return 0, nil at once.
func TestHostile8NetZeroLengthOnClosedStream(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 20*time.Second)
		rt := newRT(t, cfg)
		l := listenLoopback(t, "tcp4")
		c, err := net.Dial("tcp4", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a := blockOn(t, rt, l.Accept())
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		s := a.Value.Conn
		if r := blockOn(t, rt, s.Read(nil)); r.Err != nil || r.Value != 0 {
			t.Fatalf("zero read on open stream: %+v", r)
		}
		if r := blockOn(t, rt, s.Write(nil)); r.Err != nil || r.Value != 0 {
			t.Fatalf("zero write on open stream: %+v", r)
		}
		s.Close()
		check := func(what string, r Result[int]) {
			t.Helper()
			var oe *net.OpError
			if !errors.Is(r.Err, net.ErrClosed) || !errors.As(r.Err, &oe) {
				t.Errorf("%s on a closed stream: %+v, want a *net.OpError wrapping net.ErrClosed (as net.Conn)", what, r)
			}
		}
		check("TCP Read(nil)", blockOn(t, rt, s.Read(nil)))
		check("TCP Write(nil)", blockOn(t, rt, s.Write(nil)))
		check("TCP PollRead(nil)", blockOn(t, rt, pollFn(func(cx *Context) (Result[int], bool) { return s.PollRead(cx, nil) })))
		check("TCP PollWrite(nil)", blockOn(t, rt, pollFn(func(cx *Context) (Result[int], bool) { return s.PollWrite(cx, nil) })))

		p := filepath.Join(t.TempDir(), "z.sock")
		ul, err := ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer ul.Close()
		us, err := DialUnix("unix", nil, &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		us.Close()
		check("Unix Read(nil)", blockOn(t, rt, us.Read(nil)))
		check("Unix Write(nil)", blockOn(t, rt, us.Write(nil)))
	})
}

type pollFn func(cx *Context) (Result[int], bool)

func (f pollFn) Poll(cx *Context) (Result[int], bool) { return f(cx) }

// TestHostile8NetUDPSendToOnConnected: SendTo (and PollSendToAddrPort) on a socket made
// by DialUDP fails with net.ErrWriteToConnected, as net.UDPConn.WriteTo does; the
// kernel would otherwise send the datagram to whatever address was given.
func TestHostile8NetUDPSendToOnConnected(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 20*time.Second)
		rt := newRT(t, cfg)
		lo := net.IPv4(127, 0, 0, 1)
		peer, err := ListenUDP("udp4", &net.UDPAddr{IP: lo})
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		other, err := ListenUDP("udp4", &net.UDPAddr{IP: lo})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		c, err := DialUDP("udp4", nil, peer.UDPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		check := func(what string, r Result[int]) {
			t.Helper()
			var oe *net.OpError
			if !errors.Is(r.Err, net.ErrWriteToConnected) || !errors.As(r.Err, &oe) || oe.Op != "write" {
				t.Errorf("%s on a connected socket: %+v, want a write *net.OpError wrapping net.ErrWriteToConnected (as net.UDPConn.WriteTo)", what, r)
			}
		}
		check("SendTo", blockOn(t, rt, c.SendTo([]byte("x"), other.UDPAddr())))
		ap := other.UDPAddr().AddrPort()
		check("PollSendToAddrPort", blockOn(t, rt, pollFn(func(cx *Context) (Result[int], bool) {
			return c.PollSendToAddrPort(cx, []byte("x"), ap)
		})))
		// Nothing reached the other socket; Send still reaches the peer.
		if r := blockOn(t, rt, c.Send([]byte("ok"))); r.Err != nil {
			t.Fatal(r.Err)
		}
		buf := make([]byte, 8)
		if r := blockOn(t, rt, Timeout(10*time.Second, peer.RecvFrom(buf))); r.Err != nil || r.Value.Err != nil || string(buf[:r.Value.Value.N]) != "ok" {
			t.Fatalf("peer recv: %+v", r)
		}
		if r := blockOn(t, rt, Timeout(50*time.Millisecond, other.RecvFrom(buf))); r.Err == nil {
			t.Fatalf("a datagram reached the other socket through the connected one: %+v", r.Value)
		}
		_ = netip.AddrPort{}
	})
}

// keepAliveOf reads the keep-alive options of a stream.
func keepAliveOf(t *testing.T, s *TCPStream) (on, idle, intvl, cnt int) {
	t.Helper()
	err := s.fd.control(func(fd int) (err error) {
		if on, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE); err != nil {
			return err
		}
		if idle, err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE); err != nil {
			return err
		}
		if intvl, err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL); err != nil {
			return err
		}
		cnt, err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return
}

// TestHostile8NetTCPKeepAliveDefault: dialed and accepted connections have keep-alive
// on, with net's defaults (idle 15 s, interval 15 s, 9 probes), as net.DialTCP's and
// net.TCPListener.Accept's do; a dead idle peer is then noticed.
func TestHostile8NetTCPKeepAliveDefault(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 20*time.Second)
		rt := newRT(t, cfg)
		l := listenLoopback(t, "tcp4")
		d := blockOn(t, rt, DialTCP("tcp", nil, l.TCPAddr()))
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		defer d.Value.Close()
		a := blockOn(t, rt, l.Accept())
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		defer a.Value.Conn.Close()
		for what, s := range map[string]*TCPStream{"dialed": d.Value, "accepted": a.Value.Conn} {
			if on, idle, intvl, cnt := keepAliveOf(t, s); on != 1 || idle != 15 || intvl != 15 || cnt != 9 {
				t.Errorf("%s: keep-alive on=%d idle=%d interval=%d count=%d, want 1 15 15 9 (net's defaults)", what, on, idle, intvl, cnt)
			}
		}
		// SetKeepAliveConfig: zero fields take net's defaults, negative ones are left.
		s := d.Value
		if err := s.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 7 * time.Second, Count: 3}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 0, Interval: -1, Count: 0}); err != nil {
			t.Fatal(err)
		}
		if on, idle, intvl, cnt := keepAliveOf(t, s); on != 1 || idle != 15 || intvl != 7 || cnt != 9 {
			t.Errorf("SetKeepAliveConfig{Idle: 0, Interval: -1, Count: 0}: on=%d idle=%d interval=%d count=%d, want 1 15 7 9 (as net)", on, idle, intvl, cnt)
		}
		if err := s.SetKeepAlive(false); err != nil {
			t.Fatal(err)
		}
		if on, _, _, _ := keepAliveOf(t, s); on != 0 {
			t.Errorf("SetKeepAlive(false) left it on")
		}
	})
}

// TestHostile8NetUnixCloseRead: UnixStream.CloseRead exists (as net.UnixConn.CloseRead)
// and a read waiting in another task then ends with io.EOF.
func TestHostile8NetUnixCloseRead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 20*time.Second)
		rt := newRT(t, cfg)
		p := filepath.Join(t.TempDir(), "r.sock")
		l, err := ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		c, err := DialUnix("unix", nil, &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a := blockOn(t, rt, l.Accept())
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		defer a.Value.Close()
		h := Spawn(rt, Timeout(10*time.Second, a.Value.Read(make([]byte, 4))))
		if err := a.Value.CloseRead(); err != nil {
			t.Fatal(err)
		}
		r, err := waitHandleFor(t, h, "a Unix read after CloseRead")
		if err != nil || r.Err != nil || r.Value.Err != io.EOF {
			t.Fatalf("read after CloseRead: %+v %v, want io.EOF", r, err)
		}
	})
}
