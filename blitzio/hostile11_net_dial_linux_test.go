//go:build linux

package blitzio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// h11SaturatedListener returns the address of a loopback listener whose accept queue is
// full: listen(2) with a backlog of 0 and one connection queued that nobody accepts.
// Linux then drops every further SYN, so a connect to it stays in SYN_SENT (for about
// two minutes of retransmissions): a dial that is really in flight.
func h11SaturatedListener(t *testing.T) *net.TCPAddr {
	t.Helper()
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(s) })
	if err := unix.Bind(s, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(s, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(s)
	if err != nil {
		t.Fatal(err)
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*unix.SockaddrInet4).Port}
	fill, err := net.DialTimeout("tcp4", addr.String(), 10*time.Second)
	if err != nil {
		t.Fatalf("filling the accept queue: %v", err)
	}
	t.Cleanup(func() { fill.Close() })
	return addr
}

// h11Probe forwards Poll and Drop to f and records that f has returned pending.
type h11Probe[T any] struct {
	f       Future[T]
	pending atomic.Bool
	polls   atomic.Int64
}

func (p *h11Probe[T]) Poll(cx *Context) (T, bool) {
	p.polls.Add(1)
	v, ok := p.f.Poll(cx)
	if !ok {
		p.pending.Store(true)
	}
	return v, ok
}

func (p *h11Probe[T]) Drop() { Drop(p.f) }

// h11SpawnPending spawns f behind a probe and waits until it has returned pending (the
// dial is in flight). It skips the test when f finished at once: this environment then
// answers connects to a full backlog, and there is nothing in flight to cancel.
func h11SpawnPending(t *testing.T, rt *Runtime, f Future[Result[*TCPStream]]) (JoinHandle[Result[*TCPStream]], *h11Probe[Result[*TCPStream]]) {
	t.Helper()
	p := &h11Probe[Result[*TCPStream]]{f: f}
	h := Spawn[Future[Result[*TCPStream]]](rt, p)
	waitFor(t, "the dial to be pending", func() bool { return p.pending.Load() || h.IsFinished() })
	if !p.pending.Load() {
		r, _ := waitHandle(t, h)
		if r.Value != nil {
			r.Value.Close()
		}
		t.Skipf("the dial finished at once (%v): no connect stays in flight here", r.Err)
	}
	return h, p
}

// h11WaitClean waits until the descriptors and the driver registrations are back to
// what they were: a failed or dropped dial closes its socket (on io_uring the close
// happens when the cancelled poll's completion arrives, hence the wait).
func h11WaitClean(t *testing.T, rt *Runtime, fds int, live int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("descriptors back to %d and driver registrations back to %d", fds, live), func() bool {
		return openFDs(t) <= fds && rt.io.live.Load() <= live
	})
}

func h11CheckDialErr(t *testing.T, err error, want error, timeout bool, raddr net.Addr) {
	t.Helper()
	if err == nil {
		t.Fatal("the dial succeeded")
	}
	if !errors.Is(err, want) {
		t.Fatalf("dial error %v (%T) does not wrap %v", err, err, want)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "dial" || oe.Net != "tcp4" {
		t.Fatalf("dial error %#v is not a dial *net.OpError on tcp4", err)
	}
	if raddr != nil && (oe.Addr == nil || oe.Addr.String() != raddr.String()) {
		t.Fatalf("OpError.Addr = %v, want %v", oe.Addr, raddr)
	}
	var ne net.Error
	if !errors.As(err, &ne) {
		t.Fatalf("dial error %v is not a net.Error", err)
	}
	if ne.Timeout() != timeout {
		t.Fatalf("dial error %v: Timeout() = %v, want %v", err, ne.Timeout(), timeout)
	}
	// net's dial timeout is also Temporary (a deprecated method code still calls).
	if tmp, ok := ne.(interface{ Temporary() bool }); timeout && (!ok || !tmp.Temporary()) {
		t.Fatalf("dial timeout %v is not Temporary, as net's is", err)
	}
}

// TestHostile11NetDialCancelledMidConnect: the context is cancelled while the connect
// is in SYN_SENT. The dial must be woken by the cancellation alone (no socket event comes),
// fail with a dial *net.OpError wrapping context.Canceled (not a timeout), and close its
// socket. As net.Dialer.DialContext.
func TestHostile11NetDialCancelledMidConnect(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		addr := h11SaturatedListener(t)
		fds, live := openFDs(t), rt.io.live.Load()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h, _ := h11SpawnPending(t, rt, DialContext(ctx, "tcp4", addr.String()))
		cancel()
		r, err := waitHandleFor(t, h, "the dial after its context was cancelled")
		if err != nil {
			t.Fatal(err)
		}
		h11CheckDialErr(t, r.Err, context.Canceled, false, addr)
		h11WaitClean(t, rt, fds, live)
	})
}

