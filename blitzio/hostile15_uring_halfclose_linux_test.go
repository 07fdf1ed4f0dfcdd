package blitzio

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// An echo server (read, then write what was read, one task per connection) under
// clients that each send 4 MiB while reading the echo and then half-close: every byte
// comes back on every backend. On io_uring's one-shot readiness this stalled within a
// few hundred connections, with the server's receive queue full and no poll armed.
func TestHostile15EchoHalfCloseBulk(t *testing.T) {
	size, rounds := 4<<20, 25
	if testing.Short() {
		size, rounds = 1<<20, 10
	}
	msg := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	forEachBackend(t, func(t *testing.T, cfg Config) {
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		l, err := ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var mu sync.Mutex
		var served []*TCPStream
		Spawn(rt, Async(func(co *Co) struct{} {
			for {
				a := Await(co, l.Accept())
				if a.Err != nil {
					return struct{}{}
				}
				mu.Lock()
				served = append(served, a.Value.Conn)
				mu.Unlock()
				Spawn(co, &echoTask{c: a.Value.Conn, buf: make([]byte, 32<<10)})
			}
		}))
		addr := l.Addr().String()
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					if err := halfCloseEcho(addr, msg); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			mu.Lock()
			for _, c := range served {
				if s := c.fd.sio.Load(); s != nil && !c.fd.closed.Load() {
					s.mu.Lock()
					t.Logf("server conn fd %d: readiness %#x reader waiting %v writer waiting %v",
						s.fd, s.readiness.Load(), !s.reader.IsZero(), !s.writer.IsZero())
					s.mu.Unlock()
				}
			}
			mu.Unlock()
			t.Fatal(err)
		}
	})
}

func halfCloseEcho(addr string, msg []byte) error {
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		return fmt.Errorf("reading the echo: %w after %d of %d bytes", err, len(got), len(msg))
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("echoed %d bytes, want the %d sent", len(got), len(msg))
	}
	return nil
}
