package blitz

import (
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// Side-by-side measurements of the fork-join trees of the reductions, searches and loops
// before and after their forks stopped allocating: the old trees (Join and Join2 with
// closures) are kept here, and each comparison alternates old and new in one process,
// many short rounds, so that the load of a shared machine falls on both alike. The
// timing tests only log (min, p25 and median per call) and run only with H9AB=1:
//
//	H9AB=1 go test -run 'TestHostile9ReduceAB' -v ./blitz

// h9OldReduce is the reduction tree as it was before its forks stopped allocating (Join2
// with closures), kept here to measure the two side by side in one process: the machine
// is shared, so figures from separate runs are not comparable.
func h9OldReduce[R any](t *Task, st *parState, lo, hi int, leaf func(lo, hi int) R, combine func(a, b R) R) (r R) {
	if st.stop.Load() {
		return r
	}
	ok := false
	defer st.guard(&ok)
	if hi-lo > st.grain {
		mid := int(uint(lo+hi) >> 1)
		a, b := Join2(t,
			func(t *Task) R { return h9OldReduce(t, st, lo, mid, leaf, combine) },
			func(t *Task) R { return h9OldReduce(t, st, mid, hi, leaf, combine) })
		if !st.stop.Load() {
			r = combine(a, b)
		}
	} else {
		r = leaf(lo, hi)
	}
	ok = true
	return r
}

func h9OldMapReduce[R any](c parCall, n int, leaf func(lo, hi int) R, combine func(a, b R) R) R {
	st := &parState{grain: c.grain}
	return Call(c.pool, func(t *Task) R { return h9OldReduce(t, st, 0, n, leaf, combine) })
}

// BenchmarkHostile9ReduceAB runs Sum and Reduce through the new tree ("new") and the old
// one ("old") alternately, on the same pool and input.
func BenchmarkHostile9ReduceAB(b *testing.B) {
	p := newPool(b, Config{Workers: 2})
	for _, leaves := range []int{16, 256} {
		opts := []Option{WithPool(p), WithGrain(h9N / leaves)}
		c := parResolve(h9N, parMinGrainCheap, opts)
		s := h9Ints
		b.Run(fmt.Sprintf("Sum/leaves=%d/new", leaves), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h9SinkI = Sum(s, opts...)
			}
		})
		b.Run(fmt.Sprintf("Sum/leaves=%d/old", leaves), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h9SinkI = h9OldMapReduce(c, len(s), func(lo, hi int) int64 { return sumLeaf(s[lo:hi]) }, func(a, b int64) int64 { return a + b })
			}
		})
		b.Run(fmt.Sprintf("MapReduce/leaves=%d/new", leaves), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h9SinkI = MapReduce(s, 0, h9Id64, h9Add64, opts...)
			}
		})
		b.Run(fmt.Sprintf("MapReduce/leaves=%d/old", leaves), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h9SinkI = h9OldMapReduce(c, len(s), func(lo, hi int) int64 {
					acc := int64(0)
					for _, v := range s[lo:hi] {
						acc = h9Add64(acc, h9Id64(v))
					}
					return acc
				}, h9Add64)
			}
		})
	}
}

// TestHostile9ReduceAB compares Sum, MapReduce and Reduce (trivial leaves: the tree's own
// cost) with 16, 256 and 4096 leaves.
func TestHostile9ReduceAB(t *testing.T) {
	if os.Getenv("H9AB") == "" {
		t.Skip("H9AB not set")
	}
	p := newPool(t, Config{Workers: 2})
	s := h9Ints
	type variant struct {
		name string
		run  func()
	}
	for _, leaves := range []int{16, 256, 4096} {
		opts := []Option{WithPool(p), WithGrain(h9N / leaves)}
		c := parResolve(h9N, parMinGrainCheap, opts)
		vs := []variant{
			{"Sum/new", func() { h9SinkI = Sum(s, opts...) }},
			{"Sum/old", func() {
				h9SinkI = h9OldMapReduce(c, len(s), func(lo, hi int) int64 { return sumLeaf(s[lo:hi]) }, func(a, b int64) int64 { return a + b })
			}},
			{"MapReduce/new", func() { h9SinkI = MapReduce(s, 0, h9Id64, h9Add64, opts...) }},
			{"MapReduce/old", func() {
				h9SinkI = h9OldMapReduce(c, len(s), func(lo, hi int) int64 {
					acc := int64(0)
					for _, v := range s[lo:hi] {
						acc = h9Add64(acc, h9Id64(v))
					}
					return acc
				}, h9Add64)
			}},
			{"Reduce/new", func() { h9SinkI = int64(Reduce(h9N, 0, h9Leaf, h9Add, opts...)) }},
			{"Reduce/old", func() { h9SinkI = int64(h9OldMapReduce(c, h9N, h9Leaf, h9Add)) }},
		}
		times := make([][]time.Duration, len(vs))
		for round := 0; round < 60; round++ {
			for i, v := range vs {
				start := time.Now()
				for k := 0; k < 5; k++ {
					v.run()
				}
				times[i] = append(times[i], time.Since(start)/5)
			}
		}
		for i, v := range vs {
			slices.Sort(times[i])
			t.Logf("leaves=%d %-14s min %9v  p25 %9v  median %9v", leaves, v.name, times[i][0], times[i][len(times[i])/4], times[i][len(times[i])/2])
		}
	}
}