// TestHostile11NetDialDeadlineMidConnect: the context's deadline passes while the
// connect is in flight: a net.Error whose Timeout() is true, wrapping
// context.DeadlineExceeded (as Go's net reports it), socket closed.
func TestHostile11NetDialDeadlineMidConnect(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		addr := h11SaturatedListener(t)
		fds, live := openFDs(t), rt.io.live.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		p := &h11Probe[Result[*TCPStream]]{f: DialContext(ctx, "tcp4", addr.String())}
		r := blockOn(t, rt, Future[Result[*TCPStream]](p))
		if !p.pending.Load() {
			t.Skipf("the dial finished at its first poll (%v): nothing in flight", r.Err)
		}
		h11CheckDialErr(t, r.Err, context.DeadlineExceeded, true, addr)
		h11WaitClean(t, rt, fds, live)
	})
}

// TestHostile11NetDialDroppedMidConnect: the task awaiting a dial in flight is aborted:
// the socket is closed, its registration removed, the context's AfterFunc stopped (a
// cancel afterwards wakes nothing and panics nothing), and no goroutine is left.
func TestHostile11NetDialDroppedMidConnect(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		addr := h11SaturatedListener(t)
		base := runtime.NumGoroutine()
		fds, live := openFDs(t), rt.io.live.Load()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h, p := h11SpawnPending(t, rt, DialContext(ctx, "tcp4", addr.String()))
		h.Abort()
		if _, err := waitHandleFor(t, h, "the aborted dial"); !errors.Is(err, ErrCancelled) {
			t.Fatalf("aborted dial task: %v, want ErrCancelled", err)
		}
		h11WaitClean(t, rt, fds, live)
		polls := p.polls.Load()
		cancel() // the AfterFunc was stopped by the drop: this must not poll anything
		checkNoLeak(t, base)
		if p.polls.Load() != polls {
			t.Fatalf("the dropped dial was polled after its drop")
		}
		// Polling the dropped future again reports it finished, with a net.ErrClosed.
		r, _ := p.f.Poll(NewContext(rt, Waker{}))
		if !errors.Is(r.Err, net.ErrClosed) {
			t.Fatalf("poll after drop = %v, want net.ErrClosed", r.Err)
		}
	})
}

// TestHostile11NetDialManyOnOneContext: several dials share one context; one cancel
// fails every one of them, and every socket is closed.
func TestHostile11NetDialManyOnOneContext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		addr := h11SaturatedListener(t)
		fds, live := openFDs(t), rt.io.live.Load()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var hs []JoinHandle[Result[*TCPStream]]
		for range 6 {
			h, _ := h11SpawnPending(t, rt, DialContext(ctx, "tcp4", addr.String()))
			hs = append(hs, h)
		}
		cancel()
		for i, h := range hs {
			r, err := waitHandleFor(t, h, fmt.Sprintf("dial %d", i))
			if err != nil {
				t.Fatal(err)
			}
			h11CheckDialErr(t, r.Err, context.Canceled, false, addr)
		}
		h11WaitClean(t, rt, fds, live)
	})
}

// TestHostile11NetDialCancelWakesLatestWaker: a future may be polled with a different
// waker each time (a combinator, or a future moved between tasks). The cancellation must
// wake the waker of the latest poll, not the first one.
func TestHostile11NetDialCancelWakesLatestWaker(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		addr := h11SaturatedListener(t)
		fds, live := openFDs(t), rt.io.live.Load()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f := DialContext(ctx, "tcp4", addr.String())
		var first, second atomic.Int64
		cxA := NewContext(rt, WakerFunc(func() { first.Add(1) }))
		cxB := NewContext(rt, WakerFunc(func() { second.Add(1) }))
		if r, ok := f.Poll(cxA); ok {
			if r.Value != nil {
				r.Value.Close()
			}
			t.Skipf("the dial finished at once (%v)", r.Err)
		}
		if r, ok := f.Poll(cxB); ok {
			t.Fatalf("the dial finished on its second poll: %v", r.Err)
		}
		cancel()
		waitFor(t, "the cancellation to wake the latest waker", func() bool { return second.Load() > 0 })
		r, ok := f.Poll(cxB)
		if !ok {
			t.Fatal("the dial is still pending after its context was cancelled")
		}
		h11CheckDialErr(t, r.Err, context.Canceled, false, addr)
		h11WaitClean(t, rt, fds, live)
	})
}

