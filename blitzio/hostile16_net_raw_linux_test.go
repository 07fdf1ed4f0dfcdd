//go:build linux

package blitzio

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// h16RawRead is an AsyncIO function that reads into p with recv(MSG_DONTWAIT), counting
// its calls in calls and the bytes in *n.
func h16RawRead(p []byte, n *int, calls *atomic.Int32) func(fd uintptr) error {
	return func(fd uintptr) error {
		calls.Add(1)
		m, _, err := unix.Recvfrom(int(fd), p, unix.MSG_DONTWAIT)
		if err != nil {
			return err
		}
		*n = m
		return nil
	}
}

// TestHostile16AsyncIOReadWaits: a system call of the caller's own through AsyncIO on a
// stream with nothing to read fails with EAGAIN, and the future then waits for the
// next readiness instead of calling again: two calls (the try, and the one after the
// peer's bytes arrive; one fewer where the backend knows the socket is not readable),
// however long the bytes take. It gets what the peer sent.
func TestHostile16AsyncIOReadWaits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		var calls atomic.Int32
		p := make([]byte, 16)
		var n int
		h := Spawn(rt, s.AsyncIO(InterestRead, h16RawRead(p, &n, &calls)))
		// Room for a spin to show. (Whether f is tried at once depends on the
		// backend: a poller that reports readiness only once armed is tried first.)
		time.Sleep(50 * time.Millisecond)
		if k := calls.Load(); k > 2 {
			t.Fatalf("%d calls with nothing to read: the future spins", k)
		}
		if r := blockOn(t, rt, c.Write([]byte("raw"))); r.Err != nil {
			t.Fatal(r.Err)
		}
		err, werr := waitHandle(t, h)
		if werr != nil || err != nil || string(p[:n]) != "raw" {
			t.Fatalf("AsyncIO read: %v %v %q", werr, err, p[:n])
		}
		if k := calls.Load(); k > 4 {
			t.Fatalf("%d calls for one message", k)
		}
	})
}

// TestHostile16AsyncIOWriteWaits: a write of the caller's own into a full send buffer
// waits for room (no spin), and completes once the peer reads.
func TestHostile16AsyncIOWriteWaits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		chunk := make([]byte, 64<<10)
		// Fill the client's send buffer and the server's receive buffer.
		var filled int
		rc, _ := c.SyscallConn()
		rc.Control(func(fd uintptr) {
			for {
				m, err := unix.SendmsgN(int(fd), chunk, nil, nil, unix.MSG_DONTWAIT)
				if err != nil {
					return
				}
				filled += m
			}
		})
		var calls atomic.Int32
		var wrote int
		h := Spawn(rt, c.AsyncIO(InterestWrite, func(fd uintptr) error {
			calls.Add(1)
			m, err := unix.SendmsgN(int(fd), []byte("tail"), nil, nil, unix.MSG_DONTWAIT)
			wrote = m
			return err
		}))
		waitFor(t, "the first try", func() bool { return calls.Load() >= 1 })
		time.Sleep(50 * time.Millisecond)
		if k := calls.Load(); k > 2 {
			t.Fatalf("%d calls with a full send buffer: the future spins", k)
		}
		// Drain the server side.
		got := 0
		buf := make([]byte, 256<<10)
		for got < filled+4 {
			r := blockOn(t, rt, s.Read(buf))
			if r.Err != nil {
				t.Fatalf("drain after %d of %d bytes: %v", got, filled+4, r.Err)
			}
			got += r.Value
		}
		err, werr := waitHandle(t, h)
		if werr != nil || err != nil || wrote != 4 {
			t.Fatalf("AsyncIO write: %v %v, wrote %d", werr, err, wrote)
		}
	})
}

