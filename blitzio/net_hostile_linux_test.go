//go:build linux

package blitzio

import (
	"errors"
	"math/rand/v2"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestTCPSocketFromTwoRuntimes(t *testing.T) {
	netWatchdog(t, 30*time.Second)
	rt1 := newRT(t, Config{Workers: 1, Backend: BackendEpoll})
	rt2 := newRT(t, Config{Workers: 1, Backend: BackendEpoll})
	l := listenLoopback(t, "tcp4")
	pollOnceThenDrop(t, rt1, l.Accept()) // binds l to rt1
	r := blockOn(t, rt2, l.Accept())
	if !errors.Is(r.Err, ErrOtherRuntime) {
		t.Fatalf("accept from another runtime = %v, want ErrOtherRuntime", r.Err)
	}
	// A hand-made Context without a runtime cannot register a socket.
	l2 := listenLoopback(t, "tcp4")
	cx := NewContext(nil, Waker{})
	res, ok := l2.Accept().Poll(cx)
	if !ok || res.Err == nil || !errors.Is(res.Err, errNoRuntime) {
		t.Fatalf("accept polled without a runtime = %v, %v", res.Err, ok)
	}
}

func TestTCPBadArguments(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	if _, err := ListenTCP("udp", nil); err == nil {
		t.Fatal("ListenTCP(udp) succeeded")
	}
	if r := blockOn(t, rt, DialTCP("udp4", nil, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})); r.Err == nil {
		t.Fatal("DialTCP(udp4) succeeded")
	}
	if _, err := ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv6loopback}); err == nil {
		t.Fatal("ListenTCP(tcp4, ::1) succeeded")
	}
	if _, err := (ListenConfig{Backlog: -1}).ListenTCP("tcp4", nil); err == nil {
		t.Fatal("negative backlog accepted")
	}
	if r := blockOn(t, rt, DialTCP("tcp4", nil, nil)); r.Err == nil {
		t.Fatal("DialTCP(nil) succeeded")
	}
	if r := blockOn(t, rt, Dial("tcp", "no-port")); r.Err == nil {
		t.Fatal("Dial without a port succeeded")
	}
	// Nothing listens on this port (a listener opened and closed): connection refused.
	l := listenLoopback(t, "tcp4")
	addr := l.TCPAddr()
	l.Close()
	r := blockOn(t, rt, DialTCP("tcp4", nil, addr))
	var oe *net.OpError
	if !errors.Is(r.Err, unix.ECONNREFUSED) || !errors.As(r.Err, &oe) || oe.Op != "dial" {
		t.Fatalf("dial to a closed port = %v; want a dial *net.OpError wrapping ECONNREFUSED", r.Err)
	}
	// Zero-length reads and writes complete at once.
	c, _ := connPair(t, rt)
	if r := blockOn(t, rt, c.Read(nil)); r.Value != 0 || r.Err != nil {
		t.Fatalf("Read(nil) = %+v", r)
	}
	if r := blockOn(t, rt, c.Write(nil)); r.Value != 0 || r.Err != nil {
		t.Fatalf("Write(nil) = %+v", r)
	}
	if r := blockOn(t, rt, c.WriteVectored(nil, []byte{}, nil)); r.Value != 0 || r.Err != nil {
		t.Fatalf("WriteVectored of empty buffers = %+v", r)
	}
}

func TestTCPDialTimeoutIsNetError(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	// A dial that never completes: a context that is already past its deadline.
	ctx, cancel := contextWithDeadlinePassed()
	defer cancel()
	r := blockOn(t, rt, DialContext(ctx, "tcp4", "127.0.0.1:1"))
	var ne net.Error
	if !errors.As(r.Err, &ne) || !ne.Timeout() {
		t.Fatalf("dial with an expired context = %v; want a net.Error timeout", r.Err)
	}
	// Timeout around any operation: a read that never gets data.
	c, _ := connPair(t, rt)
	tr := blockOn(t, rt, Timeout(time.Millisecond, c.Read(make([]byte, 1))))
	if !errors.As(tr.Err, &ne) || !ne.Timeout() {
		t.Fatalf("Timeout(read) = %v; want a net.Error timeout", tr.Err)
	}
	if rd, _ := readersOf(c); rd != 0 {
		t.Fatalf("the timed-out read left %d waiters", rd)
	}
}

