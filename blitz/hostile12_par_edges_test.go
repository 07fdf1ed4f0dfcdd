package blitz

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// h12GoexitOps are the operations whose element function calls runtime.Goexit on the
// element with value target (every element is visited: the predicates never match).
func h12GoexitOps(s []int, target int, live func(), opts []Option) map[string]func() {
	n := len(s)
	in := func(v int) {
		live()
		if v == target {
			runtime.Goexit()
		}
	}
	no := func(v int) bool { in(v); return false }
	yes := func(v int) bool { in(v); return true }
	id := func(v int) int { in(v); return v }
	add := func(a, b int) int { live(); return a + b }
	body := func(lo, hi int) {
		for _, v := range s[lo:hi] {
			in(v)
		}
	}
	rangeSum := func(lo, hi int) int { body(lo, hi); return hi - lo }
	return map[string]func(){
		"For":      func() { For(n, body, opts...) },
		"ForGrain": func() { ForGrain(n, 3, body, opts...) },
		"ForUntil": func() { ForUntil(n, func(lo, hi int, _ Stop) { body(lo, hi) }, opts...) },
		"Reduce":   func() { Reduce(n, 0, rangeSum, add, opts...) },
		"MapReduce": func() {
			MapReduce(s, 0, id, add, opts...)
		},
		"MapReduceFunc": func() {
			MapReduceFunc(s, func() int { live(); return 0 }, id, add, opts...)
		},
		"MapReduceChunked": func() {
			MapReduceChunked(s, 0, func(c []int) int {
				body(0, 0)
				for _, v := range c {
					in(v)
				}
				return 0
			}, add, opts...)
		},
		"TryFor":     func() { TryFor(n, func(lo, hi int) error { body(lo, hi); return nil }, opts...) },
		"TryForEach": func() { TryForEach(s, func(v int) error { in(v); return nil }, opts...) },
		"TryReduce": func() {
			TryReduce(n, 0, func(lo, hi int) (int, error) { return rangeSum(lo, hi), nil }, add, opts...)
		},
		"TryForContext": func() {
			TryForContext(context.Background(), n, func(_ context.Context, lo, hi int) error { body(lo, hi); return nil }, opts...)
		},
		"ForEach":      func() { ForEach(s, func(v int) { in(v) }, opts...) },
		"ForEachIndex": func() { ForEachIndex(slices.Clone(s), func(_ int, p *int) { in(*p) }, opts...) },
		"Map":          func() { Map(s, id, opts...) },
		"MapInto":      func() { MapInto(make([]int, n), s, id, opts...) },
		"MapInPlace":   func() { MapInPlace(slices.Clone(s), id, opts...) },
		"Filter":       func() { Filter(s, no, opts...) },
		"Partition":    func() { Partition(s, no, opts...) },
		"FlatMap":      func() { FlatMap(s, func(v int) []int { in(v); return nil }, opts...) },
		"Count":        func() { Count(s, no, opts...) },
		"Any":          func() { Any(s, no, opts...) },
		"All":          func() { All(s, yes, opts...) },
		"FindFirst":    func() { FindFirst(s, no, opts...) },
		"FindLast":     func() { FindLast(s, no, opts...) },
		"FindAny":      func() { FindAny(s, no, opts...) },
		"MinFunc": func() {
			MinFunc(s, func(a, b int) int { in(a); in(b); return 0 }, opts...)
		},
		"MaxByKey": func() { MaxByKey(s, id, opts...) },
		"Chunks":   func() { Chunks(s, 5).ForEach(func(_ int, c []int) { body(0, 0); ForEach(c, in, opts...) }, opts...) },
		"ReduceChunks": func() {
			ReduceChunks(Chunks(s, 5), 0, func(_ int, c []int) int {
				for _, v := range c {
					in(v)
				}
				return 0
			}, add, opts...)
		},
		"Zip":          func() { Zip(s, s).ForEach(func(_, a, _ int) { in(a) }, opts...) },
		"ZipMapReduce": func() { ZipMapReduce(Zip(s, s), 0, func(a, _ int) int { return id(a) }, add, opts...) },
		"Chain":        func() { Chain(s[:n/2], s[n/2:]).ForEach(func(_, v int) { in(v) }, opts...) },
		"ChainMapReduce": func() {
			ChainMapReduce(Chain(s[:n/2], s[n/2:]), 0, id, add, opts...)
		},
		"Range":       func() { Range(0, n).ForEach(func(i int) { in(s[i]) }, opts...) },
		"RangeReduce": func() { RangeReduce(Range(0, n), 0, func(i int) int { return id(s[i]) }, add, opts...) },
		"ForEachSeq":  func() { ForEachSeq(slices.Values(s), func(v int) { in(v) }, opts...) },
		"MapSeq": func() {
			for range MapSeq(slices.Values(s), id, opts...) {
			}
		},
	}
}

