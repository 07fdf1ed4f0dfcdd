//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestHostile4ManyConnsRandomTimeoutsThenRuntimeClose: hundreds of connections opened
// and closed by tasks with a Timeout (random, often tiny) at every await point, echoed
// by a server task per connection; then the runtime is closed with the listener, some
// connections and pending operations still open. Every echo that completes must be
// exact; afterwards no descriptor and no worker goroutine may be left.
func TestHostile4ManyConnsRandomTimeoutsThenRuntimeClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		fds0, g0 := openFDs(t), runtime.NumGoroutine()
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		addr := l.TCPAddr()
		rnd := func() time.Duration { return time.Duration(rand.IntN(3000)) * time.Microsecond }
		Spawn(rt, Async(func(co *Co) struct{} {
			for {
				r := Await(co, Timeout(rnd(), l.Accept())) // dropped accepts lose nothing
				if r.Err != nil {
					continue
				}
				if r.Value.Err != nil {
					return struct{}{}
				}
				c := r.Value.Value.Conn
				Spawn(co, Async(func(co *Co) struct{} {
					defer c.Close()
					buf := make([]byte, 512)
					for {
						rr := Await(co, Timeout(50*time.Millisecond, c.Read(buf)))
						if rr.Err != nil || rr.Value.Err != nil {
							return struct{}{}
						}
						wr := Await(co, Timeout(50*time.Millisecond, c.WriteAll(buf[:rr.Value.Value])))
						if wr.Err != nil || wr.Value.Err != nil {
							return struct{}{}
						}
					}
				}))
			}
		}))
		const clients = 300
		hs := make([]JoinHandle[error], clients)
		var kept []*TCPStream
		keptCh := make(chan *TCPStream, clients)
		for i := range clients {
			hs[i] = Spawn(rt, Async(func(co *Co) error {
				d := Await(co, Timeout(rnd()+time.Millisecond, DialTCP("tcp4", nil, addr)))
				if d.Err != nil || d.Value.Err != nil {
					return nil // timed out (the dial future closed its socket) or refused
				}
				c := d.Value.Value
				if rand.IntN(8) == 0 {
					keptCh <- c // left open for the runtime's Close
					Spawn(co, c.Read(make([]byte, 8)))
					return nil
				}
				defer c.Close()
				msg := bytes.Repeat([]byte{byte(i)}, 1+rand.IntN(400))
				w := Await(co, Timeout(rnd(), c.WriteAll(msg)))
				if w.Err != nil || w.Value.Err != nil {
					return nil
				}
				got := make([]byte, len(msg))
				r := Await(co, Timeout(rnd()+20*time.Millisecond, c.ReadFull(got)))
				if r.Err != nil || r.Value.Err != nil {
					return nil
				}
				if !bytes.Equal(got, msg) {
					return errors.New("echo mismatch")
				}
				return nil
			}))
		}
		for i, h := range hs {
			v, err := h.Wait()
			if err != nil || v != nil {
				t.Fatalf("client %d: %v %v", i, v, err)
			}
		}
		close(keptCh)
		for c := range keptCh {
			kept = append(kept, c)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		for _, c := range kept {
			c.Close()
		}
		l.Close()
		deadline := time.Now().Add(5 * time.Second)
		for openFDs(t) > fds0 || runtime.NumGoroutine() > g0 {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Fatalf("after Close: %d fds (was %d), %d goroutines (was %d)\n%s",
					openFDs(t), fds0, runtime.NumGoroutine(), g0, buf[:n])
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
