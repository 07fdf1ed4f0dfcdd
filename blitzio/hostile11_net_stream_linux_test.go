//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// h11WantOpErr fails unless err is a *net.OpError with Op op wrapping target, as package
// net reports the same mistake.
func h11WantOpErr(t *testing.T, what string, err error, op string, target error) {
	t.Helper()
	var oe *net.OpError
	if !errors.Is(err, target) || !errors.As(err, &oe) || oe.Op != op {
		t.Errorf("%s: %v (%T), want a %q *net.OpError wrapping %v", what, err, err, op, target)
	}
}

func h11Sockopt(t *testing.T, fd *netFD, level, opt int) int {
	t.Helper()
	var v int
	if err := fd.control(func(s int) (err error) {
		v, err = unix.GetsockoptInt(s, level, opt)
		return err
	}); err != nil {
		t.Fatalf("getsockopt(%d, %d): %v", level, opt, err)
	}
	return v
}

// TestHostile11NetSplitHalvesEveryMethod: every method of TCPReadHalf and TCPWriteHalf
// does what the TCPStream method does, on the same connection, and fails like it (a
// "read" or "write" *net.OpError wrapping net.ErrClosed, as net.Conn) once it is closed.
func TestHostile11NetSplitHalvesEveryMethod(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		r, w := c.Split()
		if r.Stream() != c || w.Stream() != c {
			t.Fatal("Stream() of a half is not the split stream")
		}
		if err := blockOn(t, rt, w.Writable()); err != nil {
			t.Fatalf("Writable on a fresh connection: %v", err)
		}
		pollOnceThenDrop(t, rt, r.Readable()) // nothing to read yet: pending
		blockOn(t, rt, s.WriteAll([]byte("peekaboo")))
		if err := blockOn(t, rt, r.Readable()); err != nil {
			t.Fatalf("Readable with bytes queued: %v", err)
		}
		pk := make([]byte, 4)
		if n, err := blockOn(t, rt, r.Peek(pk)).Get(); err != nil || n == 0 || string(pk[:n]) != "peek"[:n] {
			t.Fatalf("Peek = %d, %v, %q", n, err, pk[:n])
		}
		full := make([]byte, 8)
		if n, err := blockOn(t, rt, r.ReadFull(full)).Get(); err != nil || n != 8 || string(full) != "peekaboo" {
			t.Fatalf("ReadFull after Peek = %d, %v, %q (Peek must not consume)", n, err, full)
		}
		n, err := blockOn(t, rt, w.Write([]byte("abc"))).Get()
		if err != nil || n < 1 || n > 3 {
			t.Fatalf("Write = %d, %v", n, err)
		}
		if m, err := blockOn(t, rt, w.WriteAll([]byte("abc")[n:])).Get(); err != nil || m != 3-n {
			t.Fatalf("WriteAll of the rest = %d, %v", m, err)
		}
		if m, err := blockOn(t, rt, w.WriteVectored([]byte("de"), nil, []byte{}, []byte("f"))).Get(); err != nil || m != 3 {
			t.Fatalf("WriteVectored = %d, %v", m, err)
		}
		got := make([]byte, 6)
		if _, err := blockOn(t, rt, s.ReadFull(got)).Get(); err != nil || string(got) != "abcdef" {
			t.Fatalf("the peer read %q, %v", got, err)
		}
		if err := w.CloseWrite(); err != nil {
			t.Fatalf("CloseWrite: %v", err)
		}
		if _, err := blockOn(t, rt, s.Read(got)).Get(); err != io.EOF {
			t.Fatalf("peer read after CloseWrite: %v, want io.EOF", err)
		}
		s.CloseWrite()
		if _, err := blockOn(t, rt, r.Read(got)).Get(); err != io.EOF {
			t.Fatalf("read half after the peer's CloseWrite: %v, want io.EOF", err)
		}

		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		h11WantOpErr(t, "ReadHalf.Read after Close", blockOn(t, rt, r.Read(got)).Err, "read", net.ErrClosed)
		h11WantOpErr(t, "ReadHalf.Peek after Close", blockOn(t, rt, r.Peek(got)).Err, "read", net.ErrClosed)
		h11WantOpErr(t, "ReadHalf.ReadFull after Close", blockOn(t, rt, r.ReadFull(got)).Err, "read", net.ErrClosed)
		h11WantOpErr(t, "WriteHalf.Write after Close", blockOn(t, rt, w.Write(got)).Err, "write", net.ErrClosed)
		h11WantOpErr(t, "WriteHalf.WriteAll after Close", blockOn(t, rt, w.WriteAll(got)).Err, "write", net.ErrClosed)
		// "writev", as net.Buffers written to a net.Conn says.
		h11WantOpErr(t, "WriteHalf.WriteVectored after Close", blockOn(t, rt, w.WriteVectored(got)).Err, "writev", net.ErrClosed)
		h11WantOpErr(t, "WriteHalf.CloseWrite after Close", w.CloseWrite(), "close", net.ErrClosed)
		if err := blockOn(t, rt, r.Readable()); !errors.Is(err, net.ErrClosed) {
			t.Errorf("ReadHalf.Readable after Close: %v, want net.ErrClosed", err)
		}
		if err := blockOn(t, rt, w.Writable()); !errors.Is(err, net.ErrClosed) {
			t.Errorf("WriteHalf.Writable after Close: %v, want net.ErrClosed", err)
		}
	})
}

