package blitz

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// h7Span is the partial result the reductions below fold: the half-open index range
// [lo, hi) it covers, so that combine can tell which two leaves it joins. lo < 0 is the
// empty span (the identity).
type h7Span struct{ lo, hi int }

func h7Join(a, b h7Span) h7Span {
	if a.lo < 0 {
		return b
	}
	return h7Span{a.lo, b.hi}
}

// h7Reducer runs one reduction of the package over the indices [0, n) with grain g.
// leaf(lo) is called once at the start of every leaf (lo its first index); combine(aLo,
// bLo) on every combine of two partial results by the reduction tree (not the folds
// inside a leaf), with the first index of each.
type h7Reducer struct {
	name  string
	grain int
	run   func(n int, opts []Option, leaf func(lo int), combine func(aLo, bLo int))
}

func h7Reducers() []h7Reducer {
	idx := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	}
	// elem is the per-element map of the MapReduce forms at grain 1: one element per leaf.
	elem := func(leaf func(int)) func(v int) h7Span {
		return func(v int) h7Span { leaf(v); return h7Span{v, v + 1} }
	}
	// join is the combine of the forms whose leaves also fold with combine: with one
	// element per leaf those folds start from the identity, so a non-empty left operand
	// means the reduction tree.
	join := func(combine func(int, int)) func(a, b h7Span) h7Span {
		return func(a, b h7Span) h7Span {
			if a.lo >= 0 {
				combine(a.lo, b.lo)
			}
			return h7Join(a, b)
		}
	}
	none := h7Span{-1, -1}
	return []h7Reducer{
		{"Reduce", 1, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			Reduce(n, none, func(lo, hi int) h7Span { leaf(lo); return h7Span{lo, hi} }, join(combine), o...)
		}},
		{"TryReduce", 1, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			_, _ = TryReduce(n, none, func(lo, hi int) (h7Span, error) { leaf(lo); return h7Span{lo, hi}, nil }, join(combine), o...)
		}},
		{"MapReduce", 1, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			MapReduce(idx(n), none, elem(leaf), join(combine), o...)
		}},
		{"MapReduceFunc", 1, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			MapReduceFunc(idx(n), func() h7Span { return none }, elem(leaf), join(combine), o...)
		}},
		{"MapReduceChunked", 1, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			MapReduceChunked(idx(n), none, func(c []int) h7Span { leaf(c[0]); return h7Span{c[0], c[0] + len(c)} }, join(combine), o...)
		}},
		{"ReduceChunks", 1, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			ReduceChunks(Chunks(idx(n), 1), none, func(i int, _ []int) h7Span { leaf(i); return h7Span{i, i + 1} }, join(combine), o...)
		}},
		{"ZipMapReduce", 1, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			ZipMapReduce(Zip(idx(n), idx(n)), none, func(a, _ int) h7Span { return elem(leaf)(a) }, join(combine), o...)
		}},
		{"ChainMapReduce", 1, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			s := idx(n)
			ChainMapReduce(Chain(s[:n/3], s[n/3:]), none, elem(leaf), join(combine), o...)
		}},
		{"RangeReduce", 1, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			RangeReduce(Range(0, n), none, elem(leaf), join(combine), o...)
		}},
		// MinFunc and MaxFunc call cmp inside a leaf (two elements per leaf: once, on
		// neighbours) and in every combine (on elements of different leaves), with
		// s[i] = i. MinFunc's partial result is a leaf's first index, MaxFunc's its last.
		{"MinFunc", 2, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			MinFunc(idx(n), func(x, y int) int {
				if x-y == 1 {
					leaf(y)
				} else {
					combine(y, x)
				}
				return x - y
			}, o...)
		}},
		{"MaxFunc", 2, func(n int, o []Option, leaf func(int), combine func(int, int)) {
			MaxFunc(idx(n), func(x, y int) int {
				if x-y == 1 {
					leaf(y)
				} else {
					combine(y-1, x-1)
				}
				return x - y
			}, o...)
		}},
	}
}

// h7Goid returns the id of the calling goroutine (from its stack trace header).
func h7Goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, err := strconv.ParseInt(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	if err != nil {
		panic("h7Goid: " + err.Error())
	}
	return id
}

