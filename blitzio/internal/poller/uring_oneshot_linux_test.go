package poller

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// One-shot readiness (IOUringConfig.OneShotReadiness): a registration reports nothing
// until armed, each armed direction reports once, and the directions are armed apart.

func newOneShot(t *testing.T) *ioUring {
	t.Helper()
	r := newTestUring(t, IOUringConfig{OneShotReadiness: true})
	if !r.oneShot {
		t.Fatal("OneShotReadiness not in effect")
	}
	return r
}

// readyFor returns the union of the Ready bits reported for token in evs.
func readyFor(evs []Event, token uint64) Ready {
	var r Ready
	for _, ev := range evs {
		if ev.Token == token && ev.Op == OpReady {
			r |= ev.Ready
		}
	}
	return r
}

func TestUringOneShotNothingUntilArmed(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	if err := r.Register(a, 7, Read|Write); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(b, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := readyFor(drainEvents(t, r), 7); got != 0 {
		t.Fatalf("an unarmed registration reported %v", got)
	}
	// Armed for reading with data already queued: the arming itself reports it.
	if err := r.Arm(a, 7, Read); err != nil {
		t.Fatal(err)
	}
	if got := readyFor(drainEvents(t, r), 7); got&Readable == 0 || got&Writable != 0 {
		t.Fatalf("armed for reading with data queued: %v, want Readable only", got)
	}
	// One event per arming: more data, no new event until armed again.
	if _, err := unix.Write(b, []byte("y")); err != nil {
		t.Fatal(err)
	}
	if got := readyFor(drainEvents(t, r), 7); got != 0 {
		t.Fatalf("a fired one-shot poll reported again: %v", got)
	}
	// Arming twice before the event: one event.
	if err := r.Arm(a, 7, Read); err != nil {
		t.Fatal(err)
	}
	if err := r.Arm(a, 7, Read); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range drainEvents(t, r) {
		if ev.Token == 7 {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("two Arms of an armed direction gave %d events, want 1", n)
	}
}

func TestUringOneShotDirectionsApart(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	if err := r.Register(a, 9, Read|Write); err != nil {
		t.Fatal(err)
	}
	// Both armed, only writing possible: the write direction fires, the read one
	// stays armed and fires when data comes (a poll for both directions would have
	// been used up by the write readiness, and the reader would sleep).
	if err := r.Arm(a, 9, Read|Write); err != nil {
		t.Fatal(err)
	}
	if got := readyFor(drainEvents(t, r), 9); got != Writable {
		t.Fatalf("armed both ways on an idle socket: %v, want Writable", got)
	}
	if _, err := unix.Write(b, []byte("z")); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "the read direction, still armed", func(ev Event) bool {
		return ev.Token == 9 && ev.Ready&Readable != 0
	})
	// A full send buffer: the write direction waits, and a read readiness does not
	// satisfy it (nor use it up).
	buf := make([]byte, 64<<10)
	for {
		if _, err := unix.Write(a, buf); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Arm(a, 9, Write); err != nil {
		t.Fatal(err)
	}
	if err := r.Arm(a, 9, Read); err != nil { // data "z" is still queued
		t.Fatal(err)
	}
	if got := readyFor(drainEvents(t, r), 9); got&Writable != 0 || got&Readable == 0 {
		t.Fatalf("full send buffer and data queued: %v, want Readable without Writable", got)
	}
	for { // the peer drains: room again
		if _, err := unix.Read(b, buf); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	pollUntil(t, r, "the write direction once the peer read", func(ev Event) bool {
		return ev.Token == 9 && ev.Ready&Writable != 0
	})
	// The write direction's slot lives only while armed: an idle connection keeps one
	// slot (its read direction's).
	r.mu.Lock()
	ri, ok := r.regLocked(a)
	pair := r.slots[ri].pair
	r.mu.Unlock()
	if !ok || pair != 0 {
		t.Fatalf("after the write readiness: registered %v, write slot %d, want the slot freed", ok, pair)
	}
}

func TestUringOneShotHangUpAndErrors(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := socketpair(t)
	defer closeFd(t, a)
	if err := r.Register(a, 3, Read|Write); err != nil {
		t.Fatal(err)
	}
	if err := r.Arm(a, 3, Read); err != nil {
		t.Fatal(err)
	}
	if got := readyFor(drainEvents(t, r), 3); got != 0 {
		t.Fatalf("nothing to read yet: %v", got)
	}
	closeFd(t, b)
	pollUntil(t, r, "the peer's close", func(ev Event) bool {
		return ev.Token == 3 && ev.Ready&ReadClosed != 0
	})
	// Unknown registrations are refused.
	if err := r.Arm(a, 4, Read); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Arm with another token: %v, want ENOENT", err)
	}
	if err := r.Arm(12345, 3, Read); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Arm of an unregistered fd: %v, want ENOENT", err)
	}
}

func TestUringOneShotDeregisterAndClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r, err := NewIOUringConfig(IOUringConfig{OneShotReadiness: true})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	u := r.(*ioUring)
	a, b := socketpair(t)
	defer closeFd(t, b)
	c, d := socketpair(t)
	defer closeFd(t, c)
	defer closeFd(t, d)
	// a: armed both ways then deregistered; c: never armed, deregistered; d: armed
	// for reading when the ring closes.
	for fd, tok := range map[int]uint64{a: 1, c: 2, d: 3} {
		if err := u.Register(fd, tok, Read|Write); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Arm(a, 1, Read); err != nil {
		t.Fatal(err)
	}
	if err := u.Arm(d, 3, Read); err != nil {
		t.Fatal(err)
	}
	if err := u.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := u.Deregister(a, 1); err != nil {
		t.Fatal(err)
	}
	if err := u.Deregister(c, 2); err != nil {
		t.Fatal(err)
	}
	if err := u.Arm(a, 1, Read); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Arm after Deregister: %v, want ENOENT", err)
	}
	// The kernel lets a go once the cancellation is submitted: its peer sees the close.
	if err := u.Flush(); err != nil {
		t.Fatal(err)
	}
	closeFd(t, a)
	if _, err := unix.Write(b, []byte("q")); err != nil && err != unix.EPIPE && err != unix.ECONNRESET {
		t.Fatal(err)
	}
	evs := drainEvents(t, u)
	if got := readyFor(evs, 1) | readyFor(evs, 2); got != 0 {
		t.Fatalf("deregistered fds reported %v", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		buf := make([]byte, 1)
		n, err := unix.Read(b, buf)
		if n == 0 && err == nil {
			break // end of file: the socket is closed, the ring holds no reference
		}
		if time.Now().After(deadline) {
			t.Fatalf("the peer of a deregistered, closed socket did not see the close: %d, %v", n, err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := u.Close(); err != nil {
		t.Fatalf("Close with an armed poll: %v", err)
	}
	if err := u.Arm(d, 3, Read); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Arm after Close: %v, want os.ErrClosed", err)
	}
}

// Without OneShotReadiness, Arm only checks the registration (it is always armed).
func TestUringOneShotArmOnMultishotIsNoOp(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{})
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	if err := r.Register(a, 5, Read|Write); err != nil {
		t.Fatal(err)
	}
	if err := r.Arm(a, 5, Read); err != nil {
		t.Fatal(err)
	}
	if err := r.Arm(a, 6, Read); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Arm with a wrong token: %v, want ENOENT", err)
	}
	if _, err := unix.Write(b, []byte("m")); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "the multishot poll's readiness", func(ev Event) bool {
		return ev.Token == 5 && ev.Ready&Readable != 0
	})
}