type h9OldFindState struct {
	st   parState
	best atomic.Int64
	mode findMode
}

func (f *h9OldFindState) skip(lo, hi int) bool {
	if f.st.stop.Load() {
		return true
	}
	switch f.mode {
	case findFirst:
		return int(f.best.Load()) < lo
	case findLast:
		return int(f.best.Load()) >= hi
	}
	return false
}

func (f *h9OldFindState) found(i int) {
	switch f.mode {
	case findAny:
		f.best.CompareAndSwap(-1, int64(i))
		f.st.stop.Store(true)
	case findFirst:
		for {
			b := f.best.Load()
			if int64(i) >= b || f.best.CompareAndSwap(b, int64(i)) {
				return
			}
		}
	}
}

func (f *h9OldFindState) run(t *Task, lo, hi int, fwd func(lo, hi int) int) {
	if hi-lo > f.st.grain {
		if f.skip(lo, hi) {
			return
		}
		mid := int(uint(lo+hi) >> 1)
		left := func(t *Task) { f.run(t, lo, mid, fwd) }
		right := func(t *Task) { f.run(t, mid, hi, fwd) }
		Join(t, left, right)
		return
	}
	if f.skip(lo, hi) {
		return
	}
	f.st.leaf(lo, hi, func(lo, hi int) {
		for b := lo; b < hi; {
			e := b + min(findBlock, hi-b)
			if f.skip(b, e) {
				return
			}
			if i := fwd(b, e); i >= 0 {
				f.found(i)
				return
			}
			b = e
		}
	})
}

func h9OldFindFirst(c parCall, s []int64, pred func(int64) bool) int {
	fwd := func(lo, hi int) int {
		for i := lo; i < hi; i++ {
			if pred(s[i]) {
				return i
			}
		}
		return -1
	}
	n := len(s)
	if i := fwd(0, findProbe); i >= 0 {
		return i
	}
	f := &h9OldFindState{mode: findFirst}
	f.st.grain = c.grain
	f.best.Store(int64(n))
	c.pool.Call(func(t *Task) { f.run(t, findProbe, n, fwd) })
	b := int(f.best.Load())
	if b >= n {
		return -1
	}
	return b
}

func h9OldFor(c parCall, n int, leaf func(lo, hi int)) {
	st := &parState{grain: c.grain}
	c.pool.Call(func(t *Task) { h9OldParRun(st, t, 0, n, leaf) })
}

func h9OldParRun(st *parState, t *Task, lo, hi int, leaf func(lo, hi int)) {
	if hi-lo > st.grain {
		if st.stop.Load() {
			return
		}
		mid := int(uint(lo+hi) >> 1)
		Join(t,
			func(t *Task) { h9OldParRun(st, t, lo, mid, leaf) },
			func(t *Task) { h9OldParRun(st, t, mid, hi, leaf) })
		return
	}
	if st.stop.Load() {
		return
	}
	st.leaf(lo, hi, leaf)
}

// TestHostile9ReduceABFind compares FindFirst (no match: every leaf searched) and For
// (empty body: the tree's own cost).
func TestHostile9ReduceABFind(t *testing.T) {
	if os.Getenv("H9AB") == "" {
		t.Skip("H9AB not set")
	}
	p := newPool(t, Config{Workers: 2})
	s := h9Ints
	for _, leaves := range []int{16, 256, 4096} {
		opts := []Option{WithPool(p), WithGrain(h9N / leaves)}
		c := parResolve(h9N, parMinGrain, opts)
		vs := []struct {
			name string
			run  func()
		}{
			{"FindFirst/new", func() { _, i, _ := FindFirst(s, h9Neg, opts...); h9SinkI = int64(i) }},
			{"FindFirst/old", func() { h9SinkI = int64(h9OldFindFirst(c, s, h9Neg)) }},
			{"For/new", func() { For(h9N, h9ForBody, opts...) }},
			{"For/old", func() { h9OldFor(c, h9N, h9ForBody) }},
		}
		times := make([][]time.Duration, len(vs))
		for round := 0; round < 60; round++ {
			for i, v := range vs {
				start := time.Now()
				for k := 0; k < 5; k++ {
					v.run()
				}
				times[i] = append(times[i], time.Since(start)/5)
			}
		}
		for i, v := range vs {
			slices.Sort(times[i])
			t.Logf("leaves=%d %-14s min %9v  p25 %9v  median %9v", leaves, v.name, times[i][0], times[i][len(times[i])/4], times[i][len(times[i])/2])
		}
	}
}
