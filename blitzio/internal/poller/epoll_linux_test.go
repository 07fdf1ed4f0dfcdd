//go:build linux

package poller

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketpairCleanup is socketpair with both ends closed when the test ends.
func socketpairCleanup(t *testing.T) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

func newEpoll(t *testing.T) Poller {
	t.Helper()
	p, err := NewEpoll()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// pollFor polls until an event for token arrives (bounded: fails after 5 s of polls).
func pollFor(t *testing.T, p Poller, token uint64) Ready {
	t.Helper()
	evs := make([]Event, 8)
	deadline := time.Now().Add(5 * time.Second)
	var r Ready
	for time.Now().Before(deadline) {
		n, err := p.Poll(evs, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs[:n] {
			if e.Token != token {
				t.Fatalf("event for unknown token %#x", e.Token)
			}
			r |= e.Ready
		}
		if r != 0 {
			return r
		}
	}
	t.Fatalf("no event for token %#x", token)
	return 0
}

func TestEpollReadinessEdgeTriggered(t *testing.T) {
	p := newEpoll(t)
	a, b := socketpairCleanup(t)
	const tok = 7 | 1<<32
	if err := p.Register(a, tok, Read|Write); err != nil {
		t.Fatal(err)
	}
	// A fresh socket is writable: the first event says so.
	if r := pollFor(t, p, tok); r&Writable == 0 {
		t.Fatalf("first event %b lacks Writable", r)
	}
	// Edge-triggered: nothing new happened, so no event.
	evs := make([]Event, 8)
	if n, err := p.Poll(evs, 0); err != nil || n != 0 {
		t.Fatalf("Poll after the edge = %d, %v; want 0 events", n, err)
	}
	unix.Write(b, []byte("x"))
	if r := pollFor(t, p, tok); r&Readable == 0 {
		t.Fatalf("event after a write %b lacks Readable", r)
	}
	// Not drained, no new data: still no new edge.
	if n, _ := p.Poll(evs, 0); n != 0 {
		t.Fatalf("a second event without new data: %+v", evs[:n])
	}
	// The peer closes: ReadClosed.
	unix.Close(b)
	if r := pollFor(t, p, tok); r&ReadClosed == 0 {
		t.Fatalf("event after the peer's close %b lacks ReadClosed", r)
	}
	if err := p.Deregister(a, tok); err != nil {
		t.Fatal(err)
	}
	if err := p.Deregister(a, tok); err == nil {
		t.Fatal("second Deregister succeeded")
	}
}

func TestEpollWakeUnblocksPoll(t *testing.T) {
	p := newEpoll(t)
	done := make(chan error, 1)
	go func() {
		n, err := p.Poll(make([]Event, 4), -1)
		if n != 0 && err == nil {
			err = errors.New("Poll returned events for a Wake")
		}
		done <- err
	}()
	p.Wake()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Poll(-1) not woken by Wake")
	}
	// A Wake before the Poll makes that Poll return too (it is not lost), and several
	// Wakes coalesce into one early return, after which Poll blocks (times out) again.
	p.Wake()
	p.Wake()
	if n, err := p.Poll(make([]Event, 4), -1); n != 0 || err != nil {
		t.Fatalf("Poll after Wake = %d, %v", n, err)
	}
	if n, err := p.Poll(make([]Event, 4), time.Millisecond); n != 0 || err != nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
}

func TestEpollRejectsBadInput(t *testing.T) {
	p := newEpoll(t)
	if err := p.Register(-1, 1, Read); !errors.Is(err, unix.EBADF) {
		t.Fatalf("Register(-1) = %v, want EBADF", err)
	}
	if err := p.Register(0, wakeToken, Read); err == nil {
		t.Fatal("Register with the reserved token succeeded")
	}
	if _, err := p.Poll(nil, 0); err == nil {
		t.Fatal("Poll(nil) succeeded")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestEpollMillisRoundsUp(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{-1, -1}, {0, 0}, {1, 1}, {time.Millisecond, 1}, {1500 * time.Microsecond, 2}, {1 << 62, 1<<31 - 1}} {
		if got := epollMillis(c.d); got != c.want {
			t.Errorf("epollMillis(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestPortableWakeAndUnsupported(t *testing.T) {
	p := NewPortable()
	defer p.Close()
	if err := p.Register(0, 1, Read); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Register = %v, want ErrUnsupported", err)
	}
	p.Wake()
	if n, err := p.Poll(make([]Event, 1), -1); n != 0 || err != nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	if _, err := NewKqueue(); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("NewKqueue on linux = %v", err)
	}
}
