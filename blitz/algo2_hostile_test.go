package blitz

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// A hostile pass over the algorithms: sizes around every cut-off with the smallest grain,
// lying and panicking comparators, float specials, Goexit in user functions, nil and empty
// inputs, and the sequential paths against the parallel ones.

// algo2Sizes are the sizes around the sorts' cut-offs: the insertion sort (12), the
// ninther (50), the stable sort's blocks (24, 48), and a few larger (0 is in
// TestAlgo2NilAndEmpty).
var algo2Sizes = []int{1, 2, 3, 11, 12, 13, 23, 24, 25, 47, 48, 49, 50, 51, 97, 200, 1000}

// TestAlgo2SortCutoffsLying sorts at every size around the cut-offs with grain 1 (a task
// for every partition and merge that can fork) and with the automatic grain, with
// consistent and lying comparators: the result must be a permutation, and with a
// consistent comparator sorted (stable where promised).
func TestAlgo2SortCutoffsLying(t *testing.T) {
	p := newPool(t, Config{Workers: 4})
	for _, n := range algo2Sizes {
		for _, grain := range []int{1, 2, 0} {
			opts := []Option{WithPool(p)}
			if grain > 0 {
				opts = append(opts, WithGrain(grain))
			}
			for inName, in := range lyingInputs(uint64(n), n) {
				cmps := lyingComparators(0)
				cmps["honest"] = cmp.Compare[int]
				for cmpName, c := range cmps {
					name := fmt.Sprintf("n%d/g%d/%s/%s", n, grain, inName, cmpName)
					for sortName, sortFn := range map[string]func(s []int){
						"SortFunc":       func(s []int) { SortFunc(s, c, opts...) },
						"SortStableFunc": func(s []int) { SortStableFunc(s, c, opts...) },
						"SortByKey":      func(s []int) { SortByKey(s, func(x int) int { return c(x, n/2) }, opts...) },
						"SortByCachedKey": func(s []int) {
							SortByCachedKey(s, func(x int) int { return c(x, n/2) }, opts...)
						},
					} {
						got := slices.Clone(in)
						runWithWatchdog(t, name+"/"+sortName, func() { sortFn(got) })
						if !sameMultiset(got, in, identityKey[int]) {
							t.Fatalf("%s/%s: not a permutation of the input", name, sortName)
						}
						if cmpName == "honest" && sortName != "SortByKey" && sortName != "SortByCachedKey" && !slices.IsSorted(got) {
							t.Fatalf("%s/%s: an honest comparator left the slice unsorted", name, sortName)
						}
					}
				}
			}
		}
	}
}

// TestAlgo2SortFloatSpecials sorts floats with NaNs, signed zeros and infinities, at sizes
// on both sides of the parallel threshold, and compares with slices.Sort (which orders
// NaNs first, and -0 and +0 as equal).
func TestAlgo2SortFloatSpecials(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	specials := []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1),
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 5, 100, 40000, 70000} {
		for _, mix := range []string{"specials", "all-nan", "random"} {
			s := make([]float64, n)
			for i := range s {
				switch mix {
				case "specials":
					s[i] = specials[r.IntN(len(specials))]
				case "all-nan":
					s[i] = math.NaN()
				default:
					if r.IntN(10) == 0 {
						s[i] = specials[r.IntN(len(specials))]
					} else {
						s[i] = r.NormFloat64()
					}
				}
			}
			for _, grain := range []int{1, 0} {
				opts := []Option{WithPool(p)}
				if grain > 0 {
					opts = append(opts, WithGrain(grain))
				}
				name := fmt.Sprintf("n%d/%s/g%d", n, mix, grain)
				want := slices.Clone(s)
				slices.Sort(want)
				got := slices.Clone(s)
				Sort(got, opts...)
				if slices.CompareFunc(got, want, cmp.Compare[float64]) != 0 {
					t.Fatalf("%s: Sort differs from slices.Sort", name)
				}
				f32 := make([]float32, n)
				for i, v := range s {
					f32[i] = float32(v)
				}
				want32 := slices.Clone(f32)
				slices.Sort(want32)
				Sort(f32, opts...)
				if slices.CompareFunc(f32, want32, cmp.Compare[float32]) != 0 {
					t.Fatalf("%s: Sort[float32] differs from slices.Sort", name)
				}
				desc := slices.Clone(s)
				SortDesc(desc, opts...)
				slices.Reverse(desc)
				if slices.CompareFunc(desc, want, cmp.Compare[float64]) != 0 {
					t.Fatalf("%s: SortDesc is not the reverse of slices.Sort (NaNs last)", name)
				}
			}
		}
	}
}

