//go:build linux

package poller

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// epollModes runs body on an epoll Poller that waits through Go's netpoller (the
// default) and on one that blocks in epoll_wait (the fallback when the runtime refuses
// the epoll descriptor).
func epollModes(t *testing.T, body func(t *testing.T, p *epoll)) {
	for _, blocking := range []bool{false, true} {
		name := "netpoll"
		if blocking {
			name = "blocking"
		}
		t.Run(name, func(t *testing.T) {
			epollTestNoNetpoll = blocking
			p := newEpoll(t).(*epoll)
			epollTestNoNetpoll = false
			if got := !p.np.attached(); got != blocking {
				t.Fatalf("epoll waits through the netpoller: %v, want %v", !got, !blocking)
			}
			body(t, p)
		})
	}
}

// pollWithin runs one Poll with timeout on another goroutine and returns its result,
// failing the test if it has not returned after limit (a lost wake-up).
func pollWithin(t *testing.T, p Poller, evs []Event, timeout, limit time.Duration) int {
	t.Helper()
	type res struct {
		n   int
		err error
	}
	ch := make(chan res, 1)
	go func() { n, err := p.Poll(evs, timeout); ch <- res{n, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.n
	case <-time.After(limit):
		p.Wake() // let the goroutine go before the test's cleanup closes p
		<-ch
		t.Fatalf("Poll(%v) still waiting after %v", timeout, limit)
		return 0
	}
}

// An event that arrives between an empty zero-timeout Poll and a waiting Poll is
// reported by the waiting one. Regression test: a waiting Poll that skipped its first
// collection, counting on Go's netpoller to have recorded the edge, lost it (the
// netpoller forgets readiness recorded before a RawConn.Read starts), and the worker
// slept on a ready socket.
func TestEpollEventBetweenPollsIsNotLost(t *testing.T) {
	epollModes(t, func(t *testing.T, p *epoll) {
		a, b := socketpairCleanup(t)
		if err := p.Register(a, 7, Read); err != nil {
			t.Fatal(err)
		}
		evs := make([]Event, 8)
		for range 3 { // drain the registration's own events
			if _, err := p.Poll(evs, 0); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 20 {
			if n, err := p.Poll(evs, 0); err != nil || n != 0 {
				t.Fatalf("round %d: idle Poll(0) = %d, %v", i, n, err)
			}
			if _, err := unix.Write(b, []byte{1}); err != nil {
				t.Fatal(err)
			}
			// Give Go's netpoller time to record the edge before the waiting Poll
			// starts: the order in which the lost wake-up happened.
			time.Sleep(time.Millisecond)
			n := pollWithin(t, p, evs, -1, 5*time.Second)
			if n != 1 || evs[0].Token != 7 || evs[0].Ready&Readable == 0 {
				t.Fatalf("round %d: Poll(-1) = %d events %+v, want token 7 readable", i, n, evs[:n])
			}
			var buf [8]byte
			unix.Read(a, buf[:])
		}
	})
}

// A Poll whose timeout passed leaves no deadline behind: the next Poll without a
// timeout waits for the event instead of returning at once for ever after.
func TestEpollTimeoutThenWaitWithoutTimeout(t *testing.T) {
	epollModes(t, func(t *testing.T, p *epoll) {
		a, b := socketpairCleanup(t)
		if err := p.Register(a, 9, Read); err != nil {
			t.Fatal(err)
		}
		evs := make([]Event, 8)
		for range 3 {
			p.Poll(evs, 0)
		}
		if n := pollWithin(t, p, evs, 5*time.Millisecond, 5*time.Second); n != 0 {
			t.Fatalf("Poll with a timeout and nothing ready = %d events", n)
		}
		go func() {
			time.Sleep(20 * time.Millisecond)
			unix.Write(b, []byte{1})
		}()
		// Without a timeout, Poll returns only for an event, a Wake or a signal; a stale
		// deadline would make it return 0 at once.
		n := pollWithin(t, p, evs, -1, 5*time.Second)
		if n != 1 || evs[0].Token != 9 {
			t.Fatalf("Poll(-1) after a timed-out Poll = %d events %+v, want the write's", n, evs[:n])
		}
	})
}

// Wake returns a Poll blocked without a timeout, in both modes, again and again.
func TestEpollWakeBothModes(t *testing.T) {
	epollModes(t, func(t *testing.T, p *epoll) { wakeRepeatedly(t, p) })
}

// wakeRepeatedly checks, 20 times, that a Wake from another goroutine returns a Poll
// parked without a timeout, with no events.
func wakeRepeatedly(t *testing.T, p Poller) {
	t.Helper()
	evs := make([]Event, 4)
	for range 20 {
		go func() {
			time.Sleep(time.Millisecond)
			if err := p.Wake(); err != nil {
				t.Error(err)
			}
		}()
		if n := pollWithin(t, p, evs, -1, 5*time.Second); n != 0 {
			t.Fatalf("woken Poll = %d events, want 0", n)
		}
	}
}

// A Poll with a timeout and nothing to report returns after its timeout, in both modes.
func TestEpollTimeoutBothModes(t *testing.T) {
	epollModes(t, func(t *testing.T, p *epoll) {
		evs := make([]Event, 4)
		for range 3 {
			if n := pollWithin(t, p, evs, 2*time.Millisecond, 5*time.Second); n != 0 {
				t.Fatalf("Poll = %d events, want 0", n)
			}
		}
	})
}

// Waiting through the netpoller allocates nothing per Poll.
func TestEpollNetpollWaitAllocs(t *testing.T) {
	if epollRaceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	p := newEpoll(t).(*epoll)
	if !p.np.attached() {
		t.Skip("the runtime refused the epoll descriptor")
	}
	evs := make([]Event, 4)
	allocs := testing.AllocsPerRun(20, func() {
		p.Wake()
		p.Poll(evs, -1)
	})
	if allocs != 0 {
		t.Fatalf("a woken Poll(-1) allocates %v times", allocs)
	}
}

// A Poll whose timeout passes before the netpoller calls the collection (RawConn.Read
// checks the deadline first) reports nothing, not what the previous Poll collected.
// Regression test: the count of the last collection was reported again, with its stale
// events, as new events.
func TestEpollExpiredTimeoutReportsNothingStale(t *testing.T) {
	epollModes(t, func(t *testing.T, p *epoll) {
		a, b := socketpairCleanup(t)
		if err := p.Register(a, 5, Read); err != nil {
			t.Fatal(err)
		}
		evs := make([]Event, 8)
		var buf [8]byte
		for i := range 200 {
			unix.Write(b, []byte{1})
			if n := pollWithin(t, p, evs, -1, 5*time.Second); n != 1 || evs[0].Token != 5 {
				t.Fatalf("round %d: Poll(-1) = %d events %+v, want token 5", i, n, evs[:n])
			}
			unix.Read(a, buf[:])
			if n := pollWithin(t, p, evs, time.Nanosecond, 5*time.Second); n != 0 {
				t.Fatalf("round %d: Poll(1ns) with nothing ready = %d events %+v", i, n, evs[:n])
			}
		}
	})
}

// A Wake that races a Poll's drain of the wake eventfd leaves the poller wakeable.
// Regression test: Poll cleared its coalescing flag before the drain; a Wake between the
// two set the flag and wrote, the drain swallowed the write, and the flag stayed set
// over an empty eventfd, so every later Wake wrote nothing and a parked Poll was never
// woken again (TestTCPDropAtEveryAwaitPoint hung in the runtime's Close). The hook puts
// the racing Wake right after the drain, where the fixed Poll can take it.
func TestEpollWakeRacingDrainIsNotLost(t *testing.T) {
	epollModes(t, func(t *testing.T, p *epoll) {
		evs := make([]Event, 4)
		raced := 0
		epollTestAfterDrain = func(q *epoll) {
			if q == p {
				raced++
				if err := p.Wake(); err != nil {
					t.Error(err)
				}
			}
		}
		defer func() { epollTestAfterDrain = nil }()
		if err := p.Wake(); err != nil {
			t.Fatal(err)
		}
		// Finite timeouts: a lost wake-up fails the test instead of hanging it.
		if n := pollWithin(t, p, evs, 10*time.Second, 5*time.Second); n != 0 {
			t.Fatalf("woken Poll = %d events, want 0", n)
		}
		epollTestAfterDrain = nil
		if raced != 1 {
			t.Fatalf("the wake eventfd was drained %d times, want 1", raced)
		}
		for i := range 5 {
			go func() {
				time.Sleep(time.Millisecond)
				if err := p.Wake(); err != nil {
					t.Error(err)
				}
			}()
			if n := pollWithin(t, p, evs, 10*time.Second, 5*time.Second); n != 0 {
				t.Fatalf("round %d: woken Poll = %d events, want 0", i, n)
			}
		}
	})
}

// Many Wakes racing many Polls never leave the poller unwakeable (the randomized form of
// TestEpollWakeRacingDrainIsNotLost, without the hook).
func TestEpollWakeStormThenWake(t *testing.T) {
	epollModes(t, func(t *testing.T, p *epoll) {
		evs := make([]Event, 4)
		wakeStorm(t, p, 0)
		if p.woken.Load() {
			var fds = []unix.PollFd{{Fd: int32(p.evfd), Events: unix.POLLIN}}
			if n, _ := unix.Poll(fds, 0); n == 0 {
				t.Fatal("woken is set over an empty wake eventfd: every later Wake would be lost")
			}
		}
		go func() {
			time.Sleep(time.Millisecond)
			p.Wake()
		}()
		if n := pollWithin(t, p, evs, 10*time.Second, 5*time.Second); n != 0 {
			t.Fatalf("woken Poll = %d events, want 0", n)
		}
	})
}

// wakeStorm has a goroutine call p.Wake in a loop while 10,000 Polls of up to 1 ms run,
// then drains what the storm left with three Polls of up to drain each.
func wakeStorm(t *testing.T, p Poller, drain time.Duration) {
	t.Helper()
	evs := make([]Event, 4)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				p.Wake()
			}
		}
	}()
	for range 10000 {
		if _, err := p.Poll(evs, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	for range 3 {
		if _, err := p.Poll(evs, drain); err != nil {
			t.Fatal(err)
		}
	}
}
