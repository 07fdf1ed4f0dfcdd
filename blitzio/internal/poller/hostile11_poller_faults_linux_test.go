//go:build linux

package poller

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Fault injection around io_uring_enter (uringTestEnter): EINTR, EAGAIN, EBUSY and
// short submissions must lose nothing (every operation gets exactly its completions,
// every readiness is reported at least once) and must neither spin nor strand queued
// entries in the SQ ring while Poll sleeps.

type hostile11EnterFunc func(fd int, toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, unix.Errno)

// hostile11SetEnter installs h as the io_uring_enter hook until the test ends (the
// cleanup runs before the ones registered earlier, such as newTestUring's Close).
func hostile11SetEnter(t *testing.T, h hostile11EnterFunc) {
	t.Helper()
	uringTestEnter = h
	t.Cleanup(func() { uringTestEnter = nil })
}

// hostile11PollFor polls p on another goroutine (Poll(-1) in a loop) until an event for
// token arrives, and returns it. If none arrives within limit it stops the goroutine
// (with Wakes) and fails: a readiness or completion stranded for good.
func hostile11PollFor(t *testing.T, p Poller, token uint64, limit time.Duration) Event {
	t.Helper()
	var stop atomic.Bool
	got := make(chan Event, 1)
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		evs := make([]Event, 16)
		for !stop.Load() {
			n, err := p.Poll(evs, -1)
			if err != nil {
				errc <- err
				return
			}
			for _, ev := range evs[:n] {
				if ev.Token == token {
					got <- ev
					return
				}
			}
		}
	}()
	select {
	case ev := <-got:
		<-done
		return ev
	case err := <-errc:
		<-done
		t.Fatalf("Poll waiting for token %d: %v", token, err)
	case <-time.After(limit):
		stop.Store(true)
		for {
			p.Wake()
			select {
			case <-done:
				t.Fatalf("no event for token %d within %v", token, limit)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return Event{}
}

// Regression: a flood of completions that report nothing (the cancellations of many
// Deregisters, and the polls they end) overflowed the CQ ring; Poll flushed the
// kernel's overflow list once, found only silent completions, and then, in the netpoll
// mode, waited on the ring's descriptor, which stays readable while the overflow flag
// is set: it spun until its deadline (for ever with -1, and a Wake's completion queued
// behind the overflow could not stop it) without flushing again, so the readiness of
// a live registration queued behind the flood was not reported for many Polls.
func TestHostile11UringSilentOverflowDeliversEvent(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, blocking := range []bool{false, true} {
		name := "netpoll"
		if blocking {
			name = "blocking"
		}
		t.Run(name, func(t *testing.T) {
			uringTestNoNetpoll = blocking
			r := newTestUring(t, IOUringConfig{Entries: 1}) // a CQ ring of 4 entries
			uringTestNoNetpoll = false
			const n = 100
			fds := make([]int, n)
			for i := range n {
				a, _ := socketpairCleanup(t)
				fds[i] = a
				if err := r.Register(a, uint64(i), Read); err != nil {
					t.Fatal(err)
				}
			}
			ka, kb := socketpairCleanup(t)
			const live = 1000
			if err := r.Register(ka, live, Read); err != nil {
				t.Fatal(err)
			}
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if err := r.Deregister(fds[i], uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Flush(); err != nil { // 2n silent completions for 4 CQ entries
				t.Fatal(err)
			}
			if atomic.LoadUint32(r.sqFlags)&uringSQCQOverflow == 0 {
				t.Fatalf("the CQ ring did not overflow: this test does not test the overflow path")
			}
			if _, err := unix.Write(kb, []byte("x")); err != nil {
				t.Fatal(err)
			}
			evs := make([]Event, 8)
			for polls := 1; ; polls++ {
				k, err := r.Poll(evs, 200*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range evs[:k] {
					if ev.Token != live {
						t.Fatalf("event %+v for a deregistered fd", ev)
					}
					if ev.Ready&Readable == 0 {
						t.Fatalf("event %+v lacks Readable", ev)
					}
					return
				}
				if polls == 3 {
					t.Fatalf("the readiness of a live registration, queued behind %d silent completions in the CQ overflow list, was not reported by %d Polls", 2*n, polls)
				}
			}
		})
	}
}

// Regression: an io_uring_enter that submits and fails with EAGAIN or EBUSY (the
// kernel is short of memory for requests, or of CQ room) leaves the entries in the SQ
// ring. Poll in the netpoll mode ignored the error and parked on the ring's
// descriptor: a registration whose submission failed was never armed, and with no other
// completion to come, Poll(-1) slept for ever with the fd ready.
func TestHostile11UringSubmitFailureThenWait(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	for _, errno := range []unix.Errno{unix.EAGAIN, unix.EBUSY, unix.EINTR} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			uringModes(t, func(t *testing.T, r *ioUring) {
				a, b := socketpairCleanup(t)
				var injected atomic.Int32
				hostile11SetEnter(t, func(fd int, sub, min, flags uint32, arg unsafe.Pointer, sz uintptr) (int, unix.Errno) {
					if sub > 0 && injected.CompareAndSwap(0, 1) {
						return 0, errno
					}
					return uringEnterSys(fd, sub, min, flags, arg, sz)
				})
				if err := r.Register(a, 7, Read); err != nil {
					t.Fatal(err)
				}
				if _, err := unix.Write(b, []byte("x")); err != nil {
					t.Fatal(err)
				}
				ev := hostile11PollFor(t, r, 7, 10*time.Second)
				if ev.Ready&Readable == 0 {
					t.Fatalf("event %+v lacks Readable", ev)
				}
				if injected.Load() != 1 {
					t.Fatalf("the fault was not injected: this test did not test the failure")
				}
			})
		})
	}
}

// Regression: Flush (which the driver calls after Register so that a worker blocked in
// Poll need not submit) returned nil after an EAGAIN or EBUSY left its entries in the
// SQ ring, and did not wake the Poll in progress: the registration stayed unarmed while
// that Poll slept, for ever if nothing else completed.
func TestHostile11UringFlushFailureWakesPoll(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	for _, errno := range []unix.Errno{unix.EAGAIN, unix.EBUSY} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			uringModes(t, func(t *testing.T, r *ioUring) {
				a, b := socketpairCleanup(t)
				var armed, injected atomic.Bool
				hostile11SetEnter(t, func(fd int, sub, min, flags uint32, arg unsafe.Pointer, sz uintptr) (int, unix.Errno) {
					if sub > 0 && flags&uringEnterGetEvents == 0 && armed.Load() && injected.CompareAndSwap(false, true) {
						return 0, errno
					}
					return uringEnterSys(fd, sub, min, flags, arg, sz)
				})
				result := make(chan Event, 1)
				go func() {
					// Not t.Fatal on this goroutine: hostile11PollFor reports on its own.
					result <- hostile11PollForNoFail(r, 9, 10*time.Second)
				}()
				time.Sleep(5 * time.Millisecond) // most often parked by now; either order must work
				armed.Store(true)
				if err := r.Register(a, 9, Read); err != nil {
					t.Fatal(err)
				}
				if err := r.Flush(); err != nil {
					t.Fatalf("Flush after a transient %v = %v, want nil (the next Poll retries)", errno, err)
				}
				if _, err := unix.Write(b, []byte("x")); err != nil {
					t.Fatal(err)
				}
				ev := <-result
				if ev.Token != 9 {
					t.Fatalf("no event for a registration flushed while Poll slept (the Flush failed with %v and nobody retried)", errno)
				}
				if !injected.Load() {
					t.Fatalf("the fault was not injected: this test did not test the failure")
				}
			})
		})
	}
}

