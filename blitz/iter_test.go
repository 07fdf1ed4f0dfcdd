package blitz

import (
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestChunksZipChainRange(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := randInts(9, n, 1000)
		for _, size := range []int{1, 3, 64, 1000} {
			ch := Chunks(s, size)
			want := slices.Collect(slices.Chunk(s, size))
			if ch.Len() != len(want) {
				t.Fatalf("Chunks(%d).Len = %d, want %d", size, ch.Len(), len(want))
			}
			got := make([][]int64, ch.Len())
			ch.ForEach(func(i int, c []int64) { got[i] = c }, opts...)
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("chunk %d differs", i)
				}
			}
			sums := ReduceChunks(ch, []int64(nil), func(i int, c []int64) []int64 { return []int64{Sum(c)} },
				func(a, b []int64) []int64 { return append(a, b...) }, opts...)
			for i := range want {
				if sums[i] != Sum(want[i]) {
					t.Fatalf("ReduceChunks chunk %d", i)
				}
			}
		}
		b := Map(s, func(v int64) int { return int(v) * 2 })
		z := Zip(s, b)
		ok := atomic.Bool{}
		ok.Store(true)
		z.ForEach(func(i int, x int64, y int) {
			if y != int(x)*2 || s[i] != x {
				ok.Store(false)
			}
		}, opts...)
		if !ok.Load() {
			t.Fatal("Zip.ForEach paired wrong elements")
		}
		zm := ZipMapReduce(z, 0, func(x int64, y int) int { return y - int(x) }, func(a, b int) int { return a + b }, opts...)
		if want := int(Sum(s)); zm != want {
			t.Fatalf("ZipMapReduce = %d, want %d", zm, want)
		}
		for _, cut := range []int{0, n / 3, n} {
			c := Chain(s[:cut], s[cut:])
			if c.Len() != n {
				t.Fatalf("Chain.Len")
			}
			var mu sync.Mutex
			got := make([]int64, n)
			c.ForEach(func(i int, v int64) { mu.Lock(); got[i] = v; mu.Unlock() }, opts...)
			if !slices.Equal(got, s) {
				t.Fatal("Chain.ForEach")
			}
			var sq []int64
			for _, v := range s {
				sq = append(sq, v*v)
			}
			cm := ChainMapReduce(c, []int64(nil), func(v int64) []int64 { return []int64{v * v} }, func(a, b []int64) []int64 { return append(a, b...) }, opts...)
			if !slices.Equal(cm, sq) {
				t.Fatal("ChainMapReduce order")
			}
			if n > 0 && c.At(n-1) != s[n-1] {
				t.Fatal("Chain.At")
			}
		}
		r := Range(-5, n-5)
		var cnt, total atomic.Int64
		r.ForEach(func(i int) { cnt.Add(1); total.Add(int64(i)) }, opts...)
		want := int64(0)
		for i := -5; i < n-5; i++ {
			want += int64(i)
		}
		if cnt.Load() != int64(n) || total.Load() != want {
			t.Fatalf("Range.ForEach visited %d, sum %d", cnt.Load(), total.Load())
		}
		if got := RangeReduce(r, int64(0), func(i int) int64 { return int64(i) }, func(a, b int64) int64 { return a + b }, opts...); got != want {
			t.Fatalf("RangeReduce = %d, want %d", got, want)
		}
	})
	wantPanic(t, "Zip: len(a) = 1 != len(b) = 0", func() { Zip([]int{1}, []int{}) })
	wantPanic(t, "Chunks: size 0 < 1", func() { Chunks([]int{1}, 0) })
	if Range(5, 1).Len() != 0 {
		t.Fatal("reversed range not empty")
	}
}

