//go:build linux

package poller

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A hostile pass over io_uring's one-shot readiness arming (IOUringConfig.OneShotReadiness):
// Arm, armOnceLocked, completeOnceLocked, dropOnceLocked and registrationLocked.

// hostile14Census is the poller's bookkeeping, read under its lock: readiness slots,
// those armed, cancellations not yet completed, operations in flight (the wake poll is
// one), registrations.
type hostile14Census struct {
	polls, armed, cancels, inflight, regs, backlog int
}

func hostile14Count(r *ioUring) hostile14Census {
	r.mu.Lock()
	defer r.mu.Unlock()
	var c hostile14Census
	for i := range r.slots {
		switch s := &r.slots[i]; s.kind {
		case slotPoll:
			c.polls++
			if s.armed {
				c.armed++
			}
		case slotCancel:
			c.cancels++
		}
	}
	c.inflight, c.regs, c.backlog = r.inflight, r.nregs, len(r.backlog)
	return c
}

// hostile14Idle is the census of a ring with nothing registered: only the wake poll in
// flight.
var hostile14Idle = hostile14Census{inflight: 1}

// hostile14NoPanic runs f and turns a panic into an error.
func hostile14NoPanic(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// hostile14Tally counts the OpReady events per token and direction: a read event is
// one with Readable, a write event one with Writable (one event may be both, as a
// hang-up is).
type hostile14Tally struct {
	reads, writes map[uint64]int
	all           map[uint64][]Event
}

func newHostile14Tally() *hostile14Tally {
	return &hostile14Tally{reads: map[uint64]int{}, writes: map[uint64]int{}, all: map[uint64][]Event{}}
}

func (c *hostile14Tally) add(evs []Event) {
	for _, ev := range evs {
		if ev.Op != OpReady {
			continue
		}
		c.all[ev.Token] = append(c.all[ev.Token], ev)
		if ev.Ready&Readable != 0 {
			c.reads[ev.Token]++
		}
		if ev.Ready&Writable != 0 {
			c.writes[ev.Token]++
		}
	}
}

// hostile14PollUntil polls r with an events slice of evLen (small, to make reaping stop
// short of the CQ ring's end) until done holds for the tally, then drains what else
// comes; it fails after 20 s.
func hostile14PollUntil(t *testing.T, r *ioUring, evLen int, c *hostile14Tally, what string, done func() bool) {
	t.Helper()
	evs := make([]Event, evLen)
	deadline := time.Now().Add(20 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("no complete set of events for %s within 20s (reads %d tokens, writes %d tokens)", what, len(c.reads), len(c.writes))
		}
		n, err := r.Poll(evs, 50*time.Millisecond)
		if err != nil {
			t.Fatalf("Poll waiting for %s: %v", what, err)
		}
		c.add(evs[:n])
	}
	c.add(drainEvents(t, r))
}

// hostile14FillSendBuffer writes into fd until its send buffer is full (EAGAIN).
func hostile14FillSendBuffer(t *testing.T, fd int) {
	t.Helper()
	buf := make([]byte, 64<<10)
	for range 1 << 16 {
		if _, err := unix.Write(fd, buf); err == unix.EAGAIN {
			return
		} else if err != nil {
			t.Fatalf("filling the send buffer: %v", err)
		}
	}
	t.Fatal("the send buffer never filled")
}

