package blitzio

import (
	"sync/atomic"
	"testing"
	"time"
)

// Several tasks await one *CompletionFuture (the documented "a copy awaited by several
// tasks"); another awaits it through a Timeout that expires, which drops it. The Drop
// must not strand the tasks still waiting: every one of them gets the value.
func TestCompletionSharedCopyDroppedByOneAwaiter(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	c, fut := NewCompletion[int]()
	var polled atomic.Int32
	const n = 4
	hs := make([]JoinHandle[int], n)
	for i := range hs {
		hs[i] = Spawn(rt, PollFn(func(cx *Context) (int, bool) {
			v, ok := fut.Poll(cx)
			if !ok {
				polled.Add(1)
			}
			return v, ok
		}))
	}
	waitFor(t, "every awaiter registered", func() bool { return polled.Load() >= n })
	r, err := waitHandle(t, Spawn(rt, Timeout(5*time.Millisecond, Future[int](fut))))
	if err != nil || r.Err == nil {
		t.Fatalf("Timeout around the shared future: %v, %v; want ErrTimeout", r, err)
	}
	c.Complete(42)
	for i, h := range hs {
		if v, err := waitHandle(t, h); v != 42 || err != nil {
			t.Fatalf("awaiter %d after another awaiter dropped its copy: %v, %v", i, v, err)
		}
	}
}

// By hand: Drop of a shared CompletionFuture wakes the awaiters it cannot tell from its
// own and forgets them; one that polls again is registered again (clearing Closed) and
// woken by Complete.
func TestCompletionSharedDropWakesOthers(t *testing.T) {
	c, fut := NewCompletion[string]()
	var wakes [3]atomic.Int32
	cxs := make([]*Context, len(wakes))
	for i := range cxs {
		cxs[i] = NewContext(nil, WakerFunc(func() { wakes[i].Add(1) }))
		if _, ok := fut.Poll(cxs[i]); ok {
			t.Fatal("ready before Complete")
		}
	}
	// Polling again with the same waker keeps one entry.
	fut.Poll(cxs[0])
	if n := len(fut.s.ws); n != len(cxs) {
		t.Fatalf("%d registrations, want %d", n, len(cxs))
	}
	fut.Drop()
	for i := range wakes {
		if n := wakes[i].Load(); n != 1 {
			t.Fatalf("awaiter %d woken %d times by another's Drop, want 1", i, n)
		}
	}
	if len(fut.s.ws) != 0 || !c.Closed() {
		t.Fatalf("after Drop: %d registrations kept, Closed %v", len(fut.s.ws), c.Closed())
	}
	// Awaiter 1 is still there: it polls again.
	if _, ok := fut.Poll(cxs[1]); ok {
		t.Fatal("ready before Complete")
	}
	if c.Closed() {
		t.Fatal("Closed after a live awaiter polled again")
	}
	c.Complete("v")
	if wakes[1].Load() != 2 || wakes[0].Load() != 1 || wakes[2].Load() != 1 {
		t.Fatalf("wakes after Complete = %d %d %d, want 1 2 1", wakes[0].Load(), wakes[1].Load(), wakes[2].Load())
	}
	if v, ok := fut.Poll(cxs[1]); !ok || v != "v" {
		t.Fatalf("poll after Complete: %q %v", v, ok)
	}
	fut.Drop() // after completion: nothing to wake, still fine
}

// Waiters with a registration of their own (what Child.Wait uses): dropping one removes
// its waker and nothing else; the others are woken by Complete, the dropped one is not.
// Closed turns true only when the last registration is gone.
func TestCompletionWaitersDropOnlyTheirOwn(t *testing.T) {
	c, fut := NewCompletion[int]()
	const n = 5
	var wakes [n]atomic.Int32
	ws := make([]*completionWaiter[int], n)
	cxs := make([]*Context, n)
	for i := range ws {
		ws[i] = fut.waiter()
		cxs[i] = NewContext(nil, WakerFunc(func() { wakes[i].Add(1) }))
		if _, ok := ws[i].Poll(cxs[i]); ok {
			t.Fatal("ready before Complete")
		}
		ws[i].Poll(cxs[i]) // one entry per waiter however often it polls
	}
	if len(fut.s.hs) != n {
		t.Fatalf("%d registrations, want %d", len(fut.s.hs), n)
	}
	ws[1].Drop()
	ws[1].Drop() // idempotent
	ws[3].Drop()
	if len(fut.s.hs) != n-2 || c.Closed() {
		t.Fatalf("after two Drops: %d registrations, Closed %v; want %d, false", len(fut.s.hs), c.Closed(), n-2)
	}
	for i := range wakes {
		if wakes[i].Load() != 0 {
			t.Fatalf("waiter %d woken by another's Drop", i)
		}
	}
	// A waiter polled with another waker keeps only the latest one.
	cx4 := NewContext(nil, WakerFunc(func() { wakes[4].Add(100) }))
	ws[4].Poll(cx4)
	c.Complete(7)
	want := [n]int32{1, 0, 1, 0, 100}
	for i := range wakes {
		if wakes[i].Load() != want[i] {
			t.Fatalf("waiter %d woken %d times, want %d", i, wakes[i].Load(), want[i])
		}
	}
	for _, i := range []int{0, 1, 2} { // a dropped waiter may still be polled after all
		if v, ok := ws[i].Poll(cxs[i]); !ok || v != 7 {
			t.Fatalf("waiter %d: %v %v", i, v, ok)
		}
	}

	// Closed: set when the last registration goes, cleared by a poll.
	c2, fut2 := NewCompletion[int]()
	a, b := fut2.waiter(), fut2.waiter()
	cx := NewContext(nil, WakerFunc(func() {}))
	a.Poll(cx)
	b.Poll(cx)
	a.Drop()
	if c2.Closed() {
		t.Fatal("Closed while a waiter still waits")
	}
	b.Drop()
	if !c2.Closed() {
		t.Fatal("not Closed after every waiter was dropped")
	}
	a.Poll(cx)
	if c2.Closed() {
		t.Fatal("Closed after a waiter polled again")
	}
	// A Drop of the shared future does not count a waiter's registration as its own.
	fut2.Drop()
	if c2.Closed() {
		t.Fatal("Closed by the shared future's Drop while a waiter still waits")
	}
}

// Several tasks each await their own waiter of one completion; some of them time out
// (their waiter is dropped) while the others wait on: those are all woken, under -race.
func TestCompletionWaitersTimeoutAmongMany(t *testing.T) {
	rt := newRT(t, Config{Workers: 3})
	for round := range 50 {
		c, fut := NewCompletion[int]()
		const n = 8
		hs := make([]JoinHandle[Result[int]], n)
		for i := range hs {
			d := time.Hour
			if i%2 == 1 {
				d = time.Duration(i) * 100 * time.Microsecond
			}
			hs[i] = Spawn(rt, Timeout(d, Future[int](fut.waiter())))
		}
		for i := 1; i < n; i += 2 {
			if r, err := waitHandle(t, hs[i]); err != nil || r.Err == nil {
				t.Fatalf("round %d: short waiter %d: %v %v, want a timeout", round, i, r, err)
			}
		}
		c.Complete(round)
		for i := 0; i < n; i += 2 {
			if r, err := waitHandle(t, hs[i]); err != nil || r.Err != nil || r.Value != round {
				t.Fatalf("round %d: waiter %d: %v %v", round, i, r, err)
			}
		}
	}
}