// TestAlgo2TryReduceSequentialError checks that TryReduce returns the zero R with an
// error on the sequential path (small inputs) as on the parallel one, as documented.
func TestAlgo2TryReduceSequentialError(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	errX := errors.New("x")
	for _, n := range []int{1, 10, 100000} {
		for _, grain := range []int{1, 1 << 30} {
			v, err := TryReduce(n, 0, func(lo, hi int) (int, error) { return 5, errX },
				func(a, b int) int { return a + b }, WithPool(p), WithGrain(grain))
			if err != errX || v != 0 {
				t.Errorf("n=%d grain=%d: TryReduce = (%d, %v), want (0, %v)", n, grain, v, err, errX)
			}
		}
	}
}

// TestAlgo2GoexitInParallelLoops has user functions call runtime.Goexit on a pool worker
// inside the parallel loops: the caller must get a *PanicError wrapping ErrGoexit (or
// exit itself, when it ran the leaf), never hang, and the pool must keep working and close.
func TestAlgo2GoexitInParallelLoops(t *testing.T) {
	p, err := NewPool(Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	opts := []Option{WithPool(p), WithGrain(1)}
	s := make([]int, 64)
	for i := range s {
		s[i] = i
	}
	onCaller := func() bool { return !p.onStack() }
	calls := map[string]func(){
		"For": func() {
			For(64, func(lo, hi int) {
				if lo == 40 && !onCaller() {
					runtime.Goexit()
				}
			}, opts...)
		},
		"MapReduce": func() {
			MapReduce(s, 0, func(v int) int {
				if v == 40 && !onCaller() {
					runtime.Goexit()
				}
				return v
			}, func(a, b int) int { return a + b }, opts...)
		},
		"SortFunc": func() {
			in := slices.Clone(s)
			slices.Reverse(in)
			in[3], in[60] = in[60], in[3]
			var n atomic.Int64
			SortFunc(in, func(a, b int) int {
				if n.Add(1) == 30 && !onCaller() {
					runtime.Goexit()
				}
				return cmp.Compare(a, b)
			}, opts...)
		},
		// SortFunc's merge sort (forced: 64 elements would take pdqsort): its scratch
		// buffer goes back to the cache on the way out.
		"SortFunc/merge": func() {
			in := slices.Clone(s)
			slices.Reverse(in)
			in[3], in[60] = in[60], in[3]
			var n atomic.Int64
			withSortFuncPath(1, func() {
				SortFunc(in, func(a, b int) int {
					if n.Add(1) == 30 && !onCaller() {
						runtime.Goexit()
					}
					return cmp.Compare(a, b)
				}, opts...)
			})
		},
		"Filter": func() {
			Filter(s, func(v int) bool {
				if v == 40 && !onCaller() {
					runtime.Goexit()
				}
				return v%2 == 0
			}, opts...)
		},
	}
	for name, call := range calls {
		for round := range 5 {
			runWithWatchdog(t, fmt.Sprintf("%s/%d", name, round), func() {
				defer func() {
					r := recover()
					if r == nil {
						return // the leaf ran on the caller, or the Goexit was not reached
					}
					if pe, ok := r.(*PanicError); !ok || !errors.Is(pe, ErrGoexit) {
						panic(r)
					}
				}()
				call()
			})
		}
	}
	runWithWatchdog(t, "after", func() { nestedWork(p, 2) })
	runWithWatchdog(t, "Close", p.Close)
}

// TestAlgo2NilAndEmpty runs every slice function on nil and empty inputs, on the
// sequential and the parallel paths: no panic, the empty answers.
func TestAlgo2NilAndEmpty(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for _, opts := range [][]Option{nil, {WithPool(p), WithGrain(1)}} {
		for _, s := range [][]int{nil, {}} {
			id := func(v int) int { return v }
			add := func(a, b int) int { return a + b }
			pred := func(v int) bool { return v > 0 }
			ForEach(s, func(int) {}, opts...)
			ForEachIndex(s, func(int, *int) {}, opts...)
			if m := Map(s, id, opts...); len(m) != 0 {
				t.Errorf("Map(empty) = %v", m)
			}
			MapInto([]int{}, s, id, opts...)
			MapInPlace(s, id, opts...)
			Fill(s, 1, opts...)
			if f := Filter(s, pred, opts...); len(f) != 0 {
				t.Errorf("Filter(empty) = %v", f)
			}
			if y, n := Partition(s, pred, opts...); len(y)+len(n) != 0 {
				t.Errorf("Partition(empty) = %v, %v", y, n)
			}
			if f := FlatMap(s, func(v int) []int { return []int{v} }, opts...); len(f) != 0 {
				t.Errorf("FlatMap(empty) = %v", f)
			}
			if f := Flatten([][]int{s, s}, opts...); len(f) != 0 {
				t.Errorf("Flatten(empty) = %v", f)
			}
			Scatter(s, nil, s, opts...)
			if Sum(s, opts...) != 0 || Dot(s, s, opts...) != 0 || Count(s, pred, opts...) != 0 {
				t.Errorf("Sum/Dot/Count(empty) not 0")
			}
			if _, ok := Min(s, opts...); ok {
				t.Errorf("Min(empty) ok")
			}
			if _, ok := MaxFunc(s, cmp.Compare[int], opts...); ok {
				t.Errorf("MaxFunc(empty) ok")
			}
			if _, ok := MinByKey(s, id, opts...); ok {
				t.Errorf("MinByKey(empty) ok")
			}
			if Any(s, pred, opts...) || !All(s, pred, opts...) {
				t.Errorf("Any/All(empty) wrong")
			}
			if _, i, ok := FindFirst(s, pred, opts...); ok || i != -1 {
				t.Errorf("FindFirst(empty) found")
			}
			if _, i, ok := FindLast(s, pred, opts...); ok || i != -1 {
				t.Errorf("FindLast(empty) found")
			}
			if Index(s, 1, opts...) != -1 || LastIndex(s, 1, opts...) != -1 || IndexAny(s, 1, opts...) != -1 {
				t.Errorf("Index(empty) found")
			}
			if MapReduce(s, 7, id, add, opts...) != 7 || MapReduceChunked(s, 7, func([]int) int { return 0 }, add, opts...) != 7 {
				t.Errorf("MapReduce(empty) not identity")
			}
			if ReduceChunks(Chunks(s, 3), 7, func(int, []int) int { return 0 }, add, opts...) != 7 {
				t.Errorf("ReduceChunks(empty) not identity")
			}
			Sort(s, opts...)
			SortDesc(s, opts...)
			SortFunc(s, cmp.Compare[int], opts...)
			SortStableFunc(s, cmp.Compare[int], opts...)
			SortByKey(s, id, opts...)
			SortByCachedKey(s, id, opts...)
			if err := TryForEach(s, func(int) error { return errors.New("x") }, opts...); err != nil {
				t.Errorf("TryForEach(empty) = %v", err)
			}
			n := 0
			ForEachSeq(slices.Values(s), func(int) { n++ }, opts...)
			for range MapSeq(slices.Values(s), id, opts...) {
				n++
			}
			if n != 0 {
				t.Errorf("the Seq functions saw %d elements of an empty sequence", n)
			}
		}
	}
}

// TestAlgo2SortStableGrainOne sorts with WithGrain(1), where the parallel merge reaches
// runs of one element each: splitting such a merge made no progress and recursed until
// the stack overflowed (a fatal error, not a panic).
func TestAlgo2SortStableGrainOne(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for _, n := range []int{49, 50, 64, 100, 1000} {
		in := lyingInputs(uint64(n), n)["random"]
		for _, skew := range []int{-1, 1} {
			got := slices.Clone(in)
			withSkew(skew, func() {
				runWithWatchdog(t, fmt.Sprint(n), func() { SortStableFunc(got, cmp.Compare[int], WithPool(p), WithGrain(1)) })
			})
			if !slices.IsSorted(got) || !sameMultiset(got, in, identityKey[int]) {
				t.Fatalf("n=%d skew=%d: SortStableFunc with grain 1 is wrong", n, skew)
			}
		}
	}
}

// TestAlgo2TryForContextSmallAndLarge cancels the parent context inside the body, which
// ignores it and returns nil: small inputs (one leaf on the caller's goroutine) and large
// ones (leaves on the pool) must both report the cancellation. The small path returned
// nil.
func TestAlgo2TryForContextSmallAndLarge(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	for _, n := range []int{1, 100, 100000} {
		for _, grain := range []int{1 << 30, 1} {
			ctx, cancel := context.WithCancel(context.Background())
			var once sync.Once
			err := TryForContext(ctx, n, func(_ context.Context, lo, hi int) error {
				once.Do(cancel)
				return nil
			}, WithPool(p), WithGrain(grain))
			if !errors.Is(err, context.Canceled) {
				t.Errorf("n=%d grain=%d: TryForContext = %v, want context.Canceled", n, grain, err)
			}
			cancel()
		}
	}
}

// TestAlgo2SortsDuringClose runs every kind of sort on a pool that another goroutine
// closes at the same time: each sort either finishes sorted or panics with ErrClosed
// (refused as a whole), and leaves its slice a permutation of its input either way.
func TestAlgo2SortsDuringClose(t *testing.T) {
	n := 40000
	in := lyingInputs(3, n)["random"]
	strs := make([]string, n)
	for i, v := range in {
		strs[i] = fmt.Sprintf("%08d", v)
	}
	sorts := map[string]func(s []int, opts []Option){
		"Sort":            func(s []int, o []Option) { Sort(s, o...) },
		"SortDesc":        func(s []int, o []Option) { SortDesc(s, o...) },
		"SortFunc":        func(s []int, o []Option) { SortFunc(s, cmp.Compare[int], o...) },
		"SortStableFunc":  func(s []int, o []Option) { SortStableFunc(s, cmp.Compare[int], o...) },
		"SortByCachedKey": func(s []int, o []Option) { SortByCachedKey(s, func(v int) int { return -v }, o...) },
		"Sort[string]": func(s []int, o []Option) {
			ss := make([]string, len(s))
			for i, v := range s {
				ss[i] = strs[v]
			}
			Sort(ss, o...)
			for i, x := range ss {
				var v int
				fmt.Sscanf(x, "%d", &v)
				s[i] = v
			}
		},
	}
	for round := range 4 {
		for name, sortFn := range sorts {
			p, err := NewPool(Config{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(in)
			closed := make(chan struct{})
			go func() {
				for range round * 3 {
					runtime.Gosched()
				}
				p.Close()
				close(closed)
			}()
			runWithWatchdog(t, name, func() {
				defer func() {
					if r := recover(); r != nil {
						if err, ok := r.(error); !ok || !errors.Is(err, ErrClosed) {
							panic(r)
						}
					}
				}()
				sortFn(got, []Option{WithPool(p), WithGrain(256)})
			})
			runWithWatchdog(t, name+" Close", func() { <-closed })
			if !sameMultiset(got, in, identityKey[int]) {
				t.Fatalf("round %d %s: the slice is not a permutation of its input after a sort interrupted by Close", round, name)
			}
		}
	}
}

// TestAlgo2SelectGrains compares Filter, Partition, FlatMap, Count and the Find functions
// with their sequential definitions at sizes and grains around the 64-element words of
// the selection bitmap.
func TestAlgo2SelectGrains(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 63, 64, 65, 127, 128, 129, 1000, 4097} {
		s := make([]int, n)
		for i := range s {
			s[i] = r.IntN(10)
		}
		pred := func(v int) bool { return v < 3 }
		var wantYes, wantNo []int
		for _, v := range s {
			if pred(v) {
				wantYes = append(wantYes, v)
			} else {
				wantNo = append(wantNo, v)
			}
		}
		for _, grain := range []int{1, 2, 63, 64, 65, 1000} {
			opts := []Option{WithPool(p), WithGrain(grain)}
			name := fmt.Sprintf("n%d/g%d", n, grain)
			if got := Filter(s, pred, opts...); !slices.Equal(got, wantYes) {
				t.Fatalf("%s: Filter wrong", name)
			}
			yes, no := Partition(s, pred, opts...)
			if !slices.Equal(yes, wantYes) || !slices.Equal(no, wantNo) {
				t.Fatalf("%s: Partition wrong", name)
			}
			if got := Count(s, pred, opts...); got != len(wantYes) {
				t.Fatalf("%s: Count = %d, want %d", name, got, len(wantYes))
			}
			if got := FlatMap(s, func(v int) []int { return slices.Repeat([]int{v}, v%3) }, opts...); len(got) != Sum(Map(s, func(v int) int { return v % 3 }), opts...) {
				t.Fatalf("%s: FlatMap has %d elements", name, len(got))
			}
			first, last := slices.IndexFunc(s, pred), -1
			for i := n - 1; i >= 0; i-- {
				if pred(s[i]) {
					last = i
					break
				}
			}
			if _, i, _ := FindFirst(s, pred, opts...); i != first {
				t.Fatalf("%s: FindFirst = %d, want %d", name, i, first)
			}
			if _, i, _ := FindLast(s, pred, opts...); i != last {
				t.Fatalf("%s: FindLast = %d, want %d", name, i, last)
			}
			wantLast9 := -1
			for i, v := range s {
				if v == 9 {
					wantLast9 = i
				}
			}
			if i := LastIndex(s, 9, opts...); i != wantLast9 {
				t.Fatalf("%s: LastIndex = %d, want %d", name, i, wantLast9)
			}
		}
	}
}
