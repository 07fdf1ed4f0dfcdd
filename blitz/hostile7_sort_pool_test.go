package blitz

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// hs7AllSorts are the sorts run by the pool tests on ints, each with opts.
func hs7AllSorts(opts ...Option) map[string]func(s []int) {
	return map[string]func(s []int){
		"Sort":           func(s []int) { Sort(s, opts...) },
		"SortDesc":       func(s []int) { SortDesc(s, opts...); slices.Reverse(s) },
		"SortFunc":       func(s []int) { SortFunc(s, cmp.Compare[int], opts...) },
		"SortStableFunc": func(s []int) { SortStableFunc(s, cmp.Compare[int], opts...) },
		"SortByKey":      func(s []int) { SortByKey(s, func(x int) int { return x }, opts...) },
		"SortStableByKey/string": func(s []int) {
			SortStableByKey(s, func(x int) string { return fmt.Sprintf("%012d", x) }, opts...)
		},
		"SortByCachedKey/float": func(s []int) { SortByCachedKey(s, func(x int) float64 { return float64(x) }, opts...) },
		"Sort/strings": func(s []int) {
			ss := make([]string, len(s))
			for i, x := range s {
				ss[i] = fmt.Sprintf("%012d", x)
			}
			Sort(ss, opts...)
			for i := range ss {
				s[i], _ = strconv.Atoi(ss[i])
			}
		},
	}
}

// TestHostile7SortNestedAndTwoPools runs every sort from inside jobs of two pools at once,
// each job sorting on its own pool and on the other one, with comparators and key
// functions that themselves run a parallel sort (a nested Call from a worker), and
// compares with slices.Sort.
func TestHostile7SortNestedAndTwoPools(t *testing.T) {
	pools := []*Pool{newPool(t, Config{Workers: 2}), newPool(t, Config{Workers: 1})}
	n := 2*radixParMin + 3
	if testing.Short() || raceEnabled {
		n = 3000
	}
	in := rand.New(rand.NewPCG(21, 22)).Perm(n)
	want := slices.Clone(in)
	slices.Sort(want)
	var wg sync.WaitGroup
	var ran atomic.Int64
	errs := make(chan string, 64)
	for i, p := range pools {
		other := pools[1-i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			runWithWatchdog(t, fmt.Sprintf("jobs of pool %d", i), func() {
				p.Call(func(tk *Task) {
					for _, target := range []*Pool{p, other} {
						for name, f := range hs7AllSorts(WithPool(target), WithGrain(257)) {
							got := slices.Clone(in)
							f(got)
							ran.Add(1)
							if !slices.Equal(got, want) {
								errs <- fmt.Sprintf("pool %d: %s on a pool from inside a job differs from slices.Sort", i, name)
							}
						}
					}
				})
			})
		}()
	}
	wg.Wait()
	if r := ran.Load(); r != int64(2*len(pools)*len(hs7AllSorts())) {
		t.Fatalf("%d sorts ran in the jobs, want %d", r, 2*len(pools)*len(hs7AllSorts()))
	}
	// A comparator and a key function that sort in parallel themselves, on the same pool.
	p := pools[0]
	small := rand.New(rand.NewPCG(1, 2)).Perm(2000)
	inner := func() {
		s := slices.Clone(small)
		Sort(s, WithPool(p), WithGrain(64))
		if !slices.IsSorted(s) {
			errs <- "the sort nested in a comparator differs"
		}
	}
	var mu sync.Mutex
	k := 0
	calls := func() bool { mu.Lock(); defer mu.Unlock(); k++; return k%997 == 0 }
	got := slices.Clone(in[:3000])
	SortFunc(got, func(a, b int) int {
		if calls() {
			inner()
		}
		return cmp.Compare(a, b)
	}, WithPool(p), WithGrain(16))
	if !slices.IsSorted(got) {
		errs <- "SortFunc with a comparator that sorts in parallel differs"
	}
	got = slices.Clone(in[:3000])
	SortStableByKey(got, func(x int) int {
		if calls() {
			inner()
		}
		return x
	}, WithPool(p), WithGrain(16))
	if !slices.IsSorted(got) {
		errs <- "SortStableByKey with a key that sorts in parallel differs"
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestHostile7SortClosedPool checks that every sort on a closed pool panics with ErrClosed
// whatever the length (0, 1 and 2 elements, an insertion-sorted length, a parallel one),
// leaves s as it was, and that the default pool still sorts.
func TestHostile7SortClosedPool(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	for _, n := range []int{0, 1, 2, 2 * stableBlock, 2*radixParMin + 1} {
		in := rand.New(rand.NewPCG(3, uint64(n))).Perm(n)
		for name, f := range hs7AllSorts(WithPool(p)) {
			got := slices.Clone(in)
			var r any
			func() {
				defer func() { r = recover() }()
				f(got)
			}()
			if e, ok := r.(error); n > 0 && (!ok || !errors.Is(e, ErrClosed)) {
				t.Errorf("%s of %d elements on a closed pool: recovered %v, want ErrClosed", name, n, r)
			}
			if n == 0 && r != nil {
				if e, ok := r.(error); !ok || !errors.Is(e, ErrClosed) {
					t.Errorf("%s of 0 elements on a closed pool: recovered %v", name, r)
				}
			}
			if !slices.Equal(got, in) {
				t.Errorf("%s of %d elements on a closed pool changed s", name, n)
			}
		}
	}
	hs7PoolWorks(t, Default(), "the default pool after sorts on a closed pool")
}

// TestHostile7SortCloseDuring closes a pool while each sort runs on it from another
// goroutine: the sort either finishes (sorted) or panics with ErrClosed, and in both
// cases s is a permutation of its input.
func TestHostile7SortCloseDuring(t *testing.T) {
	n := 1 << 16
	rounds := 6
	if testing.Short() || raceEnabled {
		n, rounds = 1<<15, 3
	}
	in := rand.New(rand.NewPCG(5, 6)).Perm(n)
	for name := range hs7AllSorts() {
		for round := range rounds {
			p, err := NewPool(Config{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(in)
			var r any
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer func() { r = recover() }()
				hs7AllSorts(WithPool(p), WithGrain(1024))[name](got)
			}()
			for range round {
				Sort(make([]int, 200))
			}
			p.Close()
			runWithWatchdog(t, name+": Close during the sort", func() { <-done })
			if r != nil {
				if e, ok := r.(error); !ok || !errors.Is(e, ErrClosed) {
					t.Fatalf("%s round %d: the sort panicked with %v, want ErrClosed", name, round, r)
				}
			} else if !slices.IsSorted(got) {
				t.Fatalf("%s round %d: the sort returned but s is not sorted", name, round)
			}
			if !sameMultiset(got, in, identityKey[int]) {
				t.Fatalf("%s round %d: s is not a permutation of its input after a Close during the sort", name, round)
			}
		}
	}
}