func TestForEachSeqAndMapSeq(t *testing.T) {
	for _, c := range parCases(t) {
		for _, n := range parSizes {
			s := randInts(10, n, 1000)
			var sum atomic.Int64
			ForEachSeq(slices.Values(s), func(v int64) { sum.Add(v) }, c.opts...)
			if sum.Load() != Sum(s) {
				t.Fatalf("%s n=%d: ForEachSeq sum %d, want %d", c.name, n, sum.Load(), Sum(s))
			}
			var got []int64
			for v := range MapSeq(slices.Values(s), func(v int64) int64 { return v * 3 }, c.opts...) {
				got = append(got, v)
			}
			want := Map(s, func(v int64) int64 { return v * 3 })
			if !slices.Equal(got, want) {
				t.Fatalf("%s n=%d: MapSeq out of order or incomplete (%d of %d)", c.name, n, len(got), n)
			}
		}
	}
}

// countingSeq yields 0..n-1 and records how many values were pulled and whether the
// sequence was stopped.
func countingSeq(n int, pulled *atomic.Int64, stopped *atomic.Bool) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			pulled.Add(1)
			if !yield(i) {
				stopped.Store(true)
				return
			}
		}
	}
}

func TestMapSeqBreakStopsWork(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 1 << 20
	var pulled, calls atomic.Int64
	var stopped atomic.Bool
	got := 0
	for v := range MapSeq(countingSeq(n, &pulled, &stopped), func(v int) int { calls.Add(1); return v }, WithPool(p), WithGrain(16)) {
		if v != got {
			t.Fatalf("got %d at position %d", v, got)
		}
		got++
		if got == 100 {
			break
		}
	}
	if !stopped.Load() {
		t.Fatal("the input sequence was not stopped after break")
	}
	// At most the batches in flight or waiting to be yielded were pulled: 4 per worker
	// of 16 elements, beyond the batches already yielded.
	if p := pulled.Load(); p > 100+16*(seqInflightPer*2+1) {
		t.Fatalf("%d elements pulled for 100 consumed", p)
	}
	c := calls.Load()
	// After MapSeq's loop returns, no worker may still run f.
	for range 3 {
		if calls.Load() != c {
			t.Fatal("f still running after the loop ended")
		}
	}
}

func TestSeqPanicsStopAndReraise(t *testing.T) {
	var pulled atomic.Int64
	var stopped atomic.Bool
	wantPanic(t, "seq boom", func() {
		ForEachSeq(countingSeq(1<<20, &pulled, &stopped), func(v int) {
			if v == 500 {
				panic("seq boom")
			}
		}, WithGrain(8))
	})
	if !stopped.Load() || pulled.Load() >= 1<<20 {
		t.Fatalf("ForEachSeq kept pulling after a panic (%d pulled)", pulled.Load())
	}
	pulled.Store(0)
	stopped.Store(false)
	wantPanic(t, "map boom", func() {
		for range MapSeq(countingSeq(1<<20, &pulled, &stopped), func(v int) int {
			if v == 700 {
				panic("map boom")
			}
			return v
		}, WithGrain(8)) {
		}
	})
	if !stopped.Load() || pulled.Load() >= 1<<20 {
		t.Fatalf("MapSeq kept pulling after a panic (%d pulled)", pulled.Load())
	}
	// A sequence that panics on the caller's goroutine: the panic keeps its own value and
	// the consumers are stopped and waited for before it leaves ForEachSeq or MapSeq.
	panicky := func(yield func(int) bool) {
		for i := range 10_000 {
			if i == 3000 {
				panic("seq itself panicked")
			}
			if !yield(i) {
				return
			}
		}
	}
	wantPanic(t, "seq itself panicked", func() { ForEachSeq(panicky, func(int) {}, WithGrain(8)) })
	wantPanic(t, "seq itself panicked", func() {
		for range MapSeq(panicky, func(v int) int { return v }, WithGrain(8)) {
		}
	})
	var after atomic.Int64
	ForEachSeq(slices.Values([]int{1, 2, 3}), func(v int) { after.Add(int64(v)) })
	if after.Load() != 6 {
		t.Fatal("ForEachSeq after a panicking sequence")
	}
	wantPanic(t, "ForEachSeq: seq is nil", func() { ForEachSeq[int](nil, func(int) {}) })
	wantPanic(t, "MapSeq: f is nil", func() { MapSeq[int, int](slices.Values([]int{1}), nil) })
}
