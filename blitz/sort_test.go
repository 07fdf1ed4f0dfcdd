package blitz

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// sortInputs returns named inputs of n uint64-derived values: random, few distinct values,
// sorted, reversed, all equal, sorted with a few swaps, and skewed (most keys tiny).
func sortInputs(seed uint64, n int) map[string][]int64 {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	in := map[string][]int64{}
	rnd := make([]int64, n)
	few := make([]int64, n)
	skew := make([]int64, n)
	for i := range rnd {
		rnd[i] = int64(r.Uint64())
		few[i] = int64(r.IntN(5)) - 2
		skew[i] = int64(r.IntN(1000))
		if r.IntN(100) == 0 {
			skew[i] = int64(r.Uint64() >> 1)
		}
	}
	in["random"], in["few"], in["skewed"] = rnd, few, skew
	sorted := slices.Clone(rnd)
	slices.Sort(sorted)
	in["sorted"] = sorted
	rev := slices.Clone(sorted)
	slices.Reverse(rev)
	in["reversed"] = rev
	in["equal"] = make([]int64, n)
	nearly := slices.Clone(sorted)
	for range 3 {
		if n > 1 {
			i, j := r.IntN(n), r.IntN(n)
			nearly[i], nearly[j] = nearly[j], nearly[i]
		}
	}
	in["nearly"] = nearly
	return in
}

var sortSizes = []int{0, 1, 2, 63, 64, 65, 1000, 20000}

func sortCases(t *testing.T) []parCase {
	cases := parCases(t)
	// A tiny grain forces the parallel paths (radix, parallel partitions and merges) on
	// small inputs too.
	p, err := NewPool(Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return append(cases, parCase{"w3/g4", []Option{WithPool(p), WithGrain(4)}})
}

func checkSorted[T any](t *testing.T, name string, got, want []T, eq func(a, b T) bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", name, len(got), len(want))
	}
	for i := range got {
		if !eq(got[i], want[i]) {
			t.Fatalf("%s: at %d got %v, want %v", name, i, got[i], want[i])
		}
	}
}

func eqOrdered[T cmp.Ordered](a, b T) bool { return cmp.Compare(a, b) == 0 }

func TestSortsMatchSlices(t *testing.T) {
	for _, c := range sortCases(t) {
		for _, n := range sortSizes {
			for name, in := range sortInputs(11, n) {
				label := fmt.Sprintf("%s/n%d/%s", c.name, n, name)
				want := slices.Clone(in)
				slices.Sort(want)
				got := slices.Clone(in)
				Sort(got, c.opts...)
				checkSorted(t, label+"/Sort", got, want, eqOrdered)
				got = slices.Clone(in)
				SortFunc(got, cmp.Compare[int64], c.opts...)
				checkSorted(t, label+"/SortFunc", got, want, eqOrdered)
				got = slices.Clone(in)
				SortDesc(got, c.opts...)
				desc := slices.Clone(want)
				slices.Reverse(desc)
				checkSorted(t, label+"/SortDesc", got, desc, eqOrdered)
				got = slices.Clone(in)
				SortByKey(got, func(v int64) int64 { return -v }, c.opts...)
				checkSorted(t, label+"/SortByKey", got, desc, eqOrdered)
				// Stability: sort (key, index) pairs by a coarse key.
				pairs := make([]kv, n)
				for i, v := range in {
					pairs[i] = kv{v % 7, i}
				}
				byK := func(a, b kv) int { return cmp.Compare(a.k, b.k) }
				wantP := slices.Clone(pairs)
				slices.SortStableFunc(wantP, byK)
				gotP := slices.Clone(pairs)
				SortStableFunc(gotP, byK, c.opts...)
				checkSorted(t, label+"/SortStableFunc", gotP, wantP, func(a, b kv) bool { return a == b })
				gotP = slices.Clone(pairs)
				SortByCachedKey(gotP, func(x kv) int64 { return x.k }, c.opts...)
				checkSorted(t, label+"/SortByCachedKey", gotP, wantP, func(a, b kv) bool { return a == b })
			}
		}
	}
}

