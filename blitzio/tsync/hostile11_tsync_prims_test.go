package tsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func h11SemQueued(s *Semaphore) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters.n
}

// TestHostile11SemaphoreReset: Reset of a waiting AcquireFuture gives back the permits
// it had collected (to the pool, or to the next waiter), and the reset future acquires
// afresh; Reset of a future whose acquire completed but was not yet seen passes the
// permits to the next waiter; Reset after a ready poll leaves the Permit with the caller.
func TestHostile11SemaphoreReset(t *testing.T) {
	s := NewSemaphore(0)
	tc := newTestCx()
	f := s.AcquireAsync(3)
	if _, ok := f.Poll(tc.cx); ok {
		t.Fatal("acquire of 3 ready on an empty semaphore")
	}
	s.AddPermits(2) // a down payment of 2 on f's 3
	if n := s.Available(); n != 0 {
		t.Fatalf("Available with a waiter short of 1 = %d, want 0", n)
	}
	f.Reset()
	if n := s.Available(); n != 2 {
		t.Fatalf("Available after Reset of the waiter = %d, want its 2 permits back", n)
	}
	if h11SemQueued(s) != 0 {
		t.Fatal("a reset waiter stayed queued")
	}
	if _, ok := f.Poll(tc.cx); ok {
		t.Fatal("the reset acquire of 3 is ready with 2 permits")
	}
	s.AddPermits(1)
	r, ok := f.Poll(tc.cx)
	if !ok || r.Err != nil || r.Value.N() != 3 {
		t.Fatalf("the reset acquire = %v, %v", r, ok)
	}
	p := r.Value
	f.Reset() // p stays the caller's
	if _, ok := f.Poll(tc.cx); ok {
		t.Fatal("the reset acquire is ready while its previous Permit holds every permit")
	}
	g := s.AcquireAsync(1)
	tg := newTestCx()
	if _, ok := g.Poll(tg.cx); ok {
		t.Fatal("acquire ready with no permit free")
	}
	p.Release() // f needs 3: gets them, g stays queued behind it
	if tc.wakes.Load() == 0 {
		t.Fatal("Release did not wake the waiter it completed")
	}
	f.Reset() // completed but not seen: its 3 permits go on, 1 to g, 2 to the pool
	if tg.wakes.Load() == 0 {
		t.Fatal("Reset of a completed, unseen acquire did not pass its permits to the next waiter")
	}
	r, ok = g.Poll(tg.cx)
	if !ok || r.Err != nil || r.Value.N() != 1 {
		t.Fatalf("the waiter behind = %v, %v", r, ok)
	}
	if n := s.Available(); n != 2 {
		t.Fatalf("Available = %d, want 2", n)
	}
	r.Value.Release()
	if n := s.Available(); n != 3 {
		t.Fatalf("Available after every permit came back = %d, want 3", n)
	}
	expectPanic(t, "polled again after it returned ready", func() { g.Poll(tg.cx) })
}

// TestHostile11SemaphoreReleaseFrom: a task that releases with ReleaseFrom completes
// another task waiting for the permit; a second ReleaseFrom of the emptied Permit gives
// nothing back.
func TestHostile11SemaphoreReleaseFrom(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	rt := newRT(t, 2)
	s := NewSemaphore(1)
	p, err := s.TryAcquire(1)
	if err != nil {
		t.Fatal(err)
	}
	waiter := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int64 {
		r := blitzio.Await(co, s.AcquireAsync(1))
		if r.Err != nil {
			panic(r.Err)
		}
		n := r.Value.N()
		r.Value.ReleaseFrom(co.Context())
		return n
	}))
	for deadline := time.Now().Add(h11Timeout); h11SemQueued(s) != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the acquiring task never queued")
		}
		time.Sleep(100 * time.Microsecond)
	}
	if _, err := h11Join(t, "ReleaseFrom task", blitzio.Spawn(rt, blitzio.PollFn(
		func(cx *blitzio.Context) (int, bool) {
			p.ReleaseFrom(cx)
			p.ReleaseFrom(cx) // emptied: nothing
			return 0, true
		}))); err != nil {
		t.Fatal(err)
	}
	if n, err := h11Join(t, "the acquiring task", waiter); n != 1 || err != nil {
		t.Fatalf("the acquiring task = %d, %v", n, err)
	}
	if n := s.Available(); n != 1 {
		t.Fatalf("Available = %d, want 1 (a second ReleaseFrom must give nothing back)", n)
	}
}