// Arm of an fd that has no registration with that token is refused with a clear error,
// arms nothing and never panics: a negative fd (regression: it indexed the registration
// table with -1 and panicked, in Arm and in Deregister), a number never registered, one
// beyond the dense table or beyond int32, a stale token on a live registration, and a
// registration already deregistered.
func TestHostile14ArmUnknownRegistration(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	if _, err := unix.Write(b, []byte("data")); err != nil { // a is readable and writable
		t.Fatal(err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !(errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EBADF)) {
			t.Errorf("%s: %v, want an error wrapping ENOENT or EBADF", what, err)
		}
	}
	for _, fd := range []int{-1, -2, math.MinInt32, a, uringDenseFds + 7, math.MaxInt32 + 1, math.MaxInt} {
		for _, in := range []Interest{Read, Write, Read | Write} {
			refused(fmt.Sprintf("Arm(%d, %v) unregistered", fd, in), hostile14NoPanic(func() error { return r.Arm(fd, 1, in) }))
		}
		refused(fmt.Sprintf("Deregister(%d) unregistered", fd), hostile14NoPanic(func() error { return r.Deregister(fd, 1) }))
	}
	if got := hostile14Count(r); got != hostile14Idle {
		t.Fatalf("refused Arms left %+v, want %+v", got, hostile14Idle)
	}
	// The multishot form shares the lookup.
	m := newTestUring(t, IOUringConfig{})
	refused("multishot Arm(-1)", hostile14NoPanic(func() error { return m.Arm(-1, 1, Read) }))
	refused("multishot Deregister(-1)", hostile14NoPanic(func() error { return m.Deregister(-1, 1) }))
	if err := r.Register(a, 5, Read|Write); err != nil {
		t.Fatal(err)
	}
	refused("Arm with a stale token", r.Arm(a, 6, Read|Write))
	if got := hostile14Count(r); got.armed != 0 || got.polls != 1 {
		t.Fatalf("an Arm with a stale token left %+v, want one unarmed slot", got)
	}
	if evs := drainEvents(t, r); len(evs) != 0 {
		t.Fatalf("refused Arms produced events: %+v", evs)
	}
	if err := r.Deregister(a, 5); err != nil {
		t.Fatal(err)
	}
	refused("Arm after Deregister", r.Arm(a, 5, Read|Write))
	if err := r.Register(a, 7, Read|Write); err != nil {
		t.Fatal(err)
	}
	refused("Arm with the token of the fd's earlier registration", r.Arm(a, 5, Read|Write))
	if evs := drainEvents(t, r); len(evs) != 0 {
		t.Fatalf("refused Arms produced events: %+v", evs)
	}
	if err := r.Deregister(a, 7); err != nil {
		t.Fatal(err)
	}
	drainEvents(t, r)
	if got := hostile14Count(r); got != hostile14Idle {
		t.Fatalf("after Deregister: %+v, want %+v", got, hostile14Idle)
	}
}

// hostile14WaitCQ waits until the CQ ring holds at least n completions (the kernel runs
// the task work that posts them at our next system call).
func hostile14WaitCQ(t *testing.T, r *ioUring, n uint32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadUint32(r.cqTail)-atomic.LoadUint32(r.cqHead) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d completions in the CQ ring after 10s", n)
		}
		uringEnter(r.fd, 0, 0, uringEnterGetEvents, nil, 0) // run the task work, reap nothing
		time.Sleep(time.Millisecond)
	}
}

