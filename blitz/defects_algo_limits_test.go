package blitz

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"
)

// Regression tests: sources, grains and sizes near math.MaxInt give the right answer or
// a clear panic naming the argument, never a silently wrong length.

func TestDefectsChunksHugeSize(t *testing.T) {
	s := []int{1, 2, 3, 4, 5}
	for _, size := range []int{math.MaxInt, math.MaxInt - 1, math.MaxInt / 2, 1 << 62, 5, 6, 4} {
		c := Chunks(s, size)
		want := (len(s) + min(size, len(s)) - 1) / min(size, len(s))
		if size >= len(s) {
			want = 1
		}
		if got := c.Len(); got != want {
			t.Fatalf("Chunks(len 5, %d).Len() = %d, want %d", size, got, want)
		}
		var seen atomic.Int64
		c.ForEach(func(i int, chunk []int) {
			for _, v := range chunk {
				seen.Add(int64(v))
			}
		})
		if seen.Load() != 15 {
			t.Fatalf("Chunks(len 5, %d).ForEach saw sum %d, want 15", size, seen.Load())
		}
		if got := ReduceChunks(c, 0, func(_ int, ch []int) int { return len(ch) }, func(a, b int) int { return a + b }); got != 5 {
			t.Fatalf("ReduceChunks(Chunks(len 5, %d)) counted %d elements, want 5", size, got)
		}
		last := c.Chunk(c.Len() - 1)
		if len(last) == 0 || last[len(last)-1] != 5 {
			t.Fatalf("Chunks(len 5, %d): last chunk %v", size, last)
		}
	}
	// A chunk index out of range panics, even one whose offset would overflow.
	for _, i := range []int{-1, 5, 1 << 62, math.MaxInt} {
		wantPanic(t, "Chunked.Chunk", func() { Chunks(s, 2).Chunk(i) })
	}
	// Zero-size elements: a slice can hold math.MaxInt of them.
	huge := make([]struct{}, math.MaxInt)
	if got := Chunks(huge, 2).Len(); got != math.MaxInt/2+1 {
		t.Fatalf("Chunks(MaxInt zero-size elements, 2).Len() = %d, want %d", got, math.MaxInt/2+1)
	}
	if got := Chunks(huge, math.MaxInt).Len(); got != 1 {
		t.Fatalf("Chunks(MaxInt elements, MaxInt).Len() = %d, want 1", got)
	}
	if ch := Chunks(huge, 3).Chunk(math.MaxInt / 3); len(ch) != math.MaxInt%3 {
		t.Fatalf("last chunk of MaxInt elements by 3 has %d elements, want %d", len(ch), math.MaxInt%3)
	}
}

func TestDefectsRangeLimits(t *testing.T) {
	cases := []struct {
		lo, hi, n int
	}{
		{0, math.MaxInt, math.MaxInt},
		{-1, math.MaxInt - 1, math.MaxInt},
		{math.MinInt, -1, math.MaxInt},
		{math.MaxInt - 3, math.MaxInt, 3},
		{math.MinInt, math.MinInt + 2, 2},
		{5, -5, 0},
		{math.MaxInt, math.MinInt, 0},
	}
	for _, c := range cases {
		if got := Range(c.lo, c.hi).Len(); got != c.n {
			t.Fatalf("Range(%d, %d).Len() = %d, want %d", c.lo, c.hi, got, c.n)
		}
	}
	// Lengths beyond math.MaxInt: a clear panic naming the range, not a wrapped length.
	for _, c := range [][2]int{{-1, math.MaxInt}, {math.MinInt, math.MaxInt}, {math.MinInt, 0}, {-2, math.MaxInt - 1}} {
		msg := mustPanic(t, func() { Range(c[0], c[1]) })
		if !strings.Contains(msg, "Range") || !strings.Contains(msg, "math.MaxInt") {
			t.Fatalf("Range(%d, %d) panicked with %q, want a message naming Range and math.MaxInt", c[0], c[1], msg)
		}
		r := IntRange{Lo: c[0], Hi: c[1]}
		msg = mustPanic(t, func() { r.Len() })
		if !strings.Contains(msg, "IntRange") {
			t.Fatalf("IntRange%v.Len() panicked with %q, want a message naming IntRange", c, msg)
		}
	}
	// The ends of the int range are visited exactly, without wrapping.
	var sum, count atomic.Int64
	Range(math.MaxInt-100, math.MaxInt).ForEach(func(i int) {
		if i < math.MaxInt-100 || i >= math.MaxInt {
			t.Errorf("ForEach visited %d, outside the range", i)
		}
		count.Add(1)
		sum.Add(int64(i - (math.MaxInt - 100)))
	}, WithGrain(7))
	if count.Load() != 100 || sum.Load() != 99*100/2 {
		t.Fatalf("Range near MaxInt: %d calls, sum %d", count.Load(), sum.Load())
	}
	got := RangeReduce(Range(math.MinInt, math.MinInt+50), 0, func(i int) int { return i - math.MinInt }, func(a, b int) int { return a + b }, WithGrain(3))
	if got != 49*50/2 {
		t.Fatalf("RangeReduce near MinInt = %d", got)
	}
}

