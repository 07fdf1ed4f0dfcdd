package blitz

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile tests of the parallel slice functions and sources that the coverage report
// showed partly untested: FlatMap, FindAny, MaxFunc and MinFunc, SortByKey and
// SortByCachedKey on every internal path, the Chain, Zip, Chunks and Range sources,
// MapReduceChunked, TryFor, the nil-function checks, and ForEachSeq and MapSeq on a pool
// that closes while they run.

// h11Unwrap returns the value of a *PanicError, or r itself.
func h11Unwrap(r any) any {
	if pe, ok := r.(*PanicError); ok {
		return pe.Value
	}
	return r
}

// FlatMap: the concatenation in order, f called exactly once per element, nil for an
// empty result, a new slice even for one element, and panics re-raised.
func TestHostile11FlatMap(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		calls := make([]atomic.Int32, n)
		f := func(v int) []string {
			calls[v].Add(1)
			switch v % 4 {
			case 0:
				return nil
			case 1:
				return []string{}
			}
			out := make([]string, v%4)
			for k := range out {
				out[k] = strconv.Itoa(v) + "." + strconv.Itoa(k)
			}
			return out
		}
		got := FlatMap(s, f, opts...)
		var want []string
		for _, v := range s {
			want = append(want, f(v)...)
			calls[v].Add(-1)
		}
		if !slices.Equal(got, want) || (got == nil) != (len(want) == 0) {
			t.Fatalf("FlatMap = %d elements (nil %v), want %d (nil %v)", len(got), got == nil, len(want), len(want) == 0)
		}
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("f called %d times for element %d, want 1", c, i)
			}
		}
		if n > 0 {
			r := recoverRun(t, "FlatMap with a panicking f", func() {
				FlatMap(s, func(v int) []int {
					if v == n-1 {
						panic("h11-flatmap")
					}
					return []int{v}
				}, opts...)
			})
			if h11Unwrap(r) != "h11-flatmap" {
				t.Fatalf("FlatMap with a panicking f: recovered %v", r)
			}
		}
	})
	// One element: the result is a new slice, not f's.
	mine := []int{1, 2, 3}
	got := FlatMap([]int{0}, func(int) []int { return mine })
	got[0] = 99
	if mine[0] != 1 {
		t.Error("FlatMap of one element returned f's slice itself")
	}
	// Many parts of zero-size elements, and all-empty parts.
	if got := FlatMap(make([]int, 5000), func(int) []struct{} { return make([]struct{}, 3) }); len(got) != 15000 {
		t.Errorf("FlatMap of zero-size elements: %d, want 15000", len(got))
	}
	if got := FlatMap(make([]int, 5000), func(int) []int { return []int{} }); got != nil {
		t.Errorf("FlatMap with only empty parts = %v, want nil", got)
	}
	wantPanic(t, "FlatMap: f is nil", func() { FlatMap[int, int]([]int{1}, nil) })
}

// FindAny returns a real match (its index and value agree and satisfy pred), or the
// zero value, -1 and false; a panic in pred is re-raised.
func TestHostile11FindAny(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := make([]int, n)
		for i := range s {
			s[i] = i * 3
		}
		for _, c := range []struct {
			name string
			pred func(int) bool
		}{
			{"none", func(int) bool { return false }},
			{"all", func(int) bool { return true }},
			{"last", func(v int) bool { return v == (n-1)*3 }},
			{"sparse", func(v int) bool { return v%997 == 5 }},
			{"past-probe", func(v int) bool { return v/3 >= 1500 && v%2 == 1 }},
		} {
			v, i, ok := FindAny(s, c.pred, opts...)
			exists := slices.ContainsFunc(s, c.pred)
			if ok != exists {
				t.Fatalf("%s: FindAny found=%v, a match exists=%v", c.name, ok, exists)
			}
			if !ok {
				if v != 0 || i != -1 {
					t.Fatalf("%s: no match but FindAny = %d, %d", c.name, v, i)
				}
				continue
			}
			if i < 0 || i >= n || s[i] != v || !c.pred(v) {
				t.Fatalf("%s: FindAny = %d at %d, not a match", c.name, v, i)
			}
		}
		if n > 0 {
			r := recoverRun(t, "FindAny with a panicking pred", func() {
				FindAny(s, func(v int) bool {
					if v == (n-1)*3 {
						panic("h11-findany")
					}
					return false
				}, opts...)
			})
			if h11Unwrap(r) != "h11-findany" {
				t.Fatalf("FindAny with a panicking pred: recovered %v", r)
			}
		}
	})
	wantPanic(t, "FindAny: pred is nil", func() { FindAny([]int{1}, nil) })
}