// TestHostile12ParGoexit: an element function that calls runtime.Goexit either ends the
// caller's goroutine (it ran there) or makes the call panic with an error wrapping
// ErrGoexit (it ran on a worker); no user function runs once the call is over, and the
// pool keeps working.
func TestHostile12ParGoexit(t *testing.T) {
	for _, w := range []int{1, 2} {
		for _, n := range []int{1, 64, 700} {
			p := newPool(t, Config{Workers: w})
			opts := []Option{WithPool(p), WithGrain(16)}
			s := make([]int, n)
			for i := range s {
				s[i] = i
			}
			var active atomic.Bool
			var late atomic.Int64
			live := func() {
				if !active.Load() {
					late.Add(1)
				}
			}
			for _, target := range []int{0, n / 2, n - 1} {
				ops := h12GoexitOps(s, target, live, opts)
				if n < 2 {
					delete(ops, "MinFunc") // one element: cmp is never called
				}
				names := slices.Sorted(func(yield func(string) bool) {
					for k := range ops {
						if !yield(k) {
							return
						}
					}
				})
				for _, name := range names {
					what := fmt.Sprintf("w%d/n%d/target%d/%s", w, n, target, name)
					active.Store(true)
					r, exited := goexitOutcome(t, what, ops[name])
					active.Store(false)
					if !exited {
						err, ok := r.(error)
						if !ok || !errors.Is(err, ErrGoexit) {
							t.Fatalf("%s: recovered %T %v, want an error wrapping ErrGoexit (or the goroutine to exit)", what, r, r)
						}
					}
					if k := late.Load(); k != 0 {
						t.Fatalf("%s: %d user function calls after the call was over", what, k)
					}
					if got := Sum(s, opts...); got != n*(n-1)/2 {
						t.Fatalf("%s: Sum after Goexit = %d", what, got)
					}
				}
			}
			checkPoolAlive(t, p, fmt.Sprintf("w%d/n%d", w, n))
			if k := late.Load(); k != 0 {
				t.Fatalf("w%d/n%d: %d user function calls after their call was over", w, n, k)
			}
		}
	}
}