// h7Await spins until f is set or wait has passed, and reports whether it was set.
func h7Await(f func() bool, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for !f() {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// h7Shape is the fixed shape of the combine-failure tests, whatever the timing: n/g
// leaves; the caller's goroutine runs [0, n/2) (the left half of every split) and the
// first thief takes [n/2, n). One of the two goroutines fails (panic or runtime.Goexit) in
// the first combine of its half, after the first leaf of the other half has started;
// that leaf is held until released, so the other half has all its other leaves still to
// start.
type h7Shape struct {
	g, failLo, holdLo int
	release           func() bool // when the held leaf may return
	wait              time.Duration

	failed, returned, holdStarted atomic.Bool
	failer                        atomic.Int64 // goroutine id of the failing combine
	lateFailer                    atomic.Int64 // callbacks the failing goroutine started after the failure
	afterReturn                   atomic.Int64 // callbacks started after the call was over
	timedOut                      atomic.Value // string: which wait timed out
	how                           string
}

func newH7Shape(n, g int, callerFails bool, how string, wait time.Duration) *h7Shape {
	sh := &h7Shape{g: g, failLo: 0, holdLo: n / 2, how: how, wait: wait}
	if !callerFails {
		sh.failLo, sh.holdLo = n/2, 0
	}
	sh.release = sh.failed.Load
	return sh
}

func (sh *h7Shape) await(f func() bool, what string) {
	if !h7Await(f, sh.wait) {
		sh.timedOut.CompareAndSwap(nil, what)
	}
}

// enter is called at the start of every callback: it counts those that start once the
// call is over, and those of the failing goroutine after its failure.
func (sh *h7Shape) enter() {
	if sh.returned.Load() {
		sh.afterReturn.Add(1)
	}
	if sh.failed.Load() && h7Goid() == sh.failer.Load() {
		sh.lateFailer.Add(1)
	}
}

func (sh *h7Shape) leaf(lo int) {
	sh.enter()
	switch lo {
	case sh.holdLo:
		sh.holdStarted.Store(true)
		sh.await(sh.release, "the held leaf, for its release after the failure")
	case sh.failLo:
		// The other half has started (so the held leaf is held) before this half fails.
		sh.await(sh.holdStarted.Load, "the failing half, for the held leaf to start")
	}
}

func (sh *h7Shape) combine(aLo, bLo int) {
	sh.enter()
	if !sh.failed.Load() && aLo == sh.failLo && bLo == sh.failLo+sh.g {
		sh.failer.Store(h7Goid())
		sh.failed.Store(true)
		if sh.how == "panic" {
			panic("h7 combine failure")
		}
		runtime.Goexit()
	}
}

// run runs call on a new goroutine (so a Goexit in the caller's combine ends only that
// goroutine), waits for it, then closes p, which waits for every job of p: a callback
// left to run after the call has run when run returns. It returns what the call panicked
// with.
func (sh *h7Shape) run(t *testing.T, name string, p *Pool, call func()) (got any) {
	t.Helper()
	runWithWatchdog(t, name, func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				sh.returned.Store(true)
				got = recover()
			}()
			call()
		}()
		<-done
		p.Close()
	})
	if w := sh.timedOut.Load(); w != nil {
		t.Fatalf("%s: %s did not come within %v", name, w, sh.wait)
	}
	if !sh.failed.Load() {
		t.Fatalf("%s: combine never failed (the call panicked with %v)", name, got)
	}
	if sh.how == "panic" && got == nil {
		t.Errorf("%s: the panic in combine did not reach the caller", name)
	}
	if k := sh.afterReturn.Load(); k != 0 {
		t.Errorf("%s: %d user callbacks started after the call was over", name, k)
	}
	return got
}

