package blitz

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
)

// Regression tests: a sort only ever permutes its input, whatever its comparator does
// (answers that change during the sort, random answers, NaN compared with <, panics), and
// whatever interrupts it.

// sameMultiset reports whether got is a permutation of want (compared by key).
func sameMultiset[T any, K cmp.Ordered](got, want []T, key func(T) K) bool {
	if len(got) != len(want) {
		return false
	}
	g := make([]K, len(got))
	w := make([]K, len(want))
	for i := range got {
		g[i], w[i] = key(got[i]), key(want[i])
	}
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

func identityKey[T cmp.Ordered](x T) T { return x }

// lyingComparators returns comparators over int that break the strict weak ordering in
// different ways. Each call to the function returns fresh ones (they keep per-sort state,
// safe for concurrent calls).
func lyingComparators(seed uint64) map[string]func(a, b int) int {
	var calls atomic.Int64
	return map[string]func(a, b int) int{
		// Consistent at first, then reversed: the late partitions see an order that is
		// increasing by the early answers and is sorted with the partial insertion sort.
		"flips": func(a, b int) int {
			if calls.Add(1) > 3000 {
				return cmp.Compare(b, a)
			}
			return cmp.Compare(a, b)
		},
		// The order changes every 500 calls (xor with a changing mask).
		"phases": func(a, b int) int {
			m := int(uint64(calls.Add(1)/500) * 0x9e3779b97f4a7c15 >> 44)
			return cmp.Compare(a^m, b^m)
		},
		// Right most of the time, wrong now and then.
		"mostly": func(a, b int) int {
			if rand.IntN(64) == 0 {
				return cmp.Compare(b, a)
			}
			return cmp.Compare(a, b)
		},
		"random": func(a, b int) int { return rand.IntN(3) - 1 },
		// Claims everything is smaller than everything.
		"always-less": func(a, b int) int { return -1 },
	}
}

// lyingInputs are permutations of distinct values, so that a lost or duplicated element
// always shows.
func lyingInputs(seed uint64, n int) map[string][]int {
	r := rand.New(rand.NewPCG(seed, 7))
	sorted := make([]int, n)
	for i := range sorted {
		sorted[i] = i
	}
	rnd := slices.Clone(sorted)
	r.Shuffle(n, func(i, j int) { rnd[i], rnd[j] = rnd[j], rnd[i] })
	nearly := slices.Clone(sorted)
	for range 20 {
		i, j := r.IntN(n), r.IntN(n)
		nearly[i], nearly[j] = nearly[j], nearly[i]
	}
	// Sorted blocks in random order: many partitions look already partitioned.
	blocks := make([]int, 0, n)
	bs := 64
	order := r.Perm((n + bs - 1) / bs)
	for _, b := range order {
		for i := b * bs; i < min((b+1)*bs, n); i++ {
			blocks = append(blocks, i)
		}
	}
	return map[string][]int{"random": rnd, "nearly": nearly, "blocks": blocks}
}

// TestDefectsSortLyingComparator checks that SortFunc, SortStableFunc and SortByKey only
// permute their input with comparators that are not strict weak orders, on pools of
// several sizes with small grains (many parallel partitions and merges). Under -race it
// also checks that no task touches another's range.
func TestDefectsSortLyingComparator(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for _, w := range []int{1, 2, 3, 4, 8} {
		p, err := NewPool(Config{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		for _, grain := range []int{16, 100} {
			opts := []Option{WithPool(p), WithGrain(grain)}
			for round := range rounds {
				for inName, in := range lyingInputs(uint64(round), 3000) {
					for cmpName := range lyingComparators(0) {
						name := fmt.Sprintf("w%d/g%d/%s/%s/%d", w, grain, inName, cmpName, round)
						sorts := map[string]func(s []int, c func(a, b int) int){
							"SortFunc":       func(s []int, c func(a, b int) int) { SortFunc(s, c, opts...) },
							"SortStableFunc": func(s []int, c func(a, b int) int) { SortStableFunc(s, c, opts...) },
							"SortByKey": func(s []int, c func(a, b int) int) {
								SortByKey(s, func(x int) int { return c(x, 1500) }, opts...)
							},
						}
						for sortName, sortFn := range sorts {
							c := lyingComparators(uint64(round))[cmpName] // fresh state per sort
							got := slices.Clone(in)
							runWithWatchdog(t, name+"/"+sortName, func() { sortFn(got, c) })
							if !sameMultiset(got, in, identityKey[int]) {
								t.Fatalf("%s/%s: the result is not a permutation of the input", name, sortName)
							}
						}
					}
				}
			}
		}
	}
}

// TestDefectsSortNaNLess checks that sorting floats with NaNs through a comparator built
// on < (NaN compares equal to everything: not a strict weak order) keeps the multiset.
func TestDefectsSortNaNLess(t *testing.T) {
	p, err := NewPool(Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	less := func(a, b float64) int {
		if a < b {
			return -1
		}
		if b < a {
			return 1
		}
		return 0
	}
	bitsKey := func(x float64) uint64 { return math.Float64bits(x) }
	for round := range 20 {
		r := rand.New(rand.NewPCG(uint64(round), 3))
		in := make([]float64, 5000)
		for i := range in {
			in[i] = float64(i)
			if r.IntN(8) == 0 {
				in[i] = math.NaN()
			}
		}
		r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		for _, g := range []int{16, 200} {
			opts := []Option{WithPool(p), WithGrain(g)}
			got := slices.Clone(in)
			SortFunc(got, less, opts...)
			if !sameMultiset(got, in, bitsKey) {
				t.Fatalf("SortFunc round %d grain %d: not a permutation", round, g)
			}
			got = slices.Clone(in)
			SortStableFunc(got, less, opts...)
			if !sameMultiset(got, in, bitsKey) {
				t.Fatalf("SortStableFunc round %d grain %d: not a permutation", round, g)
			}
			got = slices.Clone(in)
			Sort(got, opts...)
			if !sameMultiset(got, in, bitsKey) || !slices.IsSortedFunc(got, cmp.Compare[float64]) {
				t.Fatalf("Sort round %d grain %d: not a sorted permutation", round, g)
			}
		}
	}
}

// TestDefectsSortPanickingComparator checks that a comparator panic reaches the caller and
// leaves the slice a permutation of its input, for the unstable and the stable sort, from
// the first comparisons to the last merges, in both trees of the stable sort, and for the
// small (insertion) sizes.
func TestDefectsSortPanickingComparator(t *testing.T) {
	p, err := NewPool(Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, n := range []int{10, 47, 48, 49, 300, 5000} {
		in := lyingInputs(uint64(n), n)["random"]
		// The number of comparisons of each sort, to place the panic all along it.
		var total atomic.Int64
		SortStableFunc(slices.Clone(in), func(a, b int) int { total.Add(1); return cmp.Compare(a, b) },
			WithPool(p), WithGrain(16))
		steps := []int64{0, 1, 2, 5, 17, 100}
		for k := int64(1); k <= 16; k++ {
			steps = append(steps, total.Load()*k/16)
		}
		for _, skew := range []int{-1, 1} {
			for _, grain := range []int{16, 1 << 20} {
				opts := []Option{WithPool(p), WithGrain(grain)}
				for _, after := range steps {
					for _, sortName := range []string{"SortFunc", "SortStableFunc"} {
						var calls atomic.Int64
						boom := func(a, b int) int {
							if calls.Add(1) > after {
								panic("cmp boom")
							}
							return cmp.Compare(a, b)
						}
						got := slices.Clone(in)
						func() {
							defer func() { recover() }()
							withSkew(skew, func() {
								if sortName == "SortFunc" {
									SortFunc(got, boom, opts...)
								} else {
									SortStableFunc(got, boom, opts...)
								}
							})
						}()
						if !sameMultiset(got, in, identityKey[int]) {
							t.Fatalf("%s n=%d grain=%d skew=%d panic after %d comparisons: the slice is not a permutation of the input",
								sortName, n, grain, skew, after)
						}
					}
				}
			}
		}
	}
}

// TestDefectsSortInterrupted interrupts Sort's radix paths (signed, float and unsigned keys)
// at every stage between two parallel passes, as a nested call refused by a closing pool
// would, and checks that the panic reaches the caller and the slice is still a
// permutation of the input (no key left with its sign bit flipped).
func TestDefectsSortInterrupted(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 1 << 15
	r := rand.New(rand.NewPCG(1, 2))
	i64 := make([]int64, n)
	f64 := make([]float64, n)
	u32 := make([]uint32, n)
	f32 := make([]float32, n)
	for i := range i64 {
		x := r.Uint64()
		i64[i] = int64(x)
		f64[i] = math.Float64frombits(x)
		u32[i] = uint32(x)
		f32[i] = float32(r.NormFloat64())
	}
	f64[5] = math.Inf(-1)
	f64[6] = math.Copysign(0, -1)
	for stage := 1; stage <= 4; stage++ {
		hit := 0
		check := func(name string, sortIt func(), ok func() bool) {
			t.Helper()
			var fired atomic.Bool
			sortTestHook = func(s int) {
				if s == stage {
					fired.Store(true)
					panic(ErrClosed)
				}
			}
			defer func() { sortTestHook = nil }()
			func() {
				defer func() {
					r := recover()
					if fired.Load() && r == nil {
						t.Errorf("%s stage %d: the interruption did not reach the caller", name, stage)
					}
				}()
				sortIt()
			}()
			if fired.Load() {
				hit++
			}
			if !ok() {
				t.Errorf("%s interrupted at stage %d: the slice is not a permutation of the input", name, stage)
			}
		}
		gi := slices.Clone(i64)
		check("int64", func() { Sort(gi, WithPool(p), WithGrain(1024)) },
			func() bool { return sameMultiset(gi, i64, identityKey[int64]) })
		gf := slices.Clone(f64)
		check("float64", func() { Sort(gf, WithPool(p), WithGrain(1024)) },
			func() bool { return sameMultiset(gf, f64, math.Float64bits) })
		gu := slices.Clone(u32)
		check("uint32", func() { Sort(gu, WithPool(p), WithGrain(1024)) },
			func() bool { return sameMultiset(gu, u32, identityKey[uint32]) })
		gf32 := slices.Clone(f32)
		check("float32", func() { Sort(gf32, WithPool(p), WithGrain(1024)) },
			func() bool { return sameMultiset(gf32, f32, math.Float32bits) })
		if stage <= 2 && hit == 0 {
			t.Errorf("stage %d was never reached: the hook is not called", stage)
		}
	}
}

// TestDefectsSortCloseConcurrent sorts signed and float keys on a pool that is closed
// while the sort runs: whether the sort finishes or is refused, the slice must be a
// permutation of the input.
func TestDefectsSortCloseConcurrent(t *testing.T) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(3, 4))
	in := make([]int64, n)
	for i := range in {
		in[i] = int64(r.Uint64())
	}
	for round := range 40 {
		p, err := NewPool(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Clone(in)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { recover() }()
			Sort(got, WithPool(p), WithGrain(2048))
		}()
		for range round % 7 {
			Sort(make([]int64, 10)) // a little delay, varying by round
		}
		p.Close()
		runWithWatchdog(t, fmt.Sprintf("round %d: Sort after Close", round), func() { <-done })
		if !sameMultiset(got, in, identityKey[int64]) {
			t.Fatalf("round %d: the slice is not a permutation of the input after a Close during Sort", round)
		}
	}
}

// FuzzSortLyingComparator sorts with a comparator whose answers come from the fuzz input
// (so it lies, changes its mind and contradicts itself) and checks that every sort keeps
// the multiset of its input and returns.
func FuzzSortLyingComparator(f *testing.F) {
	f.Add([]byte{}, []byte{1})
	f.Add([]byte("a lying comparator must not lose elements"), []byte{0, 1, 2})
	f.Add(binary.LittleEndian.AppendUint64(nil, 0x0123456789abcdef), []byte{2, 2, 2, 0})
	f.Fuzz(fuzzLyingBody)
}

// fuzzLyingBody is the body of FuzzSortLyingComparator.
func fuzzLyingBody(t *testing.T, data []byte, answers []byte) {
	if len(answers) == 0 {
		answers = []byte{1}
	}
	opts := fuzzOpts(t)
	// Distinct elements: value i*256+byte, so a lost or duplicated element shows.
	in := make([]int, len(data))
	for i, b := range data {
		in[i] = i<<8 | int(b)
	}
	var k atomic.Uint64
	lie := func(a, b int) int {
		i := k.Add(1)
		switch answers[i%uint64(len(answers))] % 4 {
		case 0:
			return -1
		case 1:
			return cmp.Compare(a&0xff, b&0xff)
		case 2:
			return cmp.Compare(b&0xff, a&0xff)
		default:
			return 0
		}
	}
	for name, sortFn := range map[string]func(s []int){
		"SortFunc":       func(s []int) { SortFunc(s, lie, opts...) },
		"SortFunc/merge": func(s []int) { withSortFuncPath(1, func() { SortFunc(s, lie, opts...) }) },
		"SortFunc/pdq":   func(s []int) { withSortFuncPath(-1, func() { SortFunc(s, lie, opts...) }) },
		"SortStableFunc": func(s []int) { SortStableFunc(s, lie, opts...) },
		"SortByKey":      func(s []int) { SortByKey(s, func(x int) int { return lie(x, 0) }, opts...) },
		"SortByCachedKey": func(s []int) {
			SortByCachedKey(s, func(x int) float64 {
				if lie(x, 0) < 0 {
					return math.NaN()
				}
				return float64(x & 0xff)
			}, opts...)
		},
	} {
		got := slices.Clone(in)
		sortFn(got)
		if !sameMultiset(got, in, identityKey[int]) {
			t.Fatalf("%s: the result is not a permutation of the input", name)
		}
	}
}