// TestHostile11NetSplitHalvesTwoRuntimes: the halves of one connection are two values,
// but one socket: used from a second runtime they fail with ErrOtherRuntime, and the
// first runtime's halves still work afterwards.
func TestHostile11NetSplitHalvesTwoRuntimes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		rt2 := newRT(t, cfg)
		c, s := connPair(t, rt)
		blockOn(t, rt, c.Writable()) // binds c to rt
		r, w := c.Split()
		if err := blockOn(t, rt2, r.Read(make([]byte, 1))).Err; !errors.Is(err, ErrOtherRuntime) {
			t.Fatalf("read half on another runtime: %v, want ErrOtherRuntime", err)
		}
		if err := blockOn(t, rt2, w.Write([]byte("x"))).Err; !errors.Is(err, ErrOtherRuntime) {
			t.Fatalf("write half on another runtime: %v, want ErrOtherRuntime", err)
		}
		if err := blockOn(t, rt2, r.Readable()); !errors.Is(err, ErrOtherRuntime) {
			t.Fatalf("Readable on another runtime: %v, want ErrOtherRuntime", err)
		}
		// One task writes through w while another reads through r, on rt.
		const n = 64 << 10
		wr := Spawn(rt, Async(func(co *Co) error {
			_, err := Await(co, w.WriteAll(bytes.Repeat([]byte{7}, n))).Get()
			return err
		}))
		echo := Spawn(rt, Async(func(co *Co) error {
			buf := make([]byte, 4096)
			for total := 0; total < n; {
				k, err := Await(co, s.Read(buf)).Get()
				if err != nil {
					return err
				}
				if _, err := Await(co, s.WriteAll(buf[:k])).Get(); err != nil {
					return err
				}
				total += k
			}
			return nil
		}))
		got := make([]byte, n)
		if k, err := blockOn(t, rt, r.ReadFull(got)).Get(); err != nil || k != n || !bytes.Equal(got, bytes.Repeat([]byte{7}, n)) {
			t.Fatalf("read half got %d bytes, %v", k, err)
		}
		for _, h := range []JoinHandle[error]{wr, echo} {
			if err, jerr := waitHandle(t, h); err != nil || jerr != nil {
				t.Fatal(err, jerr)
			}
		}
	})
}

