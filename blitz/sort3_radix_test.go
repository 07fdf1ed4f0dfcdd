package blitz

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// Tests of the radix paths of Sort, SortByKey, SortStableByKey and the string sort against
// package slices: every key type, NaN, -0 and infinities, duplicates, all-equal, presorted
// and skewed inputs, at lengths on both sides of every cut-off.

// sort3Sizes are the lengths tried: 0-3, both sides of the insertion cut-offs (radix and
// string), of the sequential/parallel cut-off of the record radix, and of a bucket that
// is sorted in cache (radixLSDMax, reached by the skewed input of length sort3Big).
var sort3Sizes = []int{0, 1, 2, 3, strInsertion, strInsertion + 1, radixInsertion, radixInsertion + 1,
	100, 1000, 2*radixParMin - 1, 2 * radixParMin, 2*radixParMin + 1}

// sort3Skip reports whether distribution dn is skipped at length n: the long inputs try
// only the distributions that reach different paths there, and under the race detector
// (about 10x slower) only one long length.
func sort3Skip(n int, dn string) bool {
	if n == sort3Big {
		return raceEnabled || testing.Short() || (dn != "skewed" && dn != "random" && dn != "few")
	}
	if n >= 2*radixParMin-1 {
		if raceEnabled {
			return n != 2*radixParMin+1 || (dn != "random" && dn != "few")
		}
		return dn == "small" || dn == "equal"
	}
	return false
}

// sort3Big is long enough for one bucket of the skewed input to exceed radixLSDMax.
const sort3Big = 3 * radixLSDMax

// sort3Keys returns named sequences of n raw 64-bit keys: random, few distinct, all
// equal, sorted, reversed, small (only low bits vary), and skewed (most keys in one top
// digit, varying below it).
func sort3Keys(seed uint64, n int) map[string][]uint64 {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	rnd, few, small, skew := make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for i := range rnd {
		rnd[i] = r.Uint64()
		few[i] = uint64(r.IntN(5)) * 0x0101010101010101
		small[i] = uint64(r.IntN(3000))
		skew[i] = 1<<62 | r.Uint64()>>30
		if r.IntN(8) == 0 {
			skew[i] = r.Uint64()
		}
	}
	sorted := slices.Clone(rnd)
	slices.Sort(sorted)
	rev := slices.Clone(sorted)
	slices.Reverse(rev)
	return map[string][]uint64{"random": rnd, "few": few, "equal": make([]uint64, n), "sorted": sorted,
		"reversed": rev, "small": small, "skewed": skew}
}

// sort3Floats maps raw keys onto float64 values with every special value well represented.
func sort3Float(x uint64) float64 {
	specials := []float64{math.NaN(), math.Copysign(math.NaN(), -1), math.Copysign(0, -1), 0,
		math.Inf(1), math.Inf(-1), 1, -1, math.SmallestNonzeroFloat64, -math.MaxFloat64}
	if x%4 == 0 {
		return specials[(x>>2)%uint64(len(specials))]
	}
	return math.Float64frombits(x)
}

// sort3Opts are the option sets tried: the default pool, and a 2-worker pool with a tiny
// grain, which sends even short inputs down the parallel paths.
func sort3Opts(t *testing.T) map[string][]Option {
	p := newPool(t, Config{Workers: 2})
	return map[string][]Option{"default": nil, "w2/g4": {WithPool(p), WithGrain(4)}}
}

// checkSort3 sorts a copy of in with Sort and SortDesc and compares with slices.Sort,
// element by element with cmp.Compare (NaNs equal, -0 equal to +0).
func checkSort3[T cmp.Ordered](t *testing.T, name string, in []T, opts []Option) {
	t.Helper()
	want := slices.Clone(in)
	slices.Sort(want)
	got := slices.Clone(in)
	Sort(got, opts...)
	for i := range got {
		if cmp.Compare(got[i], want[i]) != 0 {
			t.Fatalf("%s: Sort: at %d got %v, want %v", name, i, got[i], want[i])
		}
	}
	got = slices.Clone(in)
	SortDesc(got, opts...)
	for i := range got {
		if cmp.Compare(got[i], want[len(want)-1-i]) != 0 {
			t.Fatalf("%s: SortDesc: at %d got %v, want %v", name, i, got[i], want[len(want)-1-i])
		}
	}
}

type sort3Named uint32
type sort3Str string

