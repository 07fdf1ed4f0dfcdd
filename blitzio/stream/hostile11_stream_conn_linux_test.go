package stream

import (
	"errors"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// hostile11ReadAll reads d to the end by polling by hand with a waker-less Context
// (the writer side is driven by other goroutines; a pending read is retried).
func hostile11ReadAll(t *testing.T, d *DuplexStream) string {
	t.Helper()
	var out []byte
	p := make([]byte, 16)
	var err error
	hostile8Within(t, "reading a Duplex to EOF", func() {
		for {
			r, ok := d.PollRead(noopCx(), p)
			if !ok {
				runtime.Gosched()
				continue
			}
			if r.Err != nil {
				if r.Err != io.EOF {
					err = r.Err
				}
				return
			}
			out = append(out, p[:r.Value]...)
		}
	})
	if err != nil {
		t.Fatalf("reading the Duplex: %v", err)
	}
	return string(out)
}

// hostile11NotNested fails unless err is one *net.OpError whose cause is not another.
func hostile11NotNested(t *testing.T, what string, err error) {
	t.Helper()
	oe, ok := err.(*net.OpError)
	if !ok {
		t.Errorf("%s = %T %v; want a *net.OpError", what, err, err)
		return
	}
	var inner *net.OpError
	if errors.As(oe.Err, &inner) {
		t.Errorf("%s = %v: a *net.OpError around another (Go's net never nests them)", what, err)
	}
}

// TestHostile11ConnStreamAndNewConnOn: Stream returns the adapted stream; NewConn and
// NewConnOn panic on a nil stream; NewConnOn with a nil runtime is NewConn and carries
// bytes over a Duplex.
func TestHostile11ConnStreamAndNewConnOn(t *testing.T) {
	rt := newRuntime(t, 1)
	a, b := Duplex(16)
	if c := NewConn(a); c.Stream() != ConnStream(a) {
		t.Errorf("NewConn(a).Stream() = %v; want a", c.Stream())
	}
	if p := hostile11Panics(func() { NewConn(nil) }); p == nil {
		t.Error("NewConn(nil) did not panic")
	}
	if p := hostile11Panics(func() { NewConnOn(rt, nil) }); p == nil {
		t.Error("NewConnOn(rt, nil) did not panic")
	}
	c := NewConnOn(nil, a)
	if c.Stream() != ConnStream(a) {
		t.Errorf("NewConnOn(nil, a).Stream() = %v; want a", c.Stream())
	}
	hostile8Within(t, "Write over NewConnOn(nil, Duplex)", func() {
		if n, err := c.Write([]byte("hi")); n != 2 || err != nil {
			t.Errorf("Write = %d, %v", n, err)
		}
		c.CloseWrite()
	})
	if got := hostile11ReadAll(t, b); got != "hi" {
		t.Errorf("peer read %q; want \"hi\"", got)
	}
	a2, b2 := Duplex(16)
	c2 := NewConnOn(rt, a2)
	hostile8Within(t, "Read over NewConnOn(rt, Duplex)", func() {
		go b2.PollWrite(noopCx(), []byte("yo"))
		buf := make([]byte, 4)
		if n, err := io.ReadAtLeast(c2, buf, 2); n != 2 || err != nil || string(buf[:2]) != "yo" {
			t.Errorf("Read = %d %q, %v", n, buf[:n], err)
		}
	})
}

// TestHostile11ConnCloseWriteDuplex: CloseWrite on a Conn over a Duplex lets the peer
// read the bytes then EOF; the Conn's own writes then fail and its reads still work;
// after Close, CloseWrite reports net.ErrClosed as net.TCPConn's does.
func TestHostile11ConnCloseWriteDuplex(t *testing.T) {
	c, peer := duplexConn(8)
	hostile8Within(t, "Write+CloseWrite", func() {
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Errorf("Write: %v", err)
		}
		if err := c.CloseWrite(); err != nil {
			t.Errorf("CloseWrite: %v", err)
		}
	})
	if got := hostile11ReadAll(t, peer); got != "hello" {
		t.Fatalf("peer read %q; want \"hello\" then EOF", got)
	}
	hostile8Within(t, "Write after CloseWrite", func() {
		_, err := c.Write([]byte("x"))
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("Write after CloseWrite = %v; want io.ErrClosedPipe", err)
		}
		hostile11NotNested(t, "Write after CloseWrite", err)
	})
	peer.PollWrite(noopCx(), []byte("back"))
	peer.CloseWrite()
	hostile8Within(t, "Read after CloseWrite", func() {
		if got, err := io.ReadAll(c); err != nil || string(got) != "back" {
			t.Errorf("Read after CloseWrite = %q, %v; want \"back\"", got, err)
		}
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	err := c.CloseWrite()
	if !errors.Is(err, net.ErrClosed) {
		t.Errorf("CloseWrite after Close = %v; want an error wrapping net.ErrClosed", err)
	}
}

// hostile11CloseWriteErr is a Duplex end whose CloseWrite fails with err.
type hostile11CloseWriteErr struct {
	*DuplexStream
	err error
}

func (s hostile11CloseWriteErr) CloseWrite() error { return s.err }

// TestHostile11ConnCloseWriteErrors: a stream that cannot half-close gives an error
// wrapping errors.ErrUnsupported; a stream's own error is wrapped in one *net.OpError
// (Op "close", as net.TCPConn.CloseWrite's), and a *net.OpError from the stream is
// passed on as it is, not nested.
func TestHostile11ConnCloseWriteErrors(t *testing.T) {
	err := NewConn(&neverReady{}).CloseWrite()
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CloseWrite on a stream without CloseWrite = %v; want errors.ErrUnsupported", err)
	}
	if oe, ok := err.(*net.OpError); !ok || oe.Op != "close" {
		t.Errorf("CloseWrite error = %#v; want a *net.OpError with Op \"close\"", err)
	}
	a, _ := Duplex(1)
	boom := errors.New("boom")
	err = NewConn(hostile11CloseWriteErr{a, boom}).CloseWrite()
	if !errors.Is(err, boom) {
		t.Errorf("CloseWrite = %v; want boom", err)
	}
	hostile11NotNested(t, "CloseWrite with a plain error", err)
	own := &net.OpError{Op: "close", Net: "duplex", Err: boom}
	err = NewConn(hostile11CloseWriteErr{a, own}).CloseWrite()
	if !errors.Is(err, boom) {
		t.Errorf("CloseWrite = %v; want boom", err)
	}
	hostile11NotNested(t, "CloseWrite with the stream's own *net.OpError", err)
}

