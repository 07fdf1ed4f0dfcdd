package blitz

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

type h3rec struct {
	key  int32
	name *string
	pad  [3]int64
}

// Large sorts of every kind against package slices: structs with pointers (pdqsort),
// stable by key with duplicates, radix over int64 with negatives, and sizes around the
// sequential cutoff and the stable block size.
func TestHostile3LargeAndBoundarySorts(t *testing.T) {
	n := 1 << 20
	if testing.Short() {
		t.Skip("large sorts")
	}
	if raceEnabled {
		n = 1 << 17
	}
	p := newPool(t, Config{Workers: 2})
	r := rand.New(rand.NewPCG(3, 3))
	names := []string{"a", "b", "c"}
	recs := make([]h3rec, n)
	for i := range recs {
		recs[i] = h3rec{key: int32(r.IntN(n / 8)), name: &names[i%3], pad: [3]int64{int64(i)}}
	}
	byKey := func(a, b h3rec) int { return cmp.Compare(a.key, b.key) }

	got := slices.Clone(recs)
	SortStableFunc(got, byKey, WithPool(p))
	want := slices.Clone(recs)
	slices.SortStableFunc(want, byKey)
	if !slices.Equal(got, want) {
		t.Fatal("SortStableFunc of structs with pointers differs from slices.SortStableFunc")
	}
	got = slices.Clone(recs)
	SortStableByKey(got, func(x h3rec) int32 { return x.key }, WithPool(p))
	if !slices.Equal(got, want) {
		t.Fatal("SortStableByKey differs from slices.SortStableFunc")
	}
	got = slices.Clone(recs)
	SortFunc(got, byKey, WithPool(p))
	if !slices.IsSortedFunc(got, byKey) || !sameMultiset(got, recs, func(x h3rec) int64 { return x.pad[0] }) {
		t.Fatal("SortFunc of structs with pointers: not sorted or not a permutation")
	}

	ints := make([]int64, n)
	for i := range ints {
		ints[i] = r.Int64() - r.Int64()
	}
	wi := slices.Clone(ints)
	slices.Sort(wi)
	gi := slices.Clone(ints)
	Sort(gi, WithPool(p))
	if !slices.Equal(gi, wi) {
		t.Fatal("Sort(int64) differs from slices.Sort")
	}
	slices.Reverse(wi)
	gi = slices.Clone(ints)
	SortDesc(gi, WithPool(p))
	if !slices.Equal(gi, wi) {
		t.Fatal("SortDesc(int64) differs")
	}

	// Sizes around the cutoffs, with a small grain so the parallel paths run.
	for _, m := range []int{0, 1, 2, 3, 2*stableBlock - 1, 2 * stableBlock, 2*stableBlock + 1, 2*sortMinGrain - 1, 2 * sortMinGrain, 2*sortMinGrain + 1} {
		in := make([]int, m)
		for i := range in {
			in[i] = r.IntN(m/3 + 1)
		}
		w := slices.Clone(in)
		slices.Sort(w)
		for name, f := range map[string]func([]int){
			"Sort":           func(s []int) { Sort(s, WithPool(p), WithGrain(37)) },
			"SortFunc":       func(s []int) { SortFunc(s, cmp.Compare[int], WithPool(p), WithGrain(37)) },
			"SortStableFunc": func(s []int) { SortStableFunc(s, cmp.Compare[int], WithPool(p), WithGrain(37)) },
			"SortByKey":      func(s []int) { SortByKey(s, func(x int) int { return x }, WithPool(p), WithGrain(37)) },
		} {
			g := slices.Clone(in)
			f(g)
			if !slices.Equal(g, w) {
				t.Fatalf("%s of %d elements differs from slices.Sort", name, m)
			}
		}
	}
}
