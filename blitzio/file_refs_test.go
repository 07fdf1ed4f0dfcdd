package blitzio

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFileRefsShardedClose stresses fileRefs' protocol: many more goroutines than cores
// take and release references on random shards (and on base, as ring operations do),
// with random pauses inside, while a closer runs closeGate and waits for its waker.
// Once the close completes, no reference may be held (a read would then be using the
// descriptor number Close is about to free) and none may be taken after; and the close
// must complete (a lost wake-up would hang it: the watchdog fails the test instead).
func TestFileRefsShardedClose(t *testing.T) {
	rt := fileRT(t)
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	const holders = 16
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range rounds {
		var r fileRefs
		r.shards = make([]refShard, 1<<(round%4)) // 1, 2, 4, 8 shards
		var inside, afterClose atomic.Int64
		var closed atomic.Bool
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range holders {
			seed := rng.Uint64()
			wg.Go(func() {
				lr := rand.New(rand.NewPCG(seed, uint64(g)))
				s := &r.base
				if g%4 != 0 {
					s = &r.shards[lr.IntN(len(r.shards))].n
				}
				<-start
				for {
					if !r.increfIn(s) {
						return
					}
					inside.Add(1)
					if closed.Load() {
						afterClose.Add(1)
					}
					for range lr.IntN(3) {
						runtime.Gosched()
					}
					inside.Add(-1)
					wakeRef(r.decrefIn(s))
					if lr.IntN(4) == 0 {
						runtime.Gosched()
					}
				}
			})
		}
		woke := make(chan struct{}, 1)
		cx := NewContext(rt, WakerFunc(func() {
			select {
			case woke <- struct{}{}:
			default:
			}
		}))
		close(start)
		for range rng.IntN(200) {
			runtime.Gosched()
		}
		for !r.closeGate(cx) {
			select {
			case <-woke:
			case <-time.After(10 * time.Second):
				buf := make([]byte, 1<<20)
				t.Fatalf("round %d: Close never woken (count %d)\n%s", round, r.total(), buf[:runtime.Stack(buf, true)])
			}
		}
		closed.Store(true)
		if n := inside.Load(); n != 0 {
			t.Fatalf("round %d: the close completed with %d references held", round, n)
		}
		wg.Wait()
		if n := afterClose.Load(); n != 0 {
			t.Fatalf("round %d: %d references taken after the close completed", round, n)
		}
		if n := r.total(); n != 0 {
			t.Fatalf("round %d: count %d after every holder stopped", round, n)
		}
	}
}

// TestFileRefsShardFor: a worker's reads go to its own shard (workers beyond the shard
// count share them), everything else to base; a file without shards uses base only.
func TestFileRefsShardFor(t *testing.T) {
	var r fileRefs
	w := &worker{id: 5}
	cx := &Context{w: w}
	if r.shardFor(cx) != &r.base || r.shardFor(nil) != &r.base {
		t.Fatal("a fileRefs without shards must use base")
	}
	r.shards = make([]refShard, 4)
	if got, want := r.shardFor(cx), &r.shards[1].n; got != want {
		t.Fatal("worker 5 of 4 shards: not shard 1")
	}
	if r.shardFor(&Context{}) != &r.base || r.shardFor(nil) != &r.base {
		t.Fatal("a Context off a worker must use base")
	}
	r.makeShards()
	if n := len(r.shards); n&(n-1) != 0 || n > maxRefShards || (n < runtime.GOMAXPROCS(0) && n != maxRefShards) {
		t.Fatalf("makeShards: %d shards for GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
}

// TestFileRefsLastReleaseBeforeWakerStored: the last reference is released after
// closeGate found the count non-zero but before it stored its waker (forced through
// closeGateHook): that release finds no waker to wake, so closeGate's look at the count
// after storing its waker must see zero and complete the close.
func TestFileRefsLastReleaseBeforeWakerStored(t *testing.T) {
	rt := fileRT(t)
	var r fileRefs
	r.shards = make([]refShard, 2)
	s := &r.shards[1].n
	if !r.increfIn(s) {
		t.Fatal("increfIn failed before Close")
	}
	var woken atomic.Int64
	cx := NewContext(rt, WakerFunc(func() { woken.Add(1) }))
	released := false
	hook := func(h *fileRefs) {
		if h == &r && !released {
			released = true
			wakeRef(r.decrefIn(s))
		}
	}
	closeGateHook.Store(&hook)
	defer closeGateHook.Store(nil)
	if !r.closeGate(cx) {
		t.Fatalf("closeGate: pending after the last release (woken %d times): the close would never be woken", woken.Load())
	}
	if !released {
		t.Fatal("the hook did not run: the test did not exercise the window")
	}
	if r.increfIn(s) {
		t.Fatal("increfIn succeeded after the close")
	}
}
