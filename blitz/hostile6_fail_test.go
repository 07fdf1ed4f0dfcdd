package blitz

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostile6Funcs runs one slice function of the package over s with callback cb (called
// once per element visited, with its index); cb may panic or Goexit.
type hostile6Func struct {
	name string
	run  func(s []int, cb func(i int), opts []Option)
}

func hostile6AllFuncs() []hostile6Func {
	return []hostile6Func{
		{"ForEach", func(s []int, cb func(int), o []Option) { ForEach(s, cb, o...) }},
		{"ForEachIndex", func(s []int, cb func(int), o []Option) { ForEachIndex(s, func(i int, _ *int) { cb(i) }, o...) }},
		{"For", func(s []int, cb func(int), o []Option) {
			For(len(s), func(lo, hi int) {
				for i := lo; i < hi; i++ {
					cb(i)
				}
			}, o...)
		}},
		{"ForUntil", func(s []int, cb func(int), o []Option) {
			ForUntil(len(s), func(lo, hi int, _ Stop) {
				for i := lo; i < hi; i++ {
					cb(i)
				}
			}, o...)
		}},
		{"Map", func(s []int, cb func(int), o []Option) { Map(s, func(v int) int { cb(v); return v }, o...) }},
		{"MapInPlace", func(s []int, cb func(int), o []Option) {
			MapInPlace(slices.Clone(s), func(v int) int { cb(v); return v }, o...)
		}},
		{"Filter", func(s []int, cb func(int), o []Option) { Filter(s, func(v int) bool { cb(v); return v%2 == 0 }, o...) }},
		{"Partition", func(s []int, cb func(int), o []Option) {
			Partition(s, func(v int) bool { cb(v); return v%2 == 0 }, o...)
		}},
		{"FlatMap", func(s []int, cb func(int), o []Option) {
			FlatMap(s, func(v int) []int { cb(v); return []int{v} }, o...)
		}},
		{"Count", func(s []int, cb func(int), o []Option) { Count(s, func(v int) bool { cb(v); return true }, o...) }},
		{"MapReduce", func(s []int, cb func(int), o []Option) {
			MapReduce(s, 0, func(v int) int { cb(v); return v }, func(a, b int) int { return a + b }, o...)
		}},
		{"MapReduceFunc", func(s []int, cb func(int), o []Option) {
			MapReduceFunc(s, func() []int { return nil }, func(v int) []int { cb(v); return []int{v} }, func(a, b []int) []int { return append(a, b...) }, o...)
		}},
		{"TryForEach", func(s []int, cb func(int), o []Option) {
			_ = TryForEach(s, func(v int) error { cb(v); return nil }, o...)
		}},
		{"TryReduce", func(s []int, cb func(int), o []Option) {
			_, _ = TryReduce(len(s), 0, func(lo, hi int) (int, error) {
				for i := lo; i < hi; i++ {
					cb(i)
				}
				return hi - lo, nil
			}, func(a, b int) int { return a + b }, o...)
		}},
		{"TryForContext", func(s []int, cb func(int), o []Option) {
			_ = TryForContext(context.Background(), len(s), func(_ context.Context, lo, hi int) error {
				for i := lo; i < hi; i++ {
					cb(i)
				}
				return nil
			}, o...)
		}},
		{"FindFirst", func(s []int, cb func(int), o []Option) { FindFirst(s, func(v int) bool { cb(v); return false }, o...) }},
		{"FindLast", func(s []int, cb func(int), o []Option) { FindLast(s, func(v int) bool { cb(v); return false }, o...) }},
		{"FindAny", func(s []int, cb func(int), o []Option) { FindAny(s, func(v int) bool { cb(v); return false }, o...) }},
		{"All", func(s []int, cb func(int), o []Option) { All(s, func(v int) bool { cb(v); return true }, o...) }},
		{"MinFunc", func(s []int, cb func(int), o []Option) {
			MinFunc(s, func(a, b int) int { cb(a); cb(b); return a - b }, o...)
		}},
		{"MaxByKey", func(s []int, cb func(int), o []Option) { MaxByKey(s, func(v int) int { cb(v); return v }, o...) }},
		{"ChunksForEach", func(s []int, cb func(int), o []Option) {
			Chunks(s, 3).ForEach(func(_ int, ch []int) {
				for _, v := range ch {
					cb(v)
				}
			}, o...)
		}},
		{"ReduceChunks", func(s []int, cb func(int), o []Option) {
			ReduceChunks(Chunks(s, 5), 0, func(_ int, ch []int) int {
				for _, v := range ch {
					cb(v)
				}
				return 0
			}, func(a, b int) int { return a + b }, o...)
		}},
		{"ZipForEach", func(s []int, cb func(int), o []Option) { Zip(s, s).ForEach(func(i, _, _ int) { cb(i) }, o...) }},
		{"ChainForEach", func(s []int, cb func(int), o []Option) {
			Chain(s[:len(s)/3], s[len(s)/3:]).ForEach(func(i, _ int) { cb(i) }, o...)
		}},
		{"RangeForEach", func(s []int, cb func(int), o []Option) { Range(0, len(s)).ForEach(cb, o...) }},
		{"RangeReduceFunc", func(s []int, cb func(int), o []Option) {
			RangeReduceFunc(Range(0, len(s)), func() int { return 0 }, func(i int) int { cb(i); return i }, func(a, b int) int { return a + b }, o...)
		}},
		{"ForEachSeq", func(s []int, cb func(int), o []Option) { ForEachSeq(slices.Values(s), cb, o...) }},
		{"MapSeq", func(s []int, cb func(int), o []Option) {
			for range MapSeq(slices.Values(s), func(v int) int { cb(v); return v }, o...) {
			}
		}},
	}
}

// TestHostile6PanicAtRandomIndex: a callback that panics at a random element must make the
// call panic (with the value, possibly inside a *PanicError), no callback may run after the
// call has returned, and the pool must stay usable.
func TestHostile6PanicAtRandomIndex(t *testing.T) {
	within(t, 60*time.Second, "panic at random index", func() {
		r := rand.New(rand.NewPCG(1, 2))
		for _, f := range hostile6AllFuncs() {
			for _, w := range []int{1, 3} {
				for _, g := range []int{1, 7, 100} {
					for rep := 0; rep < 3; rep++ {
						p, _ := NewPool(Config{Workers: w})
						n := 1 + r.IntN(600)
						s := make([]int, n)
						for i := range s {
							s[i] = i
						}
						k := r.IntN(n)
						var returned atomic.Bool
						var late atomic.Int64
						sentinel := fmt.Sprintf("h6 boom %d", k)
						func() {
							defer func() {
								returned.Store(true)
								rec := recover()
								var pe *PanicError
								if err, ok := rec.(error); ok && errors.As(err, &pe) {
									rec = pe.Value
								}
								if rec != sentinel {
									t.Errorf("%s w%d g%d n%d k%d: recovered %v, want %q", f.name, w, g, n, k, rec, sentinel)
								}
							}()
							f.run(s, func(i int) {
								if returned.Load() {
									late.Add(1)
								}
								if i == k {
									panic(sentinel)
								}
							}, []Option{WithPool(p), WithGrain(g)})
						}()
						// The pool is healthy: a parallel loop still works.
						if got := Sum(s, WithPool(p), WithGrain(2)); got != n*(n-1)/2 {
							t.Errorf("%s: pool broken after panic: Sum = %d", f.name, got)
						}
						p.Close() // waits for every job: a straggler would have run by now
						if l := late.Load(); l != 0 {
							t.Errorf("%s w%d g%d n%d: %d callbacks ran after the call returned", f.name, w, g, n, l)
						}
					}
				}
			}
		}
	})
}

// TestHostile6GoexitAtRandomIndex: a callback that calls runtime.Goexit at a random
// element: either the calling goroutine exits (Goexit on the caller's goroutine) or the
// call panics with ErrGoexit; no callback runs after the call has been left, the pool
// stays healthy, and Close does not hang.
func TestHostile6GoexitAtRandomIndex(t *testing.T) {
	within(t, 60*time.Second, "goexit at random index", func() {
		r := rand.New(rand.NewPCG(3, 4))
		for _, f := range hostile6AllFuncs() {
			for _, w := range []int{1, 3} {
				for _, g := range []int{1, 50} {
					p, _ := NewPool(Config{Workers: w})
					n := 1 + r.IntN(400)
					s := make([]int, n)
					for i := range s {
						s[i] = i
					}
					k := r.IntN(n)
					var left atomic.Bool
					var late atomic.Int64
					var outcome any = "returned normally"
					var wg sync.WaitGroup
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer func() {
							if left.Swap(true) {
								return // returned normally: outcome already set
							}
							if rec := recover(); rec != nil {
								outcome = rec
							} else {
								outcome = "goexit"
							}
						}()
						f.run(s, func(i int) {
							if left.Load() {
								late.Add(1)
							}
							if i == k {
								runtime.Goexit()
							}
						}, []Option{WithPool(p), WithGrain(g)})
						outcome = "returned normally"
						left.Store(true)
						runtime.Goexit() // mark the normal return path too
					}()
					wg.Wait()
					if e, ok := outcome.(error); ok {
						if !errors.Is(e, ErrGoexit) && !errors.Is(e, errSeqGoexit) {
							t.Errorf("%s w%d g%d: panicked with %v, want ErrGoexit", f.name, w, g, e)
						}
					} else if outcome != "goexit" {
						t.Errorf("%s w%d g%d n%d k%d: outcome %v", f.name, w, g, n, k, outcome)
					}
					if got := Sum(s, WithPool(p), WithGrain(2)); got != n*(n-1)/2 {
						t.Errorf("%s: pool broken after Goexit: Sum = %d", f.name, got)
					}
					p.Close()
					if l := late.Load(); l != 0 {
						t.Errorf("%s w%d g%d n%d: %d callbacks ran after the call was left", f.name, w, g, n, l)
					}
				}
			}
		}
	})
}
