//go:build linux || darwin || freebsd

package stream

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

const hostile2Watchdog = 20 * time.Second

// within runs f on a goroutine and fails the test (with every goroutine's stack) if it
// has not returned within the watchdog.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hostile2Watchdog):
		buf := make([]byte, 1<<20)
		t.Fatalf("watchdog: %s did not finish in %v\n%s", what, hostile2Watchdog, buf[:runtimeStack(buf)])
	}
}

// tcpListener returns a Listener adapter on 127.0.0.1 served by rt.
func tcpListener(t *testing.T, rt *blitzio.Runtime) *Listener {
	t.Helper()
	l, err := blitzio.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ln := NewTCPListener(rt, l)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// tcpPair returns a Conn adapter (the accepted side, served by rt) and a plain Go
// net.Conn connected to it.
func tcpPair(t *testing.T, rt *blitzio.Runtime) (*Conn, net.Conn) {
	t.Helper()
	ln := tcpListener(t, rt)
	var peer net.Conn
	var c net.Conn
	within(t, "dial+accept", func() {
		var err error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			var derr error
			peer, derr = net.Dial("tcp4", ln.Addr().String())
			if derr != nil {
				t.Error(derr)
			}
		}()
		c, err = ln.Accept()
		if err != nil {
			t.Error(err)
		}
		wg.Wait()
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c.(*Conn), peer
}

// duplexConn returns a Conn over one end of a Duplex and the other end.
func duplexConn(size int) (*Conn, *DuplexStream) {
	a, b := Duplex(size)
	return NewConn(a), b
}

func jitter() {
	if rand.IntN(3) == 0 {
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
	}
}

// TestHostile2ConnConcurrentReadWriteTCP: one goroutine streams 1 MiB through the Conn
// while another reads the echo, the peer a plain Go echo; many goroutine pairs at once.
func TestHostile2ConnConcurrentReadWriteTCP(t *testing.T) {
	rt := newRuntime(t, 2)
	const pairs = 8
	const size = 256 << 10
	var wg sync.WaitGroup
	for range pairs {
		c, peer := tcpPair(t, rt)
		go io.Copy(peer, peer) // echo
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = byte(rand.Uint32())
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for off := 0; off < size; {
				n := min(size-off, 1+rand.IntN(20000))
				if w, err := c.Write(payload[off : off+n]); err != nil || w != n {
					t.Errorf("Write = %d, %v", w, err)
					return
				}
				off += n
				jitter()
			}
		}()
		go func() {
			defer wg.Done()
			got := make([]byte, 0, size)
			buf := make([]byte, 7000)
			for len(got) < size {
				n, err := c.Read(buf[:1+rand.IntN(len(buf))])
				if err != nil {
					t.Errorf("Read after %d bytes: %v", len(got), err)
					return
				}
				got = append(got, buf[:n]...)
				jitter()
			}
			if sha256.Sum256(got) != sha256.Sum256(payload) {
				t.Errorf("echo differs")
			}
		}()
	}
	within(t, "echo pairs", wg.Wait)
}

// TestHostile2ConnManyConcurrentReaders: 32 goroutines Read one Conn at once; every byte
// the peer sent is read exactly once.
func TestHostile2ConnManyConcurrentReaders(t *testing.T) {
	rt := newRuntime(t, 2)
	c, peer := tcpPair(t, rt)
	const total = 200 << 10
	go func() {
		data := bytes.Repeat([]byte{1}, total)
		for off := 0; off < total; {
			n := min(total-off, 1+rand.IntN(5000))
			peer.Write(data[off : off+n])
			off += n
			jitter()
		}
		peer.(*net.TCPConn).CloseWrite()
	}()
	var got atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1+rand.IntN(3000))
			for {
				n, err := c.Read(buf)
				got.Add(int64(n))
				if err == io.EOF {
					return
				}
				if err != nil {
					t.Errorf("Read: %v", err)
					return
				}
			}
		}()
	}
	within(t, "32 readers", wg.Wait)
	if got.Load() != total {
		t.Fatalf("read %d bytes in all, want %d", got.Load(), total)
	}
}