// TestHostile11ConnCloseWriteTCP: over a TCP connection CloseWrite is shutdown(SHUT_WR):
// the Go peer reads the bytes then EOF while the Conn still reads its reply; after
// Close, CloseWrite fails with net.ErrClosed in one *net.OpError.
func TestHostile11ConnCloseWriteTCP(t *testing.T) {
	rt := newRuntime(t, 2)
	c, peer := tcpPair(t, rt)
	within(t, "half-closed exchange", func() {
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Errorf("Write: %v", err)
			return
		}
		if err := c.CloseWrite(); err != nil {
			t.Errorf("CloseWrite: %v", err)
			return
		}
		got, err := io.ReadAll(peer)
		if err != nil || string(got) != "ping" {
			t.Errorf("peer read %q, %v; want \"ping\" then EOF", got, err)
			return
		}
		peer.Write([]byte("pong"))
		peer.Close()
		back, err := io.ReadAll(c)
		if err != nil || string(back) != "pong" {
			t.Errorf("Conn read %q, %v after CloseWrite; want \"pong\"", back, err)
		}
	})
	c.Close()
	err := c.CloseWrite()
	if !errors.Is(err, net.ErrClosed) {
		t.Errorf("CloseWrite after Close = %v; want net.ErrClosed", err)
	}
	hostile11NotNested(t, "CloseWrite after Close", err)
	// The errors name the network even when the closed socket no longer knows its
	// local address (an accepted connection looks it up lazily).
	for _, f := range []func() error{
		c.CloseWrite,
		func() error { _, err := c.Read(make([]byte, 1)); return err },
		func() error { _, err := c.Write([]byte("x")); return err },
		c.Close,
	} {
		err := f()
		if oe, ok := err.(*net.OpError); !ok || !strings.HasPrefix(oe.Net, "tcp") {
			t.Errorf("error after Close = %v; want a *net.OpError naming a tcp network", err)
		}
	}
}

// TestHostile11UnixListener: NewUnixListener panics on a nil runtime or listener; its
// Accept gives Conns that half-close; Accept on a listener closed underneath the
// adapter returns an error instead of hanging.
func TestHostile11UnixListener(t *testing.T) {
	rt := newRuntime(t, 2)
	addr := &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"}
	l, err := blitzio.ListenUnix("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	if p := hostile11Panics(func() { NewUnixListener(nil, l) }); p == nil {
		t.Error("NewUnixListener(nil, l) did not panic")
	}
	if p := hostile11Panics(func() { NewUnixListener(rt, nil) }); p == nil {
		t.Error("NewUnixListener(rt, nil) did not panic")
	}
	ln := NewUnixListener(rt, l)
	defer ln.Close()
	if ln.Addr().String() != addr.Name {
		t.Errorf("Addr = %v; want %v", ln.Addr(), addr.Name)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pc, err := net.DialUnix("unix", nil, addr)
		if err != nil {
			t.Error(err)
			return
		}
		defer pc.Close()
		got, err := io.ReadAll(pc)
		if err != nil || string(got) != "unix" {
			t.Errorf("peer read %q, %v; want \"unix\" then EOF", got, err)
		}
	}()
	within(t, "Accept, Write, CloseWrite over Unix", func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		if _, err := c.Write([]byte("unix")); err != nil {
			t.Error(err)
		}
		if err := c.(*Conn).CloseWrite(); err != nil {
			t.Errorf("CloseWrite on a Unix Conn: %v", err)
		}
		wg.Wait()
	})
	// The blitzio listener closed underneath the adapter: Accept fails.
	l.Close()
	within(t, "Accept on a listener closed underneath", func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			t.Error("Accept on a closed listener succeeded")
		} else if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept on a closed listener = %v; want net.ErrClosed", err)
		}
	})
}

