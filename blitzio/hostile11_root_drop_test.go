package blitzio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Drop propagation through the combinators whose Drop no test reached (coverage): a
// TryJoin, an All and an Erase dropped while their futures are pending must drop each
// pending future exactly once, and must not drop a future that already finished (it
// has handed over its value; a second Drop of, say, an accepted connection's future
// would close what the caller now owns).

// h11Counted is a future that is ready after readyAfter polls (never, if negative) with
// value v, and counts its polls and drops.
type h11Counted[T any] struct {
	v          T
	readyAfter int64
	polls      atomic.Int64
	drops      atomic.Int64
}

func (f *h11Counted[T]) Poll(*Context) (T, bool) {
	n := f.polls.Add(1)
	if f.readyAfter >= 0 && n > f.readyAfter {
		return f.v, true
	}
	var zero T
	return zero, false
}

func (f *h11Counted[T]) Drop() { f.drops.Add(1) }

// h11AbortWhenPolled spawns fut, waits until every future in polled has been polled at
// least once, aborts the task and checks that its handle reports ErrCancelled.
func h11AbortWhenPolled[T any](t *testing.T, rt *Runtime, fut Future[T], polled ...interface{ count() int64 }) {
	t.Helper()
	h := Spawn(rt, fut)
	waitFor(t, "the combinator to poll its futures", func() bool {
		for _, p := range polled {
			if p.count() == 0 {
				return false
			}
		}
		return true
	})
	h.Abort()
	if _, err := waitHandleFor(t, h, "the aborted task"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("aborted task reported %v, want ErrCancelled", err)
	}
}

func (f *h11Counted[T]) count() int64 { return f.polls.Load() }

func TestHostile11TryJoinDropDropsOnlyPending(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	done := &h11Counted[Result[int]]{v: Result[int]{Value: 1}, readyAfter: 0}
	p1 := &h11Counted[Result[int]]{readyAfter: -1}
	p2 := &h11Counted[Result[int]]{readyAfter: -1}
	h11AbortWhenPolled(t, rt, TryJoin[int, Future[Result[int]]](done, p1, p2), done, p1, p2)
	if d := done.drops.Load(); d != 0 {
		t.Errorf("the finished future was dropped %d times, want 0", d)
	}
	for i, p := range []*h11Counted[Result[int]]{p1, p2} {
		if d := p.drops.Load(); d != 1 {
			t.Errorf("pending future %d dropped %d times, want 1", i, d)
		}
	}
}

func TestHostile11AllDropDropsOnlyPending(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	failed := &h11Counted[Result[int]]{v: Result[int]{Err: errors.New("boom")}, readyAfter: 0}
	p := &h11Counted[Result[int]]{readyAfter: -1}
	h11AbortWhenPolled(t, rt, All[int, Future[Result[int]]](failed, p), failed, p)
	if d := failed.drops.Load(); d != 0 {
		t.Errorf("the finished (failed) future was dropped %d times, want 0", d)
	}
	if d := p.drops.Load(); d != 1 {
		t.Errorf("the pending future was dropped %d times, want 1", d)
	}
}

func TestHostile11EraseDropReachesInner(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	p := &h11Counted[string]{readyAfter: -1}
	h11AbortWhenPolled(t, rt, Erase[string](p), p)
	if d := p.drops.Load(); d != 1 {
		t.Fatalf("the erased future's inner future was dropped %d times, want 1", d)
	}
	// And a finished erased future hands over its value and is not dropped.
	q := &h11Counted[string]{v: "x", readyAfter: 0}
	v, err := waitHandleFor(t, Spawn(rt, Erase[string](q)), "an erased ready future")
	if err != nil || v != any("x") {
		t.Fatalf("Erase(ready x) gave %v, %v", v, err)
	}
	if d := q.drops.Load(); d != 0 {
		t.Fatalf("a finished erased future was dropped %d times", d)
	}
}