// TestHostile16AsyncIOResults: f's own result is the future's (nil, or an error other
// than EAGAIN, as it is, wrapped or not); a nil f and an Interest of neither kind are
// programmer errors (panics); after Close the future fails with net.ErrClosed; dropped
// while it waits, it leaves the socket as it was (the next read gets the bytes).
func TestHostile16AsyncIOResults(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		mine := errors.New("mine")
		if err := blockOn(t, rt, s.AsyncIO(InterestWrite, func(uintptr) error { return mine })); err != mine {
			t.Fatalf("f's error: got %v, want it as it is", err)
		}
		wrapped := fmt.Errorf("recvmmsg: %w", syscall.ECONNRESET)
		if err := blockOn(t, rt, s.AsyncIO(InterestWrite, func(uintptr) error { return wrapped })); err != wrapped {
			t.Fatalf("f's wrapped errno: got %v", err)
		}
		if err := blockOn(t, rt, s.AsyncIO(InterestWrite, func(uintptr) error { return nil })); err != nil {
			t.Fatalf("f's nil: got %v", err)
		}
		for name, call := range map[string]func(){
			"nil f":        func() { s.AsyncIO(InterestRead, nil) },
			"Interest(0)":  func() { s.AsyncIO(0, func(uintptr) error { return nil }) },
			"Interest(77)": func() { s.AsyncIO(77, func(uintptr) error { return nil }) },
		} {
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "AsyncIO") {
						t.Errorf("%s: recovered %v, want a panic naming AsyncIO", name, r)
					}
				}()
				call()
			}()
		}
		// Dropped while waiting: the bytes sent afterwards are read by a plain Read.
		var calls atomic.Int32
		var n int
		r := blockOn(t, rt, Timeout(30*time.Millisecond, s.AsyncIO(InterestRead, h16RawRead(make([]byte, 8), &n, &calls))))
		if !errors.Is(r.Err, ErrTimeout) {
			t.Fatalf("AsyncIO with nothing to read under a Timeout: %+v", r)
		}
		if rr := blockOn(t, rt, c.Write([]byte("after"))); rr.Err != nil {
			t.Fatal(rr.Err)
		}
		p := make([]byte, 8)
		if rr := blockOn(t, rt, s.Read(p)); rr.Err != nil || string(p[:rr.Value]) != "after" {
			t.Fatalf("read after a dropped AsyncIO: %q %v", p[:rr.Value], rr.Err)
		}
		// Closed while it waits, and after.
		h := Spawn(rt, s.AsyncIO(InterestRead, h16RawRead(make([]byte, 8), &n, &calls)))
		time.Sleep(20 * time.Millisecond)
		s.Close()
		if err, werr := waitHandle(t, h); werr != nil || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("AsyncIO waiting when the socket closed: %v %v, want net.ErrClosed", werr, err)
		}
		if err := blockOn(t, rt, s.AsyncIO(InterestRead, func(uintptr) error { t.Error("f ran on a closed socket"); return nil })); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("AsyncIO after Close: %v", err)
		}
	})
}

// TestHostile16RawConn: the syscall.RawConn of every socket kind. Control reads an
// option the socket was given (TCP_NODELAY, set by default as net's) and fails with
// net.ErrClosed after Close; Read from a plain goroutine waits parked for the peer's
// bytes (no spin), on a registered socket and on a UDP socket no runtime has used;
// Close ends a waiting Read with net.ErrClosed; Read from a task panics as BlockOn does.
func TestHostile16RawConn(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		rc, err := s.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var nodelay int
		var gerr error
		if err := rc.Control(func(fd uintptr) { nodelay, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY) }); err != nil || gerr != nil || nodelay == 0 {
			t.Fatalf("Control: TCP_NODELAY %d, %v %v", nodelay, err, gerr)
		}
		// Read from a goroutine, the bytes coming later.
		readVia := func(rc syscall.RawConn, p []byte, calls *atomic.Int32) (int, error) {
			var n int
			err := rc.Read(func(fd uintptr) bool {
				calls.Add(1)
				m, _, err := unix.Recvfrom(int(fd), p, unix.MSG_DONTWAIT)
				if err == unix.EAGAIN {
					return false
				}
				n = m
				return true
			})
			return n, err
		}
		var calls atomic.Int32
		type res struct {
			n   int
			err error
		}
		done := make(chan res, 1)
		p := make([]byte, 8)
		go func() { n, err := readVia(rc, p, &calls); done <- res{n, err} }()
		time.Sleep(50 * time.Millisecond) // room for a spin to show
		if k := calls.Load(); k > 2 {
			t.Fatalf("RawConn.Read: %d calls with nothing to read", k)
		}
		if r := blockOn(t, rt, c.Write([]byte("goro"))); r.Err != nil {
			t.Fatal(r.Err)
		}
		if r := <-done; r.err != nil || string(p[:r.n]) != "goro" {
			t.Fatalf("RawConn.Read: %q %v", p[:r.n], r.err)
		}
		// closeEndsRead closes a socket while a Read waits on rc: net.ErrClosed.
		closeEndsRead := func(what string, rc syscall.RawConn, close func() error) {
			go func() { n, err := readVia(rc, p, &calls); done <- res{n, err} }()
			time.Sleep(20 * time.Millisecond)
			close()
			select {
			case r := <-done:
				if !errors.Is(r.err, net.ErrClosed) {
					t.Fatalf("%s RawConn.Read ended by Close: %v, want net.ErrClosed", what, r.err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s RawConn.Read still waiting 20 s after Close", what)
			}
		}
		closeEndsRead("TCP", rc, s.Close)
		if err := rc.Control(func(uintptr) { t.Error("Control ran on a closed socket") }); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Control after Close: %v", err)
		}
		// From a task: a panic, as BlockOn's.
		_, c2 := connPair(t, rt)
		rc2, _ := c2.SyscallConn()
		h := Spawn(rt, PollFn(func(cx *Context) (error, bool) {
			return rc2.Read(func(uintptr) bool { return true }), true
		}))
		if _, err := waitHandle(t, h); err == nil || !strings.Contains(err.Error(), "cannot block from within a runtime") {
			t.Fatalf("RawConn.Read from a task: %v, want the BlockOn panic", err)
		}

		// A UDP socket no runtime has used: poll(2) waits.
		u, err := ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		urc, _ := u.SyscallConn()
		calls.Store(0)
		go func() { n, err := readVia(urc, p, &calls); done <- res{n, err} }()
		waitFor(t, "the first try", func() bool { return calls.Load() >= 1 })
		time.Sleep(50 * time.Millisecond)
		if k := calls.Load(); k > 2 {
			t.Fatalf("unregistered UDP RawConn.Read: %d calls with nothing to read", k)
		}
		snd, err := net.DialUDP("udp4", nil, u.UDPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer snd.Close()
		snd.Write([]byte("dgram"))
		if r := <-done; r.err != nil || string(p[:r.n]) != "dgram" {
			t.Fatalf("unregistered UDP RawConn.Read: %q %v", p[:r.n], r.err)
		}
		closeEndsRead("unregistered UDP", urc, u.Close)
	})
}