type h11Rec struct {
	key float64
	id  int
}

// MaxFunc and MinFunc return the first best element, as slices.MaxFunc and MinFunc do,
// with many ties, NaNs (cmp.Compare orders them first), one element and none; a lying
// comparator still yields an element of s; a panicking one is re-raised.
func TestHostile11MaxFuncMinFunc(t *testing.T) {
	byKey := func(a, b h11Rec) int { return cmp.Compare(a.key, b.key) }
	forCases(t, func(t *testing.T, n int, opts []Option) {
		r := rand.New(rand.NewPCG(uint64(n), 11))
		s := make([]h11Rec, n)
		for i := range s {
			k := float64(r.IntN(8))
			switch r.IntN(50) {
			case 0:
				k = math.NaN()
			case 1:
				k = math.Copysign(0, -1)
			}
			s[i] = h11Rec{k, i}
		}
		gotMax, okMax := MaxFunc(s, byKey, opts...)
		gotMin, okMin := MinFunc(s, byKey, opts...)
		if n == 0 {
			if okMax || okMin || gotMax != (h11Rec{}) || gotMin != (h11Rec{}) {
				t.Fatalf("empty: MaxFunc %v %v, MinFunc %v %v", gotMax, okMax, gotMin, okMin)
			}
			return
		}
		if wantMax := slices.MaxFunc(s, byKey); !okMax || gotMax.id != wantMax.id {
			t.Fatalf("MaxFunc = %+v, want the first maximum %+v", gotMax, wantMax)
		}
		if wantMin := slices.MinFunc(s, byKey); !okMin || gotMin.id != wantMin.id {
			t.Fatalf("MinFunc = %+v, want the first minimum %+v", gotMin, wantMin)
		}
		var calls atomic.Int64
		liar := func(a, b h11Rec) int {
			c := calls.Add(1)
			return int(c*2654435761%3) - 1
		}
		v, ok := MaxFunc(s, liar, opts...)
		// Compare the key's bits: a NaN key (which the liar may well pick) is not == to
		// itself.
		if !ok || v.id < 0 || v.id >= n || math.Float64bits(s[v.id].key) != math.Float64bits(v.key) {
			t.Fatalf("MaxFunc with a lying comparator = %+v, %v: not an element of s", v, ok)
		}
		if n > 1 {
			rec := recoverRun(t, "MaxFunc with a panicking cmp", func() {
				MaxFunc(s, func(a, b h11Rec) int {
					if a.id == n-1 || b.id == n-1 {
						panic("h11-maxfunc")
					}
					return byKey(a, b)
				}, opts...)
			})
			if h11Unwrap(rec) != "h11-maxfunc" {
				t.Fatalf("MaxFunc with a panicking cmp: recovered %v", rec)
			}
		}
	})
	wantPanic(t, "MaxFunc: cmp is nil", func() { MaxFunc([]int{1}, nil) })
	wantPanic(t, "MinFunc: cmp is nil", func() { MinFunc([]int{1}, nil) })
}

// h11Big is larger than the keyed sorts carry in their radix records (32 bytes): it is
// sorted by index and gathered.
type h11Big struct {
	key float64
	id  int
	pad [3]int64
}

type h11Celsius float32

type h11Name string

// h11CheckKeyed checks a keyed sort: the keys are in cmp.Compare order, the ids are a
// permutation, and with stable the ids of equal keys are increasing.
func h11CheckKeyed[K cmp.Ordered](t *testing.T, what string, keys []K, ids []int, stable bool) {
	t.Helper()
	seen := make([]bool, len(ids))
	for i, id := range ids {
		if id < 0 || id >= len(ids) || seen[id] {
			t.Fatalf("%s: element %d (id %d) lost or duplicated", what, i, id)
		}
		seen[id] = true
		if i == 0 {
			continue
		}
		c := cmp.Compare(keys[i-1], keys[i])
		if c > 0 {
			t.Fatalf("%s: keys out of order at %d: %v then %v", what, i, keys[i-1], keys[i])
		}
		if stable && c == 0 && ids[i-1] > ids[i] {
			t.Fatalf("%s: not stable at %d: ids %d then %d with equal keys %v", what, i, ids[i-1], ids[i], keys[i])
		}
	}
}