// TestHostile2ConnCloseUnblocksReadAndWrite: Close while a Read waits for bytes and a
// Write waits for buffer space: both return net.ErrClosed (wrapped), and the Conn
// reports net.ErrClosed afterwards.
func TestHostile2ConnCloseUnblocksReadAndWrite(t *testing.T) {
	rt := newRuntime(t, 2)
	for range 5 {
		c, _ := tcpPair(t, rt)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 2 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := c.Read(make([]byte, 10))
				errs <- err
			}()
			go func() {
				defer wg.Done()
				big := make([]byte, 32<<20) // far more than the socket buffers
				_, err := c.Write(big)
				errs <- err
			}()
		}
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		within(t, "calls blocked at Close", wg.Wait)
		close(errs)
		for err := range errs {
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("blocked call after Close: %v, want net.ErrClosed", err)
			}
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read after Close: %v", err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Write after Close: %v", err)
		}
		if err := c.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("second Close: %v", err)
		}
	}
}

// TestHostile2ConnDeadlineMovedWhileBlocked: Go's net contract — a deadline set while a
// call is blocked applies to that call. A Read blocked with no deadline is ended by a
// deadline set later (future or past); a Read whose deadline is pushed back stays
// blocked and then gets the bytes; after a timeout the Conn still works and no byte is
// lost.
func TestHostile2ConnDeadlineMovedWhileBlocked(t *testing.T) {
	rt := newRuntime(t, 2)
	c, _ := tcpPair(t, rt)

	// no deadline -> deadline in the past, set while blocked
	res := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 4)); res <- err }()
	time.Sleep(5 * time.Millisecond)
	c.SetReadDeadline(time.Now().Add(-time.Second))
	within(t, "Read after a past deadline", func() {
		if err := <-res; !errors.Is(err, os.ErrDeadlineExceeded) || !isTimeout(err) {
			t.Errorf("Read = %v, want a timeout", err)
		}
	})

	// no deadline -> near deadline, set while blocked
	c.SetReadDeadline(time.Time{})
	go func() { _, err := c.Read(make([]byte, 4)); res <- err }()
	time.Sleep(5 * time.Millisecond)
	c.SetDeadline(time.Now().Add(10 * time.Millisecond))
	within(t, "Read after a near deadline", func() {
		if err := <-res; !isTimeout(err) {
			t.Errorf("Read = %v, want a timeout", err)
		}
	})

	// near deadline -> cleared while blocked: the Read waits for the bytes. A test
	// stalled past the 30 ms before its clear lets the deadline rightly fire: that try
	// is redone, on a fresh pair (its Read may still be pending, or have timed out).
	for try := 1; ; try++ {
		c, peer := tcpPair(t, rt)
		res := make(chan error, 1)
		dl := time.Now().Add(30 * time.Millisecond)
		c.SetReadDeadline(dl)
		got := make(chan string, 1)
		go func() {
			b := make([]byte, 4)
			n, err := c.Read(b)
			if err != nil {
				res <- err
				return
			}
			got <- string(b[:n])
		}()
		c.SetReadDeadline(time.Time{})
		late := !time.Now().Before(dl)
		time.Sleep(60 * time.Millisecond) // past the old deadline
		peer.Write([]byte("ping"))
		var failed error
		within(t, "Read with a cleared deadline", func() {
			select {
			case s := <-got:
				if s != "ping" {
					t.Errorf("Read = %q", s)
				}
			case failed = <-res:
			}
		})
		switch {
		case failed == nil:
			return
		case !late:
			t.Fatalf("Read whose deadline was cleared failed: %v", failed)
		case try == 100:
			t.Skipf("100 tries in a row stalled past the deadline before clearing it (last: %v)", failed)
		}
	}
}

