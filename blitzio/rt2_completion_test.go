package blitzio

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many goroutines race to complete one Completion while a task awaits it: exactly one
// Complete returns true, and the task sees the winner's value.
func TestCompletionRaceExactlyOneWins(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for round := range 200 {
		c, fut := NewCompletion[int]()
		h := Spawn(rt, fut)
		const producers = 16
		var wins atomic.Int32
		var winner atomic.Int64
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range producers {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				if rand.IntN(2) == 0 {
					runtime.Gosched()
				}
				if c.Complete(i + 1) {
					wins.Add(1)
					winner.Store(int64(i + 1))
				}
			}()
		}
		start.Done()
		done.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d Complete calls won, want exactly 1", round, n)
		}
		v, err := waitHandle(t, h)
		if err != nil || int64(v) != winner.Load() {
			t.Fatalf("round %d: task got %v, %v; the winner completed with %d", round, v, err, winner.Load())
		}
		if c.Complete(-1) || !c.IsCompleted() || !fut.IsCompleted() {
			t.Fatalf("round %d: a late Complete won, or IsCompleted is false", round)
		}
	}
}

// Completed before the first poll, after it, from a task's Poll, and awaited by several
// tasks and goroutines through copies: every awaiter gets the value.
func TestCompletionTimingsAndManyAwaiters(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	// Before the first poll.
	c, fut := NewCompletion[string]()
	c.Complete("early")
	if v, err := waitHandle(t, Spawn(rt, fut)); v != "early" || err != nil {
		t.Fatalf("completed before poll: %q, %v", v, err)
	}
	// From inside another task, while several tasks and a BlockOn wait.
	c2, fut2 := NewCompletion[string]()
	var hs []JoinHandle[string]
	for range 8 {
		hs = append(hs, Spawn(rt, fut2))
	}
	blockOn := make(chan string, 1)
	go func() {
		v, _ := BlockOn(rt, Future[string](fut2))
		blockOn <- v
	}()
	time.Sleep(time.Millisecond)
	Spawn(rt, Lazy(func() bool { return c2.Complete("late") })).Detach()
	for i, h := range hs {
		if v, err := waitHandle(t, h); v != "late" || err != nil {
			t.Fatalf("awaiter %d: %q, %v", i, v, err)
		}
	}
	select {
	case v := <-blockOn:
		if v != "late" {
			t.Fatalf("BlockOn: %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("BlockOn on a completed CompletionFuture hung")
	}
	// Polled again after ready: the same value.
	cx := NewContext(nil, Waker{})
	if v, ok := fut2.Poll(cx); !ok || v != "late" {
		t.Fatalf("poll after ready: %q, %v", v, ok)
	}
}

// The awaiting task is aborted (its future dropped) before, during and after the
// Complete race: Complete never panics, Closed reports the drop, and the task reports
// ErrCancelled or the value, never hangs.
func TestCompletionAbortRace(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	for round := range 300 {
		c, fut := NewCompletion[[]byte]()
		h := Spawn(rt, fut)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if rand.IntN(2) == 0 {
				runtime.Gosched()
			}
			h.Abort()
		}()
		go func() {
			defer wg.Done()
			if rand.IntN(2) == 0 {
				runtime.Gosched()
			}
			if !c.Complete(make([]byte, 8)) {
				t.Errorf("round %d: the only Complete call lost", round)
			}
		}()
		wg.Wait()
		v, err := waitHandle(t, h)
		switch {
		case errors.Is(err, ErrCancelled):
		case err == nil && len(v) == 8:
		default:
			t.Fatalf("round %d: aborted awaiter got %v, %v", round, v, err)
		}
		if errors.Is(err, ErrCancelled) {
			waitFor(t, "Closed after the abort", c.Closed)
		}
	}
}

// The receiver is dropped (the losing arm of a select) before the producer completes.
func TestCompletionReceiverDropped(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	c, fut := NewCompletion[int]()
	r, err := waitHandle(t, Spawn(rt, Select2[int, int](fut, Ready(5))))
	if err != nil || r.Index != 1 || r.V2 != 5 {
		t.Fatalf("select: %+v, %v", r, err)
	}
	if !c.Closed() {
		t.Fatal("Closed() is false after the select dropped the receiver")
	}
	if !c.Complete(1) {
		t.Fatal("Complete after the receiver was dropped: want true (it is the first call)")
	}
}

// A select over a CompletionFuture and another arm, in a loop: the select drops the
// future each time the other arm wins, and the loop polls it again. The value completed
// meanwhile (after a Drop) must still arrive.
func TestCompletionSelectLoop(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	c, fut := NewCompletion[int]()
	var iters atomic.Int64
	var sel Future[Selected2[int, struct{}]]
	h := Spawn(rt, PollFn(func(cx *Context) (int, bool) {
		for {
			if sel == nil {
				sel = Select2[int, struct{}](fut, YieldNow())
			}
			r, ok := sel.Poll(cx)
			if !ok {
				return 0, false
			}
			sel = nil
			if r.Index == 0 {
				return r.V1, true
			}
			iters.Add(1)
		}
	}))
	waitFor(t, "a few iterations", func() bool { return iters.Load() > 10 })
	waitFor(t, "the future dropped by a select", c.Closed)
	c.Complete(77)
	if v, err := waitHandle(t, h); v != 77 || err != nil {
		t.Fatalf("got %v, %v", v, err)
	}
}
