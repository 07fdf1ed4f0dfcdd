//go:build linux

package blitzio

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// A hostile pass over the io_uring driver's one-shot readiness arming, through the
// runtime: ioDriver.arm from scheduledIO.pollReady, the io_uring poller's paired read
// and write slots, and pollIOShort's fresh path.

// hostile14RT starts a two-worker io_uring runtime that arms readiness on demand (the
// default one-shot polls), or skips when io_uring is unavailable.
func hostile14RT(t *testing.T) *Runtime {
	t.Helper()
	t.Setenv(uringMultishotEnv, "")
	rt, err := New(Config{Workers: 2, Backend: BackendIOUring})
	if err != nil {
		if errors.Is(err, ErrBackendUnavailable) {
			t.Skipf("io_uring unavailable: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if rt.io.armer == nil {
		t.Fatal("the io_uring runtime does not arm on demand (one-shot readiness)")
	}
	return rt
}

// hostile14RawPair returns a Unix stream socketpair, both ends non-blocking.
func hostile14RawPair(t *testing.T) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	return fds[0], fds[1]
}

// hostile14Stream makes a UnixStream of fd (registered with a runtime by its first use).
func hostile14Stream(fd int) *UnixStream {
	return &UnixStream{fd: newNetFD(fd, unix.AF_UNIX, unix.SOCK_STREAM, "unix")}
}

// hostile14Pair returns a stream for the runtime and its raw peer, both closed at the
// end of the test.
func hostile14Pair(t *testing.T) (*UnixStream, int) {
	t.Helper()
	a, b := hostile14RawPair(t)
	s := hostile14Stream(a)
	t.Cleanup(func() { s.Close(); unix.Close(b) })
	return s, b
}

// hostile14Pattern is byte i of the test streams: not periodic over small lengths, so a
// lost, duplicated or reordered chunk shows.
func hostile14Pattern(i int) byte { return byte(i*31 + i>>8 + i>>16) }

func hostile14Fill(p []byte, off int) {
	for i := range p {
		p[i] = hostile14Pattern(off + i)
	}
}

// hostile14Check reports the first offset where p differs from the pattern at off.
func hostile14Check(p []byte, off int) error {
	for i, c := range p {
		if c != hostile14Pattern(off+i) {
			return fmt.Errorf("byte %d is %#x, want %#x", off+i, c, hostile14Pattern(off+i))
		}
	}
	return nil
}

// hostile14FillFuture writes the pattern (continuing from *sent) through the runtime
// until a write would block and the socket's Writable readiness is cleared, so that a
// later Writable really waits for the kernel's report.
func hostile14FillFuture(s *UnixStream, sent *int) Future[error] {
	chunk := make([]byte, 16<<10)
	return PollFn(func(cx *Context) (error, bool) {
		for {
			hostile14Fill(chunk, *sent)
			f := s.Write(chunk)
			r, ok := f.Poll(cx)
			if !ok {
				Drop(f)
				if sio := s.fd.sio.Load(); sio != nil && sio.readiness.Load()&uint64(poller.Writable) == 0 {
					return nil, true
				}
				return nil, false // the budget ran out: polled again after the yield
			}
			if r.Err != nil {
				return r.Err, true
			}
			*sent += r.Value
		}
	})
}

// hostile14Drain reads from the raw peer until it would block, checking the pattern
// from *got on.
func hostile14Drain(t *testing.T, peer int, got *int) {
	t.Helper()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(peer, buf)
		if err == unix.EAGAIN {
			return
		}
		if err != nil || n == 0 {
			t.Fatalf("peer read: %d, %v", n, err)
		}
		if err := hostile14Check(buf[:n], *got); err != nil {
			t.Fatalf("the peer received a corrupted stream: %v", err)
		}
		*got += n
	}
}