func TestSort3RadixMatchesSlices(t *testing.T) {
	sizes := append(slices.Clone(sort3Sizes), sort3Big)
	for on, opts := range sort3Opts(t) {
		for _, n := range sizes {
			for dn, raw := range sort3Keys(1, n) {
				if sort3Skip(n, dn) {
					continue
				}
				name := fmt.Sprintf("%s/n%d/%s", on, n, dn)
				u64, i64, f64, f32 := make([]uint64, n), make([]int64, n), make([]float64, n), make([]float32, n)
				u8, i16, i32, nu := make([]uint8, n), make([]int16, n), make([]int32, n), make([]sort3Named, n)
				for i, x := range raw {
					u64[i], i64[i], f64[i], f32[i] = x, int64(x), sort3Float(x), float32(sort3Float(x))
					u8[i], i16[i], i32[i], nu[i] = uint8(x>>56), int16(x>>48), int32(x>>32), sort3Named(x)
				}
				checkSort3(t, name+"/uint64", u64, opts)
				checkSort3(t, name+"/int64", i64, opts)
				checkSort3(t, name+"/float64", f64, opts)
				checkSort3(t, name+"/float32", f32, opts)
				checkSort3(t, name+"/uint8", u8, opts)
				checkSort3(t, name+"/int16", i16, opts)
				checkSort3(t, name+"/int32", i32, opts)
				checkSort3(t, name+"/named", nu, opts)
			}
		}
	}
}

// sort3Strings returns n strings built to stress the string radix: shared prefixes longer
// than a 7-byte level, lengths 0-40 (so strings end at every position of a level), zero
// bytes (which pad short strings), and duplicates.
func sort3Strings(seed uint64, n int, dup bool) []string {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	prefixes := []string{"", "a", "abcdefg", "abcdefgh", "abcdefghijklmn", "abcdefghijklmno", "\x00", "\x00\x00\x00\x00\x00\x00\x00\x00", "zz\xff"}
	s := make([]string, n)
	var b strings.Builder
	for i := range s {
		if dup && i > 0 && r.IntN(3) == 0 {
			s[i] = s[r.IntN(i)]
			continue
		}
		b.Reset()
		b.WriteString(prefixes[r.IntN(len(prefixes))])
		for range r.IntN(26) {
			switch r.IntN(4) {
			case 0:
				b.WriteByte(0)
			case 1:
				b.WriteByte(0xff)
			default:
				b.WriteByte(byte('a' + r.IntN(3)))
			}
		}
		s[i] = b.String()
	}
	return s
}

func TestSort3StringsMatchSlices(t *testing.T) {
	for on, opts := range sort3Opts(t) {
		for _, n := range append(slices.Clone(sort3Sizes), 100_000) {
			for _, dup := range []bool{false, true} {
				in := sort3Strings(2, n, dup)
				name := fmt.Sprintf("%s/n%d/dup=%v", on, n, dup)
				checkSort3(t, name, in, opts)
				named := make([]sort3Str, n)
				for i, x := range in {
					named[i] = sort3Str(x)
				}
				checkSort3(t, name+"/named", named, opts)
			}
		}
	}
}

// sort3Small is carried in the radix records; sort3Large is sorted by index and gathered;
// sort3Ptr holds a pointer (typed buffers).
type (
	sort3Small[K any] struct {
		k  K
		id int32
	}
	// sort3Large is larger than 32 bytes, so the keyed sorts move indices, not the
	// elements: _ pads it without a field anyone reads.
	sort3Large[K any] struct {
		k  K
		id int
		_  [5]uint64
	}
	sort3Ptr[K any] struct {
		k  K
		id *int
	}
)

// checkKeyed3 checks SortStableByKey against slices.SortStableFunc exactly (stability),
// and SortByKey for the same keys in order and a permutation of the input (each element
// has a unique id, given by id).
func checkKeyed3[T any, K cmp.Ordered](t *testing.T, name string, in []T, key func(T) K, id func(T) int, opts []Option) {
	t.Helper()
	byKey := func(a, b T) int { return cmp.Compare(key(a), key(b)) }
	want := slices.Clone(in)
	slices.SortStableFunc(want, byKey)
	got := slices.Clone(in)
	SortStableByKey(got, key, opts...)
	for i := range got {
		if id(got[i]) != id(want[i]) {
			t.Fatalf("%s: SortStableByKey: at %d got id %d key %v, want id %d key %v", name, i,
				id(got[i]), key(got[i]), id(want[i]), key(want[i]))
		}
	}
	got = slices.Clone(in)
	SortByKey(got, key, opts...)
	seen := make([]bool, len(in))
	for i := range got {
		if cmp.Compare(key(got[i]), key(want[i])) != 0 {
			t.Fatalf("%s: SortByKey: at %d got key %v, want %v", name, i, key(got[i]), key(want[i]))
		}
		j := id(got[i])
		if j < 0 || j >= len(in) || seen[j] {
			t.Fatalf("%s: SortByKey: id %d lost or duplicated", name, j)
		}
		seen[j] = true
	}
}