// TestHostile11NetDialContextDoneFirst: a context cancelled before the first poll fails
// the dial at once, without opening a socket; polling the finished future again reports
// net.ErrClosed. A nil context panics with a message naming it.
func TestHostile11NetDialContextDoneFirst(t *testing.T) {
	rt := newRT(t, Config{Workers: 1, Backend: BackendEpoll})
	fds := openFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := DialContext(ctx, "tcp4", "127.0.0.1:9")
	r := blockOn(t, rt, f)
	h11CheckDialErr(t, r.Err, context.Canceled, false, nil)
	if n := openFDs(t); n > fds {
		t.Fatalf("a dial with a cancelled context opened %d descriptors", n-fds)
	}
	again := blockOn(t, rt, f)
	if !errors.Is(again.Err, net.ErrClosed) {
		t.Fatalf("poll of a finished dial = %v, want net.ErrClosed", again.Err)
	}
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "nil context") {
				t.Fatalf("DialContext(nil) panic = %v, want one naming the nil context", p)
			}
		}()
		//lint:ignore SA1012 the nil context is the point
		DialContext(nil, "tcp4", "127.0.0.1:9") //nolint:staticcheck
	}()
}

// h11BlockingResolver replaces net.DefaultResolver, for the test, with a pure-Go
// resolver whose DNS connections hang until their context ends or the test ends: a name
// resolution that is really in flight. entered receives one value per DNS dial; release
// (idempotent, also run at cleanup) makes every hanging and later DNS dial fail.
func h11BlockingResolver(t *testing.T) (entered chan struct{}, release func()) {
	t.Helper()
	entered = make(chan struct{}, 64)
	released := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	var inflight sync.WaitGroup
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		inflight.Add(1)
		defer inflight.Done()
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-released:
			return nil, errors.New("h11 resolver released")
		}
	}}
	t.Cleanup(func() {
		release()
		done := make(chan struct{})
		go func() { inflight.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("the blocking resolver's lookups did not end")
		}
		net.DefaultResolver = old
	})
	return entered, release
}

// TestHostile11NetDialCancelledWhileResolving: the context ends while the host name is
// being resolved (on the blocking pool). The dial fails with the context's error (a
// timeout for a deadline), the lookup stops, and nothing is left running.
func TestHostile11NetDialCancelledWhileResolving(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		base := runtime.NumGoroutine()
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		entered, release := h11BlockingResolver(t)
		for _, deadline := range []bool{false, true} {
			fds := openFDs(t)
			ctx, cancel := context.WithCancel(context.Background())
			if deadline {
				ctx, cancel = context.WithTimeout(context.Background(), 30*time.Millisecond)
			}
			h := Spawn(rt, DialContext(ctx, "tcp4", "hostile11-resolving.example:80"))
			select {
			case <-entered:
			case <-time.After(20 * time.Second):
				t.Fatal("the resolver was never asked")
			}
			if !deadline {
				cancel()
			}
			r, err := waitHandleFor(t, h, "the dial cancelled while resolving")
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			want := error(context.Canceled)
			if deadline {
				want = context.DeadlineExceeded
			}
			h11CheckDialErr(t, r.Err, want, deadline, nil)
			if n := openFDs(t); n > fds {
				t.Fatalf("%d descriptors left by the dial", n-fds)
			}
		}
		// The cancelled lookups ended by themselves (their context did): the release
		// only matters for a broken cancellation, which the leak check then reports.
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		checkNoLeak(t, base)
		release()
	})
}

// TestHostile11NetDialDroppedWhileResolving: the task is aborted while the name is being
// resolved with no context deadline: the abort completes at once (it does not wait for
// the lookup) and the lookup's goroutine is gone once the resolver returns.
func TestHostile11NetDialDroppedWhileResolving(t *testing.T) {
	netWatchdog(t, 30*time.Second)
	base := runtime.NumGoroutine()
	rt, err := New(Config{Workers: 2, Backend: BackendEpoll})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := h11BlockingResolver(t)
	h := Spawn(rt, Dial("tcp4", "hostile11-dropped.example:80"))
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the resolver was never asked")
	}
	h.Abort()
	if _, err := waitHandleFor(t, h, "the dial aborted while resolving"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted dial: %v, want ErrCancelled", err)
	}
	// The lookup may still hang in the resolver (nothing cancels a Background lookup,
	// and Close waits for the blocking pool): once the resolver answers, its goroutine
	// ends and nothing is left.
	release()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, base)
}

