//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// connPair returns a connected pair of blitzio streams on rt over 127.0.0.1.
func connPair(t *testing.T, rt *Runtime) (client, server *TCPStream) {
	t.Helper()
	l := listenLoopback(t, "tcp4")
	acc := Spawn(rt, l.Accept())
	c, err := blockOn(t, rt, DialTCP("tcp4", nil, l.TCPAddr())).Get()
	if err != nil {
		t.Fatal(err)
	}
	r, err := waitHandle(t, acc)
	if err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	a := r.Value
	if a.Peer.String() != c.LocalAddr().String() || a.Conn.RemoteAddr().String() != c.LocalAddr().String() ||
		c.RemoteAddr().String() != l.Addr().String() {
		t.Fatalf("addresses: peer %v, client local %v, client remote %v, listener %v",
			a.Peer, c.LocalAddr(), c.RemoteAddr(), l.Addr())
	}
	t.Cleanup(func() { c.Close(); a.Conn.Close() })
	return c, a.Conn
}

// pollOnceThenDrop polls f once (it must be pending) and drops it.
func pollOnceThenDrop[T any](t *testing.T, rt *Runtime, f Future[T]) {
	t.Helper()
	pending := blockOn(t, rt, PollFn(func(cx *Context) (bool, bool) {
		_, ok := f.Poll(cx)
		Drop(f)
		return !ok, true
	}))
	if !pending {
		t.Fatal("future was ready on its first poll; the test needs it pending")
	}
}

func readersOf(s *TCPStream) (r, w int) {
	sio := s.fd.sio.Load()
	return sio.waiters(dirRead), sio.waiters(dirWrite)
}

func TestTCPDroppedReadConsumesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		buf := make([]byte, 16)
		pollOnceThenDrop(t, rt, c.Read(buf))
		pollOnceThenDrop(t, rt, c.ReadFull(buf))
		pollOnceThenDrop(t, rt, c.Peek(buf))
		pollOnceThenDrop(t, rt, c.Readable())
		if r, _ := readersOf(c); r != 0 {
			t.Fatalf("%d read waiters left after the drops", r)
		}
		blockOn(t, rt, s.WriteAll([]byte("hello")))
		// Peek does not consume either.
		n, err := blockOn(t, rt, c.Peek(buf)).Get()
		if err != nil || string(buf[:n]) != "hello"[:n] || n == 0 {
			t.Fatalf("Peek = %d, %v (%q)", n, err, buf[:n])
		}
		got := make([]byte, 5)
		if _, err := blockOn(t, rt, c.ReadFull(got)).Get(); err != nil || string(got) != "hello" {
			t.Fatalf("ReadFull = %q, %v", got, err)
		}
	})
}

func TestTCPDroppedAcceptLosesNoConnection(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		l := listenLoopback(t, "tcp4")
		for range 3 {
			pollOnceThenDrop(t, rt, l.Accept())
		}
		// A connection arrives while no accept waits, and after accepts were dropped.
		c, err := net.Dial("tcp4", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a, err := blockOn(t, rt, l.Accept()).Get()
		if err != nil || a.Peer.String() != c.LocalAddr().String() {
			t.Fatalf("accept = %+v, %v; want the peer %v", a, err, c.LocalAddr())
		}
		a.Conn.Close()
	})
}

func TestTCPDroppedWriteAllReportsOnlyWhatWasSent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		c.SetWriteBuffer(4096)
		s.SetReadBuffer(4096)
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: more than the buffers hold
		w := c.WriteAll(big)
		pending := blockOn(t, rt, PollFn(func(cx *Context) (bool, bool) {
			_, ok := w.Poll(cx)
			return !ok, true
		}))
		if !pending {
			t.Fatal("a 4 MiB WriteAll finished at once; the peer is not reading")
		}
		Drop(w)
		sent := w.Written()
		if sent <= 0 || sent >= len(big) {
			t.Fatalf("Written() = %d, want a part of %d", sent, len(big))
		}
		c.CloseWrite()
		all := blockOn(t, rt, Async(func(co *Co) []byte {
			var out []byte
			buf := make([]byte, 64<<10)
			for {
				n, err := Await(co, s.Read(buf)).Get()
				out = append(out, buf[:n]...)
				if err != nil {
					return out
				}
			}
		}))
		if len(all) != sent || !bytes.Equal(all, big[:sent]) {
			t.Fatalf("peer read %d bytes, Written() said %d", len(all), sent)
		}
	})
}