// keyed3 runs checkKeyed3 for keys of type K (made from raw keys by conv) on the three
// element layouts.
//
// Long inputs (over 1000 elements) try only the carried layout unless all is set: the
// three differ only in the record type, which the short inputs cover for every key type.
func keyed3[K cmp.Ordered](t *testing.T, name string, raw []uint64, conv func(uint64) K, opts []Option) {
	keyed3Layouts(t, name, raw, conv, opts, len(raw) <= 1000)
}

func keyed3Layouts[K cmp.Ordered](t *testing.T, name string, raw []uint64, conv func(uint64) K, opts []Option, all bool) {
	small := make([]sort3Small[K], len(raw))
	large := make([]sort3Large[K], len(raw))
	ptr := make([]sort3Ptr[K], len(raw))
	for i, x := range raw {
		k := conv(x)
		small[i] = sort3Small[K]{k: k, id: int32(i)}
		large[i] = sort3Large[K]{k: k, id: i}
		ptr[i] = sort3Ptr[K]{k: k, id: &[]int{i}[0]}
	}
	checkKeyed3(t, name+"/small", small, func(e sort3Small[K]) K { return e.k }, func(e sort3Small[K]) int { return int(e.id) }, opts)
	if !all {
		return
	}
	checkKeyed3(t, name+"/large", large, func(e sort3Large[K]) K { return e.k }, func(e sort3Large[K]) int { return e.id }, opts)
	checkKeyed3(t, name+"/ptr", ptr, func(e sort3Ptr[K]) K { return e.k }, func(e sort3Ptr[K]) int { return *e.id }, opts)
}

func TestSort3KeyedMatchesSlices(t *testing.T) {
	strs := sort3Strings(3, 4096, true)
	for on, opts := range sort3Opts(t) {
		for _, n := range append(slices.Clone(sort3Sizes), sort3Big) {
			for dn, raw := range sort3Keys(4, n) {
				if sort3Skip(n, dn) {
					continue
				}
				name := fmt.Sprintf("%s/n%d/%s", on, n, dn)
				keyed3Layouts(t, name+"/uint64", raw, func(x uint64) uint64 { return x }, opts, true)
				if raceEnabled && n > 1000 {
					// The race detector makes these ~10x slower: the long inputs try one
					// integer and one float key type (and strings, below).
					keyed3(t, name+"/float64", raw, sort3Float, opts)
					keyed3(t, name+"/string", raw, func(x uint64) string { return strs[x%uint64(len(strs))] }, opts)
					continue
				}
				keyed3(t, name+"/int64", raw, func(x uint64) int64 { return int64(x) }, opts)
				keyed3(t, name+"/int8", raw, func(x uint64) int8 { return int8(x >> 56) }, opts)
				keyed3(t, name+"/uint16", raw, func(x uint64) uint16 { return uint16(x >> 48) }, opts)
				keyed3(t, name+"/int32", raw, func(x uint64) int32 { return int32(x >> 32) }, opts)
				keyed3(t, name+"/float64", raw, sort3Float, opts)
				keyed3(t, name+"/float32", raw, func(x uint64) float32 { return float32(sort3Float(x)) }, opts)
				if n <= 2*radixParMin+1 {
					keyed3(t, name+"/string", raw, func(x uint64) string { return strs[x%uint64(len(strs))] }, opts)
					keyed3(t, name+"/named-string", raw, func(x uint64) sort3Str { return sort3Str(strs[x>>3%uint64(len(strs))]) }, opts)
				}
			}
		}
	}
}

// TestSort3KeyPanicLeavesInput checks that a panic in key, in any of the extraction's
// parallel tasks, reaches the caller and leaves s exactly as it was (the keyed sorts only
// read s until every key is extracted).
func TestSort3KeyPanicLeavesInput(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for _, n := range []int{100, 2*radixParMin + 1} {
		in := make([]sort3Small[int], n)
		for i := range in {
			in[i] = sort3Small[int]{k: n - i, id: int32(i)}
		}
		in[0].k = 0 // not reversed: a real sort
		for name, sortFn := range map[string]func(s []sort3Small[int], key func(sort3Small[int]) int){
			"SortByKey": func(s []sort3Small[int], key func(sort3Small[int]) int) { SortByKey(s, key, WithPool(p), WithGrain(4)) },
			"SortStableByKey": func(s []sort3Small[int], key func(sort3Small[int]) int) {
				SortStableByKey(s, key, WithPool(p), WithGrain(4))
			},
		} {
			got := slices.Clone(in)
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("%s/n%d: the panic in key did not reach the caller", name, n)
					}
				}()
				sortFn(got, func(e sort3Small[int]) int {
					if int(e.id) == n/2 {
						panic("key")
					}
					return e.k
				})
			}()
			if !slices.Equal(got, in) {
				t.Fatalf("%s/n%d: a panic in key changed s", name, n)
			}
		}
	}
}