// One task waits for a read and for Writable on one socket in a Select, with both
// directions armed (its send buffer full): data makes the read win, a peer that drains
// makes Writable win, round after round. The winner is the one the peer caused, the
// loser's waiter is gone once the Select finishes (it was dropped), the bytes read are
// the bytes sent, and the stream the peer drains is intact.
func TestHostile14SelectReadOrWritable(t *testing.T) {
	netWatchdog(t, 60*time.Second)
	rt := hostile14RT(t)
	s, peer := hostile14Pair(t)
	sent, got := 0, 0
	for round := range 40 {
		if err := blockOn(t, rt, hostile14FillFuture(s, &sent)); err != nil {
			t.Fatalf("round %d: filling the send buffer: %v", round, err)
		}
		buf := make([]byte, 64)
		h := Spawn(rt, Select2(s.Read(buf), s.Writable()))
		sio := s.fd.sio.Load()
		waitFor(t, "the Select to wait in both directions", func() bool {
			return sio.waiters(dirRead) == 1 && sio.waiters(dirWrite) == 1
		})
		msg := fmt.Sprintf("round %d", round)
		readWins := round%2 == 0
		if readWins {
			if _, err := unix.Write(peer, []byte(msg)); err != nil {
				t.Fatal(err)
			}
		} else {
			hostile14Drain(t, peer, &got)
		}
		v, err := waitHandleFor(t, h, fmt.Sprintf("round %d's Select", round))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if readWins {
			if v.Index != 0 || v.V1.Err != nil || string(buf[:v.V1.Value]) != msg {
				t.Fatalf("round %d: data arrived: %+v (read %q), want the read to win with %q", round, v, buf[:v.V1.Value], msg)
			}
			if n := sio.waiters(dirWrite); n != 0 {
				t.Fatalf("round %d: the dropped Writable left %d waiters", round, n)
			}
		} else {
			if v.Index != 1 || v.V2 != nil {
				t.Fatalf("round %d: the peer drained: %+v, want Writable to win", round, v)
			}
			if n := sio.waiters(dirRead); n != 0 {
				t.Fatalf("round %d: the dropped read left %d waiters", round, n)
			}
		}
	}
	hostile14Drain(t, peer, &got)
	if got != sent {
		t.Fatalf("the peer received %d bytes, the runtime wrote %d", got, sent)
	}
}

