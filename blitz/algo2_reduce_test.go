package blitz

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

// Tests of the identity-constructor reductions (MapReduceFunc, ZipMapReduceFunc,
// ChainMapReduceFunc, RangeReduceFunc): an accumulator that combine modifies in place (a
// map) must never be shared by two leaves. Run with -race: a shared map is a data race
// (and, without -race, "concurrent map writes").

// mergeCounts merges b into a and returns a. It fails the test if a and b are the same
// map: the constructor form must never hand one accumulator to two places.
func mergeCounts(t *testing.T) func(a, b map[string]int) map[string]int {
	return func(a, b map[string]int) map[string]int {
		if reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
			t.Errorf("combine received the same map on both sides")
		}
		for k, v := range b {
			a[k] += v
		}
		return a
	}
}

func algo2Words(n int) []string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("w%d", (i*7919)%97)
	}
	return w
}

func algo2WantCounts(words []string) map[string]int {
	m := map[string]int{}
	for _, w := range words {
		m[w]++
	}
	return m
}

func TestAlgo2MapReduceFuncMaps(t *testing.T) {
	p := newPool(t, Config{Workers: 4})
	for _, n := range []int{0, 1, 5, 1000, 5000, 20000} {
		words := algo2Words(n)
		want := algo2WantCounts(words)
		for _, grain := range []int{1, 7, 0} {
			opts := []Option{WithPool(p)}
			if grain > 0 {
				opts = append(opts, WithGrain(grain))
			}
			var made atomic.Int64
			identity := func() map[string]int { made.Add(1); return map[string]int{} }
			one := func(w string) map[string]int { return map[string]int{w: 1} }
			name := fmt.Sprintf("n%d/g%d", n, grain)

			got := MapReduceFunc(words, identity, one, mergeCounts(t), opts...)
			if !maps.Equal(got, want) || got == nil {
				t.Errorf("%s: MapReduceFunc = %v, want %v", name, got, want)
			}
			if made.Load() < 1 {
				t.Errorf("%s: identity never called", name)
			}

			idx := make([]int, n)
			for i := range idx {
				idx[i] = i
			}
			got = ZipMapReduceFunc(Zip(words, idx), identity, func(w string, _ int) map[string]int {
				return map[string]int{w: 1}
			}, mergeCounts(t), opts...)
			if !maps.Equal(got, want) || got == nil {
				t.Errorf("%s: ZipMapReduceFunc = %v, want %v", name, got, want)
			}

			half := n / 2
			got = ChainMapReduceFunc(Chain(words[:half], words[half:]), identity, one, mergeCounts(t), opts...)
			if !maps.Equal(got, want) || got == nil {
				t.Errorf("%s: ChainMapReduceFunc = %v, want %v", name, got, want)
			}

			got = RangeReduceFunc(Range(0, n), identity, func(i int) map[string]int {
				return map[string]int{words[i]: 1}
			}, mergeCounts(t), opts...)
			if !maps.Equal(got, want) || got == nil {
				t.Errorf("%s: RangeReduceFunc = %v, want %v", name, got, want)
			}
		}
	}
}

// TestAlgo2MapReduceFuncFreshPerLeaf checks that every leaf starts from a value of its own:
// the constructor returns a pointer, each leaf appends to the slice it points to, and the
// result must hold every element exactly once, in order.
func TestAlgo2MapReduceFuncFreshPerLeaf(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	n := 10000
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	type acc struct{ xs []int }
	got := MapReduceFunc(s, func() *acc { return &acc{} },
		func(v int) *acc { return &acc{xs: []int{v}} },
		func(a, b *acc) *acc {
			if a == b {
				t.Errorf("combine received the same accumulator on both sides")
			}
			a.xs = append(a.xs, b.xs...)
			return a
		}, WithPool(p), WithGrain(3))
	if len(got.xs) != n {
		t.Fatalf("got %d elements, want %d", len(got.xs), n)
	}
	for i, v := range got.xs {
		if v != i {
			t.Fatalf("element %d = %d: order or sharing broken", i, v)
		}
	}
}

func TestAlgo2ReduceFuncNilArguments(t *testing.T) {
	s := []int{1, 2, 3}
	id := func() int { return 0 }
	f := func(v int) int { return v }
	add := func(a, b int) int { return a + b }
	for name, call := range map[string]func(){
		"MapReduceFunc: identity":      func() { MapReduceFunc(s, nil, f, add) },
		"MapReduceFunc: mapFn":         func() { MapReduceFunc(s, id, nil, add) },
		"MapReduceFunc: combine":       func() { MapReduceFunc(s, id, f, nil) },
		"ZipMapReduceFunc: identity":   func() { ZipMapReduceFunc(Zip(s, s), nil, func(a, b int) int { return a }, add) },
		"ChainMapReduceFunc: identity": func() { ChainMapReduceFunc(Chain(s, s), nil, f, add) },
		"RangeReduceFunc: identity":    func() { RangeReduceFunc(Range(0, 3), nil, f, add) },
		"RangeReduceFunc: f":           func() { RangeReduceFunc(Range(0, 3), id, nil, add) },
	} {
		msg := mustPanic(t, call)
		if !strings.Contains(msg, name) {
			t.Errorf("%s: panic %q does not name the function and argument", name, msg)
		}
	}
}

// TestAlgo2ReduceValueFormsKeepWorking checks that the value forms, now written on top of
// the constructor forms, still return identity for an empty input and fold value types.
func TestAlgo2ReduceValueFormsKeepWorking(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	add := func(a, b int) int { return a + b }
	if got := MapReduce([]int(nil), 42, func(v int) int { return v }, add, WithPool(p)); got != 42 {
		t.Errorf("MapReduce(nil) = %d, want identity 42", got)
	}
	if got := RangeReduce(Range(5, 5), 7, func(i int) int { return i }, add); got != 7 {
		t.Errorf("RangeReduce(empty) = %d, want identity 7", got)
	}
	s := make([]int, 5000)
	for i := range s {
		s[i] = i
	}
	if got := MapReduce(s, 0, func(v int) int { return v }, add, WithPool(p), WithGrain(5)); got != 5000*4999/2 {
		t.Errorf("MapReduce = %d, want %d", got, 5000*4999/2)
	}
}