// TryJoin dropped by a losing Select branch (not an abort): the same rule.
func TestHostile11TryJoinDroppedBySelect(t *testing.T) {
	clk := NewTestClock(time.Unix(1000, 0))
	rt := newRT(t, Config{Workers: 1, Clock: clk})
	p := &h11Counted[Result[int]]{readyAfter: -1}
	h := Spawn(rt, Timeout(time.Second, TryJoin[int, Future[Result[int]]](p)))
	waitFor(t, "TryJoin polled", func() bool { return p.polls.Load() > 0 })
	clk.Advance(2 * time.Second)
	r, err := waitHandleFor(t, h, "the timed-out TryJoin")
	if err != nil || !errors.Is(r.Err, ErrTimeout) {
		t.Fatalf("Timeout(TryJoin(pending)) = %v, %v; want ErrTimeout", r.Err, err)
	}
	if d := p.drops.Load(); d != 1 {
		t.Fatalf("the pending future inside the timed-out TryJoin was dropped %d times, want 1", d)
	}
}

// SystemClock is the default clock: a runtime given it explicitly runs its timers on
// real time, and its Now reads the wall clock.
func TestHostile11SystemClock(t *testing.T) {
	c := SystemClock()
	before := time.Now()
	now := c.Now()
	if now.Before(before.Add(-time.Second)) || now.After(time.Now().Add(time.Second)) {
		t.Fatalf("SystemClock().Now() = %v, far from time.Now() %v", now, before)
	}
	rt := newRT(t, Config{Workers: 1, Clock: c})
	if _, err := waitHandleFor(t, Spawn(rt, Sleep(time.Millisecond)), "a 1 ms sleep on SystemClock"); err != nil {
		t.Fatal(err)
	}
}

// File.PollWrite and File.PollFlush from a hand-written future (Tokio's poll_write and
// poll_flush): the bytes accepted by PollWrite are on disk once PollFlush is ready, and a
// write that fails in the background (the file is open read-only) is reported by
// PollFlush (or by the next PollWrite), not lost.
func TestHostile11FilePollFlush(t *testing.T) {
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	f := must(t, rt, Create(name))
	data := bytes.Repeat([]byte("poll-flush "), 1000)
	off, flushing := 0, false
	r := run(t, rt, Future[Result[struct{}]](PollFn(func(cx *Context) (Result[struct{}], bool) {
		for !flushing && off < len(data) {
			w, ok := f.PollWrite(cx, data[off:])
			if !ok {
				return Result[struct{}]{}, false
			}
			if w.Err != nil {
				return Result[struct{}]{Err: w.Err}, true
			}
			off += w.Value
		}
		flushing = true
		return f.PollFlush(cx)
	})))
	if r.Err != nil {
		t.Fatalf("PollFlush after %d bytes: %v", off, r.Err)
	}
	// Flushed: the bytes are in the file before Close.
	if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after PollFlush the file holds %d bytes (%v), want %d", len(got), err, len(data))
	}
	must(t, rt, f.Close())

	ro := must(t, rt, Open(name)) // read-only: a write fails
	wrote := false
	r = run(t, rt, Future[Result[struct{}]](PollFn(func(cx *Context) (Result[struct{}], bool) {
		if !wrote {
			w, ok := ro.PollWrite(cx, []byte("x"))
			if !ok {
				return Result[struct{}]{}, false
			}
			wrote = true
			if w.Err != nil {
				return Result[struct{}]{Err: w.Err}, true // reported at once: fine too
			}
		}
		return ro.PollFlush(cx)
	})))
	if r.Err == nil {
		t.Fatal("a write to a read-only File was reported by neither PollWrite nor PollFlush")
	}
	if !errors.Is(r.Err, syscall.EBADF) {
		t.Errorf("the failed write's error is %v, want one wrapping EBADF (as os.File.Write)", r.Err)
	}
	must(t, rt, ro.Close())
	// A nil *File reports os.ErrInvalid, as os.File's methods do.
	var nf *File
	if r, ok := nf.PollFlush(nil); !ok || !errors.Is(r.Err, os.ErrInvalid) {
		t.Errorf("nil File PollFlush = %v, %v; want os.ErrInvalid", r, ok)
	}
}