// Two tasks wait on the same socket in different directions at once (a ReadFull with
// nothing to read, a WriteAll on a full send buffer), on many sockets: when the peers
// start reading and writing, every task finishes with the exact bytes.
func TestHostile14TwoTasksTwoDirections(t *testing.T) {
	netWatchdog(t, 60*time.Second)
	rt := hostile14RT(t)
	const conns, out, in = 12, 1 << 20, 4096
	type conn struct {
		s     *UnixStream
		peer  int
		rbuf  []byte
		hr    JoinHandle[Result[int]]
		hw    JoinHandle[Result[int]]
		wdata []byte
	}
	cs := make([]*conn, conns)
	for i := range cs {
		s, peer := hostile14Pair(t)
		c := &conn{s: s, peer: peer, rbuf: make([]byte, in), wdata: make([]byte, out)}
		hostile14Fill(c.wdata, 0)
		c.hr = Spawn(rt, s.ReadFull(c.rbuf))
		c.hw = Spawn(rt, s.WriteAll(c.wdata))
		cs[i] = c
	}
	for i, c := range cs {
		waitFor(t, fmt.Sprintf("conn %d's tasks to wait in both directions", i), func() bool {
			sio := c.s.fd.sio.Load()
			return sio != nil && sio.waiters(dirRead) == 1 && sio.waiters(dirWrite) == 1
		})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*conns)
	for i, c := range cs {
		wg.Add(2)
		go func() { // the peer's reader
			defer wg.Done()
			buf := make([]byte, 32<<10)
			deadline := time.Now().Add(30 * time.Second)
			for got := 0; got < out; {
				n, err := unix.Read(c.peer, buf)
				if err == unix.EAGAIN {
					if time.Now().After(deadline) {
						errs <- fmt.Errorf("conn %d: the peer got %d of %d bytes", i, got, out)
						return
					}
					time.Sleep(100 * time.Microsecond)
					continue
				}
				if err != nil || n == 0 {
					errs <- fmt.Errorf("conn %d: peer read: %d, %v", i, n, err)
					return
				}
				if err := hostile14Check(buf[:n], got); err != nil {
					errs <- fmt.Errorf("conn %d: %w", i, err)
					return
				}
				got += n
			}
		}()
		go func() { // the peer's writer: small pieces, each a new edge
			defer wg.Done()
			p := make([]byte, in)
			hostile14Fill(p, 1000)
			for off := 0; off < in; {
				n, err := unix.Write(c.peer, p[off:min(off+500, in)])
				if err == unix.EAGAIN {
					time.Sleep(100 * time.Microsecond)
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("conn %d: peer write: %v", i, err)
					return
				}
				off += n
			}
		}()
	}
	for i, c := range cs {
		r, err := waitHandleFor(t, c.hr, fmt.Sprintf("conn %d's reader", i))
		if err != nil || r.Err != nil || r.Value != in {
			t.Fatalf("conn %d: ReadFull: %+v, %v", i, r, err)
		}
		if err := hostile14Check(c.rbuf, 1000); err != nil {
			t.Fatalf("conn %d: read corrupted: %v", i, err)
		}
		w, err := waitHandleFor(t, c.hw, fmt.Sprintf("conn %d's writer", i))
		if err != nil || w.Err != nil || w.Value != out {
			t.Fatalf("conn %d: WriteAll: %+v, %v", i, w, err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A task waiting on a socket (read armed, or read and write both armed) is aborted, or
// the socket is closed under it; the socket's number then goes to a new connection in the
// same runtime, whose echo task must see exactly the peer's bytes and send them back:
// the old registration's arms, cancelled or not yet reaped, neither wake the new task
// in a way that loses data nor leave it asleep.
func TestHostile14DroppedArmThenNumberReused(t *testing.T) {
	netWatchdog(t, 120*time.Second)
	rt := hostile14RT(t)
	const size = 48 << 10
	reused := 0
	for it := range 24 {
		a, p1 := hostile14RawPair(t)
		s1 := hostile14Stream(a)
		old := a
		both := it%2 == 1
		var h JoinHandle[error]
		if both {
			sent := 0
			if err := blockOn(t, rt, hostile14FillFuture(s1, &sent)); err != nil {
				t.Fatal(err)
			}
			h = Spawn(rt, Map(Join2(s1.Read(make([]byte, 8)), s1.Writable()), func(v Tuple2[Result[int], error]) error {
				if v.V1.Err != nil {
					return v.V1.Err
				}
				return v.V2
			}))
		} else {
			h = Spawn(rt, Map(s1.Read(make([]byte, 8)), func(r Result[int]) error { return r.Err }))
		}
		sio1 := s1.fd.sio.Load
		waitFor(t, "the first task to wait", func() bool {
			s := sio1()
			return s != nil && s.waiters(dirRead) == 1 && (!both || s.waiters(dirWrite) == 1)
		})
		if it%3 == 0 {
			h.Abort()
			if _, err := waitHandleFor(t, h, "the aborted task"); !errors.Is(err, ErrCancelled) {
				t.Fatalf("iteration %d: aborted task: %v, want ErrCancelled", it, err)
			}
			s1.Close()
		} else {
			s1.Close()
			if err, herr := waitHandleFor(t, h, "the task whose socket closed"); herr != nil || !errors.Is(err, net.ErrClosed) {
				t.Fatalf("iteration %d: task on a closed socket: %v, %v, want net.ErrClosed", it, err, herr)
			}
		}
		unix.Close(p1)

		b, p2 := hostile14RawPair(t)
		if p2 == old {
			b, p2 = p2, b
		}
		if b == old {
			reused++
		}
		s2 := hostile14Stream(b)
		echo := Spawn(rt, PollFn(func() func(cx *Context) (error, bool) {
			buf := make([]byte, size)
			rf := s2.ReadFull(buf)
			var wf *WriteAllFuture
			return func(cx *Context) (error, bool) {
				if wf == nil {
					r, ok := rf.Poll(cx)
					if !ok {
						return nil, false
					}
					if r.Err != nil {
						return r.Err, true
					}
					wf = s2.WriteAll(buf)
				}
				r, ok := wf.Poll(cx)
				if !ok {
					return nil, false
				}
				return r.Err, true
			}
		}()))
		unix.SetNonblock(p2, false)
		peerErr := make(chan error, 1)
		go func() {
			p := make([]byte, size)
			hostile14Fill(p, it)
			for off := 0; off < size; {
				n, err := unix.Write(p2, p[off:min(off+1+off%3000, size)])
				if err != nil {
					peerErr <- fmt.Errorf("peer write: %w", err)
					return
				}
				off += n
			}
			back := make([]byte, size)
			for off := 0; off < size; {
				n, err := unix.Read(p2, back[off:])
				if err != nil || n == 0 {
					peerErr <- fmt.Errorf("peer read after %d bytes: %d, %v", off, n, err)
					return
				}
				off += n
			}
			peerErr <- hostile14Check(back, it)
		}()
		if err, herr := waitHandleFor(t, echo, "the echo task on the reused number"); err != nil || herr != nil {
			t.Fatalf("iteration %d: echo: %v, %v", it, err, herr)
		}
		select {
		case err := <-peerErr:
			if err != nil {
				t.Fatalf("iteration %d (number reused: %v): %v", it, b == old, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("iteration %d: the peer did not get the echo back", it)
		}
		s2.Close()
		unix.Close(p2)
	}
	if reused == 0 {
		t.Fatal("no new connection got the closed socket's number: the reuse was not exercised")
	}
	t.Logf("the number was reused in %d of 24 iterations", reused)
}

// 2,000 connections all wait for a read at once (more arms than the submission ring
// holds), then every peer writes at once (some in two pieces, some before their task
// even started, for the fresh path): every task wakes and reads its own message.
func TestHostile14BurstOfWaiters(t *testing.T) {
	netWatchdog(t, 120*time.Second)
	rt := hostile14RT(t)
	const n = 2000
	type conn struct {
		s    *UnixStream
		peer int
		buf  []byte
		h    JoinHandle[Result[int]]
	}
	msg := func(i int) []byte { return fmt.Appendf(nil, "m%07d", i) } // 8 bytes
	cs := make([]*conn, n)
	for i := range cs {
		s, peer := hostile14Pair(t)
		c := &conn{s: s, peer: peer, buf: make([]byte, 8)}
		if i%10 == 0 { // there before the first read: the fresh path's try succeeds
			if _, err := unix.Write(peer, msg(i)); err != nil {
				t.Fatal(err)
			}
		}
		c.h = Spawn(rt, s.ReadFull(c.buf))
		cs[i] = c
	}
	for i, c := range cs {
		if i%10 == 0 {
			continue
		}
		waitFor(t, fmt.Sprintf("connection %d's task to wait", i), func() bool {
			sio := c.s.fd.sio.Load()
			return sio != nil && sio.waiters(dirRead) == 1
		})
	}
	for i, c := range cs {
		if i%10 == 0 {
			continue
		}
		m := msg(i)
		if i%3 == 0 {
			if _, err := unix.Write(c.peer, m[:3]); err != nil {
				t.Fatal(err)
			}
			m = m[3:]
		}
		if _, err := unix.Write(c.peer, m); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cs {
		r, err := waitHandleFor(t, c.h, fmt.Sprintf("connection %d's read (of %d)", i, n))
		if err != nil || r.Err != nil || r.Value != 8 || string(c.buf) != string(msg(i)) {
			t.Fatalf("connection %d: %+v, %v, read %q, want %q", i, r, err, c.buf, msg(i))
		}
	}
	// Again with one task waiting on all of them: a JoinAll arms the 2,000 reads in one
	// poll, more than the submission ring holds between two submissions.
	futs := make([]*ReadFullFuture, n)
	for i, c := range cs {
		clear(c.buf)
		futs[i] = c.s.ReadFull(c.buf)
	}
	h := Spawn(rt, JoinAll(futs...))
	for i, c := range cs {
		waitFor(t, fmt.Sprintf("the JoinAll to wait on connection %d", i), func() bool {
			return c.s.fd.sio.Load().waiters(dirRead) == 1
		})
	}
	for i, c := range cs {
		if _, err := unix.Write(c.peer, msg(n+i)); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := waitHandleFor(t, h, "the JoinAll of 2,000 reads")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		if r := rs[i]; r.Err != nil || r.Value != 8 || string(c.buf) != string(msg(n+i)) {
			t.Fatalf("JoinAll: connection %d: %+v, read %q, want %q", i, r, c.buf, msg(n+i))
		}
	}
}

// Tasks and BlockOn callers keep arming reads and writes (Select of a read and a write,
// round after round) on many sockets while the runtime shuts down: no panic, every
// BlockOn ends with ErrRuntimeClosed or net.ErrClosed, every task with ErrCancelled or
// net.ErrClosed, Close returns nil, no goroutine is left behind, and every socket is
// really closed (its peer reads end of file: no readiness poll keeps its file open).
func TestHostile14ArmRacingRuntimeClose(t *testing.T) {
	netWatchdog(t, 120*time.Second)
	for round := range 3 {
		base := runtime.NumGoroutine()
		t.Setenv(uringMultishotEnv, "")
		rt, err := New(Config{Workers: 2, Backend: BackendIOUring})
		if err != nil {
			if errors.Is(err, ErrBackendUnavailable) {
				t.Skipf("io_uring unavailable: %v", err)
			}
			t.Fatal(err)
		}
		if rt.io.armer == nil {
			rt.Close()
			t.Fatal("the io_uring runtime does not arm on demand")
		}
		const conns = 24
		var rounds atomic.Int64
		// loop reads and writes s until an error: each round a Select of a read and a
		// write, so both directions are armed and one is dropped.
		loop := func(s *UnixStream) Future[error] {
			rbuf := make([]byte, 512)
			wbuf := make([]byte, 8<<10)
			var sel Future[Selected2[Result[int], Result[int]]]
			return WithDrop(PollFn(func(cx *Context) (error, bool) {
				for {
					if sel == nil {
						sel = Select2(s.Read(rbuf), s.Write(wbuf))
					}
					v, ok := sel.Poll(cx)
					if !ok {
						return nil, false
					}
					sel = nil
					rounds.Add(1)
					r := v.V1
					if v.Index == 1 {
						r = v.V2
					}
					if r.Err != nil {
						return r.Err, true
					}
					if v.Index == 0 && r.Value == 0 {
						return net.ErrClosed, true // the peer went away first: not expected
					}
				}
			}), func() {
				if sel != nil {
					Drop(sel)
				}
			})
		}
		peers := make([]int, conns)
		streams := make([]*UnixStream, conns)
		var handles []JoinHandle[error]
		blockErrs := make(chan error, conns)
		for i := range conns {
			a, b := hostile14RawPair(t)
			peers[i], streams[i] = b, hostile14Stream(a)
			if i%2 == 0 {
				handles = append(handles, Spawn(rt, loop(streams[i])))
			} else {
				go func() {
					err, berr := BlockOn(rt, loop(streams[i]))
					if berr != nil {
						err = berr
					}
					blockErrs <- err
				}()
			}
		}
		// The peers read everything, write now and then, and stop at end of file.
		var wg sync.WaitGroup
		peerErrs := make(chan error, conns)
		for i, p := range peers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer unix.Close(p)
				buf := make([]byte, 64<<10)
				deadline := time.Now().Add(60 * time.Second)
				for k := 0; ; k++ {
					n, err := unix.Read(p, buf)
					switch {
					case n == 0 && err == nil, err == unix.ECONNRESET:
						// The runtime's side is closed (a reset when it had unread
						// bytes of ours).
						return
					case err == unix.EAGAIN:
						if k%4 == 0 {
							unix.Sendto(p, []byte("ping"), unix.MSG_NOSIGNAL, nil)
						}
						if time.Now().After(deadline) {
							peerErrs <- fmt.Errorf("peer %d: no end of file 60s on: the socket stayed open", i)
							return
						}
						time.Sleep(50 * time.Microsecond)
					case err != nil:
						peerErrs <- fmt.Errorf("peer %d: read: %v", i, err)
						return
					}
				}
			}()
		}
		target := int64(2000 * (round + 1))
		waitFor(t, "every stream bound and some rounds gone through", func() bool {
			for _, s := range streams {
				if s.fd.sio.Load() == nil {
					return false
				}
			}
			return rounds.Load() >= target
		})
		if err := rt.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		for i, h := range handles {
			err, herr := waitHandleFor(t, h, fmt.Sprintf("round %d: task %d", round, i))
			if !errors.Is(herr, ErrCancelled) && !errors.Is(err, net.ErrClosed) {
				t.Errorf("round %d: task %d: %v, %v, want ErrCancelled or net.ErrClosed", round, i, err, herr)
			}
		}
		for range conns / 2 {
			select {
			case err := <-blockErrs:
				if !errors.Is(err, ErrRuntimeClosed) && !errors.Is(err, net.ErrClosed) {
					t.Errorf("round %d: BlockOn: %v, want ErrRuntimeClosed or net.ErrClosed", round, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: a BlockOn did not return after Close", round)
			}
		}
		wg.Wait()
		close(peerErrs)
		for err := range peerErrs {
			t.Errorf("round %d: %v", round, err)
		}
		for _, s := range streams {
			s.Close()
		}
		checkNoLeak(t, base)
	}
}
