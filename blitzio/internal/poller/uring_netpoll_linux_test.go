//go:build linux

package poller

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// uringModes runs body on an io_uring Poller that waits through Go's netpoller (the
// default) and on one that blocks in io_uring_enter (the fallback when the runtime
// refuses the ring's descriptor).
func uringModes(t *testing.T, body func(t *testing.T, r *ioUring)) {
	for _, blocking := range []bool{false, true} {
		name := "netpoll"
		if blocking {
			name = "blocking"
		}
		t.Run(name, func(t *testing.T) {
			uringTestNoNetpoll = blocking
			r := newTestUring(t, IOUringConfig{Entries: 8})
			uringTestNoNetpoll = false
			if got := !r.np.attached(); got != blocking {
				t.Fatalf("io_uring waits through the netpoller: %v, want %v", !got, !blocking)
			}
			body(t, r)
		})
	}
}

// A readiness that arrives between an empty zero-timeout Poll and a waiting Poll is
// reported by the waiting one (the netpoller forgets readiness recorded before a
// RawConn.Read starts, so the wait must look at the ring before it parks).
func TestUringEventBetweenPollsIsNotLost(t *testing.T) {
	uringModes(t, func(t *testing.T, r *ioUring) {
		a, b := socketpairCleanup(t)
		if err := r.Register(a, 7, Read); err != nil {
			t.Fatal(err)
		}
		evs := make([]Event, 8)
		for range 3 { // submit the registration, drain what it reports
			if _, err := r.Poll(evs, 0); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 20 {
			if n, err := r.Poll(evs, 0); err != nil || n != 0 {
				t.Fatalf("round %d: idle Poll(0) = %d, %v", i, n, err)
			}
			if _, err := unix.Write(b, []byte{1}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // let the completion land before the wait starts
			n := pollWithin(t, r, evs, -1, 5*time.Second)
			// On a loaded machine the completion may not have landed yet, and a wait
			// in io_uring_enter returns 0 when a signal interrupts it (as below); a
			// lost event still fails, as every retry then waits the full 5 s.
			for tries := 0; n == 0 && !r.np.attached() && tries < 100; tries++ {
				n = pollWithin(t, r, evs, -1, 5*time.Second)
			}
			if n != 1 || evs[0].Token != 7 || evs[0].Ready&Readable == 0 {
				t.Fatalf("round %d: Poll(-1) = %d events %+v, want token 7 readable", i, n, evs[:n])
			}
			var buf [8]byte
			unix.Read(a, buf[:])
		}
	})
}

// A readiness that arrives while a Poll is parked wakes it; a timed-out Poll leaves no
// deadline behind for the next one without a timeout.
func TestUringNetpollWaitsForEventAfterTimeout(t *testing.T) {
	uringModes(t, func(t *testing.T, r *ioUring) {
		a, b := socketpairCleanup(t)
		if err := r.Register(a, 9, Read); err != nil {
			t.Fatal(err)
		}
		evs := make([]Event, 8)
		for range 3 {
			r.Poll(evs, 0)
		}
		for i := range 10 {
			if n := pollWithin(t, r, evs, 2*time.Millisecond, 5*time.Second); n != 0 {
				t.Fatalf("round %d: Poll with a timeout and nothing ready = %d events", i, n)
			}
			go func() {
				time.Sleep(time.Duration(i%3) * time.Millisecond)
				unix.Write(b, []byte{1})
			}()
			n := pollWithin(t, r, evs, -1, 5*time.Second)
			// Blocking in io_uring_enter, Poll(-1) also returns 0 when a signal
			// interrupts it (Go preempts goroutines with SIGURG), as the Poller contract
			// allows; with no deadline in that wait, none can go stale, so wait again.
			// Through the netpoller, no signal ends the wait: 0 would be a stale deadline.
			for tries := 0; n == 0 && !r.np.attached() && tries < 100; tries++ {
				n = pollWithin(t, r, evs, -1, 5*time.Second)
			}
			if n != 1 || evs[0].Token != 9 {
				t.Fatalf("round %d: Poll(-1) = %d events %+v, want the write's", i, n, evs[:n])
			}
			var buf [8]byte
			unix.Read(a, buf[:])
		}
	})
}

// Operations queued before a Poll parks are submitted before it parks: their
// completions wake it.
func TestUringNetpollSubmitsBeforeParking(t *testing.T) {
	uringModes(t, func(t *testing.T, r *ioUring) {
		a, b := socketpairCleanup(t)
		if _, err := unix.Write(b, []byte{1}); err != nil {
			t.Fatal(err)
		}
		// Registered but not yet submitted: only the waiting Poll hands it over.
		if err := r.Register(a, 11, Read); err != nil {
			t.Fatal(err)
		}
		evs := make([]Event, 8)
		n := pollWithin(t, r, evs, -1, 5*time.Second)
		if n < 1 || evs[0].Token != 11 || evs[0].Ready&Readable == 0 {
			t.Fatalf("Poll(-1) = %d events %+v, want token 11 readable", n, evs[:n])
		}
	})
}

// Wake returns a parked Poll, again and again, in both modes.
func TestUringWakeBothModes(t *testing.T) {
	uringModes(t, func(t *testing.T, r *ioUring) { wakeRepeatedly(t, r) })
}

// Close while a Poll is parked on the netpoller: the Poll returns (with an error or
// nothing) and Close does not wait for ever for it.
func TestUringCloseWhilePollParked(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	for range 5 {
		p, err := NewIOUringConfig(IOUringConfig{Entries: 8})
		if err != nil {
			t.Skipf("io_uring unavailable here: %v", err)
		}
		r := p.(*ioUring)
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Poll(make([]Event, 4), -1)
		}()
		time.Sleep(2 * time.Millisecond) // most often parked by now; either order must work
		closed := make(chan error, 1)
		go func() { closed <- r.Close() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a Poll parked on the netpoller did not return after Close")
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return")
		}
	}
}

// Waiting through the netpoller allocates nothing per Poll.
func TestUringNetpollWaitAllocs(t *testing.T) {
	if epollRaceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	r := newTestUring(t, IOUringConfig{Entries: 8})
	if !r.np.attached() {
		t.Skip("the runtime refused the ring's descriptor")
	}
	evs := make([]Event, 4)
	allocs := testing.AllocsPerRun(20, func() {
		r.Wake()
		r.Poll(evs, -1)
	})
	if allocs != 0 {
		t.Fatalf("a woken Poll(-1) allocates %v times", allocs)
	}
}

// A Poll whose timeout passes before the netpoller looks at the ring (RawConn.Read
// checks the deadline first) returns nothing, and the next waiting Poll still gets the
// next event.
func TestUringExpiredTimeoutThenEvent(t *testing.T) {
	uringModes(t, func(t *testing.T, r *ioUring) {
		a, b := socketpairCleanup(t)
		if err := r.Register(a, 5, Read); err != nil {
			t.Fatal(err)
		}
		evs := make([]Event, 8)
		for range 3 {
			r.Poll(evs, 0)
		}
		var buf [8]byte
		for i := range 100 {
			if n := pollWithin(t, r, evs, time.Nanosecond, 5*time.Second); n != 0 {
				t.Fatalf("round %d: Poll(1ns) with nothing ready = %d events %+v", i, n, evs[:n])
			}
			unix.Write(b, []byte{1})
			if n := pollWithin(t, r, evs, -1, 5*time.Second); n != 1 || evs[0].Token != 5 {
				t.Fatalf("round %d: Poll(-1) = %d events %+v, want token 5", i, n, evs[:n])
			}
			unix.Read(a, buf[:])
		}
	})
}

// Many Wakes racing many Polls never leave the io_uring poller unwakeable: its wake is a
// multishot poll on an eventfd, so each write posts a completion of its own even when a
// drain swallows the count (the epoll backend had a lost wake-up here: see
// TestEpollWakeStormThenWake).
func TestUringWakeStormThenWake(t *testing.T) {
	uringModes(t, func(t *testing.T, r *ioUring) {
		evs := make([]Event, 4)
		wakeStorm(t, r, 10*time.Millisecond)
		for i := range 5 {
			go func() {
				time.Sleep(time.Millisecond)
				r.Wake()
			}()
			if n := pollWithin(t, r, evs, 10*time.Second, 5*time.Second); n != 0 {
				t.Fatalf("round %d: woken Poll = %d events, want 0", i, n)
			}
		}
	})
}