// TestHostile12ParNilFuncs: every nil function panics at once, even on an empty input,
// with a message naming the function and the argument.
func TestHostile12ParNilFuncs(t *testing.T) {
	var s []int
	add := func(a, b int) int { return a + b }
	cases := []struct {
		want string
		f    func()
	}{
		{"blitz: For: body is nil", func() { For(0, nil) }},
		{"blitz: ForGrain: body is nil", func() { ForGrain(0, 1, nil) }},
		{"blitz: ForUntil: body is nil", func() { ForUntil(0, nil) }},
		{"blitz: Reduce: mapRange is nil", func() { Reduce(0, 0, nil, add) }},
		{"blitz: Reduce: combine is nil", func() { Reduce(0, 0, func(int, int) int { return 0 }, nil) }},
		{"blitz: MapReduce: mapFn is nil", func() { MapReduce(s, 0, nil, add) }},
		{"blitz: MapReduce: combine is nil", func() { MapReduce(s, 0, func(int) int { return 0 }, nil) }},
		{"blitz: MapReduceFunc: identity is nil", func() { MapReduceFunc(s, nil, func(int) int { return 0 }, add) }},
		{"blitz: MapReduceChunked: mapChunk is nil", func() { MapReduceChunked(s, 0, nil, add) }},
		{"blitz: TryFor: body is nil", func() { TryFor(0, nil) }},
		{"blitz: TryForEach: f is nil", func() { TryForEach(s, nil) }},
		{"blitz: TryReduce: mapRange is nil", func() { TryReduce[int](0, 0, nil, add) }},
		{"blitz: TryForContext: body is nil", func() { TryForContext(context.Background(), 0, nil) }},
		{"blitz: TryForContext: ctx is nil", func() {
			//lint:ignore SA1012 a nil context is the misuse under test
			TryForContext(nil, 0, func(context.Context, int, int) error { return nil })
		}},
		{"blitz: ForEach: f is nil", func() { ForEach(s, nil) }},
		{"blitz: ForEachIndex: f is nil", func() { ForEachIndex(s, nil) }},
		{"blitz: Map: f is nil", func() { Map[int, int](s, nil) }},
		{"blitz: MapInto: f is nil", func() { MapInto[int, int](nil, s, nil) }},
		{"blitz: MapInPlace: f is nil", func() { MapInPlace(s, nil) }},
		{"blitz: Filter: pred is nil", func() { Filter(s, nil) }},
		{"blitz: Partition: pred is nil", func() { Partition(s, nil) }},
		{"blitz: FlatMap: f is nil", func() { FlatMap[int, int](s, nil) }},
		{"blitz: MinFunc: cmp is nil", func() { MinFunc(s, nil) }},
		{"blitz: MaxFunc: cmp is nil", func() { MaxFunc(s, nil) }},
		{"blitz: MinByKey: key is nil", func() { MinByKey[int, int](s, nil) }},
		{"blitz: MaxByKey: key is nil", func() { MaxByKey[int, int](s, nil) }},
		{"blitz: Count: pred is nil", func() { Count(s, nil) }},
		{"blitz: Any: pred is nil", func() { Any(s, nil) }},
		{"blitz: All: pred is nil", func() { All(s, nil) }},
		{"blitz: FindAny: pred is nil", func() { FindAny(s, nil) }},
		{"blitz: FindFirst: pred is nil", func() { FindFirst(s, nil) }},
		{"blitz: FindLast: pred is nil", func() { FindLast(s, nil) }},
		{"blitz: Chunked.ForEach: f is nil", func() { Chunks(s, 1).ForEach(nil) }},
		{"blitz: ReduceChunks: f is nil", func() { ReduceChunks(Chunks(s, 1), 0, nil, add) }},
		{"blitz: Zipped.ForEach: f is nil", func() { Zip(s, s).ForEach(nil) }},
		{"blitz: ZipMapReduce: f is nil", func() { ZipMapReduce(Zip(s, s), 0, nil, add) }},
		{"blitz: ZipMapReduceFunc: identity is nil", func() {
			ZipMapReduceFunc(Zip(s, s), nil, func(a, b int) int { return 0 }, add)
		}},
		{"blitz: Chained.ForEach: f is nil", func() { Chain(s, s).ForEach(nil) }},
		{"blitz: ChainMapReduce: combine is nil", func() { ChainMapReduce(Chain(s, s), 0, func(int) int { return 0 }, nil) }},
		{"blitz: ChainMapReduceFunc: f is nil", func() { ChainMapReduceFunc[int, int](Chain(s, s), func() int { return 0 }, nil, add) }},
		{"blitz: IntRange.ForEach: f is nil", func() { Range(0, 0).ForEach(nil) }},
		{"blitz: RangeReduce: f is nil", func() { RangeReduce(Range(0, 0), 0, nil, add) }},
		{"blitz: RangeReduceFunc: identity is nil", func() { RangeReduceFunc(Range(0, 0), nil, func(int) int { return 0 }, add) }},
		{"blitz: ForEachSeq: seq is nil", func() { ForEachSeq(nil, func(int) {}) }},
		{"blitz: ForEachSeq: f is nil", func() { ForEachSeq(slices.Values(s), nil) }},
		{"blitz: MapSeq: seq is nil", func() { MapSeq[int, int](nil, func(int) int { return 0 }) }},
		{"blitz: MapSeq: f is nil", func() { MapSeq[int, int](slices.Values(s), nil) }},
		{"blitz: WithGrain: grain 0 < 1", func() { WithGrain(0) }},
		{"blitz: WithGrain: grain 0 < 1", func() { ForGrain(0, 0, func(int, int) {}) }},
		{"blitz: Chunks: size 0 < 1", func() { Chunks(s, 0) }},
		{"blitz: Chunked.Chunk: index 0 out of range [0, 0)", func() { Chunks(s, 2).Chunk(0) }},
		{"blitz: MapInto: len(dst) = 1 != len(s) = 0", func() { MapInto(make([]int, 1), s, func(v int) int { return v }) }},
		{"blitz: Dot: len(a) = 0 != len(b) = 1", func() { Dot(s, []int{1}) }},
		{"blitz: Zip: len(a) = 1 != len(b) = 0", func() { Zip([]int{1}, s) }},
		{"blitz: Scatter: len(values) = 1 != len(indices) = 0", func() { Scatter([]int{1}, nil, s) }},
	}
	for _, c := range cases {
		if msg := mustPanic(t, c.f); msg != c.want {
			t.Errorf("panic %q, want %q", msg, c.want)
		}
	}
}

