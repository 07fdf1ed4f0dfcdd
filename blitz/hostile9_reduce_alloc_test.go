package blitz

import "testing"

// Allocations of the parallel reductions, searches and loops: the fork/join tree of a
// call must not allocate per fork. Each case runs one call over h9N elements split into
// leaves of a fixed grain, so the number of forks is known (leaves - 1); the test checks
// that the allocations of one call do not grow with the number of leaves, the benchmark
// reports them (and ns/op) beside an allocation count per fork.
//
// The user functions are package-level values, made once: a closure literal that
// captures variables at the call site would be the caller's allocation, not blitz's.

const h9N = 1 << 20

var (
	h9Ints    = h9MakeInts(h9N)
	h9Floats  = h9MakeFloats(h9N)
	h9Leaf    = func(lo, hi int) int { return hi - lo }
	h9TryLeaf = func(lo, hi int) (int, error) { return hi - lo, nil }
	h9Add     = func(a, b int) int { return a + b }
	h9Add64   = func(a, b int64) int64 { return a + b }
	h9Id64    = func(v int64) int64 { return v }
	h9Zero64  = func() int64 { return 0 }
	h9Cmp     = func(a, b int64) int {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	h9Key     = func(v int64) int64 { return v }
	h9Neg     = func(v int64) bool { return v < 0 }
	h9NonNeg  = func(v int64) bool { return v >= 0 }
	h9Chunk   = func(c []int64) int64 { return int64(len(c)) }
	h9ChunkI  = func(_ int, c []int64) int64 { return int64(len(c)) }
	h9Pair    = func(a, b int64) int64 { return a * b }
	h9RangeF  = func(i int) int64 { return int64(i) }
	h9ForBody = func(lo, hi int) {}
	h9Each    = func(int64) {}
)

func h9MakeInts(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i)
	}
	return s
}

func h9MakeFloats(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i % 1000)
	}
	return s
}

var h9SinkI int64

// h9Cases are the calls measured, each given its options (pool and grain).
var h9Cases = []struct {
	name string
	run  func(opts []Option)
}{
	{"Sum", func(o []Option) { h9SinkI = Sum(h9Ints, o...) }},
	{"SumFloat", func(o []Option) { h9SinkI = int64(Sum(h9Floats, o...)) }},
	{"Dot", func(o []Option) { h9SinkI = Dot(h9Ints, h9Ints, o...) }},
	{"Min", func(o []Option) { v, _ := Min(h9Ints, o...); h9SinkI = v }},
	{"Max", func(o []Option) { v, _ := Max(h9Ints, o...); h9SinkI = v }},
	{"Reduce", func(o []Option) { h9SinkI = int64(Reduce(h9N, 0, h9Leaf, h9Add, o...)) }},
	{"TryReduce", func(o []Option) { v, _ := TryReduce(h9N, 0, h9TryLeaf, h9Add, o...); h9SinkI = int64(v) }},
	{"MapReduce", func(o []Option) { h9SinkI = MapReduce(h9Ints, 0, h9Id64, h9Add64, o...) }},
	{"MapReduceFunc", func(o []Option) { h9SinkI = MapReduceFunc(h9Ints, h9Zero64, h9Id64, h9Add64, o...) }},
	{"MapReduceChunked", func(o []Option) { h9SinkI = MapReduceChunked(h9Ints, 0, h9Chunk, h9Add64, o...) }},
	{"ReduceChunks", func(o []Option) { h9SinkI = ReduceChunks(Chunks(h9Ints, 1), 0, h9ChunkI, h9Add64, o...) }},
	{"ZipMapReduce", func(o []Option) { h9SinkI = ZipMapReduce(Zip(h9Ints, h9Ints), 0, h9Pair, h9Add64, o...) }},
	{"ChainMapReduce", func(o []Option) {
		h9SinkI = ChainMapReduce(Chain(h9Ints[:h9N/2], h9Ints[h9N/2:]), 0, h9Id64, h9Add64, o...)
	}},
	{"RangeReduce", func(o []Option) { h9SinkI = RangeReduce(Range(0, h9N), 0, h9RangeF, h9Add64, o...) }},
	{"Count", func(o []Option) { h9SinkI = int64(Count(h9Ints, h9NonNeg, o...)) }},
	{"MinFunc", func(o []Option) { v, _ := MinFunc(h9Ints, h9Cmp, o...); h9SinkI = v }},
	{"MaxByKey", func(o []Option) { v, _ := MaxByKey(h9Ints, h9Key, o...); h9SinkI = v }},
	{"Any", func(o []Option) { h9SinkI = h9Bool(Any(h9Ints, h9Neg, o...)) }},
	{"All", func(o []Option) { h9SinkI = h9Bool(All(h9Ints, h9NonNeg, o...)) }},
	{"FindFirst", func(o []Option) { _, i, _ := FindFirst(h9Ints, h9Neg, o...); h9SinkI = int64(i) }},
	{"FindLast", func(o []Option) { _, i, _ := FindLast(h9Ints, h9Neg, o...); h9SinkI = int64(i) }},
	{"Index", func(o []Option) { h9SinkI = int64(Index(h9Ints, -1, o...)) }},
	{"For", func(o []Option) { For(h9N, h9ForBody, o...) }},
	{"ForEach", func(o []Option) { ForEach(h9Ints, h9Each, o...) }},
}

