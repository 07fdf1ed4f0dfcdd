//go:build linux

package blitzio

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// The per-connection structures stay in their size classes: they are what an idle
// connection costs (the budget is 512 bytes per idle connection in all).
func TestPerConnectionStructSizes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are budgeted for 64-bit platforms")
	}
	if n := unsafe.Sizeof(scheduledIO{}); n > 96 {
		t.Errorf("scheduledIO is %d bytes, want at most 96", n)
	}
	if n := unsafe.Sizeof(netFD{}); n > 80 {
		t.Errorf("netFD is %d bytes, want at most 80", n)
	}
}

// countWaker is a waker that counts its wake-ups.
func countWaker() (Waker, *atomic.Int32) {
	var n atomic.Int32
	return WakerFunc(func() { n.Add(1) }), &n
}

// The first waiter of a direction is kept inline and the others in the overflow list;
// every operation (add, duplicate add, remove of the first or of an overflow one, take)
// keeps each waiter exactly once, whichever slot it is in.
func TestScheduledIOWaiterSlots(t *testing.T) {
	s := &scheduledIO{}
	w1, n1 := countWaker()
	w2, n2 := countWaker()
	w3, n3 := countWaker()
	wr, nr := countWaker()

	s.addWaiter(dirRead, w1)
	s.addWaiter(dirRead, w1) // the same task waiting again: kept once
	if s.more != nil || s.waiters(dirRead) != 1 {
		t.Fatalf("one reader: more %v, %d waiters", s.more, s.waiters(dirRead))
	}
	s.addWaiter(dirRead, w2)
	s.addWaiter(dirRead, w3)
	s.addWaiter(dirRead, w3)
	s.addWaiter(dirWrite, wr)
	if r, w := s.waiters(dirRead), s.waiters(dirWrite); r != 3 || w != 1 {
		t.Fatalf("waiters = %d readers, %d writers; want 3, 1", r, w)
	}
	// Removing the inline one moves an overflow one up.
	s.removeWaiter(dirRead, w1)
	if s.reader.IsZero() || s.waiters(dirRead) != 2 {
		t.Fatalf("after removing the first reader: inline empty %v, %d waiters", s.reader.IsZero(), s.waiters(dirRead))
	}
	s.removeWaiter(dirRead, w1) // gone already: nothing happens
	s.removeWaiter(dirRead, Waker{})
	// A readable event takes the readers only.
	buf := s.takeWaiters(poller.Readable, nil)
	if len(buf) != 2 || s.waiters(dirRead) != 0 || s.waiters(dirWrite) != 1 {
		t.Fatalf("take readers: got %d, left %d readers %d writers", len(buf), s.waiters(dirRead), s.waiters(dirWrite))
	}
	wakeAll(buf)
	if n1.Load() != 0 || n2.Load() != 1 || n3.Load() != 1 || nr.Load() != 0 {
		t.Fatalf("wakes: w1 %d, w2 %d, w3 %d, writer %d; want 0 1 1 0", n1.Load(), n2.Load(), n3.Load(), nr.Load())
	}
	// Removing an overflow waiter leaves the inline one.
	s.addWaiter(dirWrite, w1)
	s.addWaiter(dirWrite, w2)
	s.removeWaiter(dirWrite, w1)
	buf = s.takeWaiters(poller.Writable, buf[:0])
	if len(buf) != 2 || !(buf[0].WillWake(wr) && buf[1].WillWake(w2)) {
		t.Fatalf("writers taken = %d, want the first writer then w2", len(buf))
	}
	if s.waiters(dirRead)+s.waiters(dirWrite) != 0 {
		t.Fatal("waiters left after taking both directions")
	}
}

// A single waiter per direction allocates nothing beyond the socket's own state.
func TestScheduledIOOneWaiterAllocs(t *testing.T) {
	s := &scheduledIO{}
	w, _ := countWaker()
	buf := make([]Waker, 0, 4)
	allocs := testing.AllocsPerRun(100, func() {
		s.addWaiter(dirRead, w)
		s.addWaiter(dirWrite, w)
		s.removeWaiter(dirRead, w)
		buf = s.takeWaiters(poller.Writable, buf[:0])
	})
	if allocs != 0 || s.more != nil {
		t.Fatalf("one waiter per direction: %v allocations, overflow list %v", allocs, s.more)
	}
}

