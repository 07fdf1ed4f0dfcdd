package blitz

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestConcurrentCallersStress runs many more callers than cores at once, each calling a
// random mix of the parallel functions (with nested calls) on a shared pool and on the
// default pool, with randomized sizes and pauses, and checks every result against its
// sequential definition. It fails with a clear message instead of hanging if the calls do
// not finish in time.
func TestConcurrentCallersStress(t *testing.T) {
	p, err := NewPool(Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	callers, rounds := 32, 20
	if testing.Short() {
		callers, rounds = 16, 8
	}
	done := make(chan struct{})
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 99))
			for round := range rounds {
				if err := stressRound(r, p); err != nil {
					errs <- fmt.Errorf("caller %d round %d: %w", g, round, err)
					return
				}
				if r.IntN(4) == 0 {
					time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("concurrent callers did not finish within 2 minutes: a parallel call is stuck")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func stressRound(r *rand.Rand, shared *Pool) error {
	n := r.IntN(20000)
	opts := []Option{WithGrain(1 + r.IntN(500))}
	if r.IntN(2) == 0 {
		opts = append(opts, WithPool(shared))
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = r.Int64N(1000) - 500
	}
	switch r.IntN(6) {
	case 0:
		var want int64
		for _, v := range s {
			want += v
		}
		if got := Sum(s, opts...); got != want {
			return fmt.Errorf("Sum = %d, want %d", got, want)
		}
	case 1:
		want := slices.Clone(s)
		slices.Sort(want)
		got := slices.Clone(s)
		Sort(got, opts...)
		if !slices.Equal(got, want) {
			return fmt.Errorf("Sort mismatch (n=%d)", n)
		}
		got = slices.Clone(s)
		SortStableFunc(got, cmp.Compare[int64], opts...)
		if !slices.Equal(got, want) {
			return fmt.Errorf("SortStableFunc mismatch (n=%d)", n)
		}
	case 2:
		even := func(v int64) bool { return v%2 == 0 }
		var want []int64
		for _, v := range s {
			if even(v) {
				want = append(want, v)
			}
		}
		if got := Filter(s, even, opts...); !slices.Equal(got, want) {
			return fmt.Errorf("Filter mismatch (n=%d)", n)
		}
	case 3:
		// Nested: a parallel loop whose leaves run parallel reductions.
		parts := make([]int64, 8)
		For(8, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				parts[i] = Sum(s[i*n/8:(i+1)*n/8], opts...)
			}
		}, append(opts, WithGrain(1))...)
		var got, want int64
		for _, v := range parts {
			got += v
		}
		for _, v := range s {
			want += v
		}
		if got != want {
			return fmt.Errorf("nested sums = %d, want %d", got, want)
		}
	case 4:
		target := int64(r.IntN(1200) - 600)
		if got, want := Index(s, target, opts...), slices.Index(s, target); got != want {
			return fmt.Errorf("Index = %d, want %d", got, want)
		}
	case 5:
		var got []int64
		for v := range MapSeq(slices.Values(s), func(v int64) int64 { return v * 2 }, opts...) {
			got = append(got, v)
			if len(got) == n/2 {
				break
			}
		}
		for i, v := range got {
			if v != s[i]*2 {
				return fmt.Errorf("MapSeq at %d", i)
			}
		}
	}
	return nil
}