// h11FloatKey returns a float key drawn from a small set with NaNs, both zeros and
// infinities, so that there are many ties.
func h11FloatKey(r *rand.Rand) float64 {
	switch r.IntN(20) {
	case 0:
		return math.NaN()
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return 0
	case 3:
		return math.Inf(-1)
	case 4:
		return math.Inf(1)
	case 5:
		return -math.MaxFloat64
	}
	return float64(r.IntN(40)) - 20
}

// SortByKey and SortByCachedKey on every path (sequential records, parallel records,
// carried records, big elements by index, string keys) and several key types: sorted by
// cmp.Compare (NaNs first, -0 equal to +0), a permutation of the input, key called
// exactly once per element, SortByCachedKey stable; a panic in key leaves s unchanged.
func TestHostile11SortByKey(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	opts := []Option{WithPool(p)}
	sizes := []int{0, 1, 2, 100, 1000, 20000, 40000}
	for _, n := range sizes {
		for _, stable := range []bool{false, true} {
			name := fmt.Sprintf("n%d/stable%v", n, stable)
			sortBy := func(s []h11Rec, key func(h11Rec) float64) {
				if stable {
					SortByCachedKey(s, key, opts...)
				} else {
					SortByKey(s, key, opts...)
				}
			}
			r := rand.New(rand.NewPCG(uint64(n), 7))
			s := make([]h11Rec, n)
			for i := range s {
				s[i] = h11Rec{h11FloatKey(r), i}
			}
			orig := slices.Clone(s)
			calls := make([]atomic.Int32, n)
			sortBy(s, func(v h11Rec) float64 {
				calls[v.id].Add(1)
				return v.key
			})
			for i := range calls {
				if c := calls[i].Load(); c != 1 {
					t.Fatalf("%s: key called %d times for element %d, want 1", name, c, i)
				}
			}
			keys := make([]float64, n)
			ids := make([]int, n)
			for i, v := range s {
				keys[i], ids[i] = v.key, v.id
				if math.Float64bits(v.key) != math.Float64bits(orig[v.id].key) {
					t.Fatalf("%s: element %d changed: key %v, was %v", name, v.id, v.key, orig[v.id].key)
				}
			}
			h11CheckKeyed(t, name+"/float64", keys, ids, stable)

			// A panic in key, at the last element extracted: s unchanged.
			if n > 0 {
				before := slices.Clone(s)
				rec := recoverRun(t, name+": panicking key", func() {
					sortBy(s, func(v h11Rec) float64 {
						if v.id == orig[n-1].id {
							panic("h11-key")
						}
						return -v.key
					})
				})
				if h11Unwrap(rec) != "h11-key" {
					t.Fatalf("%s: panicking key: recovered %v", name, rec)
				}
				for i := range s {
					if s[i].id != before[i].id {
						t.Fatalf("%s: a panic in key changed s at %d", name, i)
					}
				}
			}
		}

		// Big elements, by index.
		r := rand.New(rand.NewPCG(uint64(n), 8))
		big := make([]h11Big, n)
		for i := range big {
			big[i] = h11Big{key: h11FloatKey(r), id: i, pad: [3]int64{int64(i), -int64(i), 7}}
		}
		SortByCachedKey(big, func(v h11Big) float64 { return v.key }, opts...)
		keys := make([]float64, n)
		ids := make([]int, n)
		for i, v := range big {
			keys[i], ids[i] = v.key, v.id
			if v.pad != [3]int64{int64(v.id), -int64(v.id), 7} {
				t.Fatalf("n%d big: element %d torn: %+v", n, v.id, v)
			}
		}
		h11CheckKeyed(t, fmt.Sprintf("n%d/big", n), keys, ids, true)
		if n > 0 {
			before := slices.Clone(big)
			rec := recoverRun(t, "big elements, panicking key", func() {
				SortByKey(big, func(v h11Big) float64 {
					if v.id == n/2 {
						panic("h11-key-big")
					}
					return -v.key
				}, opts...)
			})
			same := slices.EqualFunc(big, before, func(x, y h11Big) bool {
				return x.id == y.id && x.pad == y.pad && math.Float64bits(x.key) == math.Float64bits(y.key)
			})
			if h11Unwrap(rec) != "h11-key-big" || !same {
				t.Fatalf("n%d big: panicking key: recovered %v, s unchanged %v", n, rec, same)
			}
		}

		// Other key types: a named float32, int8, uint16, a named string.
		ids = make([]int, n)
		for i := range ids {
			ids[i] = int(r.Uint32())
		}
		type kind struct {
			name  string
			check func(s []int)
		}
		for _, k := range []kind{
			{"celsius", func(s []int) {
				key := func(v int) h11Celsius {
					if v%13 == 0 {
						return h11Celsius(math.NaN())
					}
					return h11Celsius(v%200) - 100
				}
				SortByCachedKey(s, key, opts...)
				h11CheckKeyedBy(t, fmt.Sprintf("n%d/celsius", n), s, key)
			}},
			{"int8", func(s []int) {
				key := func(v int) int8 { return int8(v) }
				SortByCachedKey(s, key, opts...)
				h11CheckKeyedBy(t, fmt.Sprintf("n%d/int8", n), s, key)
			}},
			{"uint16", func(s []int) {
				key := func(v int) uint16 { return uint16(v >> 3) }
				SortByKey(s, key, opts...)
				h11CheckKeyedBy(t, fmt.Sprintf("n%d/uint16", n), s, key)
			}},
			{"name", func(s []int) {
				key := func(v int) h11Name { return h11Name(strconv.Itoa(v % 977)) }
				SortByCachedKey(s, key, opts...)
				h11CheckKeyedBy(t, fmt.Sprintf("n%d/name", n), s, key)
			}},
		} {
			s := slices.Clone(ids)
			k.check(s)
			a, b := slices.Clone(s), slices.Clone(ids)
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Fatalf("n%d/%s: not a permutation of the input", n, k.name)
			}
		}
	}
	wantPanic(t, "SortByKey: key is nil", func() { SortByKey[int, int]([]int{2, 1}, nil) })
	// A closed pool fails whatever the size, as documented for the parallel functions.
	q, _ := NewPool(Config{Workers: 1})
	q.Close()
	for _, n := range []int{0, 1, 5} {
		r := h11Recover(func() { SortByKey(make([]int, n), func(v int) int { return v }, WithPool(q)) })
		if !h11IsClosed(r) {
			t.Errorf("SortByKey of %d elements on a closed pool: panic %v, want ErrClosed", n, r)
		}
	}
}