// hostile11PollForNoFail is hostile11PollFor for another goroutine: it returns the zero
// Event instead of failing.
func hostile11PollForNoFail(p Poller, token uint64, limit time.Duration) Event {
	var stop atomic.Bool
	got := make(chan Event, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		evs := make([]Event, 16)
		for !stop.Load() {
			n, err := p.Poll(evs, -1)
			if err != nil {
				return
			}
			for _, ev := range evs[:n] {
				if ev.Token == token {
					got <- ev
					return
				}
			}
		}
	}()
	select {
	case ev := <-got:
		<-done
		return ev
	case <-done:
		return Event{}
	case <-time.After(limit):
		stop.Store(true)
		for {
			p.Wake()
			select {
			case <-done:
				return Event{}
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// Regression: while submissions keep failing with EAGAIN (the kernel out of memory
// for requests), Poll must wait for completions between attempts, not retry at once:
// the blocking mode looped on io_uring_enter (which skips its wait when the submission
// fails) as fast as the CPU allowed. The bound below is two orders of magnitude above
// what a retry after a millisecond's wait makes; noise on the machine can only lower
// the count.
func TestHostile11UringPersistentEAGAINDoesNotSpin(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	uringModes(t, func(t *testing.T, r *ioUring) {
		a, b := socketpairCleanup(t)
		var failing atomic.Bool
		var fails atomic.Int64
		failing.Store(true)
		hostile11SetEnter(t, func(fd int, sub, min, flags uint32, arg unsafe.Pointer, sz uintptr) (int, unix.Errno) {
			if sub > 0 && failing.Load() {
				fails.Add(1)
				return 0, unix.EAGAIN
			}
			return uringEnterSys(fd, sub, min, flags, arg, sz)
		})
		if err := r.Register(a, 5, Read); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Write(b, []byte("x")); err != nil {
			t.Fatal(err)
		}
		result := make(chan Event, 1)
		go func() { result <- hostile11PollForNoFail(r, 5, 20*time.Second) }()
		for deadline := time.Now().Add(10 * time.Second); fails.Load() == 0; {
			if time.Now().After(deadline) {
				t.Fatal("Poll never tried to submit")
			}
			time.Sleep(time.Millisecond)
		}
		start := fails.Load()
		time.Sleep(100 * time.Millisecond)
		count := fails.Load() - start
		failing.Store(false)
		ev := <-result
		if ev.Token != 5 {
			t.Fatalf("no event once submissions succeed again (%d failed attempts)", fails.Load())
		}
		if count > 2000 {
			t.Errorf("%d io_uring_enter calls failed with EAGAIN within 100ms: Poll retries without waiting for completions (a busy loop)", count)
		}
	})
}

// A workload of readiness registrations, receives and sends, with every second (or
// third) io_uring_enter failing with EINTR, EAGAIN, EBUSY, or submitting one entry
// less than asked: every operation gets exactly one final completion with the right
// result, every registration reports its readiness, and Close reaps everything.
func TestHostile11UringFaultyEnterLosesNothing(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	type fault struct {
		name   string
		errno  unix.Errno
		every  int64
		short  bool
		evenGo bool // inject into waits too (GETEVENTS without submission)
	}
	for _, f := range []fault{
		{name: "EINTR", errno: unix.EINTR, every: 2, evenGo: true},
		{name: "EAGAIN", errno: unix.EAGAIN, every: 2},
		{name: "EBUSY", errno: unix.EBUSY, every: 3, evenGo: true},
		{name: "short", short: true, every: 2},
	} {
		t.Run(f.name, func(t *testing.T) {
			uringModes(t, func(t *testing.T, r *ioUring) {
				requireFeature(t, r, ProvidedBuffers, "provided-buffer rings")
				var calls, injected atomic.Int64
				hostile11SetEnter(t, func(fd int, sub, min, flags uint32, arg unsafe.Pointer, sz uintptr) (int, unix.Errno) {
					if sub == 0 && !f.evenGo || calls.Add(1)%f.every != 0 {
						return uringEnterSys(fd, sub, min, flags, arg, sz)
					}
					injected.Add(1)
					if f.short {
						if sub < 2 {
							return uringEnterSys(fd, sub, min, flags, arg, sz)
						}
						// What the kernel does when it runs short: take fewer
						// entries and skip the wait.
						return uringEnterSys(fd, sub-1, 0, 0, nil, 0)
					}
					return 0, f.errno
				})
				hostile11Workload(t, r)
				if injected.Load() == 0 {
					t.Fatal("no fault injected: this test did not test the failures")
				}
			})
		})
	}
}

func hostile11Workload(t *testing.T, r *ioUring) {
	t.Helper()
	const n = 6
	type pair struct{ a, b int }
	pairs := make([]pair, n)
	msgs := make([][]byte, n)
	for i := range n {
		a, b := socketpairCleanup(t)
		pairs[i] = pair{a, b}
		msgs[i] = bytes.Repeat([]byte{byte('a' + i)}, 64)
		if err := r.Register(a, uint64(1+i), Read); err != nil {
			t.Fatal(err)
		}
		if err := r.Recv(a, uint64(100+i)); err != nil {
			t.Fatal(err)
		}
		if err := r.Send(b, uint64(200+i), msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	ready := map[uint64]bool{}
	recvs := map[uint64]int{}
	sends := map[uint64]int{}
	evs := make([]Event, 4) // small: completions wait in the CQ ring between Polls
	check := func(ev Event) {
		switch {
		case ev.Token >= 1 && ev.Token <= n:
			if ev.Op != OpReady {
				t.Fatalf("event %+v for a registration is not OpReady", ev)
			}
			if ev.Ready&Readable != 0 {
				ready[ev.Token] = true
			}
		case ev.Token >= 100 && ev.Token < 100+n:
			i := ev.Token - 100
			recvs[ev.Token]++
			if ev.Op != OpRecv || ev.More || ev.Res != 64 || ev.Buf < 0 {
				t.Fatalf("receive %d: event %+v, want OpRecv of 64 bytes in a buffer", i, ev)
			}
			if got := r.Buffer(ev.Buf, int(ev.Res)); !bytes.Equal(got, msgs[i]) {
				t.Fatalf("receive %d: got %q, want %q", i, got, msgs[i])
			}
			r.Release(ev.Buf)
		case ev.Token >= 200 && ev.Token < 200+n:
			sends[ev.Token]++
			if ev.Op != OpSend || ev.More || ev.Res != 64 {
				t.Fatalf("send %d: event %+v, want OpSend of 64 bytes", ev.Token-200, ev)
			}
		default:
			t.Fatalf("event for unknown token: %+v", ev)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(ready) < n || len(recvs) < n || len(sends) < n {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s: %d of %d readiness, %d receives, %d sends", len(ready), n, len(recvs), len(sends))
		}
		k, err := r.Poll(evs, 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:k] {
			check(ev)
		}
	}
	// Nothing more: in particular no second completion for any operation.
	for range 5 {
		k, err := r.Poll(evs, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:k] {
			check(ev)
		}
	}
	for tok, c := range recvs {
		if c != 1 {
			t.Errorf("receive token %d completed %d times", tok, c)
		}
	}
	for tok, c := range sends {
		if c != 1 {
			t.Errorf("send token %d completed %d times", tok, c)
		}
	}
	for i, p := range pairs {
		if err := r.Deregister(p.a, uint64(1+i)); err != nil {
			t.Fatal(err)
		}
	}
	r.mu.Lock()
	inflight := r.inflight
	r.mu.Unlock()
	// What is left: the wake poll and the n cancellations (with their polls) queued by
	// Deregister; no operation of the workload.
	if inflight > 1+2*n {
		t.Errorf("%d operations in flight after every completion came, want at most %d", inflight, 1+2*n)
	}
}

// Close with operations in flight while io_uring_enter fails now and then: it still
// cancels and reaps every one of them (no error, nothing left in flight), frees the
// provided buffers only then, and a Send's pinned buffer stays intact to its end.
func TestHostile11UringCloseUnderFaults(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	for _, errno := range []unix.Errno{unix.EINTR, unix.EAGAIN, unix.EBUSY} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			p, err := NewIOUringConfig(IOUringConfig{Entries: 4})
			if err != nil {
				t.Skipf("io_uring unavailable here: %v", err)
			}
			r := p.(*ioUring)
			a, _ := socketpairCleanup(t)
			c, d := socketpairCleanup(t)
			lfd, _ := loopbackListener(t)
			defer closeFd(t, lfd)
			const size = 1 << 20
			pattern := make([]byte, size)
			for i := range pattern {
				pattern[i] = byte(i * 7)
			}
			r.Register(a, 1, Read)
			if r.features&ProvidedBuffers != 0 {
				r.Recv(a, 2)
			}
			r.Send(c, 3, pattern) // fills d's receive buffer and waits for room
			r.Accept(lfd, 4)
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			var left atomic.Int32
			left.Store(3)
			hostile11SetEnter(t, func(fd int, sub, min, flags uint32, arg unsafe.Pointer, sz uintptr) (int, unix.Errno) {
				if left.Add(-1) >= 0 {
					return 0, errno
				}
				return uringEnterSys(fd, sub, min, flags, arg, sz)
			})
			if err := r.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if left.Load() >= 0 {
				t.Fatalf("Close made %d io_uring_enter calls: the faults were not all injected", 3-left.Load())
			}
			if r.inflight != 0 {
				t.Fatalf("%d operations in flight after Close", r.inflight)
			}
			if r.bufs != nil && (r.bufs.bufMem != nil || r.bufs.leak) {
				t.Fatalf("provided buffers not unmapped after a clean Close")
			}
			// The part of the send that went out is the pattern's prefix.
			got := make([]byte, 0, size)
			buf := make([]byte, 1<<16)
			for {
				k, err := unix.Read(d, buf)
				if k <= 0 || err != nil {
					break
				}
				got = append(got, buf[:k]...)
			}
			if len(got) == 0 {
				t.Fatalf("the send wrote nothing before Close")
			}
			if !bytes.Equal(got, pattern[:len(got)]) {
				t.Fatalf("the %d bytes sent differ from the send buffer: it changed under the kernel", len(got))
			}
		})
	}
}

// A flood of multishot accepts with nobody reaping overflows a 4-entry CQ ring: every
// connection is accepted exactly once (re-submitting the accept when the kernel ends
// the multishot on overflow), whatever io_uring_enter fails with now and then.
func TestHostile11UringAcceptFloodExactlyOnce(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 1})
	requireFeature(t, r, MultishotAccept, "multishot accept")
	var calls atomic.Int64
	hostile11SetEnter(t, func(fd int, sub, min, flags uint32, arg unsafe.Pointer, sz uintptr) (int, unix.Errno) {
		switch calls.Add(1) % 5 {
		case 1:
			return 0, unix.EBUSY
		case 3:
			return 0, unix.EINTR
		}
		return uringEnterSys(fd, sub, min, flags, arg, sz)
	})
	lfd, port := loopbackListener(t)
	defer closeFd(t, lfd)
	if err := r.Accept(lfd, 1); err != nil {
		t.Fatal(err)
	}
	for r.Flush() == nil {
		r.mu.Lock()
		queued := r.sqLocal - atomic.LoadUint32(r.sqHead)
		r.mu.Unlock()
		if queued == 0 {
			break
		}
	}
	const n = 24
	want := map[int]bool{}
	var dialed []int
	for range n {
		c := dialLoopback(t, port) // completes in the listen backlog: no accept needed
		dialed = append(dialed, c)
		sa, err := unix.Getsockname(c)
		if err != nil {
			t.Fatal(err)
		}
		want[sa.(*unix.SockaddrInet4).Port] = true
	}
	defer func() {
		for _, c := range dialed {
			unix.Close(c)
		}
	}()
	if atomic.LoadUint32(r.sqFlags)&uringSQCQOverflow == 0 {
		t.Log("the CQ ring has not overflowed (yet): the kernel may post the accepts later")
	}
	got := map[int]int{}
	var accepted []int
	defer func() {
		for _, fd := range accepted {
			unix.Close(fd)
		}
	}()
	evs := make([]Event, 3)
	deadline := time.Now().Add(20 * time.Second)
	for len(accepted) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections accepted", len(accepted), n)
		}
		k, err := r.Poll(evs, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:k] {
			if ev.Token != 1 || ev.Op != OpAccept {
				t.Fatalf("unexpected event %+v", ev)
			}
			if ev.Res >= 0 {
				accepted = append(accepted, int(ev.Res))
				sa, err := unix.Getpeername(int(ev.Res))
				if err != nil {
					t.Fatalf("getpeername of accepted fd %d: %v", ev.Res, err)
				}
				got[sa.(*unix.SockaddrInet4).Port]++
			} else if ev.Res != -int32(unix.ECANCELED) && ev.Res != -int32(unix.EAGAIN) {
				t.Logf("accept ended with %s", errnoName(ev.Res))
			}
			if !ev.More {
				if err := r.Accept(lfd, 1); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for port, c := range got {
		if !want[port] {
			t.Errorf("accepted a connection from port %d that nobody dialed", port)
		}
		if c != 1 {
			t.Errorf("the connection from port %d was accepted %d times", port, c)
		}
	}
	if len(got) != n {
		t.Errorf("%d distinct connections accepted, want %d", len(got), n)
	}
	if err := r.Cancel(1); err != nil {
		t.Fatal(err)
	}
}

// Wake racing Poll and Close under injected EINTR: nothing hangs, Close reports nil.
func TestHostile11UringWakeStormUnderEINTR(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	var calls atomic.Int64
	hostile11SetEnter(t, func(fd int, sub, min, flags uint32, arg unsafe.Pointer, sz uintptr) (int, unix.Errno) {
		if calls.Add(1)%3 == 0 {
			return 0, unix.EINTR
		}
		return uringEnterSys(fd, sub, min, flags, arg, sz)
	})
	for round := range 5 {
		p, err := NewIOUringConfig(IOUringConfig{Entries: 2})
		if err != nil {
			t.Skipf("io_uring unavailable here: %v", err)
		}
		r := p.(*ioUring)
		var stop atomic.Bool
		var wg sync.WaitGroup
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			evs := make([]Event, 4)
			for !stop.Load() {
				if _, err := r.Poll(evs, -1); err != nil {
					panic(fmt.Sprintf("round %d: Poll: %v", round, err))
				}
			}
		}()
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					r.Wake()
				}
			}()
		}
		wg.Wait()
		stop.Store(true)
		for done := false; !done; {
			r.Wake()
			select {
			case <-polled:
				done = true
			case <-time.After(10 * time.Millisecond):
			}
		}
		if err := r.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if err := r.Wake(); err == nil {
			t.Fatalf("round %d: Wake after Close succeeded", round)
		}
	}
}