// TestHostile2ConnDeadlineStorm: goroutines reading and writing with random deadlines
// while another keeps moving them; every Read/Write returns data, a timeout, or EOF, and
// the bytes read are exactly a prefix of the bytes sent (nothing lost or duplicated).
func TestHostile2ConnDeadlineStorm(t *testing.T) {
	rt := newRuntime(t, 2)
	c, peer := tcpPair(t, rt)
	const total = 64 << 10
	sent := make([]byte, total)
	for i := range sent {
		sent[i] = byte(i * 7)
	}
	stop := make(chan struct{})
	var mover sync.WaitGroup
	mover.Add(1)
	go func() {
		defer mover.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch rand.IntN(4) {
			case 0:
				c.SetReadDeadline(time.Now().Add(-time.Millisecond))
			case 1:
				c.SetReadDeadline(time.Now().Add(time.Duration(rand.IntN(500)) * time.Microsecond))
			case 2:
				c.SetReadDeadline(time.Time{})
			case 3:
				c.SetDeadline(time.Now().Add(time.Duration(rand.IntN(2000)) * time.Microsecond))
			}
			time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		}
	}()
	go func() {
		for off := 0; off < total; {
			n := min(total-off, 1+rand.IntN(3000))
			peer.Write(sent[off : off+n])
			off += n
			jitter()
		}
		peer.(*net.TCPConn).CloseWrite()
	}()
	var got []byte
	within(t, "reads under moving deadlines", func() {
		buf := make([]byte, 1000)
		for {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				return
			}
			if err != nil && !isTimeout(err) {
				t.Errorf("Read: %v", err)
				return
			}
			if err != nil && n != 0 {
				t.Errorf("timeout with %d bytes", n)
			}
		}
	})
	close(stop)
	mover.Wait()
	if !bytes.Equal(got, sent) {
		t.Fatalf("read %d bytes, want the %d sent, in order", len(got), len(sent))
	}
}

// TestHostile2ConnWriteDeadlineWhileBlocked: a Write blocked on a peer that does not
// read is ended by a deadline set later; it reports the bytes it did write, and they
// are exactly what the peer receives before the next Write's bytes.
func TestHostile2ConnWriteDeadlineWhileBlocked(t *testing.T) {
	rt := newRuntime(t, 2)
	c, peer := tcpPair(t, rt)
	big := make([]byte, 32<<20)
	for i := range big {
		big[i] = byte(i % 251)
	}
	type wr struct {
		n   int
		err error
	}
	res := make(chan wr, 1)
	go func() { n, err := c.Write(big); res <- wr{n, err} }()
	time.Sleep(20 * time.Millisecond)
	c.SetWriteDeadline(time.Now().Add(-time.Second))
	var r wr
	within(t, "blocked Write after a past deadline", func() { r = <-res })
	if !isTimeout(r.err) || r.n >= len(big) {
		t.Fatalf("Write = %d, %v; want a short count and a timeout", r.n, r.err)
	}
	// Zero-length Write with the deadline passed: Go's net reports the timeout too, but
	// zero bytes is all we insist on.
	if n, _ := c.Write(nil); n != 0 {
		t.Fatalf("Write(nil) = %d", n)
	}
	c.SetWriteDeadline(time.Time{})
	go func() { n, err := c.Write([]byte("TAIL")); res <- wr{n, err} }()
	want := append(bytes.Clone(big[:r.n]), "TAIL"...)
	var got []byte
	within(t, "reading what was written", func() {
		peer.SetReadDeadline(time.Now().Add(hostile2Watchdog))
		got = make([]byte, len(want))
		if _, err := io.ReadFull(peer, got); err != nil {
			t.Errorf("peer ReadFull: %v", err)
		}
		if r := <-res; r.err != nil || r.n != 4 {
			t.Errorf("second Write = %d, %v", r.n, r.err)
		}
	})
	if !bytes.Equal(got, want) {
		t.Fatalf("peer received bytes that differ from the %d reported written + TAIL", r.n)
	}
}

// TestHostile2ConnZeroLengthAndPastDeadline: zero-length Read/Write do not block, a call
// made with a past deadline times out at once without consuming anything.
func TestHostile2ConnZeroLengthAndPastDeadline(t *testing.T) {
	rt := newRuntime(t, 2)
	c, peer := tcpPair(t, rt)
	within(t, "zero-length calls", func() {
		if n, err := c.Read(nil); n != 0 || err != nil {
			t.Errorf("Read(nil) = %d, %v", n, err)
		}
		if n, err := c.Write(nil); n != 0 || err != nil {
			t.Errorf("Write(nil) = %d, %v", n, err)
		}
	})
	peer.Write([]byte("abc"))
	time.Sleep(5 * time.Millisecond)
	c.SetReadDeadline(time.Now().Add(-time.Hour))
	within(t, "Read with a past deadline", func() {
		if _, err := c.Read(make([]byte, 3)); !isTimeout(err) {
			t.Errorf("Read = %v, want a timeout", err)
		}
	})
	c.SetReadDeadline(time.Time{})
	within(t, "Read after clearing", func() {
		b := make([]byte, 3)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "abc" {
			t.Errorf("ReadFull = %q, %v", b, err)
		}
	})
}