func TestDefectsChainLimits(t *testing.T) {
	a := make([]struct{}, math.MaxInt-1)
	b := make([]struct{}, 1)
	if got := Chain(a, b).Len(); got != math.MaxInt {
		t.Fatalf("Chain(MaxInt-1, 1).Len() = %d", got)
	}
	c := make([]struct{}, 2)
	msg := mustPanic(t, func() { Chain(a, c) })
	if !strings.Contains(msg, "Chain") {
		t.Fatalf("Chain of more than MaxInt elements panicked with %q, want a message naming Chain", msg)
	}
}

func TestDefectsGrainLimits(t *testing.T) {
	// The automatic grain for inputs near MaxInt: never negative, never zero, covers n.
	for _, n := range []int{math.MaxInt, math.MaxInt - 1, math.MaxInt - 7, 1 << 62} {
		c := parResolve(n, parMinGrain, []Option{WithPool(Default())})
		if c.grain < parMinGrain || c.grain > n {
			t.Fatalf("parResolve(%d) grain %d", n, c.grain)
		}
		if c.seq {
			t.Fatalf("parResolve(%d) chose the sequential path", n)
		}
	}
	// Huge explicit grains: every element is still visited exactly once.
	s := make([]int, 5000)
	for i := range s {
		s[i] = i
	}
	for _, g := range []int{math.MaxInt, math.MaxInt - 1, math.MaxInt - 63, 1 << 62} {
		var n atomic.Int64
		ForGrain(len(s), g, func(lo, hi int) { n.Add(int64(hi - lo)) })
		For(len(s), func(lo, hi int) { n.Add(int64(hi - lo)) }, WithGrain(g))
		if n.Load() != 2*int64(len(s)) {
			t.Fatalf("grain %d: For/ForGrain covered %d of %d", g, n.Load(), 2*len(s))
		}
		even := func(v int) bool { return v%2 == 0 }
		if f := Filter(s, even, WithGrain(g)); len(f) != 2500 || f[1] != 2 {
			t.Fatalf("grain %d: Filter returned %d elements", g, len(f))
		}
		if y, no := Partition(s, even, WithGrain(g)); len(y) != 2500 || len(no) != 2500 {
			t.Fatalf("grain %d: Partition returned %d and %d", g, len(y), len(no))
		}
		parts := [][]int{s[:10], s[10:4000], s[4000:]}
		if f := Flatten(parts, WithGrain(g)); len(f) != len(s) || f[4999] != 4999 {
			t.Fatalf("grain %d: Flatten returned %d elements", g, len(f))
		}
		if m := MapReduceChunked(s, 0, func(ch []int) int { return len(ch) }, func(a, b int) int { return a + b }, WithGrain(g)); m != len(s) {
			t.Fatalf("grain %d: MapReduceChunked counted %d", g, m)
		}
		k := 0
		for range MapSeq(seqN(100), func(v int) int { return v }, WithGrain(g)) {
			k++
		}
		if k != 100 {
			t.Fatalf("grain %d: MapSeq yielded %d", g, k)
		}
		var fe atomic.Int64
		ForEachSeq(seqN(100), func(int) { fe.Add(1) }, WithGrain(g))
		if fe.Load() != 100 {
			t.Fatalf("grain %d: ForEachSeq saw %d", g, fe.Load())
		}
	}
	// Parallel chunking with an explicit grain, on the pool, for sizes that do not divide.
	for _, size := range []int{1, 3, 64, 4999, 5000, math.MaxInt} {
		var covered atomic.Int64
		parChunks(parResolve(5000, 1, []Option{WithGrain(1)}), 5000, size, func(ci, lo, hi int) {
			if lo < 0 || hi > 5000 || lo >= hi {
				t.Errorf("size %d: chunk %d = [%d, %d)", size, ci, lo, hi)
			}
			covered.Add(int64(hi - lo))
		})
		if covered.Load() != 5000 {
			t.Fatalf("parChunks size %d covered %d of 5000", size, covered.Load())
		}
	}
	// Flatten of zero-size parts whose total length exceeds MaxInt panics clearly.
	z := make([]struct{}, math.MaxInt/2+1)
	msg := mustPanic(t, func() { Flatten([][]struct{}{z, z}) })
	if !strings.Contains(msg, "Flatten") {
		t.Fatalf("Flatten of more than MaxInt elements panicked with %q", msg)
	}
}