// An accepted connection looks its local address up when first asked: it is the
// address the client connected to, the same value for every caller (several at once),
// and is still known after Close once it has been asked for. One never asked for is
// unknown (nil) after Close, and errors then name no local address.
func TestTCPAcceptedLocalAddrLazy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		l := listenLoopback(t, "tcp4")
		accept := func() (*TCPStream, net.Conn) {
			c, err := net.Dial("tcp4", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			a := blockOn(t, rt, l.Accept())
			if a.Err != nil {
				t.Fatal(a.Err)
			}
			return a.Value.Conn, c
		}
		s, c := accept()
		if !s.fd.lazyLocal || s.fd.laddr != nil {
			t.Fatalf("accepted stream: lazyLocal %v, laddr %v before anyone asked", s.fd.lazyLocal, s.fd.laddr)
		}
		var wg sync.WaitGroup
		got := make([]net.Addr, 8)
		for i := range got {
			wg.Go(func() { got[i] = s.LocalAddr() })
		}
		wg.Wait()
		want := c.RemoteAddr().String()
		for i, a := range got {
			if a == nil || a.String() != want || a != got[0] {
				t.Fatalf("LocalAddr #%d = %v (%p), want %s, the same value as #0 (%p)", i, a, a, want, got[0])
			}
		}
		s.Close()
		if a := s.LocalAddr(); a != got[0] {
			t.Fatalf("LocalAddr after Close = %v, want %v", a, got[0])
		}

		s2, _ := accept()
		s2.Close()
		if a := s2.LocalAddr(); a != nil {
			t.Fatalf("LocalAddr never asked before Close = %v, want nil", a)
		}
		var oe *net.OpError
		if err := s2.Close(); !errors.As(err, &oe) || !errors.Is(err, net.ErrClosed) || oe.Source != nil {
			t.Fatalf("second Close = %v, want a *net.OpError wrapping net.ErrClosed without a local address", err)
		}
	})
}

// The driver's wakes made on a worker put that runtime's tasks in the worker's own
// queue (they run there next, without the injection queue), wake anything else as
// usual: a WakerFunc is called, and a task of another runtime runs on its runtime.
func TestIOWakesQueueLocally(t *testing.T) {
	netWatchdog(t, 30*time.Second)
	rt := newRT(t, Config{Workers: 1})
	other := newRT(t, Config{Workers: 1})

	// parked returns a task that waits until woken once, its waker, and a channel closed
	// when it has run after the wake.
	parked := func(on *Runtime) (Waker, chan struct{}) {
		wch := make(chan Waker, 1)
		ran := make(chan struct{})
		polls := 0
		Spawn(on, PollFn(func(cx *Context) (struct{}, bool) {
			polls++
			if polls == 1 {
				wch <- cx.Waker()
				return struct{}{}, false
			}
			close(ran)
			return struct{}{}, true
		}))
		select {
		case w := <-wch:
			return w, ran
		case <-time.After(10 * time.Second):
			t.Fatal("task not polled")
		}
		return Waker{}, nil
	}
	mine, mineRan := parked(rt)
	theirs, theirsRan := parked(other)
	fn, fnCount := countWaker()

	type result struct{ before, after, inject int }
	res := make(chan result, 1)
	Spawn(rt, PollFn(func(cx *Context) (struct{}, bool) {
		w := cx.w
		before := w.q.len()
		buf := wakeIO(w, []Waker{mine, fn, theirs})
		if len(buf) != 0 {
			t.Errorf("wakeIO left %d wakers in its buffer", len(buf))
		}
		res <- result{before, w.q.len(), int(rt.inject.n.Load())}
		return struct{}{}, true
	}))
	var r result
	select {
	case r = <-res:
	case <-time.After(10 * time.Second):
		t.Fatal("waking task did not run")
	}
	if r.after != r.before+1 || r.inject != 0 {
		t.Fatalf("local queue %d -> %d, injection queue %d: want our task in the local queue", r.before, r.after, r.inject)
	}
	if fnCount.Load() != 1 {
		t.Fatalf("WakerFunc called %d times, want 1", fnCount.Load())
	}
	for name, ch := range map[string]chan struct{}{"ours": mineRan, "the other runtime's": theirsRan} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s task did not run after its wake", name)
		}
	}
}