func TestSortOtherKeyTypes(t *testing.T) {
	type myInt int32 // a named type still takes the radix path
	for _, c := range sortCases(t) {
		for _, n := range []int{0, 1, 100, 5000} {
			r := rand.New(rand.NewPCG(12, uint64(n)))
			f := make([]float64, n)
			f32 := make([]float32, n)
			i8 := make([]int8, n)
			u16 := make([]uint16, n)
			mi := make([]myInt, n)
			ui := make([]uint, n)
			str := make([]string, n)
			for i := range f {
				switch r.IntN(10) {
				case 0:
					f[i] = math.NaN()
				case 1:
					f[i] = math.Inf(1 - 2*r.IntN(2))
				case 2:
					f[i] = math.Copysign(0, float64(r.IntN(2)*2-1))
				default:
					f[i] = r.NormFloat64() * 1e6
				}
				f32[i] = float32(f[i])
				i8[i] = int8(r.Uint32())
				u16[i] = uint16(r.Uint32())
				mi[i] = myInt(r.Uint32())
				ui[i] = uint(r.Uint64())
				str[i] = fmt.Sprint(r.IntN(n + 1))
			}
			checkSort(t, c, f)
			checkSort(t, c, f32)
			checkSort(t, c, i8)
			checkSort(t, c, u16)
			checkSort(t, c, mi)
			checkSort(t, c, ui)
			checkSort(t, c, str)
		}
	}
}

func checkSort[T cmp.Ordered](t *testing.T, c parCase, in []T) {
	t.Helper()
	want := slices.Clone(in)
	slices.Sort(want)
	got := slices.Clone(in)
	Sort(got, c.opts...)
	checkSorted(t, fmt.Sprintf("%s/%T/n%d", c.name, in, len(in)), got, want, eqOrdered)
	got = slices.Clone(in)
	SortDesc(got, c.opts...)
	slices.Reverse(want)
	checkSorted(t, fmt.Sprintf("%s/%T/n%d/desc", c.name, in, len(in)), got, want, eqOrdered)
}

// TestRadixLargeSkewedBucket sorts an input whose keys mostly fall in one top-level bucket,
// which takes the nested MSD path (bucket larger than radixLSDMax) with parallel
// sub-buckets.
func TestRadixLargeSkewedBucket(t *testing.T) {
	n := 3 * radixLSDMax
	r := rand.New(rand.NewPCG(13, 1))
	in := make([]uint64, n)
	for i := range in {
		in[i] = r.Uint64() >> 20
	}
	in[0] = math.MaxUint64 // pushes the top digit above the others
	want := slices.Clone(in)
	slices.Sort(want)
	Sort(in, WithGrain(1000))
	checkSorted(t, "skewed", in, want, eqOrdered)
}

func TestSortPanicsReraise(t *testing.T) {
	s := make([]int, 50000)
	for i := range s {
		s[i] = (i * 7919) % 50000
	}
	wantPanic(t, "cmp boom", func() {
		SortFunc(s, func(a, b int) int {
			if a == 4242 || b == 4242 {
				panic("cmp boom")
			}
			return cmp.Compare(a, b)
		})
	})
	wantPanic(t, "SortFunc: cmp is nil", func() { SortFunc([]int{2, 1}, nil) })
	wantPanic(t, "SortStableFunc: cmp is nil", func() { SortStableFunc([]int{2, 1}, nil) })
	wantPanic(t, "SortByCachedKey: key is nil", func() { SortByCachedKey[int, int]([]int{2, 1}, nil) })
}

var (
	fuzzPoolOnce sync.Once
	fuzzPool     *Pool
)