// TestHostile12ParNilSlices: nil (and empty) inputs give the documented empty results and
// call no user function.
func TestHostile12ParNilSlices(t *testing.T) {
	var s []int
	var calls atomic.Int64
	f := func(v int) int { calls.Add(1); return v }
	p := func(int) bool { calls.Add(1); return true }
	add := func(a, b int) int { calls.Add(1); return a + b }
	for _, opts := range [][]Option{nil, {WithPool(nil)}, {WithGrain(1)}} {
		check := func(what string, ok bool) {
			t.Helper()
			if !ok {
				t.Errorf("opts %v: %s", opts, what)
			}
		}
		For(0, func(int, int) { calls.Add(1) }, opts...)
		For(-3, func(int, int) { calls.Add(1) }, opts...)
		check("ForUntil", !ForUntil(-1, func(int, int, Stop) { calls.Add(1) }, opts...))
		check("Reduce", Reduce(-2, 42, func(int, int) int { calls.Add(1); return 0 }, add, opts...) == 42)
		check("MapReduce", MapReduce(s, 7, f, add, opts...) == 7)
		check("MapReduceChunked", MapReduceChunked(s, 8, func([]int) int { calls.Add(1); return 0 }, add, opts...) == 8)
		check("TryFor", TryFor(0, func(int, int) error { calls.Add(1); return nil }, opts...) == nil)
		check("TryForEach", TryForEach(s, func(int) error { calls.Add(1); return nil }, opts...) == nil)
		r, err := TryReduce(0, 9, func(int, int) (int, error) { calls.Add(1); return 0, nil }, add, opts...)
		check("TryReduce", r == 9 && err == nil)
		check("TryForContext", TryForContext(context.Background(), 0, func(context.Context, int, int) error { calls.Add(1); return nil }, opts...) == nil)
		check("Map", Map(s, f, opts...) == nil)
		check("Map of empty non-nil", Map([]int{}, f, opts...) == nil)
		check("Filter", Filter(s, p, opts...) == nil)
		y, n := Partition(s, p, opts...)
		check("Partition", y == nil && n == nil)
		check("FlatMap", FlatMap(s, func(int) []int { calls.Add(1); return nil }, opts...) == nil)
		check("Flatten", Flatten[int](nil, opts...) == nil && Flatten([][]int{nil, {}}, opts...) == nil)
		check("Sum", Sum(s, opts...) == 0)
		check("Dot", Dot(s, nil, opts...) == 0)
		v, ok := Min(s, opts...)
		check("Min", v == 0 && !ok)
		v, ok = MaxFunc(s, func(a, b int) int { calls.Add(1); return 0 }, opts...)
		check("MaxFunc", v == 0 && !ok)
		v, ok = MinByKey(s, f, opts...)
		check("MinByKey", v == 0 && !ok)
		check("Count", Count(s, p, opts...) == 0)
		check("Any", !Any(s, p, opts...))
		check("All", All(s, p, opts...))
		v, i, ok := FindFirst(s, p, opts...)
		check("FindFirst", v == 0 && i == -1 && !ok)
		v, i, ok = FindLast(s, p, opts...)
		check("FindLast", v == 0 && i == -1 && !ok)
		check("Index", Index(s, 0, opts...) == -1 && IndexAny(s, 0, opts...) == -1 && LastIndex(s, 0, opts...) == -1)
		ForEach(s, func(int) { calls.Add(1) }, opts...)
		ForEachIndex(s, func(int, *int) { calls.Add(1) }, opts...)
		MapInto(nil, s, f, opts...)
		MapInPlace(s, f, opts...)
		Fill(s, 1, opts...)
		Scatter(s, nil, nil, opts...)
		check("Chunks", Chunks(s, 3).Len() == 0 && Chunked[int]{}.Len() == 0)
		Chunks(s, 3).ForEach(func(int, []int) { calls.Add(1) }, opts...)
		Chunked[int]{}.ForEach(func(int, []int) { calls.Add(1) }, opts...)
		check("ReduceChunks", ReduceChunks(Chunked[int]{}, 5, func(int, []int) int { calls.Add(1); return 0 }, add, opts...) == 5)
		var ids atomic.Int64
		id := func() int { ids.Add(1); return 11 }
		check("ZipMapReduceFunc", ZipMapReduceFunc(Zip(s, s), id, func(a, b int) int { calls.Add(1); return 0 }, add, opts...) == 11)
		check("ChainMapReduceFunc", ChainMapReduceFunc(Chain(s, nil), id, f, add, opts...) == 11)
		check("RangeReduceFunc", RangeReduceFunc(Range(3, -3), id, f, add, opts...) == 11)
		check("MapReduceFunc", MapReduceFunc(s, id, f, add, opts...) == 11)
		check("identity constructors called once each", ids.Load() == 4)
		Range(5, 5).ForEach(func(int) { calls.Add(1) }, opts...)
		IntRange{Lo: 5, Hi: 2}.ForEach(func(int) { calls.Add(1) }, opts...)
		ForEachSeq(slices.Values(s), func(int) { calls.Add(1) }, opts...)
		for range MapSeq(slices.Values(s), f, opts...) {
			t.Errorf("MapSeq of an empty sequence yielded")
		}
		if k := calls.Swap(0); k != 0 {
			t.Errorf("opts %v: %d user function calls on empty inputs", opts, k)
		}
	}
}