// TestHostile11NetCloseRead: CloseRead wakes a read waiting in another task, which then
// reports io.EOF, as do later reads (net.TCPConn.CloseRead); writing still works; after
// Close, CloseRead fails with a "close" *net.OpError wrapping net.ErrClosed, as net's.
func TestHostile11NetCloseRead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		h := Spawn(rt, c.Read(make([]byte, 8)))
		waitFor(t, "the read to wait", func() bool { r, _ := readersOf(c); return r > 0 })
		if err := c.CloseRead(); err != nil {
			t.Fatalf("CloseRead: %v", err)
		}
		r, err := waitHandleFor(t, h, "the read waiting when CloseRead was called")
		if err != nil || r.Err != io.EOF || r.Value != 0 {
			t.Fatalf("waiting read after CloseRead = %+v, %v; want 0, io.EOF", r, err)
		}
		if r := blockOn(t, rt, c.Read(make([]byte, 8))); r.Err != io.EOF {
			t.Fatalf("read after CloseRead = %+v, want io.EOF", r)
		}
		if err := blockOn(t, rt, c.Readable()); err != nil {
			t.Fatalf("Readable after CloseRead = %v, want ready", err)
		}
		if _, err := blockOn(t, rt, c.WriteAll([]byte("still"))).Get(); err != nil {
			t.Fatalf("write after CloseRead: %v", err)
		}
		got := make([]byte, 5)
		if _, err := blockOn(t, rt, s.ReadFull(got)).Get(); err != nil || string(got) != "still" {
			t.Fatalf("peer read %q, %v", got, err)
		}
		c.Close()
		h11WantOpErr(t, "CloseRead after Close", c.CloseRead(), "close", net.ErrClosed)

		// Same mistake on net: the reference.
		nl, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer nl.Close()
		nc, err := net.Dial("tcp4", nl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
		h11WantOpErr(t, "net.TCPConn.CloseRead after Close (reference)", nc.(*net.TCPConn).CloseRead(), "close", net.ErrClosed)
	})
}

// TestHostile11NetPollAccept: hand-written futures built on PollAccept: pending until a
// client connects, then the connection and its peer; two of them in two tasks each get
// one of two connections; Close wakes a waiting one with net.ErrClosed; after Close, or
// polled without a runtime, it fails at once.
func TestHostile11NetPollAccept(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		l := listenLoopback(t, "tcp4")
		accept := func() *h11Probe[Result[Accepted]] {
			return &h11Probe[Result[Accepted]]{f: PollFn(func(cx *Context) (Result[Accepted], bool) { return l.PollAccept(cx) })}
		}
		p1, p2 := accept(), accept()
		h1 := Spawn[Future[Result[Accepted]]](rt, p1)
		h2 := Spawn[Future[Result[Accepted]]](rt, p2)
		waitFor(t, "both hand-written accepts to wait", func() bool { return p1.pending.Load() && p2.pending.Load() })
		var clients []*TCPStream
		for range 2 {
			c, err := blockOn(t, rt, DialTCP("tcp4", nil, l.TCPAddr())).Get()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			clients = append(clients, c)
		}
		peers := map[string]bool{}
		for i, h := range []JoinHandle[Result[Accepted]]{h1, h2} {
			r, err := waitHandleFor(t, h, "a PollAccept future")
			if err != nil || r.Err != nil {
				t.Fatalf("accept %d: %v, %v", i, err, r.Err)
			}
			defer r.Value.Conn.Close()
			if r.Value.Peer.String() != r.Value.Conn.RemoteAddr().String() {
				t.Fatalf("Peer %v != RemoteAddr %v", r.Value.Peer, r.Value.Conn.RemoteAddr())
			}
			peers[r.Value.Peer.String()] = true
		}
		for _, c := range clients {
			if !peers[c.LocalAddr().String()] {
				t.Fatalf("client %v was not accepted (accepted: %v)", c.LocalAddr(), peers)
			}
		}
		p3 := accept()
		h3 := Spawn[Future[Result[Accepted]]](rt, p3)
		waitFor(t, "the accept to wait", func() bool { return p3.pending.Load() })
		l.Close()
		r, err := waitHandleFor(t, h3, "a PollAccept waiting when the listener closed")
		if err != nil {
			t.Fatal(err)
		}
		h11WantOpErr(t, "PollAccept woken by Close", r.Err, "accept", net.ErrClosed)
		h11WantOpErr(t, "PollAccept after Close", blockOn(t, rt, Future[Result[Accepted]](accept())).Err, "accept", net.ErrClosed)

		l2 := listenLoopback(t, "tcp4")
		if r, ok := l2.PollAccept(NewContext(nil, Waker{})); !ok || !errors.Is(r.Err, errNoRuntime) {
			t.Fatalf("PollAccept without a runtime = %v, %v", r.Err, ok)
		}
	})
}