// TestHostile11NetDialNoSuitableAddress: a name that resolves to IPv4 addresses only,
// dialled on "tcp6", fails as net.Dial does: a dial *net.OpError around a
// *net.AddrError "no suitable address found".
func TestHostile11NetDialNoSuitableAddress(t *testing.T) {
	rt := newRT(t, Config{Workers: 1, Backend: BackendEpoll})
	ips, err := net.DefaultResolver.LookupIPAddr(context.Background(), "localhost")
	if err != nil {
		t.Skip(err)
	}
	for _, ip := range ips {
		if ip.IP.To4() == nil {
			t.Skip("localhost has an IPv6 address here")
		}
	}
	_, rerr := net.Dial("tcp6", "localhost:9")
	err = blockOn(t, rt, Dial("tcp6", "localhost:9")).Err
	h11SameError(t, "Dial tcp6 to an IPv4-only name", err, rerr)
	var ae *net.AddrError
	if !errors.As(err, &ae) {
		t.Fatalf("%v: want a *net.AddrError inside", err)
	}
}

// TestHostile11NetDialEmptyHost: net.Dial treats an empty host (":port") as the local
// system, and net.DialTCP a nil IP as well; so must Dial and DialTCP, for "tcp" (an IPv4
// listener is reached, as net's dial picks IPv4 for a wildcard address) and "tcp4".
func TestHostile11NetDialEmptyHost(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		l := listenLoopback(t, "tcp4")
		Spawn(rt, echoServer(l))
		port := strconv.Itoa(l.TCPAddr().Port)
		for _, network := range []string{"tcp4", "tcp"} {
			if c, err := net.Dial(network, ":"+port); err != nil {
				t.Logf("net.Dial(%s, :port) fails here too (%v): not compared", network, err)
				continue
			} else {
				c.Close()
			}
			for name, f := range map[string]Future[Result[*TCPStream]]{
				"Dial":    Dial(network, ":"+port),
				"DialTCP": DialTCP(network, nil, &net.TCPAddr{Port: l.TCPAddr().Port}),
			} {
				c, err := blockOn(t, rt, f).Get()
				if err != nil {
					t.Errorf("%s(%s) to the local system: %v (net connects)", name, network, err)
					continue
				}
				if got := c.RemoteAddr().(*net.TCPAddr).Port; got != l.TCPAddr().Port {
					t.Errorf("%s(%s): RemoteAddr %v", name, network, c.RemoteAddr())
				}
				c.Close()
			}
		}
	})
}

// h11RacyCtx is a context that is cancelled just after the n-th call of its Err method
// has found it not cancelled (cancelAt n): the interleaving of a concurrent cancel with
// the context check of a dial's poll, made certain. It then pauses, so that the
// goroutine the context package starts for an AfterFunc callback has run before the
// poll goes on.
type h11RacyCtx struct {
	mu        sync.Mutex
	done      chan struct{}
	cancelled bool
	cb        func()
	errCalls  int
	cancelAt  int
}

func (c *h11RacyCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *h11RacyCtx) Value(any) any               { return nil }
func (c *h11RacyCtx) Done() <-chan struct{}       { return c.done }

func (c *h11RacyCtx) Err() error {
	c.mu.Lock()
	c.errCalls++
	n, was := c.errCalls, c.cancelled
	c.mu.Unlock()
	if was {
		return context.Canceled
	}
	if n == c.cancelAt {
		c.cancel() // after the check: this call still reports "not cancelled"
	}
	return nil
}

func (c *h11RacyCtx) cancel() {
	c.mu.Lock()
	c.cancelled = true
	close(c.done)
	cb := c.cb
	c.cb = nil
	c.mu.Unlock()
	if cb != nil {
		cb() // starts the goroutine that runs the AfterFunc callback
	}
	time.Sleep(20 * time.Millisecond) // and lets it run before the poll goes on
}

// AfterFunc is the method context.AfterFunc uses for a context that has one.
func (c *h11RacyCtx) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	c.cb = f
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		stopped := c.cb != nil
		c.cb = nil
		return stopped
	}
}