// TestHostile7CombineFailureBlowsFuse: a panic (or runtime.Goexit) in a reduction's
// combine must blow the call's panic fuse (the stop flag) as one in a leaf does, so the
// leaves that have not started never start. The failure did re-raise in the caller, but
// the flag stayed clear: Join runs (or waits for) the sibling half after its first half
// failed, and every leaf of that half, and of the halves above, still started.
//
// This drives the reduction tree of every reduction (parReduce) with a flag the test can
// see: the held leaf is released as soon as the flag is set, and a callback that starts
// with the flag set is late. A goroutine may pass its check of the flag just before it is
// set, so each goroutine other than the failing one may start one late callback at most.
func TestHostile7CombineFailureBlowsFuse(t *testing.T) {
	const leaves = 4096
	for _, workers := range []int{1, 2} {
		for _, how := range []string{"panic", "Goexit"} {
			for _, failer := range []string{"caller", "thief"} {
				name := fmt.Sprintf("workers=%d/%s/%s", workers, how, failer)
				t.Run(name, func(t *testing.T) {
					p := newPool(t, Config{Workers: workers})
					sh := newH7Shape(leaves, 1, failer == "caller", how, 20*time.Second)
					st := &parState{grain: 1}
					var late atomic.Int64
					sh.release = st.stop.Load
					check := func(lo int) {
						if lo != sh.holdLo && st.stop.Load() {
							late.Add(1)
						}
					}
					sh.run(t, "parReduce", p, func() {
						Call(p, func(t *Task) h7Span {
							return parReduce(t, st, 0, leaves, func(lo, hi int) h7Span {
								check(lo)
								sh.leaf(lo)
								return h7Span{lo, hi}
							}, func(a, b h7Span) h7Span {
								check(-1)
								sh.combine(a.lo, b.lo)
								return h7Join(a, b)
							})
						})
					})
					if k := late.Load(); k > int64(workers) {
						t.Errorf("%d leaves or combines (of %d leaves) started after a %s in combine had blown the fuse; at most %d may race with it",
							k, leaves, how, workers)
					}
				})
			}
		}
	}
}

// TestHostile7CombineFailureStopsLeaves is TestHostile7CombineFailureBlowsFuse through
// every reduction of the package whose combine (or cmp) is the user's: after the
// failure, the failing goroutine itself must start no callback (deterministic, unlike
// what other goroutines start in the meantime), and none may start once the call is over.
func TestHostile7CombineFailureStopsLeaves(t *testing.T) {
	const leaves = 4096
	for _, r := range h7Reducers() {
		for _, workers := range []int{1, 2} {
			for _, how := range []string{"panic", "Goexit"} {
				for _, failer := range []string{"caller", "thief"} {
					name := fmt.Sprintf("%s/workers=%d/%s/%s", r.name, workers, how, failer)
					t.Run(name, func(t *testing.T) {
						p := newPool(t, Config{Workers: workers})
						n := leaves * r.grain
						sh := newH7Shape(n, r.grain, failer == "caller", how, 20*time.Second)
						got := sh.run(t, r.name, p, func() {
							r.run(n, []Option{WithPool(p), WithGrain(r.grain)}, sh.leaf, sh.combine)
						})
						if how == "Goexit" && failer == "thief" {
							if err, ok := got.(error); !ok || !errors.Is(err, ErrGoexit) {
								t.Errorf("%s: a Goexit in combine on a worker: the call panicked with %v, want a *PanicError for ErrGoexit", r.name, got)
							}
						}
						if k := sh.lateFailer.Load(); k != 0 {
							t.Errorf("%s: the goroutine whose combine failed (%s) started %d more leaves or combines (of %d leaves): the failure did not stop the leaves as a failing leaf does",
								r.name, how, k, leaves)
						}
					})
				}
			}
		}
	}
}

// BenchmarkHostile7ReduceTree measures the reduction tree itself: Reduce over 2^16
// indices with trivial leaves of 16, so a leaf and a combine cost about as much as the
// fork, join and panic guard around them.
func BenchmarkHostile7ReduceTree(b *testing.B) {
	const n, grain = 1 << 16, 16
	leaf := func(lo, hi int) int { return hi - lo }
	combine := func(a, b int) int { return a + b }
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			p := newPool(b, Config{Workers: w})
			opts := []Option{WithPool(p), WithGrain(grain)}
			b.ReportAllocs()
			for b.Loop() {
				if Reduce(n, 0, leaf, combine, opts...) != n {
					b.Fatal("wrong sum")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n/grain), "ns/leaf")
		})
	}
}
