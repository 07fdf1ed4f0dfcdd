package blitz

import (
	"cmp"
	"math"
	"slices"
	"sync/atomic"
	"testing"
)

func TestSumMinMaxDot(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := randInts(4, n, 1<<40)
		var want int64
		for _, v := range s {
			want += v
		}
		if got := Sum(s, opts...); got != want {
			t.Fatalf("Sum = %d, want %d", got, want)
		}
		u := make([]uint8, n) // wrapping arithmetic is associative
		var uw uint8
		for i := range u {
			u[i] = uint8(s[i])
			uw += u[i]
		}
		if got := Sum(u, opts...); got != uw {
			t.Fatalf("Sum(uint8) = %d, want %d", got, uw)
		}
		f := make([]float64, n)
		var fw float64
		for i := range f {
			f[i] = float64(s[i]%1000) / 8 // exact in binary: the sum is exact too
			fw += f[i]
		}
		if got := Sum(f, opts...); got != fw {
			t.Fatalf("Sum(float64) = %v, want %v", got, fw)
		}
		gotMin, ok := Min(s, opts...)
		wantMin, wantMax := int64(0), int64(0)
		if n > 0 {
			wantMin, wantMax = slices.Min(s), slices.Max(s)
		}
		if ok != (n > 0) || gotMin != wantMin {
			t.Fatalf("Min = %d, %v; want %d, %v", gotMin, ok, wantMin, n > 0)
		}
		gotMax, ok := Max(s, opts...)
		if ok != (n > 0) || gotMax != wantMax {
			t.Fatalf("Max = %d, %v; want %d", gotMax, ok, wantMax)
		}
		b := randInts(5, n, 1000)
		var dot int64
		for i := range s {
			dot += s[i] * b[i]
		}
		if got := Dot(s, b, opts...); got != dot {
			t.Fatalf("Dot = %d, want %d", got, dot)
		}
		if got := ZipDot(Zip(s, b), opts...); got != dot {
			t.Fatalf("ZipDot = %d, want %d", got, dot)
		}
		if n > 2 {
			f[n/2] = math.NaN()
			if m, _ := Min(f, opts...); !math.IsNaN(m) {
				t.Fatalf("Min with a NaN = %v, want NaN (as slices.Min)", m)
			}
		}
	})
	wantPanic(t, "Dot: len(a) = 1 != len(b) = 2", func() { Dot([]int{1}, []int{1, 2}) })
}

type kv struct {
	k int64
	v int
}

func TestMinMaxFuncAndByKey(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		raw := randInts(6, n, 20) // many duplicates: checks that the first one wins
		s := make([]kv, n)
		for i := range s {
			s[i] = kv{raw[i], i}
		}
		byK := func(a, b kv) int { return cmp.Compare(a.k, b.k) }
		key := func(x kv) int64 { return x.k }
		check := func(name string, got kv, ok bool, want func() kv) {
			t.Helper()
			if ok != (n > 0) {
				t.Fatalf("%s ok = %v for n = %d", name, ok, n)
			}
			if n > 0 && got != want() {
				t.Fatalf("%s = %v, want %v", name, got, want())
			}
		}
		g, ok := MinFunc(s, byK, opts...)
		check("MinFunc", g, ok, func() kv { return slices.MinFunc(s, byK) })
		g, ok = MaxFunc(s, byK, opts...)
		check("MaxFunc", g, ok, func() kv { return slices.MaxFunc(s, byK) })
		g, ok = MinByKey(s, key, opts...)
		check("MinByKey", g, ok, func() kv { return slices.MinFunc(s, byK) })
		g, ok = MaxByKey(s, key, opts...)
		check("MaxByKey", g, ok, func() kv { return slices.MaxFunc(s, byK) })
	})
}

