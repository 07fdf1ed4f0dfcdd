package blitz

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// hs7Sizes are lengths on both sides of the sorts' cut-offs: pdqsort's insertion sort
// (12), the radix and stable insertion sorts (24, 2*24), the string insertion sort (16),
// the merge sort's comparator timing (4096), pdqsort's and the merge sort's parallel
// sides (8192), the radix sorts' parallel paths (2*16384) and in-cache buckets (65536).
var hs7Sizes = []int{0, 1, 2, 3, 12, 13, 16, 17, 24, 25, 2 * stableBlock, 2*stableBlock + 1,
	stableSkewMin - 1, stableSkewMin, pdqParMin + 1, 2*radixParMin - 1, 2*radixParMin + 1, radixLSDMax + 1}

// hs7Extremes draws from the extreme values of a 64-bit word (as every width sees them
// after truncation: 0, all ones, the sign bit alone, everything but the sign bit...) and
// from random words.
func hs7Extremes(r *rand.Rand) uint64 {
	ext := []uint64{0, math.MaxUint64, 1 << 63, 1<<63 - 1, 1<<63 + 1, 1 << 31, 1<<31 - 1, 1 << 15,
		1<<15 - 1, 1 << 7, 1<<7 - 1, 0xff, 0xffff, 0xffffffff, 1}
	if r.IntN(2) == 0 {
		return ext[r.IntN(len(ext))]
	}
	return r.Uint64()
}

// hs7Floats64 and hs7Floats32 are the special floats: NaNs with payloads and either sign,
// signalling and quiet, both zeros, infinities, the smallest and largest subnormals and
// normals, of both signs.
var hs7Floats64 = []float64{math.NaN(), -math.NaN(), math.Float64frombits(0x7ff0000000000001),
	math.Float64frombits(0xfff8000000000123), math.Float64frombits(0xffffffffffffffff),
	math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64,
	-math.SmallestNonzeroFloat64, math.Float64frombits(0x000fffffffffffff),
	math.Float64frombits(0x800fffffffffffff), 0x1p-1022, -0x1p-1022, math.MaxFloat64, -math.MaxFloat64, 1, -1}

var hs7Floats32 = []float32{float32(math.NaN()), math.Float32frombits(0xffc00000), math.Float32frombits(0x7f800001),
	math.Float32frombits(0xffc00123), math.Float32frombits(0xffffffff), float32(math.Copysign(0, -1)), 0,
	float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	math.Float32frombits(0x007fffff), math.Float32frombits(0x807fffff), 0x1p-126, -0x1p-126,
	math.MaxFloat32, -math.MaxFloat32, 1, -1}

// hs7CheckOrdered compares Sort, SortDesc, SortFunc and SortByKey with slices.Sort
// element by element with cmp.Compare (NaNs first and equal to each other, -0 equal to +0):
// the order both document.
func hs7CheckOrdered[T cmp.Ordered](t *testing.T, name string, in []T, opts []Option) {
	t.Helper()
	want := slices.Clone(in)
	slices.Sort(want)
	check := func(what string, got []T, desc bool) {
		t.Helper()
		for i := range got {
			w := want[i]
			if desc {
				w = want[len(want)-1-i]
			}
			if cmp.Compare(got[i], w) != 0 {
				t.Fatalf("%s: %s: at %d got %v, want %v", name, what, i, got[i], w)
			}
		}
	}
	got := slices.Clone(in)
	Sort(got, opts...)
	check("Sort", got, false)
	got = slices.Clone(in)
	SortDesc(got, opts...)
	check("SortDesc", got, true)
	got = slices.Clone(in)
	SortFunc(got, cmp.Compare[T], opts...)
	check("SortFunc", got, false)
	got = slices.Clone(in)
	SortByKey(got, func(x T) T { return x }, opts...)
	check("SortByKey", got, false)
}

type hs7Named int16