// h11Gate is a future pending until open is set, then ready with r.
type h11Gate[T any] struct {
	open *atomic.Bool
	r    T
}

func (g *h11Gate[T]) Poll(cx *blitzio.Context) (T, bool) {
	var zero T
	if !g.open.Load() {
		return zero, false
	}
	return g.r, true
}

// TestHostile11OnceCellGetOrTryInit: an initialiser that fails gives its caller the
// error and the turn to the oldest waiter, whose initialiser sets the value; later
// callers get it without running theirs. An init that returns a nil future panics in its
// caller, and the turn still passes on. A nil cell or init is named in the panic.
func TestHostile11OnceCellGetOrTryInit(t *testing.T) {
	var c OnceCell[int]
	var open atomic.Bool
	boom := errors.New("boom")
	calls := 0
	f1 := c.GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] {
		calls++
		return &h11Gate[blitzio.Result[int]]{&open, blitzio.Result[int]{Value: 99, Err: boom}}
	})
	f2 := c.GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] {
		calls++
		return blitzio.Ready(blitzio.Result[int]{Value: 42})
	})
	t1, t2 := newTestCx(), newTestCx()
	if _, ok := f1.Poll(t1.cx); ok {
		t.Fatal("f1 ready while its initialiser is pending")
	}
	if _, ok := f2.Poll(t2.cx); ok {
		t.Fatal("f2 ready while another initialiser runs")
	}
	if err := c.Set(1); !errors.Is(err, ErrOnceCellBusy) {
		t.Fatalf("Set while an initialiser runs = %v", err)
	}
	open.Store(true)
	r, ok := f1.Poll(t1.cx)
	if !ok || !errors.Is(r.Err, boom) || r.Value != 0 {
		t.Fatalf("f1 with a failing initialiser = %+v, %v; want the error and no value", r, ok)
	}
	if c.IsSet() {
		t.Fatal("a failed initialiser set the cell")
	}
	if t2.wakes.Load() == 0 {
		t.Fatal("the failed initialiser did not hand the turn to the waiter")
	}
	r, ok = f2.Poll(t2.cx)
	if !ok || r.Err != nil || r.Value != 42 {
		t.Fatalf("f2 after the turn passed = %+v, %v", r, ok)
	}
	if r, ok := f1.Poll(t1.cx); !ok || !errors.Is(r.Err, boom) {
		t.Fatalf("f1 polled again = %+v, %v; want its own error again", r, ok)
	}
	f3 := c.GetOrTryInit(func() blitzio.Future[blitzio.Result[int]] {
		calls++
		return blitzio.Ready(blitzio.Result[int]{Err: boom})
	})
	if r, ok := f3.Poll(newTestCx().cx); !ok || r.Value != 42 || r.Err != nil {
		t.Fatalf("f3 on a set cell = %+v, %v", r, ok)
	}
	if calls != 2 {
		t.Fatalf("%d initialisers ran, want 2 (the failing one and the one that set the cell)", calls)
	}
	f2.Drop()
	f3.Drop()

	// A nil future from init: its caller's poll panics, and the cell is free for the
	// next caller's initialiser (not left busy for good).
	var d OnceCell[string]
	g1 := d.GetOrTryInit(func() blitzio.Future[blitzio.Result[string]] { return nil })
	if !pollPanics[blitzio.Result[string]](g1, newTestCx().cx) {
		t.Fatal("polling an initialiser's nil future did not panic")
	}
	g2 := d.GetOrTryInit(func() blitzio.Future[blitzio.Result[string]] {
		return blitzio.Ready(blitzio.Result[string]{Value: "ok"})
	})
	if r, ok := g2.Poll(newTestCx().cx); !ok || r.Value != "ok" {
		t.Fatalf("the caller after a nil-future initialiser = %+v, %v; want its own value", r, ok)
	}
	expectPanic(t, "nil *OnceCell", func() { (*OnceCell[int])(nil).GetOrTryInit(nil) })
	expectPanic(t, "init is nil", func() { d.GetOrTryInit(nil) })
}