// TestHostile12ParSeqBridges compares ForEachSeq and MapSeq with ranging the same
// sequence sequentially: every element once, MapSeq in order, an early break that
// yields a prefix, stops the sequence and leaves no f running, re-iteration, a
// sequence that panics, and f using the same one-worker pool.
func TestHostile12ParSeqBridges(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	for _, n := range []int{0, 1, 2, 255, 256, 257, 3000} {
		for _, g := range []int{0, 1, 7, 1 << 40} {
			opts := []Option{WithPool(p)}
			if g > 0 {
				opts = append(opts, WithGrain(g))
			}
			what := fmt.Sprintf("n%d/g%d", n, g)
			bs := 256 // the default batch
			if g > 0 {
				bs = g
			}
			var pulled atomic.Int64
			var stopped atomic.Bool
			seq := countingSeq(n, &pulled, &stopped)
			want := slices.Collect(func(yield func(int) bool) {
				for v := range seq {
					if !yield(v * 3) {
						return
					}
				}
			})
			// ForEachSeq: every element once.
			vis := make([]atomic.Int32, n)
			within(t, 20*time.Second, what+" ForEachSeq", func() {
				ForEachSeq(seq, func(v int) { vis[v].Add(1) }, opts...)
			})
			for i := range vis {
				if k := vis[i].Load(); k != 1 {
					t.Fatalf("%s: ForEachSeq visited %d %d times", what, i, k)
				}
			}
			// MapSeq: in order, twice (the result is a sequence that can be ranged again).
			var active atomic.Bool
			var late atomic.Int64
			f := func(v int) int {
				if !active.Load() {
					late.Add(1)
				}
				return v * 3
			}
			ms := MapSeq(seq, f, opts...)
			for round := range 2 {
				var got []int
				active.Store(true)
				within(t, 20*time.Second, what+" MapSeq", func() { got = slices.Collect(ms) })
				active.Store(false)
				if !slices.Equal(got, want) {
					t.Fatalf("%s: MapSeq round %d = %v, want %v", what, round, got, want)
				}
			}
			// Early break: a prefix, the sequence stopped, no f after the loop.
			for _, brk := range []int{0, 1, n / 2, n - 1, n} {
				if brk < 0 || brk > n {
					continue
				}
				pulled.Store(0)
				stopped.Store(false)
				var got []int
				active.Store(true)
				within(t, 20*time.Second, what+" MapSeq break", func() {
					for v := range ms {
						// "keeping at most four batches per worker in flight": the
						// sequence is read at most that far ahead of the loop.
						if ahead := pulled.Load() - int64(len(got)); ahead > int64(4*p.NumWorkers()*bs) {
							t.Errorf("%s: %d elements pulled ahead of the loop, want at most %d", what, ahead, 4*p.NumWorkers()*bs)
						}
						if len(got) == brk {
							break
						}
						got = append(got, v)
					}
				})
				active.Store(false)
				if !slices.Equal(got, want[:brk]) {
					t.Fatalf("%s: break at %d: got %v", what, brk, got)
				}
				if pulled.Load() < int64(n) && !stopped.Load() {
					t.Fatalf("%s: break at %d: sequence pulled %d of %d and not stopped", what, brk, pulled.Load(), n)
				}
			}
			if k := late.Load(); k != 0 {
				t.Fatalf("%s: %d calls of f after the loop was over", what, k)
			}
		}
	}

	// A sequence that panics: the panic reaches the caller, and no f runs afterwards.
	for _, name := range []string{"ForEachSeq", "MapSeq"} {
		var active atomic.Bool
		var late atomic.Int64
		f := func(v int) int {
			if !active.Load() {
				late.Add(1)
			}
			return v
		}
		bad := func(yield func(int) bool) {
			for i := range 1000 {
				if i == 700 {
					panic("h12 seq panic")
				}
				if !yield(i) {
					return
				}
			}
		}
		active.Store(true)
		r := recoverRun(t, name, func() {
			if name == "ForEachSeq" {
				ForEachSeq(bad, func(v int) { f(v) }, WithPool(p), WithGrain(3))
			} else {
				for range MapSeq(bad, f, WithPool(p), WithGrain(3)) {
				}
			}
		})
		active.Store(false)
		if h11Unwrap(r) != "h12 seq panic" {
			t.Fatalf("%s with a panicking sequence: recovered %v", name, r)
		}
		if k := late.Load(); k != 0 {
			t.Fatalf("%s: %d calls of f after it returned", name, k)
		}
	}

	// f may use the same pool, even a one-worker one: no job of the bridges blocks.
	s := make([]int, 2000)
	for i := range s {
		s[i] = i % 13
	}
	want := Sum(s)
	var total atomic.Int64
	within(t, 20*time.Second, "nested bridges on a one-worker pool", func() {
		ForEachSeq(slices.Values([]int{0, 1, 2, 3, 4, 5, 6, 7}), func(int) {
			for v := range MapSeq(slices.Values(s), func(v int) int { return v }, WithPool(p), WithGrain(64)) {
				total.Add(int64(v))
			}
			For(len(s), func(lo, hi int) { total.Add(int64(Sum(s[lo:hi], WithPool(p)))) }, WithPool(p), WithGrain(100))
		}, WithPool(p), WithGrain(1))
		For(4, func(lo, hi int) {
			ForEachSeq(slices.Values(s), func(v int) { total.Add(int64(v)) }, WithPool(p), WithGrain(50))
		}, WithPool(p), WithGrain(1))
	})
	if got := total.Load(); got != int64(8*2*want+4*want) {
		t.Fatalf("nested bridges: total %d, want %d", got, 8*2*want+4*want)
	}
}

