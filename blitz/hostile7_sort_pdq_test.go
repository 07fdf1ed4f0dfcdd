package blitz

import (
	"cmp"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// hs7Patterns returns the inputs that defeat naive quicksorts and merge sorts: sorted,
// reversed, organ pipes, sawtooths, few distinct values, a sorted run with one element
// moved, interleaved ascending and descending halves, and random for reference.
func hs7Patterns(n int) map[string][]int {
	r := rand.New(rand.NewPCG(9, uint64(n)))
	m := map[string][]int{}
	mk := func(name string, f func(i int) int) {
		s := make([]int, n)
		for i := range s {
			s[i] = f(i)
		}
		m[name] = s
	}
	mk("sorted", func(i int) int { return i })
	mk("reversed", func(i int) int { return n - i })
	mk("organ", func(i int) int { return min(i, n-i) })
	mk("organ-inverted", func(i int) int { return -min(i, n-i) })
	mk("saw16", func(i int) int { return i % 16 })
	mk("saw-sqrt", func(i int) int { return i % 128 })
	mk("saw-desc", func(i int) int { return -(i % 1000) })
	mk("two-values", func(int) int { return r.IntN(2) })
	mk("ten-values", func(int) int { return r.IntN(10) })
	mk("push-front", func(i int) int { return (i + 1) % n })
	mk("push-middle", func(i int) int {
		if i == n/2 {
			return -1
		}
		return i
	})
	mk("interleaved", func(i int) int {
		if i%2 == 0 {
			return i
		}
		return n - i
	})
	mk("random", func(int) int { return r.Int() })
	return m
}

// hs7AntiQsort runs McIlroy's adversary ("A killer adversary for quicksort") against
// sortPdq on n elements and returns the input it built: the values it settled on, in
// their initial positions. Sorting that fixed input replays the adversary's worst case
// with an honest comparator.
func hs7AntiQsort(p *Pool, n, grain int) []int {
	var mu sync.Mutex
	gas := n
	val := make([]int, n)
	for i := range val {
		val[i] = gas
	}
	nsolid, candidate := 0, -1
	adversary := func(x, y int) int {
		mu.Lock()
		defer mu.Unlock()
		if val[x] == gas && val[y] == gas {
			if x == candidate {
				val[x] = nsolid
			} else {
				val[y] = nsolid
			}
			nsolid++
		}
		if val[x] == gas {
			candidate = x
		} else if val[y] == gas {
			candidate = y
		}
		return val[x] - val[y]
	}
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	sortPdq(parResolve(n, sortMinGrain, []Option{WithPool(p), WithGrain(grain)}), s, adversary)
	for i := range val {
		if val[i] == gas {
			val[i] = nsolid
			nsolid++
		}
	}
	return val
}

// TestHostile7SortComparisonBound counts the comparisons of SortFunc (on each of its two
// algorithms and on the automatic choice) and SortStableFunc on the classic adversarial
// patterns and on fixed inputs built by McIlroy's adversary, sequentially and with small
// grains (parallel partitions and merges), and requires at most 3 n log2 n of them: a
// quicksort that goes quadratic makes n^2/2 or so, a thousand times more at n = 50000.
func TestHostile7SortComparisonBound(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	sizes := []int{5000, 50000}
	if testing.Short() || raceEnabled {
		sizes = []int{5000}
	}
	for _, n := range sizes {
		inputs := hs7Patterns(n)
		inputs["antiqsort-seq"] = hs7AntiQsort(p, n, 1<<30)
		inputs["antiqsort-g1"] = hs7AntiQsort(p, n, 1)
		limit := int64(3 * n * bits.Len(uint(n)))
		for name, in := range inputs {
			want := slices.Clone(in)
			slices.Sort(want)
			for _, g := range []int{1, 100, 1 << 30} {
				opts := []Option{WithPool(p), WithGrain(g)}
				for _, path := range []struct {
					name string
					run  func(s []int, c func(a, b int) int)
				}{
					{"SortFunc", func(s []int, c func(a, b int) int) { SortFunc(s, c, opts...) }},
					{"SortFunc/pdq", func(s []int, c func(a, b int) int) { withSortFuncPath(-1, func() { SortFunc(s, c, opts...) }) }},
					{"SortFunc/merge", func(s []int, c func(a, b int) int) { withSortFuncPath(1, func() { SortFunc(s, c, opts...) }) }},
					{"SortStableFunc", func(s []int, c func(a, b int) int) { SortStableFunc(s, c, opts...) }},
				} {
					label := fmt.Sprintf("%s/n%d/%s/g%d", path.name, n, name, g)
					var calls atomic.Int64
					got := slices.Clone(in)
					runWithWatchdog(t, label, func() {
						path.run(got, func(a, b int) int { calls.Add(1); return cmp.Compare(a, b) })
					})
					if !slices.Equal(got, want) {
						t.Fatalf("%s: not sorted", label)
					}
					if c := calls.Load(); c > limit {
						t.Errorf("%s: %d comparisons, more than 3 n log2 n = %d", label, c, limit)
					}
				}
			}
		}
	}
}
