package blitz

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostile3JoinGoexitLeavesStolenSiblingRunning: when Join's first closure calls
// runtime.Goexit while the second one was stolen and still runs, the deferred functions
// of Join's caller must not run before the second closure has finished (Join's promise:
// both run to completion before Join is left; for a panic it waits). They ran at once,
// while the stolen closure was still running. The same holds for every fork site of the
// closure API (Join2, JoinN, TryJoin), from a Call's goroutine and from a worker (a
// Pool.Go job), and the pool must work normally afterwards.
func TestHostile3JoinGoexitLeavesStolenSiblingRunning(t *testing.T) {
	forms := []struct {
		name string
		join func(t *Task, a, b func(*Task))
	}{
		{"Join", Join},
		{"Join2", func(t *Task, a, b func(*Task)) {
			Join2(t, func(t *Task) int { a(t); return 1 }, func(t *Task) int { b(t); return 2 })
		}},
		{"JoinN", func(t *Task, a, b func(*Task)) { JoinN(t, a, b) }},
		{"TryJoin", func(t *Task, a, b func(*Task)) {
			_ = TryJoin(t, func(t *Task) error { a(t); return nil }, func(t *Task) error { b(t); return nil })
		}},
	}
	for _, form := range forms {
		for _, where := range []string{"Call", "Go"} {
			t.Run(form.name+"/"+where, func(t *testing.T) {
				p := newPool(t, Config{Workers: 2})
				var bStarted, bDone atomic.Bool
				var sawDone atomic.Int32 // 1: b had finished, 2: b still running
				done := make(chan struct{})
				body := func(t *Task) {
					defer close(done) // runs after the check below, during the Goexit
					func() {
						defer func() {
							if bDone.Load() {
								sawDone.Store(1)
							} else {
								sawDone.Store(2)
							}
						}()
						form.join(t, func(*Task) {
							deadline := time.Now().Add(5 * time.Second)
							for !bStarted.Load() && time.Now().Before(deadline) {
								runtime.Gosched()
							}
							runtime.Goexit()
						}, func(*Task) {
							bStarted.Store(true)
							time.Sleep(50 * time.Millisecond)
							bDone.Store(true)
						})
					}()
				}
				runWithWatchdog(t, form.name+" with Goexit", func() {
					if where == "Call" {
						go p.Call(body)
					} else {
						p.Go(body)
					}
					<-done
				})
				if !bStarted.Load() {
					t.Skip("b was not stolen")
				}
				if sawDone.Load() != 1 {
					t.Fatalf("a deferred function of %s's caller ran while its stolen closure b was still running (a called runtime.Goexit)", form.name)
				}
				// The pool still works: joins, a parallel loop, and the Tasks' frame
				// stacks are back to empty.
				runWithWatchdog(t, "pool after Goexit", func() {
					for range 20 {
						if got := Call(p, func(t *Task) int { return fib(t, 15) }); got != 610 {
							t.Errorf("fib(15) after the Goexit = %d, want 610", got)
						}
						if got := Reduce(10000, 0, func(lo, hi int) int { return hi - lo },
							func(a, b int) int { return a + b }, WithPool(p), WithGrain(16)); got != 10000 {
							t.Errorf("Sum after the Goexit = %d", got)
						}
						var n atomic.Int32
						p.Call(func(t *Task) {
							JoinN(t, func(*Task) { n.Add(1) }, func(*Task) { n.Add(1) }, func(*Task) { n.Add(1) })
						})
						if n.Load() != 3 {
							t.Errorf("JoinN after the Goexit ran %d of 3 functions", n.Load())
						}
					}
				})
				checkIdleTasks(t, p)
			})
		}
	}
}

// TestHostile3SortStableGoexitInComparator: a comparator that calls runtime.Goexit in the
// middle of a parallel SortStableFunc must leave s a permutation of its input, as a
// panicking one does. The merge back into s is undone by a deferred copy that runs while
// the other half of the merge, stolen by another worker, still writes into s.
func TestHostile3SortStableGoexitInComparator(t *testing.T) {
	if testing.Short() {
		t.Skip("large sort")
	}
	p := newPool(t, Config{Workers: 2})
	const n = 1 << 15
	orig := make([]int, n)
	for i := range orig {
		orig[i] = int((uint64(i)*0x9E3779B97F4A7C15)>>20) % (n * 4)
	}
	want := slices.Clone(orig)
	slices.Sort(want)
	cmp := func(a, b int) int {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	// Count the comparisons of an undisturbed sort, then Goexit in its last merges.
	var calls atomic.Int64
	s := slices.Clone(orig)
	SortStableFunc(s, func(a, b int) int { calls.Add(1); return cmp(a, b) }, WithPool(p), WithGrain(512))
	total := calls.Load()
	bad := 0
	for round := 0; round < 20 && bad == 0; round++ {
		target := total - int64(n/2) + int64(round*n/64)
		s := slices.Clone(orig)
		calls.Store(0)
		done := make(chan any, 1)
		runWithWatchdog(t, "SortStableFunc with Goexit", func() {
			go func() {
				var r any
				defer func() { done <- r }()
				defer func() { r = recover() }()
				SortStableFunc(s, func(a, b int) int {
					c := calls.Add(1)
					if c == target {
						runtime.Goexit()
					}
					if c > target && c <= target+64 {
						// Slow the other goroutines' next comparisons down, so that a
						// stolen half of the same merge is still writing when the
						// Goexit unwinds.
						time.Sleep(100 * time.Microsecond)
					}
					return cmp(a, b)
				}, WithPool(p), WithGrain(512))
			}()
			<-done
		})
		got := slices.Clone(s)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			bad = round + 1
		}
	}
	if bad > 0 {
		t.Fatalf("sort %d, interrupted by runtime.Goexit in cmp, left s not a permutation of its input", bad)
	}
}

// h3JoinTree[d] is a complete binary tree of 2^d - 1 closure Joins of empty leaves. Its
// closures are made once, here, so that the benchmark measures Join itself: a closure
// literal that captures variables at the call site would cost an allocation per call.
var h3JoinTree, h3JoinNTree [17]func(*Task)

func init() {
	h3JoinTree[0] = func(*Task) {}
	h3JoinNTree[0] = func(*Task) {}
	for d := 1; d < len(h3JoinTree); d++ {
		sub, subN := h3JoinTree[d-1], h3JoinNTree[d-1]
		h3JoinTree[d] = func(t *Task) { Join(t, sub, sub) }
		h3JoinNTree[d] = func(t *Task) { JoinN(t, subN, subN) }
	}
}

// BenchmarkHostile3ClosureJoin measures the closure forms (Join, JoinN) on their hot
// path, including the runtime.Goexit guard each fork site defers; Join must stay at 0
// allocs/op.
func BenchmarkHostile3ClosureJoin(b *testing.B) {
	const depth = 16
	for _, w := range []int{1, 2} {
		for _, c := range []struct {
			name string
			tree []func(*Task)
		}{{"Join", h3JoinTree[:]}, {"JoinN", h3JoinNTree[:]}} {
			b.Run(fmt.Sprintf("%s/workers=%d", c.name, w), func(b *testing.B) {
				inPool(b, w, c.tree[depth])
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(1<<depth-1), "ns/join")
			})
		}
	}
}