// On a socket both readable and writable, arming both directions again and again before
// a Poll reaps (queued, or with the completions already posted) gives exactly one event
// per direction: Readable without Writable for the read slot, Writable without Readable
// for the write one. Nothing more comes until armed again.
func TestHostile14ArmRepeatedOneEventPerDirection(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, posted := range []bool{false, true} {
		t.Run(fmt.Sprintf("posted=%v", posted), func(t *testing.T) {
			r := newOneShot(t)
			a, b := socketpair(t)
			defer closeFd(t, a)
			defer closeFd(t, b)
			if _, err := unix.Write(b, []byte("xy")); err != nil {
				t.Fatal(err)
			}
			if err := r.Register(a, 11, Read|Write); err != nil {
				t.Fatal(err)
			}
			for round := range 3 {
				if err := r.Arm(a, 11, Read|Write); err != nil {
					t.Fatal(err)
				}
				if posted {
					if err := r.Flush(); err != nil {
						t.Fatal(err)
					}
					hostile14WaitCQ(t, r, 2)
				}
				for range 3 {
					for _, in := range []Interest{Read, Write, Read | Write} {
						if err := r.Arm(a, 11, in); err != nil {
							t.Fatal(err)
						}
					}
				}
				if got := hostile14Count(r); got.armed != 2 || got.polls != 2 {
					t.Fatalf("round %d: armed both directions many times: %+v, want two armed slots", round, got)
				}
				c := newHostile14Tally()
				hostile14PollUntil(t, r, 64, c, "both directions", func() bool { return c.reads[11] > 0 && c.writes[11] > 0 })
				evs := c.all[11]
				if len(evs) != 2 {
					t.Fatalf("round %d: %d events, want 2 (one per direction): %+v", round, len(evs), evs)
				}
				for _, ev := range evs {
					if ev.Ready != Readable && ev.Ready != Writable {
						t.Fatalf("round %d: event %+v, want Readable alone or Writable alone", round, ev)
					}
				}
				if got := hostile14Count(r); got.armed != 0 || got.polls != 1 {
					t.Fatalf("round %d: after both fired: %+v, want the read slot alone, unarmed", round, got)
				}
			}
			if err := r.Deregister(a, 11); err != nil {
				t.Fatal(err)
			}
			drainEvents(t, r)
			if got := hostile14Count(r); got != hostile14Idle {
				t.Fatalf("after Deregister: %+v, want %+v", got, hostile14Idle)
			}
		})
	}
}