func h9Bool(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// BenchmarkHostile9Reduce reports ns/op and allocs/op of each case with 2 workers and
// 256 leaves (255 forks), and allocs/fork.
func BenchmarkHostile9Reduce(b *testing.B) {
	const grain = h9N / 256
	p := newPool(b, Config{Workers: 2})
	opts := []Option{WithPool(p), WithGrain(grain)}
	for _, c := range h9Cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.run(opts)
			}
			b.StopTimer()
			allocs := testing.AllocsPerRun(20, func() { c.run(opts) })
			b.ReportMetric(allocs/float64(h9N/grain-1), "allocs/fork")
		})
	}
}

// TestHostile9ReduceAllocsPerFork: the allocations of one call must not grow with the
// number of forks. Each case runs with 16 and with 1024 leaves on a 2-worker pool; with
// zero allocations per fork both counts are the same constant, the call's own: one for
// the state its leaves share (see forCall in par_options.go), one more for the closure
// around the user's function that ForEach passes to its loop. Before the fix a reduction
// made 3 allocations per fork (Join2's closures), a search 2 and a loop 1.
func TestHostile9ReduceAllocsPerFork(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	p := newPool(t, Config{Workers: 2})
	few := []Option{WithPool(p), WithGrain(h9N / 16)}
	many := []Option{WithPool(p), WithGrain(h9N / 1024)}
	for _, c := range h9Cases {
		t.Run(c.name, func(t *testing.T) {
			nFew := testing.AllocsPerRun(50, func() { c.run(few) })
			nMany := testing.AllocsPerRun(50, func() { c.run(many) })
			want := 1.0
			if c.name == "ForEach" {
				want = 2
			}
			// AllocsPerRun averages over the runs (and counts every goroutine's
			// allocations): a rare allocation elsewhere in the process (a frame slab
			// on a worker that reached a new depth) shows up as a fraction.
			if nMany-nFew > 1023.0/100 {
				t.Errorf("%s: %.1f allocs/op with 1024 leaves, %.1f with 16: %.2f allocations per extra fork, want 0",
					c.name, nMany, nFew, (nMany-nFew)/(1023-15))
			}
			if nMany > want+0.5 || nFew > want+0.5 {
				t.Errorf("%s: %.1f allocs/op with 16 leaves, %.1f with 1024, want %v", c.name, nFew, nMany, want)
			}
		})
	}
}