// TestHostile11NetReadFullDroppedPartWay: a ReadFull dropped after part of the buffer
// arrived keeps those bytes in p[:N()] and leaves no waiter; the next reads get the
// rest; a stream ending part way gives io.ErrUnexpectedEOF with the count, and one ending
// before the first byte io.EOF, as io.ReadFull.
func TestHostile11NetReadFullDroppedPartWay(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		blockOn(t, rt, s.WriteAll([]byte("abc")))
		blockOn(t, rt, c.Readable())
		buf := make([]byte, 8)
		f := c.ReadFull(buf)
		if f.N() != 0 {
			t.Fatalf("N() before any poll = %d", f.N())
		}
		n := blockOn(t, rt, PollFn(func(cx *Context) (int, bool) {
			if _, ok := f.Poll(cx); ok {
				t.Error("ReadFull of 8 finished with 3 bytes sent")
			}
			Drop(f)
			return f.N(), true
		}))
		if n != 3 || string(buf[:3]) != "abc" {
			t.Fatalf("after the drop N() = %d, buffer %q; want 3, abc", n, buf[:n])
		}
		if r, _ := readersOf(c); r != 0 {
			t.Fatalf("%d read waiters left by the dropped ReadFull", r)
		}
		blockOn(t, rt, s.WriteAll([]byte("defgh")))
		s.CloseWrite()
		f2 := c.ReadFull(buf[3:])
		if k, err := blockOn(t, rt, f2).Get(); err != nil || k != 5 || f2.N() != 5 || string(buf) != "abcdefgh" {
			t.Fatalf("second ReadFull = %d, %v (N %d), buffer %q", k, err, f2.N(), buf)
		}
		if k, err := blockOn(t, rt, c.ReadFull(buf)).Get(); err != io.EOF || k != 0 {
			t.Fatalf("ReadFull at end of stream = %d, %v; want 0, io.EOF", k, err)
		}
		c2, s2 := connPair(t, rt)
		blockOn(t, rt, s2.WriteAll([]byte("xy")))
		s2.CloseWrite()
		if k, err := blockOn(t, rt, c2.ReadFull(buf)).Get(); err != io.ErrUnexpectedEOF || k != 2 {
			t.Fatalf("ReadFull cut short = %d, %v; want 2, io.ErrUnexpectedEOF", k, err)
		}
	})
}

// TestHostile11NetWritableAndVectoredPartial: with small socket buffers and a peer that
// does not read, a write goes pending, and so does Writable; once the peer reads,
// Writable is ready. A WriteVectored of buffers larger than the socket buffer is sent in
// many partial writes, each ending inside a buffer: every byte arrives once, in order.
func TestHostile11NetWritableAndVectoredPartial(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		if err := c.SetWriteBuffer(4096); err != nil {
			t.Fatal(err)
		}
		if err := s.SetReadBuffer(4096); err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 1024)
		_, w := c.Split()
		// Fill the connection until a write goes pending, then poll Writable (of the
		// stream and of the write half): pending. ACKs of bytes in flight may free
		// space in between (Writable is then rightly ready): fill again, until the
		// peer's window is shut and nothing can free space any more.
		sent := 0
		// A deadline, not a count of rounds: on a loaded machine the ACKs that free
		// space may come late for many rounds.
		deadline := time.Now().Add(10 * time.Second)
		for {
			waiting := blockOn(t, rt, PollFn(func(cx *Context) (bool, bool) {
				for i := 0; ; i++ {
					r, ok := c.PollWrite(cx, chunk)
					if !ok {
						break
					}
					if r.Err != nil || i == 1<<16 {
						t.Errorf("PollWrite to a peer that does not read: %v after %d bytes", r.Err, sent)
						return false, true
					}
					sent += r.Value
				}
				// Writable, and a Write and a WriteAll that go pending and are
				// dropped: they leave no waiter (checked below).
				f1, f2 := c.Writable(), w.Writable()
				_, ok1 := f1.Poll(cx)
				_, ok2 := f2.Poll(cx)
				Drop(f1)
				Drop(f2)
				f3, f4 := c.Write(chunk), w.WriteAll(chunk)
				r3, ok3 := f3.Poll(cx)
				sent += r3.Value
				_, ok4 := f4.Poll(cx)
				sent += f4.Written()
				Drop(f3)
				Drop(f4)
				return !ok1 && !ok2 && !ok3 && !ok4, true
			}))
			if waiting {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Writable stays ready with %d bytes sent to a peer that does not read", sent)
			}
			time.Sleep(time.Millisecond)
		}
		if _, wr := readersOf(c); wr != 0 {
			t.Fatalf("%d write waiters left by the dropped Writable, Write and WriteAll futures", wr)
		}
		drain := Spawn(rt, s.ReadFull(make([]byte, sent)))
		if err := blockOn(t, rt, w.Writable()); err != nil {
			t.Fatalf("Writable once the peer reads: %v", err)
		}
		if r, err := waitHandle(t, drain); err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		}

		// A fresh connection (tiny buffers make loopback TCP crawl): buffers larger
		// than what the kernel takes at once.
		c, s = connPair(t, rt)
		bufs := make([][]byte, 5)
		var want []byte
		for i := range bufs {
			bufs[i] = bytes.Repeat([]byte{byte('a' + i)}, 1<<20+i*777)
			want = append(want, bufs[i]...)
		}
		rd := Spawn(rt, Async(func(co *Co) []byte {
			out := make([]byte, len(want))
			Await(co, s.ReadFull(out))
			return out
		}))
		partial := 0
		wv := c.WriteVectored(bufs...)
		probe := PollFn(func(cx *Context) (Result[int], bool) {
			r, ok := wv.Poll(cx)
			if !ok {
				partial++
			}
			return r, ok
		})
		if n, err := blockOn(t, rt, Future[Result[int]](probe)).Get(); err != nil || n != len(want) || wv.Written() != len(want) {
			t.Fatalf("WriteVectored = %d, %v (Written %d), want %d", n, err, wv.Written(), len(want))
		}
		t.Logf("WriteVectored of %d bytes went pending %d times", len(want), partial)
		got, err := waitHandle(t, rd)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("the peer read %d bytes (%v), not the %d written in order", len(got), err, len(want))
		}
	})
}

