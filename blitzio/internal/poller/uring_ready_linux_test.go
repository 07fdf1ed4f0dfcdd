//go:build linux

package poller

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func eventsFor(evs []Event, token uint64) (Ready, int) {
	var r Ready
	n := 0
	for _, ev := range evs {
		if ev.Token == token {
			r |= ev.Ready
			n++
		}
	}
	return r, n
}

func TestUringReadinessSocketpair(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	a, b := socketpair(t)
	const tok = 0xA11CE
	if err := r.Register(a, tok, Read|Write); err != nil {
		t.Fatal(err)
	}
	// Registration reports the state it finds: writable, not readable.
	var got Ready
	pollUntil(t, r, "initial Writable", func(ev Event) bool {
		if ev.Token == tok {
			got |= ev.Ready
		}
		return got&Writable != 0
	})
	more, _ := eventsFor(drainEvents(t, r), tok)
	if got |= more; got&Readable != 0 {
		t.Fatalf("after Register: readiness %b, want Writable only", got)
	}
	// Nothing happens: no event (edge-triggered, not level).
	if got, n := eventsFor(drainEvents(t, r), tok); n != 0 {
		t.Fatalf("idle fd reported %b", got)
	}
	// Data arrives: Readable.
	unix.Write(b, []byte("hello"))
	pollUntil(t, r, "Readable", func(ev Event) bool { return ev.Token == tok && ev.Ready&Readable != 0 })
	drainEvents(t, r)
	// Not drained, nothing new: no repeat (EPOLLET would not repeat either).
	if got, n := eventsFor(drainEvents(t, r), tok); n != 0 {
		t.Fatalf("undrained fd with no new data reported %b again", got)
	}
	// More data, still not drained: a new wake-up, a new event (as with EPOLLET).
	unix.Write(b, []byte("again"))
	pollUntil(t, r, "Readable again", func(ev Event) bool { return ev.Token == tok && ev.Ready&Readable != 0 })
	buf := make([]byte, 64)
	if n, _ := unix.Read(a, buf); n != 10 {
		t.Fatalf("read %d bytes, want 10", n)
	}
	// Peer closes: ReadClosed.
	closeFd(t, b)
	pollUntil(t, r, "ReadClosed", func(ev Event) bool { return ev.Token == tok && ev.Ready&ReadClosed != 0 })
	if err := r.Deregister(a, tok); err != nil {
		t.Fatal(err)
	}
	closeFd(t, a)
}

func TestUringReadinessPipe(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	rd, wr := p[0], p[1]
	defer closeFd(t, rd)
	if err := r.Register(rd, 1, Read); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(wr, 2, Write); err != nil {
		t.Fatal(err)
	}
	readEvents := 0
	pollUntil(t, r, "empty pipe's write end Writable", func(ev Event) bool {
		if ev.Token == 1 {
			readEvents++
		}
		return ev.Token == 2 && ev.Ready&Writable != 0
	})
	if _, n := eventsFor(drainEvents(t, r), 1); n+readEvents != 0 {
		t.Errorf("empty pipe's read end reported %d events, want none", n+readEvents)
	}
	// Fill the pipe: the write end must stop being reported, then become writable
	// again when the reader drains it.
	chunk := make([]byte, 65536)
	for {
		if _, err := unix.Write(wr, chunk); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	pollUntil(t, r, "pipe readable", func(ev Event) bool { return ev.Token == 1 && ev.Ready&Readable != 0 })
	drainEvents(t, r)
	for {
		if _, err := unix.Read(rd, chunk); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	pollUntil(t, r, "pipe writable after drain", func(ev Event) bool { return ev.Token == 2 && ev.Ready&Writable != 0 })
	// Writer closes: the read end reports the hang-up.
	if err := r.Deregister(wr, 2); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	closeFd(t, wr)
	pollUntil(t, r, "pipe ReadClosed", func(ev Event) bool { return ev.Token == 1 && ev.Ready&ReadClosed != 0 })
	if err := r.Deregister(rd, 1); err != nil {
		t.Fatal(err)
	}
}

func TestUringWakeUnblocksPoll(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	evs := make([]Event, 8)
	for i := range 20 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(time.Duration(i%4) * time.Millisecond)
			if err := r.Wake(); err != nil {
				t.Error(err)
			}
		}()
		n, err := r.Poll(evs, -1)
		if err != nil || n != 0 {
			t.Fatalf("woken Poll = %d, %v; want 0, nil", n, err)
		}
		<-done
	}
	// A Wake before Poll makes the next Poll return at once; several Wakes coalesce.
	r.Wake()
	r.Wake()
	if n, err := r.Poll(evs, -1); n != 0 || err != nil {
		t.Fatalf("pre-woken Poll = %d, %v", n, err)
	}
}