func TestSort3NilKey(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "key is nil") {
			t.Fatalf("SortStableByKey(nil key): got %v, want a panic naming key", r)
		}
	}()
	SortStableByKey([]int{2, 1}, (func(int) int)(nil))
}

// TestSort3KeyCalledOncePerElement checks the promise of SortByCachedKey (and of the other
// keyed sorts): key is called exactly once per element, for small inputs (sorted
// sequentially) as for large ones.
func TestSort3KeyCalledOncePerElement(t *testing.T) {
	for _, n := range []int{2, 10, 1000, 2*radixParMin + 1} {
		keys := sort3Keys(11, n)["random"]
		for name, sortFn := range map[string]func(s []int, key func(int) uint64){
			"SortByKey":       func(s []int, key func(int) uint64) { SortByKey(s, key) },
			"SortStableByKey": func(s []int, key func(int) uint64) { SortStableByKey(s, key) },
			"SortByCachedKey": func(s []int, key func(int) uint64) { SortByCachedKey(s, key) },
			"SortByKey(string)": func(s []int, key func(int) uint64) {
				SortByKey(s, func(i int) string { return fmt.Sprint(key(i)) })
			},
		} {
			calls := make([]atomic.Int32, n)
			s := make([]int, n)
			for i := range s {
				s[i] = i
			}
			sortFn(s, func(i int) uint64 { calls[i].Add(1); return keys[i] })
			for i := range calls {
				if c := calls[i].Load(); c != 1 {
					t.Fatalf("%s/n%d: key called %d times for element %d, want 1", name, n, c, i)
				}
			}
		}
	}
}

// TestSort3RadixBucketPaths drives the in-cache bucket sort (radixRec, radixRecKV) through
// each of its branches with crafted buckets and checks the result against package slices,
// stability included for records: random keys (one pass, then the insertion sort over the
// whole bucket), keys that share bits below the bucket's prefix (every key lands in one
// sub-bucket, so the count is redone below the highest varying bit), clusters of more than
// radixInsertion keys in one sub-bucket (sorted by recursion before the final insertion
// sort), runs of equal keys (recursion down to no bits left), and both destinations.
func TestSort3RadixBucketPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const nbits = 40 // the bits at and above 40 are the bucket's prefix
	prefix := uint64(0x5a) << nbits
	inputs := map[string]func(n int) []uint64{
		"random": func(n int) []uint64 {
			s := make([]uint64, n)
			for i := range s {
				s[i] = prefix | r.Uint64()>>(64-nbits)
			}
			return s
		},
		"sharedHighBits": func(n int) []uint64 {
			s := make([]uint64, n)
			for i := range s {
				s[i] = prefix | 0x3f<<30 | r.Uint64()>>44 // bits 30-39 equal, 0-19 vary
			}
			return s
		},
		"clusters": func(n int) []uint64 {
			s := make([]uint64, n)
			for i := range s {
				// 4 clusters: every key of a cluster falls in one sub-bucket.
				s[i] = prefix | uint64(r.IntN(4))<<36 | uint64(r.IntN(1000))
			}
			return s
		},
		"equalRuns": func(n int) []uint64 {
			s := make([]uint64, n)
			for i := range s {
				s[i] = prefix | uint64(r.IntN(3))<<20
			}
			return s
		},
	}
	for name, gen := range inputs {
		for _, n := range []int{radixInsertion + 1, 100, 1000, 5000, radixLSDMax} {
			for _, toOther := range []bool{false, true} {
				keys := gen(n)
				want := slices.Clone(keys)
				slices.Sort(want)

				data, other := slices.Clone(keys), make([]uint64, n)
				radixRec(nil, data, other, nbits, toOther)
				got := data
				if toOther {
					got = other
				}
				if !slices.Equal(got, want) {
					t.Fatalf("radixRec %s/n%d/toOther=%v: not sorted", name, n, toOther)
				}

				recs := make([]radixKV[int], n)
				for i, k := range keys {
					recs[i] = radixKV[int]{k, i}
				}
				wantRecs := slices.Clone(recs)
				slices.SortStableFunc(wantRecs, func(a, b radixKV[int]) int { return cmp.Compare(a.k, b.k) })
				kother := make([]radixKV[int], n)
				radixRecKV(nil, recs, kother, nbits, toOther)
				gotRecs := recs
				if toOther {
					gotRecs = kother
				}
				if !slices.Equal(gotRecs, wantRecs) {
					t.Fatalf("radixRecKV %s/n%d/toOther=%v: not the stable order", name, n, toOther)
				}
			}
		}
	}
}