// TestHostile11NetDialCancelRacesPoll: a cancellation that lands while the dial is
// polled, just after its context check, must still wake the waker of that poll: (a) on
// the first poll, before the dial has registered its AfterFunc (the context package
// then runs the callback at once, on a goroutine that may win the race with the poll's
// waker update: not certain here); (b) on a later poll made with a different waker (a
// future moved to another task, or polled by a combinator), where the callback runs
// while the previous waker is still the one stored: certain. A wake lost there leaves the
// dial waiting for a connect that, to a silent host, only the kernel's two-minute
// timeout ends.
func TestHostile11NetDialCancelRacesPoll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		addr := h11SaturatedListener(t)
		for _, tc := range []struct {
			name     string
			cancelAt int
			polls    int
		}{
			{"after the check of the first poll", 1, 1},
			{"after the check of a later poll", 2, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				fds, live := openFDs(t), rt.io.live.Load()
				ctx := &h11RacyCtx{done: make(chan struct{}), cancelAt: tc.cancelAt}
				f := DialContext(ctx, "tcp4", addr.String())
				var woken []*atomic.Int64
				var last *Context
				for i := range tc.polls {
					n := new(atomic.Int64)
					woken = append(woken, n)
					last = NewContext(rt, WakerFunc(func() { n.Add(1) }))
					if r, ok := f.Poll(last); ok {
						if r.Value != nil {
							r.Value.Close()
						}
						if i == 0 && r.Err == nil {
							t.Skip("the dial connected at once")
						}
						// Finishing at once with the context error is fine too.
						h11CheckDialErr(t, r.Err, context.Canceled, false, addr)
						return
					}
				}
				latest := woken[len(woken)-1]
				deadline := time.Now().Add(5 * time.Second)
				for latest.Load() == 0 {
					if time.Now().After(deadline) {
						Drop(f)
						t.Fatalf("the context was cancelled during poll %d, and the waker of that poll was never woken (earlier wakers woken: %v)", tc.polls, woken[0].Load())
					}
					time.Sleep(time.Millisecond)
				}
				r, ok := f.Poll(last)
				if !ok {
					t.Fatal("woken, but still pending with its context cancelled")
				}
				h11CheckDialErr(t, r.Err, context.Canceled, false, addr)
				h11WaitClean(t, rt, fds, live)
			})
		}
	})
}

// TestHostile11NetDialCancelPanickingWaker: the dial's context wakes the dial from a
// goroutine of the context package's. A waker is user code, and a panicking one must not
// crash the process from there: the runtime recovers and logs waker panics on the
// goroutines it does not hand to the user (timers, workers, task completion), and the
// dial must too. The scenario runs in a child process, whose crash the parent reports.
func TestHostile11NetDialCancelPanickingWaker(t *testing.T) {
	if os.Getenv("H11_NET_PANIC_CHILD") == "1" {
		rt := newRT(t, Config{Workers: 1, Backend: BackendEpoll})
		addr := h11SaturatedListener(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f := DialContext(ctx, "tcp4", addr.String())
		var wakes atomic.Int64
		cx := NewContext(rt, WakerFunc(func() {
			if wakes.Add(1) == 1 { // the cancellation's wake (later ones come from our own polls)
				panic("h11 hostile waker")
			}
		}))
		if r, ok := f.Poll(cx); ok {
			if r.Value != nil {
				r.Value.Close()
			}
			fmt.Println("H11-SKIP: the dial finished at once")
			return
		}
		cancel()
		waitFor(t, "the cancellation to call the waker", func() bool { return wakes.Load() > 0 })
		time.Sleep(50 * time.Millisecond) // a crash on the context's goroutine shows by now
		r, ok := f.Poll(NewContext(rt, Waker{}))
		if !ok || !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("dial after the cancel = %v, %v", r.Err, ok)
		}
		fmt.Println("H11-CHILD-OK")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostile11NetDialCancelPanickingWaker$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "H11_NET_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	switch {
	case strings.Contains(string(out), "H11-SKIP"):
		t.Skip("the dial finished at once: nothing in flight")
	case err != nil || !strings.Contains(string(out), "H11-CHILD-OK"):
		t.Fatalf("the process died when a waker panicked on the dial's cancellation: %v\n%s", err, out)
	case !strings.Contains(string(out), "h11 hostile waker"):
		t.Fatalf("the waker's panic was not reported:\n%s", out)
	}
}