// TestHostile11FutureDropStates: Drop of futures that never waited (idle) or already
// finished changes nothing but the future itself: polling after a Drop of an idle future
// panics naming it, a finished future keeps its result, Drop twice is harmless; Reset
// after Drop makes a usable future again. Covers Barrier, Notify, RwLock, Mutex,
// CancelToken and RecvAny.
func TestHostile11FutureDropStates(t *testing.T) {
	tc := newTestCx()
	b := NewBarrier(2)
	bf := b.WaitAsync()
	bf.Drop()
	bf.Drop()
	expectPanic(t, "BarrierFuture polled after Drop", func() { bf.Poll(tc.cx) })
	bf.Reset()
	if _, ok := bf.Poll(tc.cx); ok || b.arrived != 1 {
		t.Fatalf("reset BarrierFuture: ready=%v arrived=%d, want waiting with 1 arrival", ok, b.arrived)
	}
	bf.Drop()
	if b.arrived != 0 {
		t.Fatal("Drop of a waiting party did not withdraw its arrival")
	}
	bl := b.WaitAsync()
	bl.Poll(tc.cx)
	r, ok := b.WaitAsync().Poll(tc.cx)
	if !ok || !r.IsLeader {
		t.Fatal("the second party of a 2-barrier is not the ready leader")
	}
	if r, ok := bl.Poll(tc.cx); !ok || r.IsLeader {
		t.Fatalf("the released first party = %+v, %v", r, ok)
	}
	bl.Drop()
	if _, ok := bl.Poll(tc.cx); !ok {
		t.Fatal("a finished BarrierFuture lost its result to Drop")
	}

	var n Notify
	nf := n.Notified()
	nf.Drop()
	expectPanic(t, "NotifiedFuture polled after Drop", func() { nf.Poll(tc.cx) })
	n.NotifyOne()
	nf.Reset()
	if _, ok := nf.Poll(tc.cx); !ok {
		t.Fatal("a reset NotifiedFuture missed the stored permit")
	}
	nf.Drop()
	if _, ok := nf.Poll(tc.cx); !ok {
		t.Fatal("a finished NotifiedFuture lost its result to Drop")
	}

	var l RwLock
	rf := l.ReadAsync()
	rf.Drop()
	expectPanic(t, "RwLockFuture polled after Drop", func() { rf.Poll(tc.cx) })
	wf := l.WriteAsync()
	wg, ok := wf.Poll(tc.cx)
	if !ok {
		t.Fatal("WriteAsync on a free lock not ready")
	}
	wf.Drop() // done: the guard stays the caller's
	if _, ok := l.TryRead(); ok {
		t.Fatal("Drop of a finished WriteAsync released the caller's hold")
	}
	wg.Unlock()

	var m Mutex
	lf := m.LockAsync()
	g, ok := lf.Poll(tc.cx)
	if !ok {
		t.Fatal("LockAsync on a free lock not ready")
	}
	if g2, ok := lf.Poll(tc.cx); !ok || g2 != g {
		t.Fatal("a finished LockFuture polled again did not return the same guard")
	}
	lf.Drop()
	if !m.IsLocked() {
		t.Fatal("Drop of a finished LockFuture released the caller's lock")
	}
	g.Unlock()
	lf2 := m.LockAsync()
	lf2.Drop()
	expectPanic(t, "LockFuture polled after Drop", func() { lf2.Poll(tc.cx) })

	tok := NewCancelToken()
	cf := tok.Cancelled()
	cf.Drop()
	expectPanic(t, "CancelledFuture polled after Drop", func() { cf.Poll(tc.cx) })
	cw := tok.Cancelled()
	if _, ok := cw.Poll(tc.cx); ok {
		t.Fatal("Cancelled ready on a live token")
	}
	tok.Cancel()
	if _, ok := cw.Poll(tc.cx); !ok || !tok.waiters.empty() {
		t.Fatal("Cancelled not ready (or still queued) after Cancel")
	}
	cw.Drop()
	if _, ok := cw.Poll(tc.cx); !ok {
		t.Fatal("a finished CancelledFuture lost its result to Drop")
	}

	_, rx := NewUnbounded[int]()
	ra := RecvAny[int](rx)
	if _, ok := ra.Poll(tc.cx); ok {
		t.Fatal("RecvAny ready on an empty channel")
	}
	ra.Drop()
	ra.Drop()
	if queuedIn(&rx.c.recvQ) != 0 {
		t.Fatal("a dropped RecvAny stayed registered")
	}
	expectPanic(t, "RecvAnyFuture polled after Drop", func() { ra.Poll(tc.cx) })
}