func TestUringDeregisterStopsEvents(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	a, b := socketpair(t)
	defer closeFd(t, b)
	if err := r.Register(a, 7, Read); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	// Readiness that lands before the Deregister may already sit in the CQ ring: it
	// must be dropped, not reported.
	unix.Write(b, []byte("x"))
	time.Sleep(5 * time.Millisecond)
	if err := r.Deregister(a, 7); err != nil {
		t.Fatal(err)
	}
	unix.Write(b, []byte("y"))
	if got, n := eventsFor(drainEvents(t, r), 7); n != 0 {
		t.Fatalf("deregistered fd reported %b (%d events)", got, n)
	}
	// Once the removal is submitted the kernel dropped its file reference: closing
	// the fd closes the socket, and the peer sees end of stream.
	closeFd(t, a)
	buf := make([]byte, 8)
	unix.SetNonblock(b, false)
	// (ECONNRESET rather than end of stream: the close discarded unread bytes.)
	if n, err := unix.Read(b, buf); err == nil && n != 0 || err != nil && err != unix.ECONNRESET {
		t.Fatalf("peer read after close = %d, %v; want end of stream or ECONNRESET", n, err)
	}
	// The fd number can be registered again (fd reuse) under a new token.
	c, d := socketpair(t)
	defer closeFd(t, c)
	defer closeFd(t, d)
	if err := r.Register(c, 8, Read); err != nil {
		t.Fatal(err)
	}
	unix.Write(d, []byte("z"))
	pollUntil(t, r, "new registration", func(ev Event) bool { return ev.Token == 8 })
	if err := r.Deregister(c, 8); err != nil {
		t.Fatal(err)
	}
}

func TestUringRegisterErrors(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	if err := r.Register(-1, 1, Read); !errors.Is(err, unix.EBADF) {
		t.Errorf("Register(-1) = %v, want EBADF", err)
	}
	if err := r.Register(a, 1, Read); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(a, 2, Read); !errors.Is(err, unix.EEXIST) {
		t.Errorf("second Register of fd = %v, want EEXIST", err)
	}
	if err := r.Deregister(a, 2); !errors.Is(err, unix.ENOENT) {
		t.Errorf("Deregister with the wrong token = %v, want ENOENT", err)
	}
	if err := r.Deregister(b, 1); !errors.Is(err, unix.ENOENT) {
		t.Errorf("Deregister of an unregistered fd = %v, want ENOENT", err)
	}
	if err := r.Deregister(a, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Deregister(a, 1); !errors.Is(err, unix.ENOENT) {
		t.Errorf("double Deregister = %v, want ENOENT", err)
	}
	// An fd number that is not open: the kernel fails the poll, reported once as an
	// Error readiness, and the registration is gone.
	bad := 1 << 20
	if err := r.Register(bad, 3, Read); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "error readiness for a bad fd", func(ev Event) bool {
		return ev.Token == 3 && ev.Ready&Error != 0 && ev.Res == -int32(unix.EBADF)
	})
	if got, n := eventsFor(drainEvents(t, r), 3); n != 0 {
		t.Errorf("bad fd reported again: %b", got)
	}
	if err := r.Deregister(bad, 3); !errors.Is(err, unix.ENOENT) {
		t.Errorf("Deregister of the failed registration = %v, want ENOENT", err)
	}
}

// TestUringConcurrentRegisterWakePoll runs goroutines that register, write to,
// deregister and close socketpairs and call Wake while one goroutine polls: under -race
// this checks the submission lock; it also checks that no Poll begun after a
// Deregister returned reports an event for its token (tokens are never reused).
func TestUringConcurrentRegisterWakePoll(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 4})
	const workers, rounds = 8, 200
	var mu sync.Mutex
	var clock atomic.Uint64
	deregisteredAt := map[uint64]uint64{} // token -> clock reading after Deregister returned
	stop := make(chan struct{})
	pollDone := make(chan error, 1)
	go func() {
		evs := make([]Event, 16)
		for {
			select {
			case <-stop:
				pollDone <- nil
				return
			default:
			}
			start := clock.Add(1)
			n, err := r.Poll(evs, 10*time.Millisecond)
			if err != nil {
				pollDone <- err
				return
			}
			mu.Lock()
			for _, ev := range evs[:n] {
				if ev.Op != OpReady {
					mu.Unlock()
					pollDone <- errors.New("unexpected non-readiness event")
					return
				}
				// A Deregister that returned before this Poll began must hide
				// every later event of its token.
				if at, ok := deregisteredAt[ev.Token]; ok && at < start {
					t.Errorf("event %+v for a token deregistered before the Poll began", ev)
				}
			}
			mu.Unlock()
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				tok := uint64(w)<<32 | uint64(i)
				a, b := socketpair(t)
				if err := r.Register(a, tok, Read|Write); err != nil {
					t.Error(err)
					return
				}
				unix.Write(b, []byte{1})
				if i%3 == 0 {
					r.Flush()
				}
				r.Wake()
				if err := r.Deregister(a, tok); err != nil {
					t.Error(err)
					return
				}
				at := clock.Add(1)
				mu.Lock()
				deregisteredAt[tok] = at
				mu.Unlock()
				unix.Close(a)
				unix.Close(b)
			}
		}()
	}
	wg.Wait()
	close(stop)
	r.Wake()
	if err := <-pollDone; err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	regs := r.nregs
	r.mu.Unlock()
	if regs != 0 {
		t.Errorf("%d registrations left after every fd was deregistered", regs)
	}
	// Every removal completes: the kernel's in-flight count drains to the wake poll.
	deadline := time.Now().Add(10 * time.Second)
	for {
		drainEvents(t, r)
		r.mu.Lock()
		left := r.inflight
		r.mu.Unlock()
		if left == 1 {
			break
		}
		if time.Now().After(deadline) {
			r.mu.Lock()
			for i, s := range r.slots {
				if s.kind != slotFree {
					t.Logf("slot %d: kind %d dead %v fd %d token %#x", i, s.kind, s.dead, s.fd, s.token)
				}
			}
			t.Logf("backlog %d, sq local %d head %d", len(r.backlog), r.sqLocal, *r.sqHead)
			r.mu.Unlock()
			t.Fatalf("%d operations in flight, want only the wake poll", left)
		}
	}
}