func TestTCPResetMidRead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		h := Spawn(rt, c.Read(make([]byte, 8)))
		// Wait until the read is parked on the socket, then reset the connection.
		waitFor(t, "the read to wait", func() bool { r, _ := readersOf(c); return r > 0 })
		if err := s.SetLinger(0); err != nil {
			t.Fatal(err)
		}
		s.Close()
		r, err := waitHandle(t, h)
		if err != nil {
			t.Fatal(err)
		}
		var oe *net.OpError
		if !errors.Is(r.Err, syscall.ECONNRESET) || !errors.As(r.Err, &oe) || oe.Op != "read" {
			t.Fatalf("read after RST = %d, %v; want a read *net.OpError wrapping ECONNRESET", r.Value, r.Err)
		}
	})
}

func TestTCPPeerVanishesMidWrite(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		c.SetWriteBuffer(4096)
		h := Spawn(rt, c.WriteAll(make([]byte, 16<<20)))
		waitFor(t, "the write to wait", func() bool { _, w := readersOf(c); return w > 0 })
		s.SetLinger(0)
		s.Close()
		r, err := waitHandle(t, h)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(r.Err, syscall.ECONNRESET) && !errors.Is(r.Err, syscall.EPIPE) {
			t.Fatalf("write to a vanished peer = %d, %v; want ECONNRESET or EPIPE", r.Value, r.Err)
		}
		// The next write fails with EPIPE (MSG_NOSIGNAL: an error, no signal).
		_, err = blockOn(t, rt, c.Write([]byte("x"))).Get()
		if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("second write = %v; want EPIPE", err)
		}
	})
}

func TestTCPHalfCloseBothWays(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		srv := Spawn(rt, Async(func(co *Co) error {
			var req []byte
			buf := make([]byte, 3)
			for {
				n, err := Await(co, s.Read(buf)).Get()
				req = append(req, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
			}
			if _, err := Await(co, s.WriteAll(append([]byte("re:"), req...))).Get(); err != nil {
				return err
			}
			return s.CloseWrite()
		}))
		blockOn(t, rt, c.WriteAll([]byte("request")))
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		// Writing after CloseWrite fails; reading still works.
		if _, err := blockOn(t, rt, c.Write([]byte("x"))).Get(); !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("write after CloseWrite = %v, want EPIPE", err)
		}
		got := make([]byte, 10)
		if _, err := blockOn(t, rt, c.ReadFull(got)).Get(); err != nil || string(got) != "re:request" {
			t.Fatalf("reply %q, %v", got, err)
		}
		if n, err := blockOn(t, rt, c.Read(got)).Get(); n != 0 || err != io.EOF {
			t.Fatalf("read after the server's CloseWrite = %d, %v; want io.EOF", n, err)
		}
		if r, err := waitHandle(t, srv); err != nil || r != nil {
			t.Fatal(err, r)
		}
		n, err := blockOn(t, rt, c.ReadFull(make([]byte, 4))).Get()
		if err != io.EOF || n != 0 {
			t.Fatalf("ReadFull at EOF = %d, %v", n, err)
		}
	})
}

func TestTCPCloseWhileAnotherTaskWaits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, _ := connPair(t, rt)
		rd := Spawn(rt, c.Read(make([]byte, 8)))
		rdy := Spawn(rt, c.Readable())
		waitFor(t, "both to wait", func() bool { r, _ := readersOf(c); return r >= 2 })
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if r, err := waitHandle(t, rd); err != nil || !errors.Is(r.Err, net.ErrClosed) {
			t.Fatalf("read on a closed stream = %v, %v; want net.ErrClosed", r.Err, err)
		}
		if r, err := waitHandle(t, rdy); err != nil || !errors.Is(r, net.ErrClosed) {
			t.Fatalf("Readable on a closed stream = %v, %v; want net.ErrClosed", r, err)
		}
		if err := c.Close(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("second Close = %v", err)
		}
		if _, err := blockOn(t, rt, c.Write([]byte("x"))).Get(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after Close = %v", err)
		}
		if err := c.SetNoDelay(true); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("option after Close = %v", err)
		}

		l := listenLoopback(t, "tcp4")
		acc := Spawn(rt, l.Accept())
		waitFor(t, "the accept to wait", func() bool {
			s := l.fd.sio.Load()
			if s == nil {
				return false
			}
			return s.waiters(dirRead) > 0
		})
		l.Close()
		if r, err := waitHandle(t, acc); err != nil || !errors.Is(r.Err, net.ErrClosed) {
			t.Fatalf("accept on a closed listener = %v, %v", r.Err, err)
		}
	})
}

