//go:build linux

package poller

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A hostile pass on io_uring's one-shot readiness around shutdown, half-close, hang-up
// and errors: the write direction that turns multishot once POLLRDHUP is permanent
// (completeOnceLocked), waited on many times, reset under, deregistered with its number
// reused, closed with the ring; and our own shutdowns while a write is armed.

// hostile15Pair returns a connected, non-blocking stream pair (a, b): "tcp" on loopback,
// a with a small send buffer and b with a small receive buffer set before it connects
// (shrinking a connected TCP socket's receive buffer below the window it advertised
// makes the kernel drop and back off for seconds), or "unix", a socketpair.
func hostile15Pair(t *testing.T, network string) (a, b int) {
	t.Helper()
	if network == "unix" {
		return socketpair(t)
	}
	l, port := loopbackListener(t)
	defer unix.Close(l)
	b, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetsockoptInt(b, unix.SOL_SOCKET, unix.SO_RCVBUF, 8192); err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(b, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(b, true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		fd, _, err := unix.Accept4(l, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err == nil {
			a = fd
			break
		}
		if err != unix.EAGAIN || time.Now().After(deadline) {
			t.Fatalf("accept: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	unix.SetsockoptInt(a, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
	return a, b
}

// hostile15WaitRevents waits (poll(2), 10 s at most) until fd reports one of want.
func hostile15WaitRevents(t *testing.T, fd int, want int16) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p := []unix.PollFd{{Fd: int32(fd), Events: want}}
		if n, err := unix.Poll(p, 100); err != nil && err != unix.EINTR {
			t.Fatal(err)
		} else if n == 1 && p[0].Revents&want != 0 {
			return
		}
	}
	t.Fatalf("fd %d: no revents %#x within 10s", fd, want)
}

// hostile15FillSteady fills fd's send buffer until it stays full: a TCP socket's
// buffer filled once gets room back as the bytes in flight are acknowledged (a delayed
// ACK comes up to 40 ms later), which is a true Writable, not the poller's mistake.
func hostile15FillSteady(t *testing.T, fd int) {
	t.Helper()
	for range 200 {
		hostile14FillSendBuffer(t, fd)
		time.Sleep(50 * time.Millisecond)
		if _, err := unix.Write(fd, []byte{0}); err == unix.EAGAIN {
			return
		} else if err != nil {
			t.Fatalf("filling the send buffer: %v", err)
		}
	}
	t.Fatal("the send buffer never stayed full")
}

// hostile15Writable reports whether poll(2) finds fd writable now.
func hostile15Writable(t *testing.T, fd int) bool {
	t.Helper()
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	if _, err := unix.Poll(p, 0); err != nil {
		t.Fatal(err)
	}
	return p[0].Revents&unix.POLLOUT != 0
}

// hostile15Drain reads fd (non-blocking) until EAGAIN and returns how much came.
func hostile15Drain(t *testing.T, fd int) int {
	t.Helper()
	buf := make([]byte, 64<<10)
	total := 0
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EAGAIN {
			return total
		}
		if err != nil {
			t.Fatalf("draining fd %d: %v", fd, err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

// hostile15WriteSlot returns the state of fd's write slot (ok false: none).
func hostile15WriteSlot(r *ioUring, fd int) (multi, armed, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ri, found := r.regLocked(fd)
	if !found || r.slots[ri].pair == 0 {
		return false, false, false
	}
	s := &r.slots[r.slots[ri].pair-1]
	return s.multi, s.armed, true
}

// A peer that has half-closed and then reads our answer a bit at a time: the write
// direction is waited on again and again (40 rounds of: fill the send buffer, arm for
// writing, the peer reads nothing for a while, then reads what is there; 12 rounds on
// TCP, whose buffer takes a while to stay full). Each round's
// room is reported as Writable; while the peer reads nothing no Writable comes and the
// poller stays quiet; the registration keeps at most its two slots (no slot per round),
// and after Deregister the ring is idle.
func TestHostile15MultiWriteManyWaits(t *testing.T) {
	defer watchdog(t, 90*time.Second)()
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			r := newOneShot(t)
			a, b := hostile15Pair(t, network)
			defer closeFd(t, a)
			defer closeFd(t, b)
			const tok = 41
			hostile15RegisterHalfClosed(t, r, a, b, tok)
			total := 0
			sawMulti := false
			rounds := 40
			if network == "tcp" {
				rounds = 12
			}
			for round := range rounds {
				// The multishot write poll posts at each wake-up of the socket, and the
				// peer's reads of the last round (and, on TCP, the acknowledgements
				// that come while the buffer is being filled) freed room several
				// times: those completions are reaped before the quiet window, and the
				// buffer checked still full after them. They are old news, as an
				// edge-triggered epoll's would be; a writer woken by one retries once.
				for i := 0; ; i++ {
					if network == "tcp" {
						hostile15FillSteady(t, a)
					} else {
						hostile14FillSendBuffer(t, a)
					}
					drainEvents(t, r)
					if _, err := unix.Write(a, []byte{0}); err == unix.EAGAIN {
						break
					}
					if i > 100 {
						t.Fatal("the send buffer never stayed full")
					}
				}
				if err := r.Arm(a, tok, Write); err != nil {
					t.Fatal(err)
				}
				quiet := hostile15DrainFor(t, r, 30*time.Millisecond)
				// A Writable now must be true: room can still come on TCP without the
				// peer reading (its receive queue collapsed into fewer buffers opens
				// the window a little), which poll(2) then confirms.
				for _, ev := range quiet {
					if ev.Token == tok && ev.Ready&Writable != 0 && !hostile15Writable(t, a) {
						t.Fatalf("round %d: Writable while the send buffer is full and the peer reads nothing: %+v", round, quiet)
					}
				}
				if len(quiet) > 4 {
					t.Fatalf("round %d: %d events in 30 ms while nothing changed: %+v", round, len(quiet), quiet[:4])
				}
				if multi, _, ok := hostile15WriteSlot(r, a); ok && multi {
					sawMulti = true
				}
				tally := newHostile14Tally()
				tally.add(quiet)
				polled := make([]Event, 16)
				deadline := time.Now().Add(20 * time.Second)
				for tally.writes[tok] == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("round %d: the peer read, and no Writable came (events %+v, census %+v)", round, tally.all[tok], hostile14Count(r))
					}
					hostile15Drain(t, b)
					n, err := r.Poll(polled, 5*time.Millisecond)
					if err != nil {
						t.Fatal(err)
					}
					tally.add(polled[:n])
				}
				total += len(tally.all[tok])
				if c := hostile14Count(r); c.polls > 2 || c.cancels != 0 || c.regs != 1 {
					t.Fatalf("round %d: census %+v, want at most the registration's two slots", round, c)
				}
			}
			if !sawMulti {
				t.Logf("the write direction never turned multishot (the room came before each arming?)")
			}
			t.Logf("%d events for %d write waits", total, rounds)
			if total > rounds*64 {
				t.Fatalf("%d events for %d write waits: a storm", total, rounds)
			}
			hostile15DeregisterIdle(t, r, a, tok)
		})
	}
}

// A registration whose write direction waits on a multishot poll (peer half-closed,
// send buffer full) is deregistered and its fd closed, and a new socket takes the same
// number and registers with a new token: the old registration never reports again
// (not when its cancellation completes, not when its old peer reads and frees room),
// and the new one reports exactly its own readiness. Two stages: the fd closed with the
// cancellation still queued, and closed after it reached the kernel.
func TestHostile15MultiWriteFdReuse(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, stage := range []string{"cancel-queued", "cancel-submitted"} {
		for _, network := range []string{"tcp", "unix"} {
			t.Run(stage+"/"+network, func(t *testing.T) {
				r := newOneShot(t)
				a, b := hostile15Pair(t, network)
				defer closeFd(t, b)
				const oldTok, newTok = 0x0100_0033, 0x0200_0033
				hostile15RegisterHalfClosed(t, r, a, b, oldTok)
				hostile14FillSendBuffer(t, a)
				if err := r.Arm(a, oldTok, Read|Write); err != nil {
					t.Fatal(err)
				}
				tally := newHostile14Tally()
				tally.add(hostile15DrainFor(t, r, 50*time.Millisecond))
				if multi, armed, ok := hostile15WriteSlot(r, a); !ok || !multi || !armed {
					t.Fatalf("write slot multi %v armed %v exists %v, want an armed multishot write poll (events %+v)", multi, armed, ok, tally.all[oldTok])
				}
				if err := r.Deregister(a, oldTok); err != nil {
					t.Fatal(err)
				}
				if stage == "cancel-submitted" {
					if err := r.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				if err := unix.Close(a); err != nil {
					t.Fatal(err)
				}
				c, d := socketpair(t)
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
				// The old peer reads: the old socket (still held by the kernel until
				// the cancellation lands) gets room.
				hostile15Drain(t, b)
				if err := r.Arm(a, newTok, Read); err != nil {
					t.Fatal(err)
				}
				after := newHostile14Tally()
				after.add(hostile15DrainFor(t, r, 100*time.Millisecond))
				if n := after.reads[newTok] + after.writes[newTok]; n != 0 {
					t.Fatalf("the new registration, with nothing to read, reported %+v", after.all[newTok])
				}
				if _, err := unix.Write(d, []byte("new")); err != nil {
					t.Fatal(err)
				}
				hostile14PollUntil(t, r, 4, after, "the new socket's data", func() bool { return after.reads[newTok] > 0 })
				if err := r.Arm(a, newTok, Write); err != nil {
					t.Fatal(err)
				}
				hostile14PollUntil(t, r, 4, after, "the new socket's send space", func() bool { return after.writes[newTok] > 0 })
				if evs := after.all[oldTok]; len(evs) != 0 {
					t.Fatalf("events with the deregistered token: %+v", evs)
				}
				if after.reads[newTok] != 1 || after.writes[newTok] != 1 || len(after.all[newTok]) != 2 {
					t.Fatalf("new registration: %+v, want one Readable and one Writable", after.all[newTok])
				}
				buf := make([]byte, 8)
				if n, err := unix.Read(a, buf); err != nil || string(buf[:n]) != "new" {
					t.Fatalf("reading the new socket: %q, %v", buf[:n], err)
				}
				// The old socket is gone for good: its peer sees the end of it.
				deadline := time.Now().Add(10 * time.Second)
				for {
					n, err := unix.Read(b, make([]byte, 64<<10))
					if (n == 0 && err == nil) || err == unix.ECONNRESET {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the old socket's peer never saw it close: %d, %v", n, err)
					}
					if err == unix.EAGAIN {
						drainEvents(t, r)
					}
				}
				hostile15DeregisterIdle(t, r, a, newTok) // both registrations ended
			})
		}
	}
}

// The peer resets the connection while our write direction waits on its multishot poll
// (it had half-closed first): the write direction reports the error or hang-up, the
// poller then stays quiet (no stream of events from the dead socket), a write fails,
// and Deregister leaves nothing.
func TestHostile15MultiWritePeerReset(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := hostile15Pair(t, "tcp")
	defer closeFd(t, a)
	const tok = 61
	hostile15RegisterHalfClosed(t, r, a, b, tok)
	hostile14FillSendBuffer(t, a)
	if err := r.Arm(a, tok, Write); err != nil {
		t.Fatal(err)
	}
	hostile15DrainFor(t, r, 30*time.Millisecond)
	if multi, _, ok := hostile15WriteSlot(r, a); !ok || !multi {
		t.Fatalf("write slot multi %v exists %v, want multishot", multi, ok)
	}
	if err := unix.SetsockoptLinger(b, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}); err != nil {
		t.Fatal(err)
	}
	closeFd(t, b)
	tally := newHostile14Tally()
	hostile14PollUntil(t, r, 4, tally, "the reset", func() bool {
		for _, ev := range tally.all[tok] {
			if ev.Ready&Writable != 0 && ev.Ready&(Error|WriteClosed) != 0 {
				return true
			}
		}
		return false
	})
	if _, err := unix.Write(a, []byte("x")); err == nil || err == unix.EAGAIN {
		t.Fatalf("write after the reset: %v, want an error", err)
	}
	if evs := hostile15DrainFor(t, r, 200*time.Millisecond); len(evs) > 4 {
		t.Fatalf("%d events in 200 ms from a reset socket: %+v", len(evs), evs[:4])
	}
	// Arming again after the error: one report per direction, at once, not a stream.
	if err := r.Arm(a, tok, Read|Write); err != nil {
		t.Fatal(err)
	}
	again := newHostile14Tally()
	hostile14PollUntil(t, r, 4, again, "arming after the reset", func() bool { return again.reads[tok] > 0 && again.writes[tok] > 0 })
	if evs := hostile15DrainFor(t, r, 100*time.Millisecond); len(evs) > 2 {
		t.Fatalf("events keep coming after one arming of a reset socket: %+v", evs)
	}
	hostile15DeregisterIdle(t, r, a, tok)
}

// Our own shutdown of the reading side while a write is armed on a full send buffer
// (the peer alive, reading nothing): every poll of the socket now reports POLLRDHUP, as
// after a peer's half-close. The write direction reports no Writable until room comes,
// does not loop, and reports Writable when the peer reads.
func TestHostile15OwnShutReadWithWriteArmed(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			r := newOneShot(t)
			a, b := hostile15Pair(t, network)
			defer closeFd(t, a)
			defer closeFd(t, b)
			const tok = 71
			if err := r.Register(a, tok, Read|Write); err != nil {
				t.Fatal(err)
			}
			hostile15FillSteady(t, a)
			if err := r.Arm(a, tok, Write); err != nil {
				t.Fatal(err)
			}
			if evs := drainEvents(t, r); len(evs) != 0 {
				t.Fatalf("full send buffer: %+v", evs)
			}
			if err := unix.Shutdown(a, unix.SHUT_RD); err != nil {
				t.Fatal(err)
			}
			quiet := hostile15DrainFor(t, r, 200*time.Millisecond)
			for _, ev := range quiet {
				if ev.Token == tok && ev.Ready&Writable != 0 && !hostile15Writable(t, a) {
					t.Fatalf("Writable after our SHUT_RD with the send buffer still full: %+v", quiet)
				}
			}
			if len(quiet) > 4 {
				t.Fatalf("%d events in 200 ms after our SHUT_RD: %+v", len(quiet), quiet[:4])
			}
			tally := newHostile14Tally()
			polled := make([]Event, 16)
			deadline := time.Now().Add(20 * time.Second)
			for tally.writes[tok] == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the peer read, and no Writable came (events %+v)", tally.all[tok])
				}
				hostile15Drain(t, b)
				n, err := r.Poll(polled, 5*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				tally.add(polled[:n])
			}
			hostile15DeregisterIdle(t, r, a, tok)
		})
	}
}