// TestHostile7SortRadixExtremes sorts every integer width (signed, unsigned, int, uint,
// uintptr and a named type) full of extreme values, and both float widths full of NaNs
// (any payload, either sign), zeros of both signs, infinities and subnormals, at every
// cut-off length, sequentially, with a tiny grain and with the automatic one.
func TestHostile7SortRadixExtremes(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	r := rand.New(rand.NewPCG(11, 13))
	for _, n := range hs7Sizes {
		if (testing.Short() || raceEnabled) && n > 2*radixParMin+1 {
			continue
		}
		for on, opts := range map[string][]Option{"seq": {WithPool(p), WithGrain(1 << 30)}, "g3": {WithPool(p), WithGrain(3)}, "auto": {WithPool(p)}} {
			name := fmt.Sprintf("n%d/%s", n, on)
			i8, u8, i16, u16 := make([]int8, n), make([]uint8, n), make([]int16, n), make([]uint16, n)
			i32, u32, i64, u64 := make([]int32, n), make([]uint32, n), make([]int64, n), make([]uint64, n)
			ii, uu, up, nm := make([]int, n), make([]uint, n), make([]uintptr, n), make([]hs7Named, n)
			f64, f32 := make([]float64, n), make([]float32, n)
			for i := range n {
				x := hs7Extremes(r)
				i8[i], u8[i], i16[i], u16[i] = int8(x), uint8(x), int16(x), uint16(x)
				i32[i], u32[i], i64[i], u64[i] = int32(x), uint32(x), int64(x), x
				ii[i], uu[i], up[i], nm[i] = int(x), uint(x), uintptr(x), hs7Named(x)
				if r.IntN(2) == 0 {
					f64[i] = hs7Floats64[r.IntN(len(hs7Floats64))]
					f32[i] = hs7Floats32[r.IntN(len(hs7Floats32))]
				} else {
					f64[i] = math.Float64frombits(x)
					f32[i] = math.Float32frombits(uint32(x >> 7))
				}
			}
			hs7CheckOrdered(t, name+"/int8", i8, opts)
			hs7CheckOrdered(t, name+"/uint8", u8, opts)
			hs7CheckOrdered(t, name+"/int16", i16, opts)
			hs7CheckOrdered(t, name+"/uint16", u16, opts)
			hs7CheckOrdered(t, name+"/int32", i32, opts)
			hs7CheckOrdered(t, name+"/uint32", u32, opts)
			hs7CheckOrdered(t, name+"/int64", i64, opts)
			hs7CheckOrdered(t, name+"/uint64", u64, opts)
			hs7CheckOrdered(t, name+"/int", ii, opts)
			hs7CheckOrdered(t, name+"/uint", uu, opts)
			hs7CheckOrdered(t, name+"/uintptr", up, opts)
			hs7CheckOrdered(t, name+"/named", nm, opts)
			hs7CheckOrdered(t, name+"/float64", f64, opts)
			hs7CheckOrdered(t, name+"/float32", f32, opts)
		}
	}
}

// TestHostile7SortStableKeysSpecial checks the stable sorts on many equal keys made of the
// special floats (every NaN equal to every other, -0 equal to +0, as cmp.Compare has it)
// and of extreme int8 values: SortStableByKey, SortByCachedKey and SortStableFunc must
// give exactly slices.SortStableFunc's order.
func TestHostile7SortStableKeysSpecial(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	r := rand.New(rand.NewPCG(17, 19))
	type rec struct {
		f  float64
		g  float32
		k  int8
		id int32
	}
	recID := func(x rec) int32 { return x.id }
	for _, n := range hs7Sizes {
		if (testing.Short() || raceEnabled) && n > 2*radixParMin+1 {
			continue
		}
		in := make([]rec, n)
		for i := range in {
			in[i] = rec{hs7Floats64[r.IntN(len(hs7Floats64))], hs7Floats32[r.IntN(len(hs7Floats32))],
				int8(hs7Extremes(r)) >> 6, int32(i)}
		}
		for on, opts := range map[string][]Option{"seq": {WithPool(p), WithGrain(1 << 30)}, "g3": {WithPool(p), WithGrain(3)}, "auto": {WithPool(p)}} {
			name := fmt.Sprintf("n%d/%s", n, on)
			hs7Stable(t, name+"/float64", in, func(x rec) float64 { return x.f }, recID, opts)
			hs7Stable(t, name+"/float32", in, func(x rec) float32 { return x.g }, recID, opts)
			hs7Stable(t, name+"/int8", in, func(x rec) int8 { return x.k }, recID, opts)
		}
	}
}

// hs7Stable checks the stable sorts of in by key against slices.SortStableFunc.
// Elements are told apart by id (a struct holding a NaN is not equal to itself).
func hs7Stable[T any, K cmp.Ordered](t *testing.T, name string, in []T, key func(T) K, id func(T) int32, opts []Option) {
	t.Helper()
	byKey := func(a, b T) int { return cmp.Compare(key(a), key(b)) }
	want := slices.Clone(in)
	slices.SortStableFunc(want, byKey)
	for what, f := range map[string]func([]T){
		"SortStableByKey": func(s []T) { SortStableByKey(s, key, opts...) },
		"SortByCachedKey": func(s []T) { SortByCachedKey(s, key, opts...) },
		"SortStableFunc":  func(s []T) { SortStableFunc(s, byKey, opts...) },
	} {
		got := slices.Clone(in)
		f(got)
		for i := range got {
			if id(got[i]) != id(want[i]) {
				t.Fatalf("%s: %s: at %d got %v, want %v (not slices.SortStableFunc's order)", name, what, i, got[i], want[i])
			}
		}
	}
}