// Regression: while every submission failed with EAGAIN, Close's loop retried at once
// (the kernel skips the wait of an io_uring_enter whose submission fails), spinning a
// CPU until its time limit. It must wait for completions between attempts, and then
// report the operations it could not cancel instead of freeing their memory.
func TestHostile11UringClosePersistentEAGAINDoesNotSpin(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	old := uringCloseWait
	uringCloseWait = 300 * time.Millisecond
	defer func() { uringCloseWait = old }()
	p, err := NewIOUringConfig(IOUringConfig{Entries: 4})
	if err != nil {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	r := p.(*ioUring)
	a, _ := socketpairCleanup(t)
	if err := r.Register(a, 1, Read); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	var fails atomic.Int64
	hostile11SetEnter(t, func(fd int, sub, min, flags uint32, arg unsafe.Pointer, sz uintptr) (int, unix.Errno) {
		if sub > 0 {
			fails.Add(1)
			return 0, unix.EAGAIN
		}
		return uringEnterSys(fd, sub, min, flags, arg, sz)
	})
	err = r.Close()
	if err == nil {
		t.Fatalf("Close reported success although no cancellation reached the kernel")
	}
	if fails.Load() == 0 {
		t.Fatalf("no submission attempted by Close: this test did not test the failure")
	}
	if c := fails.Load(); c > 2000 {
		t.Errorf("Close made %d failing io_uring_enter calls in %v: it retries without waiting (a busy loop)", c, uringCloseWait)
	}
}