// setNoFile sets the soft RLIMIT_NOFILE and returns a function that restores it.
func setNoFile(t *testing.T, soft uint64) func() {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	nl := old
	nl.Cur = min(soft, old.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &nl); err != nil {
		t.Skip(err)
	}
	return func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &old) }
}

func TestTCPAcceptEMFILEBacksOffAndRecovers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		l := listenLoopback(t, "tcp4")
		// Register the listener before the descriptors run out.
		pollOnceThenDrop(t, rt, l.Accept())
		const clients = 3
		var conns []net.Conn
		for range clients {
			c, err := net.Dial("tcp4", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		restore := setNoFile(t, uint64(openFDs(t)+16))
		var filler []int
		freeFiller := func() {
			for _, fd := range filler {
				unix.Close(fd)
			}
			filler = nil
		}
		defer restore()
		defer freeFiller()
		for {
			fd, err := unix.Dup(0)
			if err != nil {
				if err != unix.EMFILE {
					t.Fatal(err)
				}
				break
			}
			filler = append(filler, fd)
		}
		before := acceptBackoffs.Load()
		h := Spawn(rt, Async(func(co *Co) int {
			n := 0
			for range clients {
				a := Await(co, l.Accept())
				if a.Err != nil {
					return -1
				}
				a.Value.Conn.Close()
				n++
			}
			return n
		}))
		waitFor(t, "the accept to back off on EMFILE", func() bool { return acceptBackoffs.Load() > before })
		if h.IsFinished() {
			t.Fatal("accept finished while the process had no descriptor left")
		}
		freeFiller()
		restore()
		if n, err := waitHandle(t, h); err != nil || n != clients {
			t.Fatalf("accepted %d (%v) after descriptors were freed, want %d", n, err, clients)
		}
	})
}

func TestTCPRuntimeCloseClosesEveryConnection(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 120*time.Second)
		const conns = 5000
		restore := setNoFile(t, 1<<20)
		defer restore()
		var lim unix.Rlimit
		unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
		if lim.Cur < 2*conns+200 {
			t.Skipf("RLIMIT_NOFILE %d too low for %d connections", lim.Cur, conns)
		}
		runtime.GC()
		baseG := runtime.NumGoroutine()
		baseFD := openFDs(t)
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		// Server: accept every connection and park a task reading it.
		Spawn(rt, Async(func(co *Co) struct{} {
			for {
				a := Await(co, l.Accept())
				if a.Err != nil {
					return struct{}{}
				}
				Spawn(co, a.Value.Conn.Read(make([]byte, 1)))
			}
		}))
		// Clients: connect, and park a task reading each.
		dialed := blockOn(t, rt, Async(func(co *Co) int {
			n := 0
			for range conns {
				c, err := Await(co, DialTCP("tcp4", nil, l.TCPAddr())).Get()
				if err != nil {
					t.Errorf("dial %d: %v", n, err)
					return n
				}
				Spawn(co, c.Read(make([]byte, 1)))
				n++
			}
			return n
		}))
		if dialed != conns {
			t.Fatalf("dialed %d", dialed)
		}
		waitFor(t, "every connection to be accepted", func() bool { return rt.io.live.Load() >= 2*conns+1 })
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		if n := openFDs(t); n > baseFD {
			t.Fatalf("%d descriptors open after Close, %d before the runtime", n, baseFD)
		}
		if err := l.Close(); !errors.Is(err, net.ErrClosed) && err != nil {
			t.Fatalf("listener Close after the runtime's = %v", err)
		}
		checkNoLeak(t, baseG)
	})
}