// Clients abort at random points of connect, write and read; the server keeps serving
// and every socket state stays clean (no waiter left behind by a dropped operation).
func TestTCPDropAtEveryAwaitPoint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		l := listenLoopback(t, "tcp4")
		Spawn(rt, echoServer(l))
		var completed atomic.Int64
		for i := range 200 {
			h := Spawn(rt, Async(func(co *Co) struct{} {
				c, err := Await(co, DialTCP("tcp4", nil, l.TCPAddr())).Get()
				if err != nil {
					return struct{}{}
				}
				defer c.Close()
				buf := make([]byte, 64)
				for range 20 {
					Await(co, c.WriteAll(buf))
					Await(co, c.ReadFull(buf))
				}
				completed.Add(1)
				return struct{}{}
			}))
			for range rand.IntN(8) {
				time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
			}
			if i%2 == 0 {
				h.Abort()
			}
			waitHandle(t, h)
		}
		// The server still serves.
		got := blockOn(t, rt, Async(func(co *Co) string {
			c, err := Await(co, DialTCP("tcp4", nil, l.TCPAddr())).Get()
			if err != nil {
				return err.Error()
			}
			defer c.Close()
			Await(co, c.WriteAll([]byte("alive")))
			b := make([]byte, 5)
			Await(co, c.ReadFull(b))
			return string(b)
		}))
		if got != "alive" {
			t.Fatalf("after the aborts the echo says %q", got)
		}
		t.Logf("%d of 200 clients completed before their abort", completed.Load())
	})
}

// An idle runtime with idle connections does not wake up: its parked poller blocks in
// the kernel until something happens.
func TestTCPIdleRuntimeStaysAsleep(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		l := listenLoopback(t, "tcp4")
		Spawn(rt, Async(func(co *Co) struct{} {
			for {
				a := Await(co, l.Accept())
				if a.Err != nil {
					return struct{}{}
				}
				Spawn(co, a.Value.Conn.Read(make([]byte, 1)))
			}
		}))
		const conns = 500
		blockOn(t, rt, Async(func(co *Co) int {
			for range conns {
				c, err := Await(co, DialTCP("tcp4", nil, l.TCPAddr())).Get()
				if err != nil {
					t.Error(err)
					return 0
				}
				Spawn(co, c.Read(make([]byte, 1)))
			}
			return 0
		}))
		waitFor(t, "every connection accepted", func() bool { return rt.io.live.Load() >= 2*conns+1 })
		// Let the runtime settle, then watch it for a while: no wake-ups at all.
		var ru0, ru1 unix.Rusage
		settle := rt.io.parkedTurns.Load()
		for {
			time.Sleep(50 * time.Millisecond)
			now := rt.io.parkedTurns.Load()
			if now == settle {
				break
			}
			settle = now
		}
		unix.Getrusage(unix.RUSAGE_SELF, &ru0)
		time.Sleep(300 * time.Millisecond)
		unix.Getrusage(unix.RUSAGE_SELF, &ru1)
		if d := rt.io.parkedTurns.Load() - settle; d > 1 {
			t.Fatalf("idle runtime woke its poller %d times", d)
		}
		cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
		t.Logf("process CPU over 300ms idle with %d connections: %v", 2*conns, cpu)
	})
}

// A waker that panics or calls runtime.Goexit when the driver wakes it (user code in a
// WakerFunc) must not leave the driver locked: the runtime keeps serving sockets.
func TestTCPDriverSurvivesHostileWakers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for _, hostile := range []func(){
			func() { panic("waker panics") },
			runtime.Goexit,
		} {
			c, s := connPair(t, rt)
			var called atomic.Int32
			cx := NewContext(rt, WakerFunc(func() { called.Add(1); hostile() }))
			if _, ok := c.Read(make([]byte, 4)).Poll(cx); ok {
				t.Fatal("read ready without data")
			}
			blockOn(t, rt, s.WriteAll([]byte("data")))
			waitFor(t, "the hostile waker to be called", func() bool { return called.Load() > 0 })
			// The driver still works: a round trip on a fresh pair.
			c2, s2 := connPair(t, rt)
			blockOn(t, rt, s2.WriteAll([]byte("ok")))
			b := make([]byte, 2)
			if _, err := blockOn(t, rt, c2.ReadFull(b)).Get(); err != nil || string(b) != "ok" {
				t.Fatalf("after a hostile waker: %q, %v", b, err)
			}
		}
	})
}

// Runtime Close with a socket whose waiting operation has a panicking waker still
// closes every socket.
func TestTCPRuntimeCloseWithHostileWaker(t *testing.T) {
	netWatchdog(t, 30*time.Second)
	base := openFDs(t)
	rt, err := New(Config{Workers: 1, Backend: BackendEpoll})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, hostile := range []func(){func() { panic("waker panics at close") }, runtime.Goexit} {
		cx := NewContext(rt, WakerFunc(hostile))
		if _, ok := l.Accept().Poll(cx); ok {
			t.Fatal("accept ready without a connection")
		}
		l2, err := ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := l2.Accept().Poll(NewContext(rt, WakerFunc(hostile))); ok {
			t.Fatal("accept ready without a connection")
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n > base {
		t.Fatalf("%d descriptors open after Close, %d before", n, base)
	}
}