// hostile11Wild is a ConnStream whose reads and writes panic or call runtime.Goexit
// (a bug in a user's stream) on their first two calls, and then delegate to d.
type hostile11Wild struct {
	*DuplexStream
	mu            sync.Mutex
	reads, writes int
}

func (s *hostile11Wild) misbehave(n *int) {
	s.mu.Lock()
	*n++
	k := *n
	s.mu.Unlock()
	switch k {
	case 1:
		panic("stream bug")
	case 2:
		runtime.Goexit()
	}
}

func (s *hostile11Wild) PollRead(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	s.misbehave(&s.reads)
	return s.DuplexStream.PollRead(cx, p)
}

func (s *hostile11Wild) PollWrite(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	s.misbehave(&s.writes)
	return s.DuplexStream.PollWrite(cx, p)
}

// TestHostile11ConnStreamPanicsAndGoexit: a stream that panics or calls runtime.Goexit
// inside Read or Write does not leave the Conn locked: later calls work.
func TestHostile11ConnStreamPanicsAndGoexit(t *testing.T) {
	a, b := Duplex(16)
	c := NewConn(&hostile11Wild{DuplexStream: a})
	for _, op := range []func(){
		func() { c.Read(make([]byte, 4)) },
		func() { c.Write([]byte("x")) },
	} {
		if p := hostile11Panics(op); p == nil {
			t.Error("the stream's panic did not reach the caller")
		}
		done := make(chan struct{})
		go func() { defer close(done); op() }()
		<-done // Goexit runs the deferred close
	}
	hostile8Within(t, "Write and Read after a panic and a Goexit", func() {
		if n, err := c.Write([]byte("ok")); n != 2 || err != nil {
			t.Errorf("Write = %d, %v", n, err)
		}
		b.PollWrite(noopCx(), []byte("ya"))
		buf := make([]byte, 2)
		if n, err := io.ReadFull(c, buf); n != 2 || err != nil || string(buf) != "ya" {
			t.Errorf("Read = %q, %v", buf[:n], err)
		}
	})
	p := make([]byte, 2)
	if r, ok := b.PollRead(noopCx(), p); !ok || r.Value != 2 || string(p) != "ok" {
		t.Errorf("peer read %q, %v, %v; want \"ok\"", p[:r.Value], r.Err, ok)
	}
}

// TestHostile11NewConnOnOtherRuntime: NewConnOn of a stream that already belongs to
// another runtime's driver (or with a runtime that is closed) fails its calls with an
// error in one *net.OpError instead of blocking, and leaves the stream usable by the
// Conn of its own runtime.
func TestHostile11NewConnOnOtherRuntime(t *testing.T) {
	rt1, rt2 := newRuntime(t, 1), newRuntime(t, 1)
	c, peer := tcpPair(t, rt1)
	other := NewConnOn(rt2, c.Stream())
	within(t, "calls through the other runtime", func() {
		_, err := other.Read(make([]byte, 1))
		if err == nil {
			t.Error("Read through a runtime the socket does not belong to succeeded")
		}
		hostile11NotNested(t, "Read through the other runtime", err)
		if _, err := other.Write([]byte("x")); err == nil {
			t.Error("Write through a runtime the socket does not belong to succeeded")
		}
	})
	within(t, "the own Conn afterwards", func() {
		if _, err := c.Write([]byte("ok")); err != nil {
			t.Errorf("Write on the own Conn: %v", err)
		}
		b := make([]byte, 2)
		if _, err := io.ReadFull(peer, b); err != nil || string(b) != "ok" {
			t.Errorf("peer read %q, %v", b, err)
		}
	})

	closed, err := blitzio.New(blitzio.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	ln, addr := unixListener(t, rt1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	s, err := blitzio.DialUnix("unix", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	dead := NewConnOn(closed, s)
	defer dead.Close()
	within(t, "calls on a Conn of a closed runtime", func() {
		if _, err := dead.Write([]byte("x")); err == nil {
			t.Error("Write on NewConnOn(closed runtime, ...) succeeded")
		}
		if _, err := dead.Read(make([]byte, 1)); err == nil {
			t.Error("Read on NewConnOn(closed runtime, ...) succeeded")
		}
	})
}
