package blitz

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"testing"
)

// TestAlgo2PdqAdversary sorts with McIlroy's adversary ("A killer adversary for
// quicksort"), a comparator that decides the order of the values lazily so as to make
// every pivot as bad as possible. Pattern-defeating quicksort bounds the bad pivots and
// falls back to heapsort, so the number of comparisons must stay O(n log n) on every path,
// the parallel ones (a task per partition, grain 1) included.
func TestAlgo2PdqAdversary(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for _, n := range []int{3000, 20000} {
		for _, grain := range []int{1, 64, 1 << 30} {
			var mu sync.Mutex
			gas := n
			val := make([]int, n)
			for i := range val {
				val[i] = gas
			}
			nsolid, candidate, calls := 0, -1, 0
			freeze := func(i int) { val[i] = nsolid; nsolid++ }
			adversary := func(x, y int) int {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if val[x] == gas && val[y] == gas {
					if x == candidate {
						freeze(x)
					} else {
						freeze(y)
					}
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
			name := fmt.Sprintf("n%d/g%d", n, grain)
			// sortPdq itself: SortFunc's scan for sorted input comes first, and the
			// adversary answers it by making the input look sorted.
			runWithWatchdog(t, name, func() { sortPdq(parResolve(n, sortMinGrain, []Option{WithPool(p), WithGrain(grain)}), s, adversary) })
			limit := 40 * n * bits.Len(uint(n))
			if calls > limit {
				t.Errorf("%s: %d comparisons, more than %d (40 n log n): quadratic", name, calls, limit)
			}
			if !slices.IsSortedFunc(s, func(a, b int) int { return val[a] - val[b] }) {
				t.Errorf("%s: not sorted by the adversary's final order", name)
			}
			t.Logf("%s: %d comparisons (%.1f n log n)", name, calls, float64(calls)/float64(n*bits.Len(uint(n))))
		}
	}
}