func TestPredicates(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := randInts(7, n, 1000)
		for _, target := range []int64{-1001, 3, s0(s), sLast(s)} {
			pred := func(v int64) bool { return v == target }
			want := 0
			for _, v := range s {
				if pred(v) {
					want++
				}
			}
			if got := Count(s, pred, opts...); got != want {
				t.Fatalf("Count = %d, want %d", got, want)
			}
			first, last := slices.Index(s, target), -1
			for i := range s {
				if s[i] == target {
					last = i
				}
			}
			if got := Any(s, pred, opts...); got != (first >= 0) {
				t.Fatalf("Any = %v", got)
			}
			if got := All(s, func(v int64) bool { return !pred(v) }, opts...); got != (first < 0) {
				t.Fatalf("All = %v", got)
			}
			if v, i, ok := FindFirst(s, pred, opts...); i != first || ok != (first >= 0) || (ok && v != target) {
				t.Fatalf("FindFirst = %v, %d, %v; want index %d", v, i, ok, first)
			}
			if v, i, ok := FindLast(s, pred, opts...); i != last || ok != (last >= 0) || (ok && v != target) {
				t.Fatalf("FindLast = %v, %d, %v; want index %d", v, i, ok, last)
			}
			if v, i, ok := FindAny(s, pred, opts...); ok != (first >= 0) || (ok && (s[i] != target || v != target)) {
				t.Fatalf("FindAny = %v, %d, %v", v, i, ok)
			}
			if i := Index(s, target, opts...); i != first {
				t.Fatalf("Index = %d, want %d", i, first)
			}
			if i := LastIndex(s, target, opts...); i != last {
				t.Fatalf("LastIndex = %d, want %d", i, last)
			}
			if i := IndexAny(s, target, opts...); (i >= 0) != (first >= 0) || (i >= 0 && s[i] != target) {
				t.Fatalf("IndexAny = %d", i)
			}
		}
	})
}

