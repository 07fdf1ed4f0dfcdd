package blitz

import (
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// Regression tests: the iter.Seq bridges (MapSeq, ForEachSeq) finish whatever f does,
// including f that runs parallel work (For, Join, Sort, MapSeq) on the same pool.

// seqN is a sequence of 0..n-1.
func seqN(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// nestedWork uses the pool p from inside f: a parallel loop, a Join and a small parallel
// sort, each forced to fork with a tiny grain, and returns a value derived from v.
func nestedWork(p *Pool, v int) int {
	var sum atomic.Int64
	For(64, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sum.Add(int64(i))
		}
	}, WithPool(p), WithGrain(1))
	a, b := Call(p, func(t *Task) int {
		x, y := Join2(t, func(*Task) int { return v }, func(*Task) int { return 1 })
		return x + y
	}), 0
	s := make([]int, 100)
	for i := range s {
		s[i] = (i * 37) % 100
	}
	SortFunc(s, func(x, y int) int { return x - y }, WithPool(p), WithGrain(8))
	if !slices.IsSorted(s) || sum.Load() != 64*63/2 {
		panic("nested work gave a wrong result")
	}
	return a + b - 1 + s[0]
}

// TestDefectsMapSeqNestedPool runs MapSeq and ForEachSeq with an f that uses the same pool,
// for several worker counts and batch sizes; every call must finish (watchdog) with the
// right results in order.
func TestDefectsMapSeqNestedPool(t *testing.T) {
	n := 600
	if raceEnabled {
		n = 200
	}
	for _, w := range []int{1, 2, 3, 4, 8} {
		p, err := NewPool(Config{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		for _, grain := range []int{1, 7} {
			name := fmt.Sprintf("w%d/g%d", w, grain)
			opts := []Option{WithPool(p), WithGrain(grain)}
			runWithWatchdog(t, name+"/MapSeq", func() {
				k := 0
				for u := range MapSeq(seqN(n), func(v int) int { return nestedWork(p, v) }, opts...) {
					if u != k {
						t.Errorf("%s: MapSeq element %d = %d, want %d", name, k, u, k)
						return
					}
					k++
				}
				if k != n {
					t.Errorf("%s: MapSeq yielded %d elements, want %d", name, k, n)
				}
			})
			runWithWatchdog(t, name+"/ForEachSeq", func() {
				var sum atomic.Int64
				ForEachSeq(seqN(n), func(v int) { sum.Add(int64(nestedWork(p, v))) }, opts...)
				if got := sum.Load(); got != int64(n*(n-1)/2) {
					t.Errorf("%s: ForEachSeq sum %d, want %d", name, got, n*(n-1)/2)
				}
			})
			// A MapSeq inside f of a MapSeq, on the same pool.
			runWithWatchdog(t, name+"/MapSeq nested", func() {
				k := 0
				for u := range MapSeq(seqN(60), func(v int) int {
					s := 0
					for x := range MapSeq(seqN(10), func(x int) int { return nestedWork(p, x) }, opts...) {
						s += x
					}
					return s + v
				}, opts...) {
					if u != 45+k {
						t.Errorf("%s: nested MapSeq element %d = %d, want %d", name, k, u, 45+k)
						return
					}
					k++
				}
			})
			// Called from inside a job of the same pool.
			runWithWatchdog(t, name+"/MapSeq in Call", func() {
				p.Call(func(*Task) {
					k := 0
					for range MapSeq(seqN(n), func(v int) int { return nestedWork(p, v) }, opts...) {
						k++
					}
					if k != n {
						t.Errorf("%s: MapSeq in Call yielded %d, want %d", name, k, n)
					}
					var c atomic.Int64
					ForEachSeq(seqN(300), func(int) { c.Add(1) }, opts...)
					if c.Load() != 300 {
						t.Errorf("%s: ForEachSeq in Call saw %d, want 300", name, c.Load())
					}
				})
			})
		}
	}
}

// TestDefectsMapSeqEarlyBreak breaks out of MapSeq while f (using the pool) is running: the
// loop must end, no f may run after it, and the pool must still work.
func TestDefectsMapSeqEarlyBreak(t *testing.T) {
	for _, w := range []int{1, 2, 3, 4, 8} {
		p, err := NewPool(Config{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		for _, stop := range []int{0, 1, 5, 100, 999} {
			name := fmt.Sprintf("w%d/break@%d", w, stop)
			var running atomic.Int64
			runWithWatchdog(t, name, func() {
				k := 0
				for range MapSeq(seqN(100000), func(v int) int {
					running.Add(1)
					defer running.Add(-1)
					return nestedWork(p, v)
				}, WithPool(p), WithGrain(3)) {
					if k == stop {
						break
					}
					k++
				}
			})
			if r := running.Load(); r != 0 {
				t.Errorf("%s: %d calls of f still running after the loop ended", name, r)
			}
		}
		runWithWatchdog(t, fmt.Sprintf("w%d/after", w), func() { nestedWork(p, 1) })
	}
}

// TestDefectsSeqPanicsAndGoexit checks that a panic in f reaches the loop as a *PanicError
// with f's value, that an f that calls runtime.Goexit does not hang the loop, and that the
// pool then still works and closes (a Goexit inside a batch's Pool.Go job must not leave
// the pool waiting for that job).
func TestDefectsSeqPanicsAndGoexit(t *testing.T) {
	p, err := NewPool(Config{Workers: 3, PanicHandler: func(*PanicError) {}})
	if err != nil {
		t.Fatal(err)
	}
	opts := []Option{WithPool(p), WithGrain(2)}
	runWithWatchdog(t, "MapSeq panic", func() {
		wantPanic(t, "seq boom", func() {
			for range MapSeq(seqN(1000), func(v int) int {
				if v == 500 {
					panic("seq boom")
				}
				return nestedWork(p, v)
			}, opts...) {
			}
		})
	})
	runWithWatchdog(t, "ForEachSeq panic", func() {
		wantPanic(t, "seq boom", func() {
			ForEachSeq(seqN(1000), func(v int) {
				if v == 500 {
					panic("seq boom")
				}
			}, opts...)
		})
	})
	// Goexit on the goroutine of the loop ends that goroutine, as it would without
	// MapSeq; on a worker it must not leave the loop waiting for a batch that never
	// comes: the loop panics with an error that names Goexit.
	goexitOK := func(name string, body func()) {
		runWithWatchdog(t, name, func() {
			defer func() {
				if r := recover(); r != nil && !strings.Contains(fmt.Sprint(r), "Goexit") {
					t.Errorf("%s: panic %v, want one that names Goexit", name, r)
				}
			}()
			body()
			t.Errorf("%s: returned normally although f called runtime.Goexit", name)
		})
	}
	goexitOK("MapSeq Goexit", func() {
		for range MapSeq(seqN(1000), func(v int) int {
			if v == 500 {
				runtime.Goexit()
			}
			return v
		}, opts...) {
		}
	})
	goexitOK("ForEachSeq Goexit", func() {
		ForEachSeq(seqN(1000), func(v int) {
			if v == 500 {
				runtime.Goexit()
			}
		}, opts...)
	})
	runWithWatchdog(t, "after", func() { nestedWork(p, 1) })
	runWithWatchdog(t, "Close", p.Close)
}