// fuzzOpts forces the parallel algorithms on fuzz-sized inputs: 3 workers, grain 4.
func fuzzOpts(t *testing.T) []Option {
	fuzzPoolOnce.Do(func() {
		p, err := NewPool(Config{Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		fuzzPool = p
	})
	return []Option{WithPool(fuzzPool), WithGrain(4)}
}

func FuzzSort(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("the quick brown fox jumps over the lazy dog 0123456789"))
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN())), 1<<63))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := fuzzOpts(t)
		var i64 []int64
		var f64 []float64
		var u32 []uint32
		for b := data; len(b) >= 8; b = b[8:] {
			x := binary.LittleEndian.Uint64(b)
			i64 = append(i64, int64(x))
			f64 = append(f64, math.Float64frombits(x))
			u32 = append(u32, uint32(x>>(x&31)))
		}
		i8 := make([]int8, len(data))
		for i, b := range data {
			i8[i] = int8(b)
		}
		strs := strings.Split(string(data), " ")
		for _, c := range []parCase{{"fuzz", opts}} {
			checkSort(t, c, i64)
			checkSort(t, c, f64)
			checkSort(t, c, u32)
			checkSort(t, c, i8)
			checkSort(t, c, strs)
		}
	})
}

func FuzzSortFunc(f *testing.F) {
	f.Add([]byte{}, uint8(3))
	f.Add([]byte("pack my box with five dozen liquor jugs"), uint8(1))
	f.Add([]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8, 7, 6}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, mod uint8) {
		opts := fuzzOpts(t)
		m := int(mod%16) + 1
		byMod := func(a, b byte) int { return cmp.Compare(int(a)%m, int(b)%m) }
		want := slices.Clone(data)
		slices.SortFunc(want, byMod)
		got := slices.Clone(data)
		SortFunc(got, byMod, opts...)
		// Unstable: compare keys only.
		checkSorted(t, "SortFunc", got, want, func(a, b byte) bool { return int(a)%m == int(b)%m })
		// Fuzz inputs are too small (and too repetitive) for SortFunc to choose its merge
		// sort by itself (see sortFuncByMerge): force each algorithm.
		for _, path := range []int{1, -1} {
			got = slices.Clone(data)
			withSortFuncPath(path, func() { SortFunc(got, byMod, opts...) })
			checkSorted(t, fmt.Sprintf("SortFunc (path %+d)", path), got, want, func(a, b byte) bool { return int(a)%m == int(b)%m })
		}
		got = slices.Clone(data)
		SortByKey(got, func(b byte) int { return int(b) % m }, opts...)
		checkSorted(t, "SortByKey", got, want, func(a, b byte) bool { return int(a)%m == int(b)%m })
	})
}

func FuzzSortStableFunc(f *testing.F) {
	f.Add([]byte{}, uint8(3))
	f.Add([]byte("sphinx of black quartz, judge my vow"), uint8(4))
	f.Add([]byte{5, 5, 5, 4, 4, 4, 3, 3, 3, 2, 2, 2, 1, 1, 1, 0, 0, 0}, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, mod uint8) {
		opts := fuzzOpts(t)
		m := int(mod%16) + 1
		// Elements remember their original position, so stability is checked exactly.
		pairs := make([]kv, len(data))
		for i, b := range data {
			pairs[i] = kv{int64(b) % int64(m), i}
		}
		byK := func(a, b kv) int { return cmp.Compare(a.k, b.k) }
		want := slices.Clone(pairs)
		slices.SortStableFunc(want, byK)
		got := slices.Clone(pairs)
		SortStableFunc(got, byK, opts...)
		checkSorted(t, "SortStableFunc", got, want, func(a, b kv) bool { return a == b })
		// Fuzz inputs are too small for SortStableFunc to choose the uneven cut by itself
		// (see stableSkewFor): force it.
		got = slices.Clone(pairs)
		withSkew(1, func() { SortStableFunc(got, byK, opts...) })
		checkSorted(t, "SortStableFunc (uneven cut)", got, want, func(a, b kv) bool { return a == b })
		got = slices.Clone(pairs)
		SortByCachedKey(got, func(x kv) int64 { return x.k }, opts...)
		checkSorted(t, "SortByCachedKey", got, want, func(a, b kv) bool { return a == b })
	})
}