// h11CheckKeyedBy checks that s is sorted by key (stable order is not checked: the
// elements carry no id).
func h11CheckKeyedBy[K cmp.Ordered](t *testing.T, what string, s []int, key func(int) K) {
	t.Helper()
	for i := 1; i < len(s); i++ {
		if cmp.Compare(key(s[i-1]), key(s[i])) > 0 {
			t.Fatalf("%s: keys out of order at %d: %v then %v", what, i, key(s[i-1]), key(s[i]))
		}
	}
}

// ChainMapReduce and ChainMapReduceFunc fold in chain order across the seam between the
// two slices (a non-commutative combine shows it), with either slice empty; the Func
// form's accumulators are fresh per leaf (combine appends in place); an empty chain
// returns the identity (the constructor called once).
func TestHostile11ChainMapReduce(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		for _, cut := range []int{0, n / 3, n} {
			c := Chain(all[:cut], all[cut:])
			if c.Len() != n {
				t.Fatalf("Chain.Len = %d, want %d", c.Len(), n)
			}
			// (a, b) as an affine map x -> a*x + b composed in order: associative, not
			// commutative.
			type aff struct{ a, b uint64 }
			comp := func(x, y aff) aff { return aff{y.a * x.a, y.a*x.b + y.b} }
			f := func(v int) aff { return aff{uint64(v)*2 + 1, uint64(v)} }
			got := ChainMapReduce(c, aff{1, 0}, f, comp, opts...)
			want := aff{1, 0}
			for _, v := range all {
				want = comp(want, f(v))
			}
			if got != want {
				t.Fatalf("cut %d: ChainMapReduce = %v, want %v", cut, got, want)
			}
			var ids atomic.Int32
			acc := ChainMapReduceFunc(c, func() []int { ids.Add(1); return make([]int, 0, 4) },
				func(v int) []int { return []int{v} },
				func(x, y []int) []int { return append(x, y...) }, opts...)
			if !slices.Equal(acc, all) && !(n == 0 && len(acc) == 0) {
				t.Fatalf("cut %d: ChainMapReduceFunc = %d elements, not the chain in order", cut, len(acc))
			}
			if n == 0 && ids.Load() != 1 {
				t.Fatalf("empty chain: identity called %d times, want 1", ids.Load())
			}
			var seen []atomic.Int32 = make([]atomic.Int32, n)
			c.ForEach(func(i, v int) {
				if v != i {
					t.Errorf("Chained.ForEach: index %d with value %d", i, v)
				}
				seen[i].Add(1)
			}, opts...)
			for i := range seen {
				if seen[i].Load() != 1 {
					t.Fatalf("Chained.ForEach visited %d %d times", i, seen[i].Load())
				}
			}
			if n > 0 {
				rec := recoverRun(t, "ChainMapReduce with a panicking f", func() {
					ChainMapReduce(c, 0, func(v int) int {
						if v == n-1 {
							panic("h11-chain")
						}
						return v
					}, func(a, b int) int { return a + b }, opts...)
				})
				if h11Unwrap(rec) != "h11-chain" {
					t.Fatalf("ChainMapReduce with a panicking f: recovered %v", rec)
				}
			}
		}
	})
	c := Chain([]int{1}, []int{2})
	wantPanic(t, "ChainMapReduce: f is nil", func() { ChainMapReduce(c, 0, nil, func(a, b int) int { return a }) })
	wantPanic(t, "ChainMapReduce: combine is nil", func() { ChainMapReduce(c, 0, func(v int) int { return v }, nil) })
	wantPanic(t, "ChainMapReduceFunc: identity is nil", func() {
		ChainMapReduceFunc(c, nil, func(v int) int { return v }, func(a, b int) int { return a })
	})
	wantPanic(t, "Chained.ForEach: f is nil", func() { c.ForEach(nil) })
	// The length of a chain of zero-size elements cannot exceed math.MaxInt.
	huge := make([]struct{}, math.MaxInt)
	wantPanic(t, "exceeds math.MaxInt", func() { Chain(huge, make([]struct{}, 1)) })
}