// TestHostile12ParWithPoolNil: WithPool(nil) is documented to mean the default pool (not
// a panic, unlike a nil *Pool given to a method), and later options override earlier ones.
func TestHostile12ParWithPoolNil(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	s := make([]int, 5000)
	for i := range s {
		s[i] = i
	}
	var seq iter.Seq[int] = slices.Values(s)
	want := len(s) * (len(s) - 1) / 2
	if got := Sum(s, WithPool(nil), WithGrain(7)); got != want {
		t.Fatalf("Sum with WithPool(nil) = %d, want %d", got, want)
	}
	// A nil pool after a real one leaves the real one in place ("later options override"
	// applies to what they set); the real one is then used and, once closed, refuses.
	p.Close()
	if msg := mustPanic(t, func() { Sum(s, WithPool(p), WithPool(nil), WithGrain(7)) }); msg != ErrClosed.Error() {
		t.Fatalf("Sum on a closed pool (then WithPool(nil)) panicked with %q, want ErrClosed", msg)
	}
	if got := Sum(s, WithPool(p), WithPool(Default())); got != want {
		t.Fatalf("Sum with a later WithPool(Default()) = %d, want %d", got, want)
	}
	var got atomic.Int64
	ForEachSeq(seq, func(v int) { got.Add(int64(v)) }, WithPool(nil))
	if got.Load() != int64(want) {
		t.Fatalf("ForEachSeq with WithPool(nil) = %d, want %d", got.Load(), want)
	}
}

