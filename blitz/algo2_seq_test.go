package blitz

import (
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
)

// Hostile uses of the iter.Seq bridges: called from inside the pool's own work, a loop body
// that panics, a sequence that panics while batches are running, nested bridges.

// TestAlgo2SeqInsidePoolWork runs MapSeq and ForEachSeq from inside parallel loops and a
// Group of the same pool, on pools of one to three workers: every call must finish with
// every element seen once.
func TestAlgo2SeqInsidePoolWork(t *testing.T) {
	for _, w := range []int{1, 2, 3} {
		p := newPool(t, Config{Workers: w})
		opts := []Option{WithPool(p), WithGrain(3)}
		name := fmt.Sprintf("w%d", w)
		var total atomic.Int64
		runWithWatchdog(t, name+"/For", func() {
			For(8, func(lo, hi int) {
				for range hi - lo {
					for u := range MapSeq(seqN(100), func(v int) int {
						ForEachSeq(seqN(10), func(int) { total.Add(1) }, opts...)
						return v
					}, opts...) {
						_ = u
					}
				}
			}, WithPool(p), WithGrain(1))
		})
		if total.Load() != 8*100*10 {
			t.Errorf("%s: %d calls, want %d", name, total.Load(), 8*100*10)
		}
		total.Store(0)
		runWithWatchdog(t, name+"/Group", func() {
			g := NewGroup(p)
			g.SetLimit(2)
			for range 6 {
				g.Go(func() error {
					ForEachSeq(seqN(50), func(v int) { total.Add(int64(nestedWork(p, 1))) }, opts...)
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
		if total.Load() != 6*50 {
			t.Errorf("%s: Group total %d, want %d", name, total.Load(), 6*50)
		}
	}
}

// panicAfter is a sequence of 0..n-1 that panics after yielding k elements.
func panicAfter(n, k int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if i == k {
				panic("seq boom")
			}
			if !yield(i) {
				return
			}
		}
	}
}

// TestAlgo2SeqPanicsEverywhere: the sequence panics, the loop body panics, f panics; each
// reaches the caller, no f runs after the call is over, and the pool still works.
func TestAlgo2SeqPanicsEverywhere(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	opts := []Option{WithPool(p), WithGrain(2)}
	var running atomic.Int64
	f := func(v int) int {
		running.Add(1)
		defer running.Add(-1)
		return nestedWork(p, v)
	}
	check := func(name string) {
		if r := running.Load(); r != 0 {
			t.Errorf("%s: %d calls of f still running after the call returned", name, r)
		}
	}
	for _, k := range []int{0, 1, 5, 50} {
		runWithWatchdog(t, "MapSeq seq panic", func() {
			wantPanic(t, "seq boom", func() {
				for range MapSeq(panicAfter(100, k), f, opts...) {
				}
			})
		})
		check("MapSeq seq panic")
		runWithWatchdog(t, "ForEachSeq seq panic", func() {
			wantPanic(t, "seq boom", func() {
				ForEachSeq(panicAfter(100, k), func(v int) { f(v) }, opts...)
			})
		})
		check("ForEachSeq seq panic")
		runWithWatchdog(t, "MapSeq body panic", func() {
			wantPanic(t, "body boom", func() {
				i := 0
				for range MapSeq(seqN(100), f, opts...) {
					if i == k {
						panic("body boom")
					}
					i++
				}
			})
		})
		check("MapSeq body panic")
	}
	runWithWatchdog(t, "after", func() { nestedWork(p, 1) })
}