// TestHostile2ListenerCloseUnblocksAccepts: several goroutines blocked in Accept are all
// released by Close with net.ErrClosed, and Accept after Close fails the same way.
func TestHostile2ListenerCloseUnblocksAccepts(t *testing.T) {
	rt := newRuntime(t, 2)
	ln := tcpListener(t, rt)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := ln.Accept()
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept after Close = %v, %v; want net.ErrClosed", c, err)
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	ln.Close()
	within(t, "Accepts blocked at Close", wg.Wait)
	within(t, "Accept after Close", func() {
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
	})
}

// TestHostile2ListenerConcurrentAccepts: 16 goroutines Accept while 64 clients connect;
// every client is accepted exactly once and can talk.
func TestHostile2ListenerConcurrentAccepts(t *testing.T) {
	rt := newRuntime(t, 2)
	ln := tcpListener(t, rt)
	const clients = 64
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				go func() {
					defer c.Close()
					b := make([]byte, 1)
					if _, err := io.ReadFull(c, b); err == nil {
						c.Write(b)
					}
				}()
			}
		}()
	}
	var cw sync.WaitGroup
	for i := range clients {
		cw.Add(1)
		go func() {
			defer cw.Done()
			jitter()
			p, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Close()
			p.SetDeadline(time.Now().Add(hostile2Watchdog))
			p.Write([]byte{byte(i)})
			b := make([]byte, 1)
			if _, err := io.ReadFull(p, b); err != nil || b[0] != byte(i) {
				t.Errorf("client %d: %v %v", i, b, err)
			}
		}()
	}
	within(t, "clients", cw.Wait)
	ln.Close()
	within(t, "acceptors", wg.Wait)
	if accepted.Load() != clients {
		t.Fatalf("accepted %d, want %d", accepted.Load(), clients)
	}
}

// TestHostile2ConnAfterRuntimeClose: a Read blocked on a Conn when its runtime closes
// returns (an error), and later calls fail instead of blocking forever; likewise Accept
// on a Listener whose runtime is closed.
func TestHostile2ConnAfterRuntimeClose(t *testing.T) {
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c, _ := tcpPair(t, rt)
	res := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 8)); res <- err }()
	time.Sleep(10 * time.Millisecond)
	ln := tcpListener(t, rt)
	acc := make(chan error, 1)
	go func() { _, err := ln.Accept(); acc <- err }()
	time.Sleep(10 * time.Millisecond)
	within(t, "rt.Close", func() { rt.Close() })
	within(t, "blocked Read after the runtime closed", func() {
		if err := <-res; err == nil {
			t.Error("Read returned nil error after the runtime closed")
		}
	})
	within(t, "blocked Accept after the runtime closed", func() {
		if err := <-acc; err == nil {
			t.Error("Accept returned no error after the runtime closed")
		}
	})
	within(t, "calls after the runtime closed", func() {
		if _, err := c.Read(make([]byte, 8)); err == nil {
			t.Error("Read after the runtime closed: nil error")
		}
		if _, err := c.Write([]byte("x")); err == nil {
			t.Error("Write after the runtime closed: nil error")
		}
		if _, err := ln.Accept(); err == nil {
			t.Error("Accept after the runtime closed: nil error")
		}
	})
}

// TestHostile2DuplexConnCloseAndHalfClose: a Conn over a Duplex: CloseWrite lets the
// peer read EOF while the Conn still reads; Close then unblocks a waiting Read.
func TestHostile2DuplexConnCloseAndHalfClose(t *testing.T) {
	rt := newRuntime(t, 1)
	c, peer := duplexConn(4)
	within(t, "half close", func() {
		go func() {
			c.Write([]byte("hello world"))
			c.CloseWrite()
		}()
		got, _ := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) []byte {
			var out []byte
			buf := make([]byte, 3)
			for {
				r := blitzio.Await(co, Read(peer, buf))
				if r.Err != nil {
					return out
				}
				out = append(out, buf[:r.Value]...)
			}
		}))
		if string(got) != "hello world" {
			t.Errorf("peer read %q", got)
		}
	})
	res := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); res <- err }()
	time.Sleep(5 * time.Millisecond)
	c.Close()
	within(t, "Read blocked at Close", func() {
		if err := <-res; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read = %v, want net.ErrClosed", err)
		}
	})
}