func s0(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

func sLast(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

func TestFindFirstParallelPath(t *testing.T) {
	p, err := NewPool(Config{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 1 << 16
	s := make([]int, n)
	for _, hits := range [][]int{{findProbe + 10}, {n - 1}, {findProbe + 1, n / 2, n - 3}} {
		clear(s)
		for _, h := range hits {
			s[h] = 1
		}
		isOne := func(v int) bool { return v == 1 }
		opts := []Option{WithPool(p), WithGrain(256)}
		if _, i, ok := FindFirst(s, isOne, opts...); !ok || i != hits[0] {
			t.Fatalf("FindFirst = %d, %v; want %d", i, ok, hits[0])
		}
		if _, i, ok := FindLast(s, isOne, opts...); !ok || i != hits[len(hits)-1] {
			t.Fatalf("FindLast = %d, %v; want %d", i, ok, hits[len(hits)-1])
		}
		if _, i, ok := FindAny(s, isOne, opts...); !ok || !slices.Contains(hits, i) {
			t.Fatalf("FindAny = %d, %v; want one of %v", i, ok, hits)
		}
	}
}

func TestMapFilterAndFriends(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := randInts(8, n, 1000)
		var seen atomic.Int64
		ForEach(s, func(v int64) { seen.Add(v) }, opts...)
		var sum int64
		for _, v := range s {
			sum += v
		}
		if seen.Load() != sum {
			t.Fatalf("ForEach visited sum %d, want %d", seen.Load(), sum)
		}
		c := slices.Clone(s)
		ForEachIndex(c, func(i int, v *int64) { *v += int64(i) }, opts...)
		for i := range c {
			if c[i] != s[i]+int64(i) {
				t.Fatalf("ForEachIndex at %d", i)
			}
		}
		m := Map(s, func(v int64) float64 { return float64(v) / 2 }, opts...)
		if len(m) != n {
			t.Fatalf("Map len %d", len(m))
		}
		for i := range m {
			if m[i] != float64(s[i])/2 {
				t.Fatalf("Map at %d", i)
			}
		}
		into := make([]float64, n)
		MapInto(into, s, func(v int64) float64 { return float64(v) / 2 }, opts...)
		if !slices.Equal(into, m) {
			t.Fatalf("MapInto differs from Map")
		}
		c = slices.Clone(s)
		MapInPlace(c, func(v int64) int64 { return -v }, opts...)
		for i := range c {
			if c[i] != -s[i] {
				t.Fatalf("MapInPlace at %d", i)
			}
		}
		Fill(c, 42, opts...)
		for i := range c {
			if c[i] != 42 {
				t.Fatalf("Fill at %d", i)
			}
		}
		even := func(v int64) bool { return v%2 == 0 }
		var wantYes, wantNo []int64
		for _, v := range s {
			if even(v) {
				wantYes = append(wantYes, v)
			} else {
				wantNo = append(wantNo, v)
			}
		}
		var calls atomic.Int64
		got := Filter(s, func(v int64) bool { calls.Add(1); return even(v) }, opts...)
		if !slices.Equal(got, wantYes) {
			t.Fatalf("Filter = %v, want %v", got, wantYes)
		}
		if calls.Load() != int64(n) {
			t.Fatalf("Filter called pred %d times for %d elements", calls.Load(), n)
		}
		yes, no := Partition(s, even, opts...)
		if !slices.Equal(yes, wantYes) || !slices.Equal(no, wantNo) {
			t.Fatalf("Partition mismatch")
		}
		fm := FlatMap(s, func(v int64) []int64 { return make([]int64, int(uint64(v)%4)) }, opts...)
		wantLen := 0
		for _, v := range s {
			wantLen += int(uint64(v) % 4)
		}
		if len(fm) != wantLen {
			t.Fatalf("FlatMap len %d, want %d", len(fm), wantLen)
		}
		parts := make([][]int64, n)
		var flat []int64
		for i := range parts {
			parts[i] = s[i : i+int(uint64(s[i])%3)%(n-i+1)]
			flat = append(flat, parts[i]...)
		}
		if got := Flatten(parts, opts...); !slices.Equal(got, flat) {
			t.Fatalf("Flatten mismatch")
		}
		perm := make([]int, n)
		for i := range perm {
			perm[i] = (i*7 + 3) % max(n, 1)
		}
		if n%7 == 0 { // 7 must be coprime with n for perm to be a permutation
			return
		}
		out := make([]int64, n)
		Scatter(s, perm, out, opts...)
		for i := range s {
			if out[perm[i]] != s[i] {
				t.Fatalf("Scatter at %d", i)
			}
		}
	})
}

func TestSliceBadInput(t *testing.T) {
	wantPanic(t, "Scatter: len(values) = 2 != len(indices) = 1", func() { Scatter([]int{1, 2}, []int{0}, make([]int, 2)) })
	wantPanic(t, "Scatter: indices[1] = 5 out of range [0, len(out) = 2)", func() { Scatter([]int{1, 2}, []int{0, 5}, make([]int, 2)) })
	big := make([]int, 100000)
	idx := make([]int, len(big))
	for i := range idx {
		idx[i] = i
	}
	idx[77777] = -1
	out := make([]int, len(big))
	for i := range big {
		big[i] = 1
	}
	wantPanic(t, "Scatter: indices[77777] = -1 out of range", func() { Scatter(big, idx, out, WithGrain(1000)) })
	if Sum(out) != 0 {
		t.Fatal("Scatter wrote before reporting a bad index")
	}
	wantPanic(t, "MapInto: len(dst) = 1 != len(s) = 2", func() { MapInto(make([]int, 1), []int{1, 2}, func(v int) int { return v }) })
	wantPanic(t, "Map: f is nil", func() { Map[int, int]([]int{1}, nil) })
	wantPanic(t, "Filter: pred is nil", func() { Filter[int](nil, nil) })
	wantPanic(t, "Count: pred is nil", func() { Count[int](nil, nil) })
	wantPanic(t, "MinByKey: key is nil", func() { MinByKey[int, int](nil, nil) })
	// nil and empty slices are fine everywhere.
	if Sum([]int(nil)) != 0 || Count([]int(nil), func(int) bool { return true }) != 0 || len(Filter([]int{}, func(int) bool { return true })) != 0 {
		t.Fatal("empty input")
	}
	if _, ok := Max([]int(nil)); ok {
		t.Fatal("Max of nil reported ok")
	}
}