// TestHostile11NetTCPSetTTL: SetTTL sets what the connection's packets carry. On an IPv4
// or IPv6 connection TTL reads it back. On a connection accepted by a dual-stack
// listener from an IPv4 client (an AF_INET6 socket with an IPv4-mapped peer) the packets
// are IPv4 and carry IP_TTL, not the IPv6 hop limit: SetTTL must set that too, or it
// silently does nothing (Tokio's set_ttl sets IP_TTL). Bad values and a closed stream
// fail with a "set" *net.OpError.
func TestHostile11NetTCPSetTTL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, _ := connPair(t, rt)
		if err := c.SetTTL(33); err != nil {
			t.Fatal(err)
		}
		if v, err := c.TTL(); err != nil || v != 33 || h11Sockopt(t, c.fd, unix.IPPROTO_IP, unix.IP_TTL) != 33 {
			t.Fatalf("IPv4 TTL() = %d, %v after SetTTL(33)", v, err)
		}
		h11WantOpErr(t, "SetTTL(0) on IPv4", c.SetTTL(0), "set", syscall.EINVAL)
		h11WantOpErr(t, "SetTTL(256) on IPv4", c.SetTTL(256), "set", syscall.EINVAL)

		l6 := listenLoopback(t, "tcp6")
		acc := Spawn(rt, l6.Accept())
		c6, err := blockOn(t, rt, DialTCP("tcp6", nil, l6.TCPAddr())).Get()
		if err != nil {
			t.Fatal(err)
		}
		defer c6.Close()
		if r, err := waitHandle(t, acc); err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		} else {
			defer r.Value.Conn.Close()
		}
		if err := c6.SetTTL(44); err != nil {
			t.Fatal(err)
		}
		if v, err := c6.TTL(); err != nil || v != 44 || h11Sockopt(t, c6.fd, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS) != 44 {
			t.Fatalf("IPv6 TTL() = %d, %v after SetTTL(44)", v, err)
		}

		dual, err := ListenTCP("tcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer dual.Close()
		if dual.fd.family != unix.AF_INET6 {
			t.Skip("no dual-stack listener here")
		}
		acc = Spawn(rt, dual.Accept())
		cl, err := blockOn(t, rt, DialTCP("tcp4", nil, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: dual.TCPAddr().Port})).Get()
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		r, err := waitHandle(t, acc)
		if err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		}
		srv := r.Value.Conn
		defer srv.Close()
		if err := srv.SetTTL(21); err != nil {
			t.Fatal(err)
		}
		if v, err := srv.TTL(); err != nil || v != 21 {
			t.Fatalf("TTL() on the IPv4-mapped connection = %d, %v", v, err)
		}
		if v := h11Sockopt(t, srv.fd, unix.IPPROTO_IP, unix.IP_TTL); v != 21 {
			t.Fatalf("IPv4-mapped connection: IP_TTL = %d after SetTTL(21): its IPv4 packets keep the default TTL", v)
		}

		c.Close()
		h11WantOpErr(t, "SetTTL after Close", c.SetTTL(5), "set", net.ErrClosed)
		if _, err := c.TTL(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("TTL after Close: %v", err)
		}
	})
}

