//go:build linux

package httpserve

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// The net.Conn adapter (stream.Conn over a blitzio TCP stream, driven from goroutines)
// around half-close: the peer's half-close, then a large Write; CloseWrite on a
// half-closed peer; CloseWrite while a Write of the adapter waits for room. (Here and
// not in package stream because these tests run per backend with the httpserve suite's
// helpers; package stream is what they test.)

// hostile15ConnPair returns a stream.Conn over a TCP connection accepted by blitzio on
// a runtime of backend b, and its peer, a package net connection with a small receive
// buffer (set before connecting).
func hostile15ConnPair(t *testing.T, b blitzio.Backend) (*stream.Conn, *net.TCPConn) {
	t.Helper()
	rt, err := blitzio.New(blitzio.Config{Workers: 2, Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	l, err := blitzio.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cli := hostile15Dial(t, l.Addr().String()).(*net.TCPConn)
	type res struct {
		a   blitzio.Result[blitzio.Accepted]
		err error
	}
	ch := make(chan res, 1)
	go func() {
		a, err := blitzio.BlockOn(rt, blitzio.Timeout(10*time.Second, l.Accept()))
		if err == nil && a.Err != nil {
			err = a.Err
		}
		ch <- res{a.Value, err}
	}()
	r := <-ch
	if r.err != nil || r.a.Err != nil {
		t.Fatalf("accept: %v %v", r.err, r.a.Err)
	}
	s := r.a.Value.Conn
	s.SetWriteBuffer(32 << 10)
	c := stream.NewConn(s)
	t.Cleanup(func() { c.Close() })
	return c, cli
}

// hostile15HalfClosedConnPair is hostile15ConnPair with the peer's writing side shut
// down and 30 s deadlines on both ends.
func hostile15HalfClosedConnPair(t *testing.T, b blitzio.Backend) (*stream.Conn, *net.TCPConn) {
	t.Helper()
	c, cli := hostile15ConnPair(t, b)
	if err := cli.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	cli.SetDeadline(time.Now().Add(30 * time.Second))
	return c, cli
}

// The peer half-closes; the adapter's Read gives io.EOF (again on a second Read), its
// Write of 8 MiB (waiting for room on the half-closed socket) completes while the peer
// reads slowly, and its CloseWrite then ends the peer's stream: a CloseWrite on a peer
// already half-closed is not an error. After Close, CloseWrite reports net.ErrClosed.
func TestHostile15StreamConnHalfClosedPeer(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	hostile15Backends(t, func(t *testing.T, b blitzio.Backend) {
		c, cli := hostile15HalfClosedConnPair(t, b)
		for i := range 2 {
			if n, err := c.Read(make([]byte, 16)); n != 0 || err != io.EOF {
				t.Fatalf("adapter Read %d after the peer's half-close: %d, %v; want 0, io.EOF", i, n, err)
			}
		}
		msg := hostile15Body(3, 8<<20)
		werr := make(chan error, 1)
		go func() {
			_, err := c.Write(msg)
			if err == nil {
				err = c.CloseWrite()
			}
			werr <- err
		}()
		time.Sleep(100 * time.Millisecond) // the Write waits for room meanwhile
		got, err := io.ReadAll(&hostile15SlowReader{r: cli})
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("peer read %d bytes of %d: %v", len(got), len(msg), err)
		}
		if err := <-werr; err != nil {
			t.Fatalf("adapter Write then CloseWrite: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := c.CloseWrite(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("CloseWrite after Close: %v, want net.ErrClosed", err)
		}
	})
}

// CloseWrite of the adapter while its Write waits for room (the peer, half-closed,
// reads nothing): the Write returns with EPIPE and the count handed to the kernel, and
// the peer reads exactly that many bytes, then the end of stream.
func TestHostile15StreamConnCloseWriteWhileWriteWaits(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	hostile15Backends(t, func(t *testing.T, b blitzio.Backend) {
		c, cli := hostile15HalfClosedConnPair(t, b)
		if n, err := c.Read(make([]byte, 16)); n != 0 || err != io.EOF {
			t.Fatalf("adapter Read after the peer's half-close: %d, %v", n, err)
		}
		msg := hostile15Body(4, 32<<20)
		type res struct {
			n   int
			err error
		}
		wr := make(chan res, 1)
		go func() {
			n, err := c.Write(msg)
			wr <- res{n, err}
		}()
		time.Sleep(100 * time.Millisecond)
		select {
		case r := <-wr:
			t.Fatalf("the Write of 32 MiB ended with the peer reading nothing: %d, %v", r.n, r.err)
		default:
		}
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		var r res
		select {
		case r = <-wr:
		case <-time.After(10 * time.Second):
			t.Fatal("the adapter's Write still waits 10s after its CloseWrite")
		}
		if !errors.Is(r.err, syscall.EPIPE) || r.n >= len(msg) {
			t.Fatalf("Write after CloseWrite: %d, %v; want part of the bytes and EPIPE", r.n, r.err)
		}
		got, err := io.ReadAll(cli)
		if err != nil || !bytes.Equal(got, msg[:r.n]) {
			t.Fatalf("peer read %d bytes (%v), want the %d the Write reported", len(got), err, r.n)
		}
	})
}
