package blitz

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostile6TryForContextCancelAtRandom: the parent is cancelled with a cause at a random
// leaf; TryForContext must return that cause, and no body may start after it returned.
func TestHostile6TryForContextCancelAtRandom(t *testing.T) {
	within(t, 30*time.Second, "TryForContext cancel", func() {
		r := rand.New(rand.NewPCG(5, 6))
		cause := errors.New("h6 cause")
		for _, w := range []int{1, 3} {
			p := newPool(t, Config{Workers: w})
			for rep := 0; rep < 40; rep++ {
				n := 1 + r.IntN(500)
				g := 1 + r.IntN(20)
				k := r.IntN(n)
				ctx, cancel := context.WithCancelCause(context.Background())
				var returned atomic.Bool
				var late atomic.Int64
				err := TryForContext(ctx, n, func(ctx context.Context, lo, hi int) error {
					if returned.Load() {
						late.Add(1)
					}
					if lo <= k && k < hi {
						cancel(cause)
					}
					return nil
				}, WithPool(p), WithGrain(g))
				returned.Store(true)
				if !errors.Is(err, cause) {
					t.Errorf("w%d n%d g%d k%d: err %v, want %v", w, n, g, k, err, cause)
				}
				if Sum([]int{1, 2, 3}, WithPool(p), WithGrain(1)) != 6 {
					t.Fatal("pool broken")
				}
				if late.Load() != 0 {
					t.Errorf("body ran after return")
				}
			}
		}
	})
}

// TestHostile6NestedAndConcurrent: many outside goroutines use one pool at once, each
// running parallel loops whose callbacks run nested loops on the same pool and on another
// pool; every result must equal the sequential one.
func TestHostile6NestedAndConcurrent(t *testing.T) {
	within(t, 30*time.Second, "nested and concurrent", func() {
		p := newPool(t, Config{Workers: 3})
		q := newPool(t, Config{Workers: 2})
		s := make([]int, 300)
		for i := range s {
			s[i] = i % 17
		}
		wantSum := 0
		for _, v := range s {
			wantSum += v
		}
		var wg sync.WaitGroup
		for gi := 0; gi < 8; gi++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				opts := []Option{WithPool(p), WithGrain(1 + gi)}
				inner := []Option{WithPool(p), WithGrain(7)}
				if gi%2 == 1 {
					inner = []Option{WithPool(q), WithGrain(5)}
				}
				got := Map(s[:40], func(v int) int {
					sum := Sum(s, inner...)
					_, i, _ := FindFirst(s, func(x int) bool { return x == v }, inner...)
					_, j, _ := FindLast(s, func(x int) bool { return x == v }, inner...)
					f := Filter(s, func(x int) bool { return x == v }, inner...)
					seqN := 0
					for range MapSeq(slices.Values(s[:50]), func(x int) int { return x }, inner...) {
						seqN++
					}
					if sum != wantSum || s[i] != v || s[j] != v || i != slices.Index(s, v) || len(f) != Count(s, func(x int) bool { return x == v }) || seqN != 50 {
						return -1
					}
					return v
				}, opts...)
				if !slices.Equal(got, s[:40]) {
					t.Errorf("goroutine %d: nested results wrong: %v", gi, got)
				}
			}()
		}
		wg.Wait()
	})
}