// ZipMapReduce and ZipMapReduceFunc: pairs folded in order; fresh accumulators per leaf;
// identity once for an empty zip; mismatched lengths and nil functions refused.
func TestHostile11ZipMapReduce(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		a := make([]int, n)
		b := make([]string, n)
		for i := range a {
			a[i] = i
			b[i] = strconv.Itoa(i)
		}
		z := Zip(a, b)
		var ids atomic.Int32
		got := ZipMapReduceFunc(z, func() []string { ids.Add(1); return nil },
			func(x int, y string) []string {
				if strconv.Itoa(x) != y {
					t.Errorf("pair (%d, %q) mismatched", x, y)
				}
				return []string{y}
			},
			func(x, y []string) []string { return append(x, y...) }, opts...)
		if !slices.Equal(got, b) {
			t.Fatalf("ZipMapReduceFunc = %d elements, not b in order", len(got))
		}
		if n == 0 && ids.Load() != 1 {
			t.Fatalf("empty zip: identity called %d times, want 1", ids.Load())
		}
		if n > 0 && ids.Load() < 1 {
			t.Fatalf("identity never called")
		}
		sum := ZipMapReduce(z, 0, func(x int, y string) int { return x + len(y) }, func(p, q int) int { return p + q }, opts...)
		want := 0
		for i := range a {
			want += a[i] + len(b[i])
		}
		if sum != want {
			t.Fatalf("ZipMapReduce = %d, want %d", sum, want)
		}
		var visits atomic.Int64
		z.ForEach(func(i int, x int, y string) {
			if x != i || y != strconv.Itoa(i) {
				t.Errorf("Zipped.ForEach(%d, %d, %q)", i, x, y)
			}
			visits.Add(1)
		}, opts...)
		if visits.Load() != int64(n) {
			t.Fatalf("Zipped.ForEach visited %d pairs, want %d", visits.Load(), n)
		}
	})
	wantPanic(t, "Zip", func() { Zip([]int{1, 2}, []int{1}) })
	z := Zip([]int{1}, []int{2})
	add := func(x, y int) int { return x + y }
	wantPanic(t, "ZipMapReduceFunc: identity is nil", func() { ZipMapReduceFunc(z, nil, add, add) })
	wantPanic(t, "ZipMapReduceFunc: f is nil", func() { ZipMapReduceFunc(z, func() int { return 0 }, nil, add) })
	wantPanic(t, "ZipMapReduceFunc: combine is nil", func() { ZipMapReduceFunc(z, func() int { return 0 }, add, nil) })
	wantPanic(t, "ZipMapReduce: f is nil", func() { ZipMapReduce(z, 0, nil, add) })
	wantPanic(t, "ZipMapReduce: combine is nil", func() { ZipMapReduce(z, 0, add, nil) })
	wantPanic(t, "Zipped.ForEach: f is nil", func() { z.ForEach(nil) })
}

