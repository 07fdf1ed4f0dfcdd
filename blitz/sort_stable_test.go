package blitz

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// kvs is kv with a pointer in it: SortStableFunc always cuts its runs in the middle for it
// (stableSkewed), while for the pointer-free kv the cut depends on a timed sample.
type kvs struct {
	k int64
	v string
}

func TestStableSkewedTypes(t *testing.T) {
	// The fields are never read: only the layout of the type matters here.
	type small struct {
		_ int32
		_ [2]float64
		_ bool
	}
	for _, c := range []struct {
		name      string
		got, want bool
	}{
		{"uint64", stableSkewed[uint64](), true},
		{"kv", stableSkewed[kv](), true},
		{"small struct", stableSkewed[small](), true},
		{"[4]uint64", stableSkewed[[4]uint64](), true},
		{"[5]uint64 (40 bytes)", stableSkewed[[5]uint64](), false},
		{"string", stableSkewed[string](), false},
		{"kvs", stableSkewed[kvs](), false},
		{"*int", stableSkewed[*int](), false},
		{"[]int", stableSkewed[[]int](), false},
		{"any", stableSkewed[any](), false},
		{"[1]*int", stableSkewed[[1]*int](), false},
	} {
		if c.got != c.want {
			t.Errorf("stableSkewed[%s]() = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// withSkew runs f with stableSkewFor's choice forced to the uneven cut (skew > 0) or the
// even one (skew < 0).
func withSkew(skew int, f func()) {
	defer func(old int) { stableSkewOverride = old }(stableSkewOverride)
	stableSkewOverride = skew
	f()
}

// TestSortStableFuncBothCuts checks stability of both trees (even and uneven cuts) on the
// sequential and the parallel paths, with coarse keys so that most elements have equals.
func TestSortStableFuncBothCuts(t *testing.T) {
	for _, skew := range []int{-1, 1} {
		withSkew(skew, func() { testSortStableFuncCuts(t, fmt.Sprintf("skew%+d", skew)) })
	}
}

func testSortStableFuncCuts(t *testing.T, tree string) {
	for _, c := range sortCases(t) {
		for _, n := range []int{25, 49, 100, 777, 5000, 40000} {
			for _, keys := range []int64{1, 3, 1000} {
				raw := randInts(uint64(n)+uint64(keys), n, keys)
				label := fmt.Sprintf("%s/%s/n%d/keys%d", tree, c.name, n, keys)
				a := make([]kv, n)
				b := make([]kvs, n)
				for i, k := range raw {
					a[i] = kv{k, i}
					b[i] = kvs{k, fmt.Sprint(i)}
				}
				wantA := slices.Clone(a)
				slices.SortStableFunc(wantA, func(x, y kv) int { return cmp.Compare(x.k, y.k) })
				SortStableFunc(a, func(x, y kv) int { return cmp.Compare(x.k, y.k) }, c.opts...)
				checkSorted(t, label+"/kv", a, wantA, func(x, y kv) bool { return x == y })
				wantB := slices.Clone(b)
				slices.SortStableFunc(wantB, func(x, y kvs) int { return cmp.Compare(x.k, y.k) })
				SortStableFunc(b, func(x, y kvs) int { return cmp.Compare(x.k, y.k) }, c.opts...)
				checkSorted(t, label+"/kvs", b, wantB, func(x, y kvs) bool { return x == y })
			}
		}
	}
}

func TestMergeSeqEdges(t *testing.T) {
	byTens := func(a, b int) int { return cmp.Compare(a/10, b/10) }
	for _, nx := range []int{0, 1, 2, 5, 33} {
		for _, ny := range []int{0, 1, 3, 32} {
			x := make([]int, nx)
			y := make([]int, ny)
			for i := range x {
				x[i] = (i * 7) % 50
			}
			for i := range y {
				y[i] = (i*13)%50 + 1000
			}
			slices.SortStableFunc(x, byTens)
			slices.SortStableFunc(y, byTens)
			// Make y's values compare equal to x's where their tens match, but stay
			// distinguishable, so a tie resolved the wrong way is seen.
			for i := range y {
				y[i] -= 1000
			}
			want := append(slices.Clone(x), y...)
			slices.SortStableFunc(want, byTens)
			got := make([]int, nx+ny)
			mergeSeq(x, y, got, byTens)
			if !slices.Equal(got, want) {
				t.Fatalf("nx=%d ny=%d: got %v, want %v", nx, ny, got, want)
			}
		}
	}
}

// TestSortStableFuncPanics checks that a panicking comparison is re-raised from both trees,
// early (in the first leaves) and late (in the last merges).
func TestSortStableFuncPanics(t *testing.T) {
	for _, skew := range []int{-1, 1} {
		withSkew(skew, func() { testSortStableFuncPanics(t) })
	}
}

func testSortStableFuncPanics(t *testing.T) {
	const n = 50000
	for _, c := range sortCases(t) {
		for _, after := range []int64{10, 700_000} { // about 800K comparisons in all
			s := make([]kv, n)
			p := make([]kvs, n)
			for i := range s {
				s[i] = kv{int64((i * 7919) % n), i}
				p[i] = kvs{s[i].k, ""}
			}
			var calls atomic.Int64
			wantPanic(t, "stable boom", func() {
				SortStableFunc(s, func(a, b kv) int {
					if calls.Add(1) > after {
						panic("stable boom")
					}
					return cmp.Compare(a.k, b.k)
				}, c.opts...)
			})
			calls.Store(0)
			wantPanic(t, "stable boom", func() {
				SortStableFunc(p, func(a, b kvs) int {
					if calls.Add(1) > after {
						panic("stable boom")
					}
					return cmp.Compare(a.k, b.k)
				}, c.opts...)
			})
		}
	}
}

// TestStableSkewForCostlyComparator checks the timed half of the choice in the direction
// that cannot be flaky: a comparator that takes a microsecond must get the even cut (time
// only ever makes a sample look slower), as must small sorts and pointer types.
func TestStableSkewForCostlyComparator(t *testing.T) {
	big := make([]uint64, stableSkewMin)
	slow := func(a, b uint64) int {
		for start := time.Now(); time.Since(start) < time.Microsecond; {
		}
		return cmp.Compare(a, b)
	}
	if stableSkewFor(big, slow) {
		t.Error("a 1 us comparator was sampled as cheap")
	}
	if stableSkewFor(big[:stableSkewMin-1], cmp.Compare[uint64]) {
		t.Error("a sort below stableSkewMin timed its comparator")
	}
	if stableSkewFor(make([]kvs, stableSkewMin), func(a, b kvs) int { return cmp.Compare(a.k, b.k) }) {
		t.Error("an element type with pointers got the uneven cut")
	}
}

// TestStableSkewForInterruptedSample is the regression test for a timing sample that an
// interruption made look costly: SortFunc on 10M random uint64 with cmp.Compare took
// pdqsort instead of the merge sort in one call of six in a plain program, and in most
// rounds of blitzbench (a garbage collection running beside the sort), 20% slower. The
// clock is scripted, so the test does not depend on the machine's timing (or on -race):
// the first sample reads as costly, as it would if the goroutine had been descheduled
// during it; a later one reads as cheap, and must decide. Each sample must compare other
// elements than the one before, so that a comparator that misses the cache is cold in
// every sample. When every sample is costly, the even cut is kept.
func TestStableSkewForInterruptedSample(t *testing.T) {
	defer func(c func() time.Time) { stableClock = c }(stableClock)
	a := make([]uint64, stableSkewMin)
	for i := range a {
		a[i] = uint64(i)
	}
	costs := []time.Duration{time.Millisecond, 100 * time.Nanosecond, time.Millisecond}
	var (
		now     time.Time
		reads   int
		samples [][]uint64 // the elements each sample compared
	)
	stableClock = func() time.Time {
		if reads%2 == 0 { // a sample starts
			samples = append(samples, nil)
		} else { // it ends, having cost costs[k]
			now = now.Add(costs[min(reads/2, len(costs)-1)])
		}
		reads++
		return now
	}
	record := func(x, y uint64) int {
		s := &samples[len(samples)-1]
		*s = append(*s, x)
		return cmp.Compare(x, y)
	}
	if !stableSkewFor(a, record) {
		t.Fatal("a comparator costly in the first sample only was judged costly")
	}
	if len(samples) != 2 {
		t.Fatalf("%d samples timed, want 2 (the cheap second one decides)", len(samples))
	}
	if samples[0][0] == samples[1][0] {
		t.Errorf("both samples compared element %d first: a retry must take other elements", samples[0][0])
	}
	costs = []time.Duration{time.Millisecond}
	reads, samples = 0, nil
	if stableSkewFor(a, record) {
		t.Fatal("a comparator costly in every sample was judged cheap")
	}
	if len(samples) != stableSkewTries {
		t.Fatalf("%d samples timed for a costly comparator, want %d", len(samples), stableSkewTries)
	}
}