// TestHostile16ListenConfigControl: ListenConfig.Control runs before bind, as
// net.ListenConfig's, with the socket's family as network and the address asked for;
// an option it sets is on the listener; its error fails the listen, wrapped in a listen
// *net.OpError, and the socket is closed; the RawConn's Read and Write fail there.
func TestHostile16ListenConfigControl(t *testing.T) {
	type call struct{ network, address string }
	var got []call
	lc := ListenConfig{Control: func(network, address string, c syscall.RawConn) error {
		got = append(got, call{network, address})
		if err := c.Read(func(uintptr) bool { return true }); err == nil {
			t.Error("RawConn.Read in Control succeeded")
		}
		if err := c.Write(func(uintptr) bool { return true }); err == nil {
			t.Error("RawConn.Write in Control succeeded")
		}
		var serr error
		if err := c.Control(func(fd uintptr) {
			// The socket is not bound yet: its port is 0.
			sa, err := unix.Getsockname(int(fd))
			if err == nil {
				switch a := sa.(type) {
				case *unix.SockaddrInet4:
					if a.Port != 0 {
						serr = fmt.Errorf("bound already, to port %d", a.Port)
					}
				case *unix.SockaddrInet6:
					if a.Port != 0 {
						serr = fmt.Errorf("bound already, to port %d", a.Port)
					}
				}
			}
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 64<<10)
			}
		}); err != nil {
			return err
		}
		return serr
	}}
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	l, err := lc.ListenTCP("tcp", lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if len(got) != 1 || got[0] != (call{"tcp4", lo.String()}) {
		t.Fatalf("Control calls %+v; want one with tcp4 and %v", got, lo)
	}
	rc, _ := l.SyscallConn()
	var rcvbuf int
	rc.Control(func(fd uintptr) { rcvbuf, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	if rcvbuf < 64<<10 {
		t.Fatalf("SO_RCVBUF %d after Control set 64 KiB", rcvbuf)
	}
	got = nil
	if l6, err := lc.ListenTCP("tcp", nil); err == nil {
		l6.Close()
		if len(got) != 1 || got[0].network != "tcp6" {
			t.Fatalf("Control calls for a dual-stack wildcard %+v; want tcp6", got)
		}
	}
	// An error fails the listen and closes the socket.
	mine := errors.New("refused by Control")
	fds := h16CountFDs(t)
	_, err = ListenConfig{Control: func(string, string, syscall.RawConn) error { return mine }}.ListenTCP("tcp4", lo)
	var oe *net.OpError
	if !errors.Is(err, mine) || !errors.As(err, &oe) || oe.Op != "listen" {
		t.Fatalf("listen whose Control failed: %v; want a listen *net.OpError wrapping its error", err)
	}
	if n := h16CountFDs(t); n > fds {
		t.Fatalf("%d descriptors after a failed listen, %d before", n, fds)
	}
}