// Chunks and Range as sources: every chunk once, with its own contents and a clipped
// capacity; the folds in order; ranges at the edges of int.
func TestHostile11ChunksAndRange(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		for _, size := range []int{1, 7, 64, n + 1, math.MaxInt} {
			c := Chunks(s, size)
			seen := make([]atomic.Int32, c.Len())
			c.ForEach(func(i int, ch []int) {
				seen[i].Add(1)
				if len(ch) == 0 || ch[0] != i*size || cap(ch) != len(ch) {
					t.Errorf("size %d: chunk %d = len %d cap %d", size, i, len(ch), cap(ch))
				}
			}, opts...)
			for i := range seen {
				if seen[i].Load() != 1 {
					t.Fatalf("size %d: chunk %d visited %d times", size, i, seen[i].Load())
				}
			}
			got := ReduceChunks(c, []int(nil), func(i int, ch []int) []int { return slices.Clone(ch) },
				func(a, b []int) []int { return append(a, b...) }, opts...)
			if !slices.Equal(got, s) {
				t.Fatalf("size %d: ReduceChunks did not rebuild s in order", size)
			}
		}
		for _, lo := range []int{math.MinInt, -5, 0, math.MaxInt - n} {
			if lo == math.MinInt && n == 0 {
				continue
			}
			r := Range(lo, lo+n)
			if r.Len() != n {
				t.Fatalf("Range(%d, +%d).Len = %d", lo, n, r.Len())
			}
			var cnt, sum atomic.Int64
			r.ForEach(func(i int) {
				if i < lo || i-lo >= n {
					t.Errorf("Range(%d, +%d): ForEach got %d", lo, n, i)
				}
				cnt.Add(1)
				sum.Add(int64(i - lo))
			}, opts...)
			if cnt.Load() != int64(n) || sum.Load() != int64(n)*int64(n-1)/2 {
				t.Fatalf("Range(%d, +%d).ForEach: %d calls, offsets sum %d", lo, n, cnt.Load(), sum.Load())
			}
			got := RangeReduce(r, 0, func(i int) int { return 1 }, func(a, b int) int { return a + b }, opts...)
			if got != n {
				t.Fatalf("Range(%d, +%d): RangeReduce counted %d", lo, n, got)
			}
			first := RangeReduce(r, math.MaxInt, func(i int) int { return i }, func(a, b int) int { return min(a, b) }, opts...)
			if n > 0 && first != lo {
				t.Fatalf("Range(%d, +%d): the smallest is %d", lo, n, first)
			}
		}
	})
	wantPanic(t, "exceeds math.MaxInt", func() { IntRange{Lo: -1, Hi: math.MaxInt}.Len() })
	wantPanic(t, "exceeds math.MaxInt", func() { Range(math.MinInt, 0) })
	if got := (IntRange{Lo: 5, Hi: 2}).Len(); got != 0 {
		t.Errorf("IntRange{5, 2}.Len = %d", got)
	}
	if got := RangeReduce(Range(3, 3), -7, func(int) int { return 1 }, func(a, b int) int { return a + b }); got != -7 {
		t.Errorf("RangeReduce of an empty range = %d, want the identity", got)
	}
	if got := (Chunked[int]{}).Len(); got != 0 {
		t.Errorf("zero Chunked has %d chunks", got)
	}
	add := func(a, b int) int { return a + b }
	c := Chunks([]int{1, 2, 3}, 2)
	wantPanic(t, "Chunked.ForEach: f is nil", func() { c.ForEach(nil) })
	wantPanic(t, "ReduceChunks: f is nil", func() { ReduceChunks[int, int](c, 0, nil, add) })
	wantPanic(t, "ReduceChunks: combine is nil", func() { ReduceChunks(c, 0, func(int, []int) int { return 0 }, nil) })
	wantPanic(t, "IntRange.ForEach: f is nil", func() { Range(0, 3).ForEach(nil) })
	wantPanic(t, "RangeReduce: f is nil", func() { RangeReduce(Range(0, 3), 0, nil, add) })
	wantPanic(t, "RangeReduce: combine is nil", func() { RangeReduce(Range(0, 3), 0, func(i int) int { return i }, nil) })
}

