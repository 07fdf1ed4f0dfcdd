//go:build linux

package poller

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hostile15DeregisterIdle deregisters fd and checks that the poller is back to idle:
// only the wake poll in flight, no slot, cancellation or registration left.
func hostile15DeregisterIdle(t *testing.T, r *ioUring, fd int, tok uint64) {
	t.Helper()
	if err := r.Deregister(fd, tok); err != nil {
		t.Fatal(err)
	}
	drainEvents(t, r)
	if got := hostile14Count(r); got != hostile14Idle {
		t.Fatalf("after Deregister: %+v, want %+v", got, hostile14Idle)
	}
}

// hostile15RegisterHalfClosed registers a (both directions, token tok) and half-closes
// its peer b, waiting until a sees the peer's FIN (POLLRDHUP).
func hostile15RegisterHalfClosed(t *testing.T, r *ioUring, a, b int, tok uint64) {
	t.Helper()
	if err := r.Register(a, tok, Read|Write); err != nil {
		t.Fatal(err)
	}
	if err := unix.Shutdown(b, unix.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	hostile15WaitRevents(t, a, unix.POLLRDHUP)
}

// hostile15DrainFor polls r for d and returns what came.
func hostile15DrainFor(t *testing.T, r *ioUring, d time.Duration) []Event {
	t.Helper()
	var got []Event
	evs := make([]Event, 16)
	for end := time.Now().Add(d); time.Now().Before(end); {
		n, err := r.Poll(evs, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, evs[:n]...)
	}
	return got
}

// A writer waits for room on a TCP socket whose peer has shut down its writing side
// (a client that sent its request and half-closed, reading the answer slowly). io_uring
// adds POLLRDHUP to every poll's events, so the write direction's one-shot POLLOUT poll
// completes with POLLRDHUP alone, at once if the end of stream is there when it is armed.
// Regression: that completion freed the write slot and reported only the read side's
// news, so the writer was never woken when room came (an echo of a half-closing client
// stalled for good with its receive queue full). Now: the room, when the peer reads, is
// reported as Writable; while the peer reads nothing, the poller reports nothing more
// (no re-arming loop: a few events at most, not one per Poll); and Deregister leaves
// nothing behind. Both orders: the end of stream before the arming and after it.
func TestHostile15WriteWaitAfterPeerHalfClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, order := range []string{"shutdown-then-arm", "arm-then-shutdown"} {
		t.Run(order, func(t *testing.T) {
			r := newOneShot(t)
			a, b := hostile14TCPPair(t)
			defer closeFd(t, a)
			defer closeFd(t, b)
			if err := r.Register(a, 31, Read|Write); err != nil {
				t.Fatal(err)
			}
			// Until it stays full: filled once, a TCP send buffer gets room back as
			// the bytes in flight are acknowledged (up to 40 ms later), a true
			// Writable that the checks below would take for the poller's mistake.
			hostile15FillSteady(t, a)
			shut := func() {
				if err := unix.Shutdown(b, unix.SHUT_WR); err != nil {
					t.Fatal(err)
				}
				// Until a sees the end of stream (it is queued behind nothing: b sent
				// no data).
				for {
					p := []unix.PollFd{{Fd: int32(a), Events: unix.POLLRDHUP}}
					if n, err := unix.Poll(p, 10000); err != nil && err != unix.EINTR {
						t.Fatal(err)
					} else if n == 1 && p[0].Revents&unix.POLLRDHUP != 0 {
						return
					}
				}
			}
			if order == "shutdown-then-arm" {
				shut()
			}
			if err := r.Arm(a, 31, Write); err != nil {
				t.Fatal(err)
			}
			if order == "arm-then-shutdown" {
				if evs := drainEvents(t, r); len(evs) != 0 {
					t.Fatalf("full send buffer, peer alive: %+v", evs)
				}
				shut()
			}
			// The peer reads nothing yet: no Writable, and no stream of events.
			evs := hostile15DrainFor(t, r, 300*time.Millisecond)
			for _, ev := range evs {
				if ev.Token == 31 && ev.Ready&Writable != 0 {
					t.Fatalf("Writable while the send buffer is still full: %+v", evs)
				}
			}
			if len(evs) > 4 {
				t.Fatalf("%d events in 300 ms while nothing changed (the POLLOUT poll re-armed in a loop?): %+v", len(evs), evs[:4])
			}
			// The peer reads: room comes, and the waiting writer hears of it.
			buf := make([]byte, 64<<10)
			polled := make([]Event, 16)
			tally := newHostile14Tally()
			deadline := time.Now().Add(20 * time.Second)
			for tally.writes[31] == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the peer read, and no Writable came (events: %+v)", tally.all[31])
				}
				if _, err := unix.Read(b, buf); err != nil && err != unix.EAGAIN {
					t.Fatal(err)
				}
				n, err := r.Poll(polled, 10*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				tally.add(polled[:n])
			}
			if _, err := unix.Write(a, []byte("x")); err != nil {
				t.Fatalf("write after Writable: %v", err)
			}
			hostile15DeregisterIdle(t, r, a, 31)
		})
	}
}
