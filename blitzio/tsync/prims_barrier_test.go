package tsync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func TestBarrierZeroAndOne(t *testing.T) {
	tc := newTestCx()
	for _, n := range []int{0, 1} {
		b := NewBarrier(n)
		for range 3 {
			r, ok := b.WaitAsync().Poll(tc.cx)
			if !ok || !r.IsLeader {
				t.Fatalf("Barrier(%d): %v %v, want an immediate leader", n, r, ok)
			}
		}
	}
	var zb Barrier
	if r := zb.Wait(); !r.IsLeader {
		t.Fatal("zero Barrier is not a one-party barrier")
	}
	expectPanic(t, "n = -1", func() { NewBarrier(-1) })
	var nb *Barrier
	expectPanic(t, "nil *Barrier", func() { nb.WaitAsync() })
}

// TestBarrierDropWithdraws: a waiting party that is dropped withdraws its arrival, so the
// generation needs another party; the released generation is unaffected by drops.
func TestBarrierDropWithdraws(t *testing.T) {
	tc := newTestCx()
	b := NewBarrier(3)
	a1, a2 := b.WaitAsync(), b.WaitAsync()
	a1.Poll(tc.cx)
	a2.Poll(tc.cx)
	a1.Drop()
	a3 := b.WaitAsync()
	if _, ok := a3.Poll(tc.cx); ok {
		t.Fatal("released with a withdrawn party")
	}
	a4 := b.WaitAsync()
	r4, ok := a4.Poll(tc.cx)
	if !ok || !r4.IsLeader {
		t.Fatal("third arrival did not release as leader")
	}
	r2, ok2 := a2.Poll(tc.cx)
	r3, ok3 := a3.Poll(tc.cx)
	if !ok2 || !ok3 || r2.IsLeader || r3.IsLeader {
		t.Fatal("followers not released, or a second leader")
	}
	// Released but not yet polled, then dropped: nothing to withdraw.
	c1, c2 := b.WaitAsync(), b.WaitAsync()
	c1.Poll(tc.cx)
	c2.Poll(tc.cx)
	b.WaitAsync().Poll(tc.cx)
	c1.Drop()
	if _, ok := c2.Poll(tc.cx); !ok {
		t.Fatal("generation")
	}
	d := b.WaitAsync()
	d.Poll(tc.cx)
	if b.arrived != 1 {
		t.Fatalf("arrived = %d after a released party was dropped, want 1", b.arrived)
	}
	d.Drop()
}

// TestBarrierGenerations: parties (tasks on two runtimes and goroutines) go through many
// generations; each has exactly one leader, and nobody passes generation g+1 before every
// party finished generation g.
func TestBarrierGenerations(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	rt1, rt2 := newRT(t, 2), newRT(t, 1)
	const tasks, gors = 12, 4
	gens := stressScale(2000)
	b := NewBarrier(tasks + gors)
	var leaders atomic.Int64
	var phase [2]atomic.Int64 // arrivals per generation parity
	var bad atomic.Int64
	body := func(g int, r BarrierResult) {
		if r.IsLeader {
			leaders.Add(1)
		}
		// Everyone of generation g arrived before anyone was released.
		if phase[g%2].Load() < int64((g/2+1)*(tasks+gors)) {
			bad.Add(1)
		}
	}
	var hs []blitzio.JoinHandle[int]
	for i := range tasks {
		rt := rt1
		if i%2 == 0 {
			rt = rt2
		}
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
			for g := range gens {
				phase[g%2].Add(1)
				body(g, blitzio.Await(co, b.WaitAsync()))
			}
			return i
		})))
	}
	var wg sync.WaitGroup
	for range gors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range gens {
				phase[g%2].Add(1)
				body(g, b.Wait())
			}
		}()
	}
	waitAll(t, hs)
	wg.Wait()
	if leaders.Load() != int64(gens) {
		t.Fatalf("%d leaders in %d generations", leaders.Load(), gens)
	}
	if bad.Load() != 0 {
		t.Fatalf("%d releases before the generation was complete", bad.Load())
	}
}

func TestBarrierWaitContext(t *testing.T) {
	defer watchdog(t, 20*time.Second)()
	b := NewBarrier(2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
	defer cancel()
	if _, err := b.WaitContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	// The withdrawn arrival does not count: two new parties are needed.
	done := make(chan BarrierResult)
	go func() { done <- b.Wait() }()
	r, err := b.WaitContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r2 := <-done; r.IsLeader == r2.IsLeader {
		t.Fatal("not exactly one leader")
	}
}

func TestBarrierWaitAllocatesNothing(t *testing.T) {
	tc := newTestCx()
	b := NewBarrier(2)
	f1, f2 := b.WaitAsync(), b.WaitAsync()
	if a := testing.AllocsPerRun(100, func() {
		f1.Reset()
		f2.Reset()
		f1.Poll(tc.cx)
		f2.Poll(tc.cx)
		f1.Poll(tc.cx)
	}); a != 0 {
		t.Fatalf("a generation: %v allocs", a)
	}
	// Reset of a waiting future withdraws its arrival.
	f1.Reset()
	f1.Poll(tc.cx)
	f1.Reset()
	if b.arrived != 0 {
		t.Fatalf("arrived = %d after Reset of a waiting party", b.arrived)
	}
}