// MapReduceChunked, TryFor and the slice loops: results, errors, and the nil checks.
func TestHostile11ChunkedTryForAndNils(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		got := MapReduceChunked(s, []int(nil), func(ch []int) []int {
			if len(ch) == 0 || cap(ch) != len(ch) {
				t.Errorf("MapReduceChunked: chunk len %d cap %d", len(ch), cap(ch))
			}
			return append([]int(nil), ch...)
		}, func(a, b []int) []int { return append(a, b...) }, opts...)
		if !slices.Equal(got, s) {
			t.Fatalf("MapReduceChunked did not rebuild s in order")
		}
		var covered atomic.Int64
		errStop := errors.New("h11-stop")
		err := TryFor(n, func(lo, hi int) error {
			covered.Add(int64(hi - lo))
			if lo <= n/2 && n/2 < hi {
				return fmt.Errorf("wrapped: %w", errStop)
			}
			return nil
		}, opts...)
		if n > 0 && !errors.Is(err, errStop) {
			t.Fatalf("TryFor = %v, want the body's error", err)
		}
		if n == 0 && (err != nil || covered.Load() != 0) {
			t.Fatalf("TryFor(0) = %v after covering %d", err, covered.Load())
		}
		if err := TryFor(n, func(lo, hi int) error { return nil }, opts...); err != nil {
			t.Fatalf("TryFor without errors = %v", err)
		}
		out := make([]int, n)
		MapInto(out, s, func(v int) int { return v * 2 }, opts...)
		MapInPlace(out, func(v int) int { return v + 1 }, opts...)
		ForEachIndex(out, func(i int, v *int) {
			if *v != 2*i+1 {
				t.Errorf("ForEachIndex: out[%d] = %d", i, *v)
			}
			*v = -i
		}, opts...)
		var sum atomic.Int64
		ForEach(out, func(v int) { sum.Add(int64(v)) }, opts...)
		if want := -int64(n) * int64(n-1) / 2; sum.Load() != want {
			t.Fatalf("ForEach summed %d, want %d", sum.Load(), want)
		}
	})
	if err := TryFor(-3, func(int, int) error { return errors.New("ran") }); err != nil {
		t.Errorf("TryFor(-3) = %v, want nil without running the body", err)
	}
	s := []int{1, 2}
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"MapReduceChunked: mapChunk is nil", func() { MapReduceChunked(s, 0, nil, func(a, b int) int { return a }) }},
		{"MapReduceChunked: combine is nil", func() { MapReduceChunked(s, 0, func([]int) int { return 0 }, nil) }},
		{"TryFor: body is nil", func() { TryFor(3, nil) }},
		{"ForEach: f is nil", func() { ForEach(s, nil) }},
		{"ForEachIndex: f is nil", func() { ForEachIndex(s, nil) }},
		{"MapInto: f is nil", func() { MapInto[int, int](make([]int, 2), s, nil) }},
		{"MapInto", func() { MapInto(make([]int, 1), s, func(v int) int { return v }) }},
		{"MapInPlace: f is nil", func() { MapInPlace(s, nil) }},
	} {
		wantPanic(t, c.want, c.f)
	}
}

