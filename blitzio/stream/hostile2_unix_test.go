//go:build linux || darwin || freebsd

package stream

import (
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func unixListener(t *testing.T, rt *blitzio.Runtime) (*Listener, *net.UnixAddr) {
	t.Helper()
	addr := &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"}
	l, err := blitzio.ListenUnix("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	ln := NewUnixListener(rt, l)
	t.Cleanup(func() { ln.Close() })
	return ln, addr
}

// TestHostile2ConnOverDialedUnixStream: ConnStream is documented as "such as a blitzio
// TCP or Unix stream", and blitzio.DialUnix returns a connected *UnixStream directly (no
// future to run), not yet registered with a runtime. Wrapped with NewConnOn and used
// from plain goroutines — the Conn's whole purpose — it must carry bytes; wrapped with
// NewConn (no runtime to join) it fails with an error instead of hanging.
func TestHostile2ConnOverDialedUnixStream(t *testing.T) {
	rt := newRuntime(t, 2)
	ln, addr := unixListener(t, rt)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
			close(accepted)
			return
		}
		accepted <- c
	}()
	lone, err := blitzio.DialUnix("unix", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "Write on NewConn of a stream with no runtime", func() {
		c := NewConn(lone)
		defer c.Close()
		if _, err := c.Write([]byte("x")); err == nil {
			t.Error("Write on NewConn(DialUnix(...)) succeeded with no runtime to serve it")
		}
	})
	if c, ok := <-accepted; ok {
		c.Close()
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
			close(accepted)
			return
		}
		accepted <- c
	}()
	s, err := blitzio.DialUnix("unix", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	c := NewConnOn(rt, s)
	defer c.Close()
	within(t, "Write and Read over a dialed Unix stream", func() {
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Errorf("Write on NewConnOn(rt, DialUnix(...)) = %v", err)
			return
		}
		srv, ok := <-accepted
		if !ok {
			return
		}
		defer srv.Close()
		b := make([]byte, 4)
		if _, err := io.ReadFull(srv, b); err != nil || string(b) != "ping" {
			t.Errorf("server read %q, %v", b, err)
		}
	})
}

// TestHostile2UnixListenerCloseDuringAccept: Close releases blocked Accepts with
// net.ErrClosed; later Accepts fail the same way; the adapter still served the
// connections made before.
func TestHostile2UnixListenerCloseDuringAccept(t *testing.T) {
	rt := newRuntime(t, 2)
	ln, addr := unixListener(t, rt)
	// one connection served normally
	go func() {
		c, err := net.DialUnix("unix", nil, addr)
		if err == nil {
			c.Write([]byte("x"))
			c.Close()
		}
	}()
	within(t, "first Accept", func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
			return
		}
		b, err := io.ReadAll(c)
		if err != nil || string(b) != "x" {
			t.Errorf("read %q, %v", b, err)
		}
		c.Close()
	})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept blocked at Close = %v", err)
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	ln.Close()
	within(t, "Accepts after Close", wg.Wait)
}