// TestHostile11NetAcceptedFromPortableRuntime: a runtime on the portable backend cannot
// watch sockets. Accept and dial fail with an error saying so (the poller's
// ErrUnsupported), leak no descriptor, and leave the listener usable: the same listener
// then serves on an epoll runtime.
func TestHostile11NetAcceptedFromPortableRuntime(t *testing.T) {
	netWatchdog(t, 30*time.Second)
	prt := newRT(t, Config{Workers: 1, Backend: BackendPortable})
	if b, _ := prt.Backend(); b != BackendPortable {
		t.Fatalf("Backend() = %v", b)
	}
	l := listenLoopback(t, "tcp4")
	fds := openFDs(t)
	if r := blockOn(t, prt, l.Accept()); !errors.Is(r.Err, errUnsupportedPoller) {
		t.Fatalf("accept on the portable backend: %v, want ErrUnsupported", r.Err)
	}
	if r := blockOn(t, prt, DialTCP("tcp4", nil, l.TCPAddr())); !errors.Is(r.Err, errUnsupportedPoller) {
		t.Fatalf("dial on the portable backend: %v, want ErrUnsupported", r.Err)
	}
	if r := blockOn(t, prt, Dial("tcp4", l.TCPAddr().String())); !errors.Is(r.Err, errUnsupportedPoller) {
		t.Fatalf("Dial on the portable backend: %v, want ErrUnsupported", r.Err)
	}
	// The failed dials' sockets are closed; the connections they made (the kernel
	// completed them) wait in the listener's queue, which is not a leak of ours.
	if n := openFDs(t); n > fds {
		t.Fatalf("%d descriptors leaked by the failed operations", n-fds)
	}
	rt := newRT(t, Config{Workers: 1, Backend: BackendEpoll})
	var served atomic.Int64
	h := Spawn(rt, Async(func(co *Co) error {
		r := Await(co, l.Accept())
		if r.Err == nil {
			served.Add(1)
			r.Value.Conn.Close()
		}
		return r.Err
	}))
	if err, jerr := waitHandle(t, h); err != nil || jerr != nil || served.Load() != 1 {
		t.Fatalf("the listener on an epoll runtime after failing on the portable one: %v, %v", err, jerr)
	}
}

// TestHostile11NetRuntimeClosedBeforeFirstUse: a socket first used from a Context of a
// runtime that is closed cannot be registered: ErrRuntimeClosed (inside a *net.OpError
// for a dial), its descriptor closed for a dial; a socket already closed reports
// net.ErrClosed instead.
func TestHostile11NetRuntimeClosedBeforeFirstUse(t *testing.T) {
	rt, err := New(Config{Workers: 1, Backend: BackendEpoll})
	if err != nil {
		t.Fatal(err)
	}
	l := listenLoopback(t, "tcp4")
	rt.Close()
	fds := openFDs(t)
	cx := NewContext(rt, Waker{})
	if r, ok := l.Accept().Poll(cx); !ok || !errors.Is(r.Err, ErrRuntimeClosed) {
		t.Fatalf("accept on a closed runtime = %v, %v", r.Err, ok)
	}
	r, ok := DialTCP("tcp4", nil, l.TCPAddr()).Poll(cx)
	var oe *net.OpError
	if !ok || !errors.Is(r.Err, ErrRuntimeClosed) || !errors.As(r.Err, &oe) || oe.Op != "dial" {
		t.Fatalf("dial on a closed runtime = %v, %v", r.Err, ok)
	}
	if n := openFDs(t); n > fds {
		t.Fatalf("the failed dial left %d descriptors", n-fds)
	}
	u, err := ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	u.Close()
	rt2 := newRT(t, Config{Workers: 1})
	h11WantOpErr(t, "RecvFrom on a UDP socket closed before its first use",
		blockOn(t, rt2, u.RecvFrom(make([]byte, 4))).Err, "read", net.ErrClosed)
}