// TestHostile2ConnErrorNotDoubleWrapped: a socket error from a Conn is one *net.OpError
// around the cause, as Go's net.Conn gives it (net/http, crypto/tls and loggers print
// and inspect it), not an OpError around the stream's own OpError ("read tcp a->b: read
// tcp a->b: connection reset by peer").
func TestHostile2ConnErrorNotDoubleWrapped(t *testing.T) {
	rt := newRuntime(t, 2)
	c, peer := tcpPair(t, rt)
	peer.(*net.TCPConn).SetLinger(0)
	peer.Close() // RST
	var err error
	within(t, "Read after a reset", func() {
		buf := make([]byte, 8)
		for {
			if _, err = c.Read(buf); err != nil {
				return
			}
		}
	})
	if err == io.EOF {
		t.Skip("the kernel reported EOF, not a reset")
	}
	oe, ok := err.(*net.OpError)
	if !ok {
		t.Fatalf("Read error %T %v, want *net.OpError", err, err)
	}
	if inner, ok := oe.Err.(*net.OpError); ok {
		t.Fatalf("Read error is an OpError wrapping another OpError: %v (inner %v)", err, inner)
	}
}

// TestHostile2ListenerDoubleClose: like net.TCPListener (and like this package's Conn,
// whose second Close is documented to fail with net.ErrClosed), a second Close of the
// Listener reports the listener was already closed.
func TestHostile2ListenerDoubleClose(t *testing.T) {
	rt := newRuntime(t, 2)
	ln := tcpListener(t, rt)
	if err := ln.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := ln.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close = %v, want an error wrapping net.ErrClosed (as net.TCPListener and Conn.Close give)", err)
	}
}

// TestHostile2ConnChaos: on each of several Conns, 8 readers, 8 writers and 4 goroutines
// moving deadlines run at once, and the Conn is closed at a random moment. Every call
// returns, with data, a timeout, EOF or net.ErrClosed; after Close only net.ErrClosed.
func TestHostile2ConnChaos(t *testing.T) {
	rt := newRuntime(t, 2)
	for range 6 {
		c, peer := tcpPair(t, rt)
		go io.Copy(io.Discard, peer)
		go func() {
			b := make([]byte, 100)
			for {
				if _, err := peer.Write(b[:1+rand.IntN(100)]); err != nil {
					return
				}
				jitter()
			}
		}()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		ok := func(err error) bool {
			return err == nil || err == io.EOF || isTimeout(err) || errors.Is(err, net.ErrClosed)
		}
		for range 8 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				buf := make([]byte, 1+rand.IntN(200))
				for {
					_, err := c.Read(buf)
					if !ok(err) {
						t.Errorf("Read: %v", err)
					}
					if errors.Is(err, net.ErrClosed) {
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				buf := make([]byte, 1+rand.IntN(5000))
				for {
					_, err := c.Write(buf)
					if !ok(err) {
						t.Errorf("Write: %v", err)
					}
					if errors.Is(err, net.ErrClosed) {
						return
					}
				}
			}()
		}
		var movers sync.WaitGroup
		for range 4 {
			movers.Add(1)
			go func() {
				defer movers.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					d := time.Duration(rand.IntN(2000)-500) * time.Microsecond
					switch rand.IntN(4) {
					case 0:
						c.SetDeadline(time.Now().Add(d))
					case 1:
						c.SetReadDeadline(time.Now().Add(d))
					case 2:
						c.SetWriteDeadline(time.Now().Add(d))
					default:
						c.SetDeadline(time.Time{})
					}
					time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
				}
			}()
		}
		time.Sleep(time.Duration(5+rand.IntN(30)) * time.Millisecond)
		c.Close()
		within(t, "calls after Close", wg.Wait)
		close(stop)
		movers.Wait()
		peer.Close()
	}
}