// Deregister with both directions armed, then close the fd and put a new socket at the
// same number, registered with a new token: whatever stage the old arms were at
// (queued, in the kernel, completed but not reaped), no event carries the old token,
// the new registration gets exactly one event per direction for its own arms, the old
// socket is really closed (its peer reads end of file: the ring let its file go), and
// nothing is left in the poller's books once the new one is deregistered.
func TestHostile14DeregisterArmedThenReuseNumber(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, stage := range []string{"queued", "in-kernel", "posted"} {
		t.Run(stage, func(t *testing.T) {
			r := newOneShot(t)
			a, b := socketpair(t)
			defer closeFd(t, b)
			const oldTok, newTok = 0x0100_0001, 0x0200_0001
			if err := r.Register(a, oldTok, Read|Write); err != nil {
				t.Fatal(err)
			}
			switch stage {
			case "in-kernel": // neither direction ready: both polls wait in the kernel
				hostile14FillSendBuffer(t, a)
			case "posted": // both ready: both complete at submission
				if _, err := unix.Write(b, []byte("old")); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Arm(a, oldTok, Read|Write); err != nil {
				t.Fatal(err)
			}
			if stage != "queued" {
				if err := r.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if stage == "posted" {
				hostile14WaitCQ(t, r, 2)
			}
			if err := r.Deregister(a, oldTok); err != nil {
				t.Fatal(err)
			}
			if err := r.Arm(a, oldTok, Read|Write); !errors.Is(err, unix.ENOENT) {
				t.Fatalf("Arm after Deregister: %v, want ENOENT", err)
			}
			if err := unix.Close(a); err != nil {
				t.Fatal(err)
			}
			// A new connection at the same number.
			c, d := socketpair(t) // usually at the number just freed already
			if d == a {
				c, d = d, c
			}
			defer closeFd(t, d)
			if c != a {
				if err := unix.Dup3(c, a, unix.O_CLOEXEC); err != nil {
					t.Fatalf("dup3 onto the old number: %v", err)
				}
				closeFd(t, c)
			}
			defer closeFd(t, a)
			if err := r.Register(a, newTok, Read|Write); err != nil {
				t.Fatalf("Register of the reused number: %v", err)
			}
			if _, err := unix.Write(d, []byte("new")); err != nil {
				t.Fatal(err)
			}
			if err := r.Arm(a, newTok, Read|Write); err != nil {
				t.Fatal(err)
			}
			tally := newHostile14Tally()
			hostile14PollUntil(t, r, 3, tally, "the new registration", func() bool {
				return tally.reads[newTok] > 0 && tally.writes[newTok] > 0
			})
			if evs := tally.all[oldTok]; len(evs) != 0 {
				t.Fatalf("events with the deregistered token: %+v", evs)
			}
			if evs := tally.all[newTok]; len(evs) != 2 || tally.reads[newTok] != 1 || tally.writes[newTok] != 1 {
				t.Fatalf("new registration: %+v, want one Readable and one Writable event", evs)
			}
			for tok := range tally.all {
				if tok != newTok {
					t.Fatalf("an event with an unknown token %#x: %+v", tok, tally.all[tok])
				}
			}
			buf := make([]byte, 8)
			if n, err := unix.Read(a, buf); err != nil || string(buf[:n]) != "new" {
				t.Fatalf("reading the new socket: %q, %v, want \"new\"", buf[:n], err)
			}
			// The old socket's file was let go: its peer sees the close.
			deadline := time.Now().Add(10 * time.Second)
			big := make([]byte, 64<<10) // "in-kernel" filled the old socket's send buffer
			for {
				n, err := unix.Read(b, big)
				if n == 0 && err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the old socket's peer did not see end of file: %d, %v", n, err)
				}
				if err == unix.EAGAIN {
					drainEvents(t, r)
				}
			}
			if err := r.Deregister(a, newTok); err != nil {
				t.Fatal(err)
			}
			drainEvents(t, r)
			if got := hostile14Count(r); got != hostile14Idle {
				t.Fatalf("after both registrations ended: %+v, want %+v", got, hostile14Idle)
			}
		})
	}
}

// Far more Arms between two Polls than the SQ ring holds (the backlog) and than the CQ
// ring holds (the kernel's overflow list), reaped a few at a time: every direction of
// every registration reports exactly once.
func TestHostile14ArmBurstBeyondRings(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8, OneShotReadiness: true})
	const n = 400
	fds := make([]int, n)
	for i := range fds {
		a, b := socketpair(t)
		t.Cleanup(func() { unix.Close(a); unix.Close(b) })
		if _, err := unix.Write(b, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		fds[i] = a
		if err := r.Register(a, uint64(i+1), Read|Write); err != nil {
			t.Fatal(err)
		}
	}
	for pass := range 2 {
		for i, fd := range fds {
			if err := r.Arm(fd, uint64(i+1), Read|Write); err != nil {
				t.Fatal(err)
			}
			if err := r.Arm(fd, uint64(i+1), Read); err != nil { // already armed: nothing
				t.Fatal(err)
			}
		}
		if got := hostile14Count(r); got.armed != 2*n || got.backlog == 0 {
			t.Fatalf("pass %d: after the burst %+v, want %d armed and a backlog", pass, got, 2*n)
		}
		tally := newHostile14Tally()
		hostile14PollUntil(t, r, 7, tally, fmt.Sprintf("pass %d", pass), func() bool { return len(tally.reads) == n && len(tally.writes) == n })
		for i := range n {
			tok := uint64(i + 1)
			if evs := tally.all[tok]; len(evs) != 2 || tally.reads[tok] != 1 || tally.writes[tok] != 1 {
				t.Fatalf("pass %d: token %d: %+v, want one Readable and one Writable event", pass, tok, evs)
			}
		}
		if len(tally.all) != n {
			t.Fatalf("pass %d: events for %d tokens, want %d", pass, len(tally.all), n)
		}
		if got := hostile14Count(r); got.armed != 0 || got.polls != n || got.inflight != 1 || got.backlog != 0 {
			t.Fatalf("pass %d: after the events %+v, want %d unarmed read slots and only the wake poll in flight", pass, got, n)
		}
	}
	for i, fd := range fds {
		if err := r.Deregister(fd, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	drainEvents(t, r)
	if got := hostile14Count(r); got != hostile14Idle {
		t.Fatalf("after Deregister of all: %+v, want %+v", got, hostile14Idle)
	}
}

// Arms, Flushes, Deregisters and Registers from several goroutines while another closes
// the ring: no panic, every failure is os.ErrClosed, Close reaps every poll in flight
// (it returns nil, leaving nothing in flight), and every call after it fails with
// os.ErrClosed.
func TestHostile14ArmRacingClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for round := range 5 {
		p, err := NewIOUringConfig(IOUringConfig{Entries: 16, OneShotReadiness: true})
		if err != nil {
			if errors.Is(err, ErrUnsupported) {
				t.Skipf("io_uring unavailable: %v", err)
			}
			t.Fatal(err)
		}
		r := p.(*ioUring)
		const workers, per = 4, 16
		type pair struct{ a, b int }
		socks := make([][]pair, workers)
		for w := range workers {
			for i := range per {
				a, b := socketpair(t)
				defer unix.Close(a)
				defer unix.Close(b)
				if i%2 == 0 {
					unix.Write(b, []byte("r")) // half readable: completions during Close
				}
				if err := r.Register(a, uint64(w<<8|i), Read|Write); err != nil {
					t.Fatal(err)
				}
				socks[w] = append(socks[w], pair{a, b})
			}
		}
		var ops atomic.Int64
		var wg sync.WaitGroup
		errc := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fail := func(err error) bool {
					if err == nil {
						return false
					}
					if !errors.Is(err, os.ErrClosed) {
						errc <- fmt.Errorf("worker %d: %w", w, err)
					}
					return true
				}
				for k := 0; ; k++ {
					pr := socks[w][k%per]
					tok := uint64(w<<8 | k%per)
					err := hostile14NoPanic(func() error {
						if err := r.Arm(pr.a, tok, Read|Write); err != nil {
							return err
						}
						if k%3 == 0 {
							if err := r.Flush(); err != nil {
								return err
							}
						}
						if k%7 == 0 {
							if err := r.Deregister(pr.a, tok); err != nil {
								return err
							}
							return r.Register(pr.a, tok, Read|Write)
						}
						return nil
					})
					ops.Add(1)
					if fail(err) {
						return
					}
				}
			}()
		}
		deadline := time.Now().Add(10 * time.Second)
		for ops.Load() < int64(200*(round+1)) && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		closed := make(chan error, 1)
		go func() { closed <- r.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("round %d: Close racing Arms: %v", round, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: Close did not return", round)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: arming goroutines did not stop after Close", round)
		}
		close(errc)
		for err := range errc {
			t.Errorf("round %d: %v", round, err)
		}
		if got := hostile14Count(r); got.inflight != 0 {
			t.Fatalf("round %d: after Close: %+v, want nothing in flight", round, got)
		}
		for _, err := range []error{
			r.Arm(socks[0][0].a, 0, Read), r.Flush(), r.Deregister(socks[0][0].a, 0), r.Register(socks[0][1].a, 99, Read),
		} {
			if !errors.Is(err, os.ErrClosed) {
				t.Fatalf("round %d: call after Close: %v, want os.ErrClosed", round, err)
			}
		}
	}
}