// TestHostile11CancelTokenSmall: the token's Context names itself; nil tokens are named
// in the panic of the blocking forms as of the others; a task that polls many
// Cancelled futures of a cancelled token is made to yield by the budget (each is a
// leaf) and still finishes.
func TestHostile11CancelTokenSmall(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	tok := NewCancelToken()
	ctx := tok.Context()
	if s := fmt.Sprint(ctx); s != "tsync.CancelToken.Context" {
		t.Fatalf("the token's Context prints as %q", s)
	}
	if ctx.Err() != nil {
		t.Fatal("the Context of a live token has an error")
	}
	var nilTok *CancelToken
	expectPanic(t, "CancelToken.Wait called on a nil", func() { nilTok.Wait() })
	expectPanic(t, "CancelToken.WaitContext called on a nil", func() { _ = nilTok.WaitContext(context.Background()) })

	tok.Cancel()
	rt := newRT(t, 1)
	pending := 0
	done := 0
	h := blitzio.Spawn(rt, blitzio.PollFn(func(cx *blitzio.Context) (int, bool) {
		for done < 1000 {
			if _, ok := tok.Cancelled().Poll(cx); !ok {
				pending++
				return 0, false // the budget re-scheduled the task
			}
			done++
		}
		return pending, true
	}))
	if p, err := h11Join(t, "Cancelled polling task", h); err != nil || p == 0 {
		t.Fatalf("a task polling 1000 ready Cancelled futures yielded %d times (%v); want the budget to make it yield", p, err)
	}
}

// h11Deep calls f under n more stack frames.
//
//go:noinline
func h11Deep(n int, f func()) int {
	if n == 0 {
		f()
		return 0
	}
	return h11Deep(n-1, f) + 1
}

// TestHostile11RefuseInRuntimeDeepStack: a task's code far from its worker's entry
// (hundreds of frames, more than the first stack walk holds) is still refused; a plain
// goroutine as deep, a goroutine started by a task, and a SpawnBlocking closure may block.
func TestHostile11RefuseInRuntimeDeepStack(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt := newRT(t, 2)
	var m Mutex
	g := m.Lock()
	h := blitzio.Spawn(rt, blitzio.PollFn(func(*blitzio.Context) (int, bool) {
		return h11Deep(300, func() { m.Lock().Unlock() }), true
	}))
	res := h11Go(func() error { _, err := h.Wait(); return err })
	select {
	case err := <-res:
		if err == nil || !strings.Contains(err.Error(), "cannot block from within a runtime: Mutex.Lock") {
			t.Fatalf("Mutex.Lock 300 frames deep in a task: %v", err)
		}
	case <-time.After(h11Timeout):
		g.Unlock() // let the worker go before failing
		t.Fatal("Mutex.Lock 300 frames deep in a task blocked its worker instead of panicking")
	}
	if mutexQueued(&m) != 0 {
		t.Fatal("the refused Lock stayed queued")
	}
	// Blocking is fine from a goroutine as deep, one started by a task, and the pool.
	deep := h11Go(func() int { return h11Deep(300, func() { m.Lock().Unlock() }) })
	waitMutexQueued(t, &m, 1)
	fromTask := make(chan struct{})
	blitzio.Spawn(rt, blitzio.PollFn(func(*blitzio.Context) (int, bool) {
		go func() { m.Lock().Unlock(); close(fromTask) }()
		return 0, true
	}))
	waitMutexQueued(t, &m, 2)
	pool := blitzio.SpawnBlocking(rt, func() int { m.Lock().Unlock(); return 1 })
	waitMutexQueued(t, &m, 3)
	g.Unlock()
	h11Recv(t, "a deep goroutine's Lock", deep)
	h11Recv(t, "the Lock of a goroutine started by a task", fromTask)
	if v, err := h11Join(t, "a SpawnBlocking closure's Lock", pool); v != 1 || err != nil {
		t.Fatalf("SpawnBlocking closure = %d, %v", v, err)
	}
}