// Our own shutdown of the writing side while a write is armed on a full TCP send
// buffer: TCP reports POLLOUT once SEND_SHUTDOWN is set, so the armed write direction
// reports Writable and the write fails with EPIPE. (A Unix stream socket reports nothing:
// see TestHostile15UnixShutWriteReportsNothing.)
func TestHostile15OwnShutWriteWithWriteArmed(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := hostile15Pair(t, "tcp")
	defer closeFd(t, a)
	defer closeFd(t, b)
	const tok = 81
	if err := r.Register(a, tok, Read|Write); err != nil {
		t.Fatal(err)
	}
	hostile15FillSteady(t, a)
	if err := r.Arm(a, tok, Write); err != nil {
		t.Fatal(err)
	}
	if evs := drainEvents(t, r); len(evs) != 0 {
		t.Fatalf("full send buffer: %+v", evs)
	}
	if err := unix.Shutdown(a, unix.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	tally := newHostile14Tally()
	hostile14PollUntil(t, r, 4, tally, "our SHUT_WR", func() bool { return tally.writes[tok] > 0 })
	if _, err := unix.Write(a, []byte("x")); err != unix.EPIPE {
		t.Fatalf("write after our SHUT_WR: %v, want EPIPE", err)
	}
	hostile15DeregisterIdle(t, r, a, tok)
}

// The kernel fact behind blitzio's TestHostile15CloseWriteReleasesWaitingWriter: on a
// Unix stream socket with a full send buffer, our own shutdown(SHUT_WR) makes a write
// fail with EPIPE but changes nothing poll reports, so an armed write direction reports
// nothing, on io_uring as on epoll: whoever waits for room must be woken by the
// shutdown's caller. Recorded here so that a kernel that starts reporting it is seen.
func TestHostile15UnixShutWriteReportsNothing(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newOneShot(t)
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	const tok = 91
	if err := r.Register(a, tok, Read|Write); err != nil {
		t.Fatal(err)
	}
	hostile14FillSendBuffer(t, a)
	if err := r.Arm(a, tok, Write); err != nil {
		t.Fatal(err)
	}
	if err := unix.Shutdown(a, unix.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	evs := hostile15DrainFor(t, r, 100*time.Millisecond)
	if _, err := unix.Write(a, []byte("x")); err != unix.EPIPE {
		t.Fatalf("write after our SHUT_WR: %v, want EPIPE", err)
	}
	if readyFor(evs, tok)&Writable != 0 {
		t.Logf("this kernel reports a Unix socket's own SHUT_WR to a write poll: %+v", evs)
	}
	hostile15DeregisterIdle(t, r, a, tok)
}

// Close of the ring while a write direction waits on its multishot poll (peer
// half-closed, send buffer full): Close returns without error, and the socket is let go
// (closing it after the ring's Close ends the connection: its peer reads the end).
func TestHostile15CloseRingWithMultiWriteArmed(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			r := newOneShot(t)
			a, b := hostile15Pair(t, network)
			defer closeFd(t, b)
			hostile15RegisterHalfClosed(t, r, a, b, 101)
			hostile14FillSendBuffer(t, a)
			if err := r.Arm(a, 101, Read|Write); err != nil {
				t.Fatal(err)
			}
			hostile15DrainFor(t, r, 30*time.Millisecond)
			if multi, armed, ok := hostile15WriteSlot(r, a); !ok || !multi || !armed {
				t.Fatalf("write slot multi %v armed %v exists %v, want an armed multishot poll", multi, armed, ok)
			}
			done := make(chan error, 1)
			go func() { done <- r.Close() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Close: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Close did not return within 10s with a multishot write poll armed")
			}
			closeFd(t, a)
			deadline := time.Now().Add(10 * time.Second)
			buf := make([]byte, 64<<10)
			for {
				n, err := unix.Read(b, buf)
				if (n == 0 && err == nil) || err == unix.ECONNRESET {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the peer never saw the socket close after the ring's Close: %d, %v", n, err)
				}
				if err == unix.EAGAIN {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
}

// The multishot write poll (peer half-closed, send buffer full) made and submitted by
// an OS thread that then exits (a goroutine locked to its thread returns without
// unlocking): whether the kernel keeps the poll or cancels it with the thread
// (-ECANCELED, which completeOnceLocked re-arms from the thread that reaps it), the
// room that comes when the peer reads is reported as Writable, with no error event.
func TestHostile15MultiWriteFromExitingThread(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			r := newOneShot(t)
			a, b := hostile15Pair(t, network)
			defer closeFd(t, a)
			defer closeFd(t, b)
			const tok = 111
			hostile15RegisterHalfClosed(t, r, a, b, tok)
			if network == "tcp" {
				hostile15FillSteady(t, a)
			} else {
				hostile14FillSendBuffer(t, a)
			}
			errc := make(chan error, 1)
			go func() {
				runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
				if err := r.Arm(a, tok, Write); err != nil {
					errc <- err
					return
				}
				// Submit the one-shot poll, reap its POLLRDHUP completion (which turns
				// the direction multishot and queues that poll) and submit that too,
				// all from this thread.
				evs := make([]Event, 8)
				for range 5 {
					if _, err := r.Poll(evs, 10*time.Millisecond); err != nil {
						errc <- err
						return
					}
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
			if multi, _, ok := hostile15WriteSlot(r, a); !ok || !multi {
				t.Fatalf("write slot multi %v exists %v, want multishot", multi, ok)
			}
			time.Sleep(20 * time.Millisecond) // let the thread go (not asserted on)
			tally := newHostile14Tally()
			tally.add(drainEvents(t, r))
			for _, ev := range tally.all[tok] {
				if ev.Ready&Writable != 0 && !hostile15Writable(t, a) {
					t.Fatalf("Writable with the send buffer full: %+v", tally.all[tok])
				}
			}
			polled := make([]Event, 16)
			deadline := time.Now().Add(20 * time.Second)
			for tally.writes[tok] == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the peer read, and no Writable came for a poll made by an exited thread (events %+v, census %+v)", tally.all[tok], hostile14Count(r))
				}
				hostile15Drain(t, b)
				n, err := r.Poll(polled, 5*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				tally.add(polled[:n])
			}
			for _, ev := range tally.all[tok] {
				if ev.Ready&Error != 0 || ev.Res < 0 {
					t.Fatalf("error event for a poll made by an exited thread: %+v", ev)
				}
			}
			hostile15DeregisterIdle(t, r, a, tok)
		})
	}
}