// hostile14TCPPair returns a connected pair of TCP sockets on loopback, both
// non-blocking, with small buffers (so that a send buffer fills fast).
func hostile14TCPPair(t *testing.T) (server, client int) {
	t.Helper()
	l, port := loopbackListener(t)
	defer unix.Close(l)
	client = dialLoopback(t, port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		fd, _, err := unix.Accept4(l, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err == nil {
			server = fd
			break
		}
		if err != unix.EAGAIN || time.Now().After(deadline) {
			t.Fatalf("accept: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := unix.SetNonblock(client, true); err != nil {
		t.Fatal(err)
	}
	unix.SetsockoptInt(server, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
	unix.SetsockoptInt(client, unix.SOL_SOCKET, unix.SO_RCVBUF, 4096)
	return server, client
}

// A peer that goes away while only the write direction is armed (the send buffer is
// full): the write slot reports it (a hang-up or an error, which a writer waiting for
// Writable sees), once, and the read direction, unarmed, reports nothing until armed;
// armed then, it reports at once.
func TestHostile14ArmWriteOnlyPeerGone(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, kind := range []string{"unix-close", "tcp-rst"} {
		t.Run(kind, func(t *testing.T) {
			r := newOneShot(t)
			var a, b int
			if kind == "unix-close" {
				a, b = socketpair(t)
			} else {
				a, b = hostile14TCPPair(t)
			}
			defer closeFd(t, a)
			if err := r.Register(a, 21, Read|Write); err != nil {
				t.Fatal(err)
			}
			if kind == "tcp-rst" {
				// Filled once, a TCP send buffer gets room back when the bytes in
				// flight are acknowledged (a delayed ACK comes up to 40 ms later): a
				// true Writable that the check below would take for the poller's.
				hostile15FillSteady(t, a)
			} else {
				hostile14FillSendBuffer(t, a)
			}
			if err := r.Arm(a, 21, Write); err != nil {
				t.Fatal(err)
			}
			if evs := drainEvents(t, r); len(evs) != 0 {
				t.Fatalf("full send buffer, peer alive: %+v", evs)
			}
			closeFd(t, b) // TCP: unread data in b's receive queue makes this a reset
			tally := newHostile14Tally()
			hostile14PollUntil(t, r, 4, tally, "the peer's departure", func() bool { return len(tally.all[21]) > 0 })
			evs := tally.all[21]
			if len(evs) != 1 {
				t.Fatalf("write direction after the peer left: %+v, want one event", evs)
			}
			if ev := evs[0]; ev.Ready&Writable == 0 || ev.Ready&(WriteClosed|Error) == 0 {
				t.Fatalf("write direction after the peer left: %+v, want Writable with WriteClosed or Error", ev)
			}
			if _, err := unix.Write(a, []byte("x")); err == nil || err == unix.EAGAIN {
				t.Fatalf("write after the peer left: %v, want an error", err)
			}
			if err := r.Arm(a, 21, Read); err != nil {
				t.Fatal(err)
			}
			tally = newHostile14Tally()
			hostile14PollUntil(t, r, 4, tally, "the read direction", func() bool { return len(tally.all[21]) > 0 })
			if evs := tally.all[21]; len(evs) != 1 || evs[0].Ready&Readable == 0 {
				t.Fatalf("read direction armed after the peer left: %+v, want one Readable event", evs)
			}
			if err := r.Deregister(a, 21); err != nil {
				t.Fatal(err)
			}
			drainEvents(t, r)
			if got := hostile14Count(r); got != hostile14Idle {
				t.Fatalf("after Deregister: %+v, want %+v", got, hostile14Idle)
			}
		})
	}
}

// Armed after the peer reset the connection (and again after the error was read): each
// armed direction reports once, with the error or hang-up bits, at once; nothing waits
// for an edge that will never come.
func TestHostile14ArmAfterPeerReset(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := hostile14TCPPair(t)
	defer closeFd(t, a)
	if err := unix.SetsockoptLinger(b, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}); err != nil {
		t.Fatal(err)
	}
	closeFd(t, b) // RST
	if err := r.Register(a, 31, Read|Write); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		if err := r.Arm(a, 31, Read|Write); err != nil {
			t.Fatal(err)
		}
		tally := newHostile14Tally()
		hostile14PollUntil(t, r, 4, tally, fmt.Sprintf("round %d", round), func() bool { return tally.reads[31] > 0 && tally.writes[31] > 0 })
		evs := tally.all[31]
		if len(evs) != 2 {
			t.Fatalf("round %d: %+v, want one event per armed direction", round, evs)
		}
		for _, ev := range evs {
			if ev.Ready&(Error|WriteClosed|ReadClosed) == 0 {
				t.Fatalf("round %d: %+v after a reset, want error or hang-up bits", round, ev)
			}
		}
		if round == 0 {
			buf := make([]byte, 16)
			if _, err := unix.Read(a, buf); err != unix.ECONNRESET {
				t.Fatalf("read after the reset: %v, want ECONNRESET", err)
			}
		}
	}
	if err := r.Deregister(a, 31); err != nil {
		t.Fatal(err)
	}
	drainEvents(t, r)
	if got := hostile14Count(r); got != hostile14Idle {
		t.Fatalf("after Deregister: %+v, want %+v", got, hostile14Idle)
	}
}

// A poll armed and submitted by an OS thread that then exits (a goroutine locked to its
// thread returns without unlocking, and Go ends the thread): the readiness still comes,
// whether the kernel keeps the poll (posting through its fallback) or cancels it with
// -ECANCELED (which completeOnceLocked re-arms). No error event.
func TestHostile14ArmFromExitingThread(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	if err := r.Register(a, 41, Read|Write); err != nil {
		t.Fatal(err)
	}
	hostile14FillSendBuffer(t, a)
	armOnDyingThread := func(in Interest) {
		t.Helper()
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			if err := r.Arm(a, 41, in); err != nil {
				errc <- err
				return
			}
			errc <- r.Flush()
		}()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the arming goroutine did not finish")
		}
		time.Sleep(20 * time.Millisecond) // let the thread go (not asserted on)
		for _, ev := range drainEvents(t, r) {
			t.Fatalf("nothing ready yet, but: %+v", ev)
		}
	}
	armOnDyingThread(Read)
	if _, err := unix.Write(b, []byte("late")); err != nil {
		t.Fatal(err)
	}
	tally := newHostile14Tally()
	hostile14PollUntil(t, r, 4, tally, "the read armed by an exited thread", func() bool { return tally.reads[41] > 0 })
	armOnDyingThread(Write)
	buf := make([]byte, 64<<10)
	for {
		if _, err := unix.Read(b, buf); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	hostile14PollUntil(t, r, 4, tally, "the write armed by an exited thread", func() bool { return tally.writes[41] > 0 })
	if evs := tally.all[41]; len(evs) != 2 {
		t.Fatalf("%+v, want one read and one write event", evs)
	}
	for _, ev := range tally.all[41] {
		if ev.Ready&Error != 0 || ev.Res < 0 {
			t.Fatalf("error event for a poll armed by an exited thread: %+v", ev)
		}
	}
}

// Arm of a registration whose fd was closed without Deregister (a misuse the one-shot
// form survives: an unarmed registration holds no file): each armed direction reports
// one error readiness with Res = -EBADF, the next Arm tries again, and Deregister then
// ends it cleanly, write slot included.
func TestHostile14ArmClosedFd(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := socketpair(t)
	defer closeFd(t, b)
	// A high number, which nothing else in the process takes when it is freed
	// (descriptors are handed out lowest first).
	const high = 9000
	if hostile11FdOpen(high) {
		t.Skipf("descriptor %d is in use", high)
	}
	if err := unix.Dup3(a, high, unix.O_CLOEXEC); err != nil {
		t.Skipf("dup3 to %d: %v", high, err)
	}
	closeFd(t, a)
	if err := r.Register(high, 51, Read|Write); err != nil {
		t.Fatal(err)
	}
	closeFd(t, high)
	for round := range 2 {
		if err := r.Arm(high, 51, Read|Write); err != nil {
			t.Fatal(err)
		}
		tally := newHostile14Tally()
		hostile14PollUntil(t, r, 4, tally, "the refused polls", func() bool { return len(tally.all[51]) >= 2 })
		evs := tally.all[51]
		if len(evs) != 2 {
			t.Fatalf("round %d: %+v, want one event per direction", round, evs)
		}
		for _, ev := range evs {
			if ev.Ready&Error == 0 || ev.Res != -int32(unix.EBADF) {
				t.Fatalf("round %d: %+v, want an Error readiness with Res -EBADF", round, ev)
			}
		}
	}
	if err := r.Deregister(high, 51); err != nil {
		t.Fatal(err)
	}
	drainEvents(t, r)
	if got := hostile14Count(r); got != hostile14Idle {
		t.Fatalf("after Deregister: %+v, want %+v", got, hostile14Idle)
	}
}

// A write direction armed and fired many times (its slot is freed at every readiness
// and made again by the next Arm), interleaved with read arms: the slot table does not
// grow with the count.
func TestHostile14ArmWriteSlotChurn(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	if err := r.Register(a, 61, Read|Write); err != nil {
		t.Fatal(err)
	}
	evs := make([]Event, 8)
	for i := range 2000 {
		in := Write
		if i%3 == 0 {
			in = Read | Write
			unix.Write(b, []byte("r"))
		}
		if err := r.Arm(a, 61, in); err != nil {
			t.Fatal(err)
		}
		want := 1
		if in&Read != 0 {
			want = 2
		}
		got := 0
		deadline := time.Now().Add(10 * time.Second)
		for got < want {
			if time.Now().After(deadline) {
				t.Fatalf("iteration %d: %d of %d events", i, got, want)
			}
			n, err := r.Poll(evs, 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
		if in&Read != 0 {
			unix.Read(a, make([]byte, 8))
		}
	}
	r.mu.Lock()
	slots := len(r.slots)
	r.mu.Unlock()
	if slots > 16 {
		t.Fatalf("%d slots after 2000 arms of one registration: the write slot leaks", slots)
	}
	if got := hostile14Count(r); got.polls != 1 || got.armed != 0 {
		t.Fatalf("after the churn: %+v, want the read slot alone, unarmed", got)
	}
}

// Arms flushed from other goroutines while a Poll waits (through Go's netpoller, or
// blocked in io_uring_enter; with and without COOP_TASKRUN), as the driver does when a
// worker is parked in the poller: each arming's readiness ends the waiting Poll, round
// after round, in both directions.
func TestHostile14ArmWhilePollWaits(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	for _, blocking := range []bool{false, true} {
		for _, coop := range []bool{true, false} {
			t.Run(fmt.Sprintf("blocking=%v/coop=%v", blocking, coop), func(t *testing.T) {
				uringTestNoNetpoll, uringTestNoCoopTaskrun = blocking, !coop
				r := newOneShot(t)
				uringTestNoNetpoll, uringTestNoCoopTaskrun = false, false
				a, b := socketpair(t)
				defer closeFd(t, a)
				defer closeFd(t, b)
				if err := r.Register(a, 71, Read|Write); err != nil {
					t.Fatal(err)
				}
				hostile14FillSendBuffer(t, a)
				events := make(chan Event, 16)
				var stop atomic.Bool
				done := make(chan error, 1)
				go func() {
					evs := make([]Event, 4)
					for !stop.Load() {
						n, err := r.Poll(evs, -1)
						if err != nil {
							done <- err
							return
						}
						for _, ev := range evs[:n] {
							events <- ev
						}
					}
					done <- nil
				}()
				defer func() {
					stop.Store(true)
					for {
						r.Wake()
						select {
						case err := <-done:
							if err != nil {
								t.Errorf("Poll: %v", err)
							}
							return
						case <-time.After(10 * time.Millisecond):
						}
					}
				}()
				big := make([]byte, 64<<10)
				for round := range 60 {
					write := round%2 == 1
					in := Read
					if write {
						in = Write
					}
					armed := make(chan error, 1)
					go func() {
						if err := r.Arm(a, 71, in); err != nil {
							armed <- err
							return
						}
						armed <- r.Flush()
					}()
					if err := <-armed; err != nil {
						t.Fatal(err)
					}
					if write { // the peer drains: room again
						for {
							if _, err := unix.Read(b, big); err == unix.EAGAIN {
								break
							} else if err != nil {
								t.Fatal(err)
							}
						}
					} else if _, err := unix.Write(b, []byte("r")); err != nil {
						t.Fatal(err)
					}
					select {
					case ev := <-events:
						want := Readable
						if write {
							want = Writable
						}
						if ev.Token != 71 || ev.Ready != want {
							t.Fatalf("round %d: %+v, want token 71 with %v alone", round, ev, want)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("round %d: the waiting Poll did not report the %v flushed by another goroutine", round, in)
					}
					if write {
						hostile14FillSendBuffer(t, a)
					} else if _, err := unix.Read(a, big); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}