// ForEachSeq and MapSeq on a pool whose Close begins while they run (from a plain
// goroutine, so the pool refuses their next job): they panic with ErrClosed, no element
// is processed twice, nothing runs after they return, and Close returns.
func TestHostile11SeqPoolClosing(t *testing.T) {
	for _, useMap := range []bool{false, true} {
		p, err := NewPool(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		const n = 3000
		seen := make([]atomic.Int32, n)
		closeDone := make(chan struct{})
		var seq iter.Seq[int] = func(yield func(int) bool) {
			for i := range n {
				if i == 300 {
					go func() {
						defer close(closeDone)
						p.Close()
					}()
					deadline := time.Now().Add(10 * time.Second)
					for !poolClosing(p) && time.Now().Before(deadline) {
						time.Sleep(50 * time.Microsecond)
					}
				}
				if !yield(i) {
					return
				}
			}
		}
		var after atomic.Bool
		var returned atomic.Bool
		f := func(v int) int {
			if returned.Load() {
				after.Store(true)
			}
			seen[v].Add(1)
			return v
		}
		r := recoverRun(t, "a sequence over a closing pool", func() {
			defer returned.Store(true)
			if useMap {
				k := 0
				for v := range MapSeq(seq, f, WithPool(p), WithGrain(10)) {
					if v != k {
						t.Errorf("MapSeq yielded %d at position %d", v, k)
					}
					k++
				}
			} else {
				ForEachSeq(seq, func(v int) { f(v) }, WithPool(p), WithGrain(10))
			}
		})
		if !h11IsClosed(h11Unwrap(r)) {
			t.Errorf("map=%v: a sequence over a closing pool ended with %v, want ErrClosed", useMap, r)
		}
		h11Wait(t, closeDone, 10*time.Second, "Close while a sequence ran")
		for i := range seen {
			if c := seen[i].Load(); c > 1 {
				t.Fatalf("map=%v: element %d processed %d times", useMap, i, c)
			}
		}
		if after.Load() {
			t.Errorf("map=%v: f ran after the call returned", useMap)
		}
		if !strings.Contains(fmt.Sprint(r), "closed") {
			t.Errorf("map=%v: the panic does not say the pool is closed: %v", useMap, r)
		}
	}
}

// Regression: the keyed sorts returned at once for one element without calling key,
// though they promise one call per element: a key that counts, checks or panics saw
// every element of a longer input but not the only one of a single-element input.
func TestHostile11SortByKeyOneElementCallsKey(t *testing.T) {
	for name, sortBy := range map[string]func(s []int, key func(int) int){
		"SortByKey":       func(s []int, key func(int) int) { SortByKey(s, key) },
		"SortByCachedKey": func(s []int, key func(int) int) { SortByCachedKey(s, key) },
		"SortStableByKey": func(s []int, key func(int) int) { SortStableByKey(s, key) },
	} {
		var calls int
		sortBy([]int{42}, func(v int) int {
			if v != 42 {
				t.Errorf("%s: key got %d", name, v)
			}
			calls++
			return v
		})
		if calls != 1 {
			t.Errorf("%s of one element called key %d times, want 1", name, calls)
		}
		r := h11Recover(func() { sortBy([]int{7}, func(int) int { panic("h11-one-key") }) })
		if h11Unwrap(r) != "h11-one-key" {
			t.Errorf("%s of one element with a panicking key: recovered %v, want the key's panic", name, r)
		}
		calls = 0
		sortBy(nil, func(int) int { calls++; return 0 })
		if calls != 0 {
			t.Errorf("%s of no element called key %d times", name, calls)
		}
	}
}

// String keys (the string radix sort with indices): SortByCachedKey and SortStableByKey
// are stable, with many ties, shared prefixes, empty strings and keys that are prefixes
// of each other, on the sequential and the parallel path.
func TestHostile11SortByStringKeyStable(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	type srec struct {
		key string
		id  int
	}
	words := []string{"", "a", "ab", "abc", "abcdefgh", "abcdefghi", "abcdefghij", "b", "ba", "\x00", "\xff\xff", "zz"}
	for _, n := range []int{2, 100, 5000, 40000} {
		r := rand.New(rand.NewPCG(uint64(n), 9))
		s := make([]srec, n)
		for i := range s {
			s[i] = srec{words[r.IntN(len(words))] + strings.Repeat("x", r.IntN(3)), i}
		}
		for name, sortBy := range map[string]func([]srec){
			"SortByCachedKey": func(s []srec) { SortByCachedKey(s, func(v srec) string { return v.key }, WithPool(p)) },
			"SortStableByKey": func(s []srec) { SortStableByKey(s, func(v srec) string { return v.key }, WithPool(p)) },
		} {
			w := slices.Clone(s)
			sortBy(w)
			keys := make([]string, n)
			ids := make([]int, n)
			for i, v := range w {
				keys[i], ids[i] = v.key, v.id
				if v.key != s[v.id].key {
					t.Fatalf("%s n%d: element %d torn", name, n, v.id)
				}
			}
			h11CheckKeyed(t, fmt.Sprintf("%s/n%d", name, n), keys, ids, true)
		}
	}
}