// TestHostile12ParMapSeqClosedPool: "A closed pool makes the loop panic with ErrClosed":
// the loop, whatever the sequence (an empty one included, as ForEachSeq of an empty
// sequence does), and not the call that only builds the sequence.
func TestHostile12ParMapSeqClosedPool(t *testing.T) {
	p, err := NewPool(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := func(v int) int { return v }
	open := []iter.Seq[int]{
		MapSeq(slices.Values([]int{1, 2, 3}), id, WithPool(p)),
		MapSeq(slices.Values([]int(nil)), id, WithPool(p)),
	}
	p.Close()
	if ok, r := closedPanic(func() { ForEachSeq(slices.Values([]int(nil)), func(int) {}, WithPool(p)) }); !ok {
		t.Fatalf("ForEachSeq of an empty sequence on a closed pool: recovered %v, want ErrClosed", r)
	}
	var built iter.Seq[int]
	if r := h11Recover(func() { built = MapSeq(slices.Values([]int{1}), id, WithPool(p)) }); r != nil {
		t.Fatalf("MapSeq on a closed pool panicked before the loop: %v", r)
	}
	for i, ms := range append(open, built) {
		if ok, r := closedPanic(func() {
			for range ms {
				t.Errorf("sequence %d: a loop on a closed pool yielded", i)
			}
		}); !ok {
			t.Fatalf("sequence %d: loop on a closed pool recovered %v, want ErrClosed", i, r)
		}
	}
}
