package blitz

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostile6Configs returns pools of 1 and 3 workers with grains from 1 to math.MaxInt, plus
// the default pool with the automatic grain.
func hostile6Configs(t *testing.T) []parCase {
	cases := []parCase{{"default/auto", nil}}
	for _, w := range []int{1, 3} {
		p := newPool(t, Config{Workers: w})
		for _, g := range []int{1, 7, math.MaxInt} {
			cases = append(cases, parCase{fmt.Sprintf("w%d/g%d", w, g), []Option{WithPool(p), WithGrain(g)}})
		}
	}
	return cases
}

func hostile6Sizes(opts []Option) []int {
	g := 1024
	for _, o := range opts {
		if o.grain > 0 {
			g = o.grain
		}
	}
	set := map[int]bool{0: true, 1: true, 2: true, 100: true, 1025: true}
	if g < 1000 {
		for _, n := range []int{g - 1, g, g + 1, 3*g + 1, 8 * g} {
			if n >= 0 {
				set[n] = true
			}
		}
	}
	var out []int
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

type h6kv struct {
	k float64
	i int
}

// TestHostile6Differential compares every slice function with its sequential model for
// many sizes around the grain and for grains from 1 to math.MaxInt, with a
// non-commutative combine (string concatenation) where the fold order is documented.
func TestHostile6Differential(t *testing.T) {
	within(t, 60*time.Second, "differential", func() {
		for _, c := range hostile6Configs(t) {
			for _, n := range hostile6Sizes(c.opts) {
				hostile6DiffOne(t, c, n)
			}
		}
	})
}

func hostile6DiffOne(t *testing.T, c parCase, n int) {
	opts := c.opts
	name := fmt.Sprintf("%s/n%d", c.name, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	s := make([]int, n)
	for i := range s {
		s[i] = r.IntN(10)
	}
	strs := make([]string, n)
	for i := range strs {
		strs[i] = strconv.Itoa(i) + ","
	}
	want := strings.Join(strs, "")
	concat := func(a, b string) string { return a + b }
	fail := func(what string, got, want any) {
		t.Errorf("%s: %s = %v, want %v", name, what, got, want)
	}
	if got := Reduce(n, "", func(lo, hi int) string { return strings.Join(strs[lo:hi], "") }, concat, opts...); got != want {
		fail("Reduce concat", len(got), len(want))
	}
	if got := MapReduce(strs, "", func(v string) string { return v }, concat, opts...); got != want {
		fail("MapReduce concat", len(got), len(want))
	}
	if got := MapReduceFunc(strs, func() string { return "" }, func(v string) string { return v }, concat, opts...); got != want {
		fail("MapReduceFunc concat", len(got), len(want))
	}
	if got := MapReduceChunked(strs, "", func(ch []string) string { return strings.Join(ch, "") }, concat, opts...); got != want {
		fail("MapReduceChunked concat", len(got), len(want))
	}
	if got, err := TryReduce(n, "", func(lo, hi int) (string, error) { return strings.Join(strs[lo:hi], ""), nil }, concat, opts...); got != want || err != nil {
		fail("TryReduce concat", len(got), len(want))
	}
	for _, size := range []int{1, 3, 1000, math.MaxInt} {
		ch := Chunks(strs, size)
		got := ReduceChunks(ch, "", func(i int, chunk []string) string {
			if !slices.Equal(chunk, slices.Collect(slices.Chunk(strs, size))[i]) {
				t.Errorf("%s: chunk %d wrong", name, i)
			}
			return strings.Join(chunk, "")
		}, concat, opts...)
		if got != want {
			fail(fmt.Sprintf("ReduceChunks(size %d)", size), len(got), len(want))
		}
	}
	for _, k := range []int{0, min(1, n), n / 2, n} {
		ch := Chain(strs[:k], strs[k:])
		if got := ChainMapReduce(ch, "", func(v string) string { return v }, concat, opts...); got != want {
			fail(fmt.Sprintf("ChainMapReduce(split %d)", k), len(got), len(want))
		}
	}
	if got := RangeReduce(Range(math.MaxInt-n, math.MaxInt), "", func(i int) string { return strs[i-(math.MaxInt-n)] }, concat, opts...); got != want {
		fail("RangeReduce near MaxInt", len(got), len(want))
	}
	if got := ZipMapReduce(Zip(strs, s), "", func(a string, _ int) string { return a }, concat, opts...); got != want {
		fail("ZipMapReduce", len(got), len(want))
	}

	// Filter / Partition / FlatMap / Flatten / Map.
	even := func(v int) bool { return v%2 == 0 }
	var wf, wn []int
	for _, v := range s {
		if even(v) {
			wf = append(wf, v)
		} else {
			wn = append(wn, v)
		}
	}
	if got := Filter(s, even, opts...); !slices.Equal(got, wf) {
		fail("Filter", got, wf)
	}
	if y, no := Partition(s, even, opts...); !slices.Equal(y, wf) || !slices.Equal(no, wn) {
		fail("Partition", [][]int{y, no}, [][]int{wf, wn})
	}
	fm := FlatMap(s, func(v int) []int { return slices.Repeat([]int{v}, v%3) }, opts...)
	var wfm []int
	for _, v := range s {
		wfm = append(wfm, slices.Repeat([]int{v}, v%3)...)
	}
	if !slices.Equal(fm, wfm) {
		fail("FlatMap", fm, wfm)
	}
	if got := Map(s, func(v int) int { return v * 3 }, opts...); len(got) != n || (n > 0 && got[n-1] != s[n-1]*3) {
		fail("Map", got, nil)
	}
	if got := Count(s, even, opts...); got != len(wf) {
		fail("Count", got, len(wf))
	}
	if got := Sum(s, opts...); got != func() (x int) {
		for _, v := range s {
			x += v
		}
		return
	}() {
		fail("Sum", got, nil)
	}

	// Searches: several matches, first/last must be exact.
	for _, target := range []int{0, 5, 9, 42} {
		wi := slices.Index(s, target)
		wl := -1
		for i := range s {
			if s[i] == target {
				wl = i
			}
		}
		eq := func(v int) bool { return v == target }
		if _, i, ok := FindFirst(s, eq, opts...); i != wi || ok != (wi >= 0) {
			fail(fmt.Sprintf("FindFirst(%d)", target), i, wi)
		}
		if _, i, ok := FindLast(s, eq, opts...); i != wl || ok != (wl >= 0) {
			fail(fmt.Sprintf("FindLast(%d)", target), i, wl)
		}
		if v, i, ok := FindAny(s, eq, opts...); ok != (wi >= 0) || (ok && (s[i] != target || v != target)) || (!ok && i != -1) {
			fail(fmt.Sprintf("FindAny(%d)", target), i, wi)
		}
		if i := Index(s, target, opts...); i != wi {
			fail(fmt.Sprintf("Index(%d)", target), i, wi)
		}
		if i := LastIndex(s, target, opts...); i != wl {
			fail(fmt.Sprintf("LastIndex(%d)", target), i, wl)
		}
		if i := IndexAny(s, target, opts...); (i >= 0) != (wi >= 0) || (i >= 0 && s[i] != target) {
			fail(fmt.Sprintf("IndexAny(%d)", target), i, wi)
		}
		if got := Any(s, eq, opts...); got != (wi >= 0) {
			fail("Any", got, wi >= 0)
		}
		if got := All(s, func(v int) bool { return v != target }, opts...); got != (wi < 0) {
			fail("All", got, wi < 0)
		}
	}

	// Min/Max families with ties and NaN keys: the first best element is documented.
	kv := make([]h6kv, n)
	for i := range kv {
		k := float64(r.IntN(4))
		if r.IntN(7) == 0 {
			k = math.NaN()
		}
		kv[i] = h6kv{k, i}
	}
	key := func(x h6kv) float64 { return x.k }
	if n > 0 {
		wmin := slices.MinFunc(kv, func(a, b h6kv) int { return cmp.Compare(a.k, b.k) })
		wmax := slices.MaxFunc(kv, func(a, b h6kv) int { return cmp.Compare(a.k, b.k) })
		if got, _ := MinFunc(kv, func(a, b h6kv) int { return cmp.Compare(a.k, b.k) }, opts...); got.i != wmin.i {
			fail("MinFunc", got, wmin)
		}
		if got, _ := MaxFunc(kv, func(a, b h6kv) int { return cmp.Compare(a.k, b.k) }, opts...); got.i != wmax.i {
			fail("MaxFunc", got, wmax)
		}
		if got, _ := MinByKey(kv, key, opts...); got.i != wmin.i {
			fail("MinByKey", got, wmin)
		}
		if got, _ := MaxByKey(kv, key, opts...); got.i != wmax.i {
			fail("MaxByKey", got, wmax)
		}
		fs := make([]float64, n)
		for i := range fs {
			fs[i] = kv[i].k
		}
		wm, wM := slices.Min(fs), slices.Max(fs)
		gm, _ := Min(fs, opts...)
		gM, _ := Max(fs, opts...)
		same := func(a, b float64) bool { return a == b || (a != a && b != b) }
		if !same(gm, wm) || !same(gM, wM) {
			fail("Min/Max NaN", [2]float64{gm, gM}, [2]float64{wm, wM})
		}
	} else {
		if _, ok := MinByKey(kv, key, opts...); ok {
			fail("MinByKey empty ok", ok, false)
		}
	}
}
