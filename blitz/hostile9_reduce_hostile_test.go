package blitz

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// A hostile user of the reductions, after their fork-join tree moved from Join2's
// closures to Jobs (par_options.go, reduceRun): order and coverage of every form, lengths
// near math.MaxInt, calls from inside pool work and other pools, and the pool's state
// after panics and Goexits that skipped joins.

// h9Span is a partial result that knows what it covers: the half-open range [lo, hi),
// or nothing (empty, the identity). h9Cat concatenates two spans and records an error
// when they are not adjacent: a combine out of index order, a leaf counted twice or a
// range skipped.
type h9Span struct {
	lo, hi int
	empty  bool
}

var h9None = h9Span{empty: true}

type h9Order struct {
	mu   sync.Mutex
	errs []string
}

func (o *h9Order) cat(a, b h9Span) h9Span {
	switch {
	case a.empty:
		return b
	case b.empty:
		return a
	case a.hi != b.lo:
		o.mu.Lock()
		if len(o.errs) < 5 {
			o.errs = append(o.errs, fmt.Sprintf("combine(%v, %v): not adjacent", a, b))
		}
		o.mu.Unlock()
	}
	return h9Span{a.lo, b.hi, false}
}

func (o *h9Order) check(t *testing.T, name string, got h9Span, n int) {
	t.Helper()
	want := h9Span{0, n, false}
	if n == 0 {
		want = h9None
	}
	if got != want {
		t.Errorf("%s: result %v, want %v", name, got, want)
	}
	for _, e := range o.errs {
		t.Errorf("%s: %s", name, e)
	}
}

// h9Forms runs every reduction of the package over [0, n) (elements s[i] = i), folding
// spans with o.cat, each leaf's value being the span of the elements it folded.
func h9Forms(o *h9Order, n int, opts []Option) map[string]func() h9Span {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	one := func(i int) h9Span { return h9Span{i, i + 1, false} }
	none := func() h9Span { return h9None }
	third := n / 3
	return map[string]func() h9Span{
		"Reduce": func() h9Span {
			return Reduce(n, h9None, func(lo, hi int) h9Span { return h9Span{lo, hi, false} }, o.cat, opts...)
		},
		"TryReduce": func() h9Span {
			r, err := TryReduce(n, h9None, func(lo, hi int) (h9Span, error) { return h9Span{lo, hi, false}, nil }, o.cat, opts...)
			if err != nil {
				panic(err)
			}
			return r
		},
		"MapReduce":     func() h9Span { return MapReduce(idx, h9None, one, o.cat, opts...) },
		"MapReduceFunc": func() h9Span { return MapReduceFunc(idx, none, one, o.cat, opts...) },
		"MapReduceChunked": func() h9Span {
			return MapReduceChunked(idx, h9None, func(c []int) h9Span { return h9Span{c[0], c[0] + len(c), false} }, o.cat, opts...)
		},
		"ReduceChunks/1": func() h9Span {
			return ReduceChunks(Chunks(idx, 1), h9None, func(i int, c []int) h9Span { return one(c[0]) }, o.cat, opts...)
		},
		"ReduceChunks/3": func() h9Span {
			// Chunk i covers chunks, not elements: map it back to its elements.
			return ReduceChunks(Chunks(idx, 3), h9None, func(i int, c []int) h9Span { return h9Span{c[0], c[0] + len(c), false} }, o.cat, opts...)
		},
		"ZipMapReduce": func() h9Span {
			return ZipMapReduce(Zip(idx, idx), h9None, func(a, _ int) h9Span { return one(a) }, o.cat, opts...)
		},
		"ZipMapReduceFunc": func() h9Span {
			return ZipMapReduceFunc(Zip(idx, idx), none, func(a, _ int) h9Span { return one(a) }, o.cat, opts...)
		},
		"ChainMapReduce": func() h9Span {
			return ChainMapReduce(Chain(idx[:third], idx[third:]), h9None, one, o.cat, opts...)
		},
		"ChainMapReduceFunc": func() h9Span {
			return ChainMapReduceFunc(Chain(idx[:third], idx[third:]), none, one, o.cat, opts...)
		},
		"RangeReduce": func() h9Span {
			// An offset range: leaf [lo, hi) of the reduction covers [base+lo, base+hi).
			const base = math.MinInt + 7
			r := RangeReduce(Range(base, base+n), h9None, func(i int) h9Span { return one(i - base) }, o.cat, opts...)
			return r
		},
		"RangeReduceFunc": func() h9Span {
			return RangeReduceFunc(Range(0, n), none, one, o.cat, opts...)
		},
	}
}

// TestHostile9ReduceOrderEveryForm: every reduction folds its leaves in index order and
// covers each index exactly once, whatever the pool size and the grain, so combine need
// only be associative.
func TestHostile9ReduceOrderEveryForm(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		p := newPool(t, Config{Workers: workers})
		for _, n := range []int{0, 1, 2, 5, 1000, 4099} {
			for _, g := range []int{1, 3, 7, 1000} {
				runWithWatchdog(t, fmt.Sprintf("workers=%d n=%d grain=%d", workers, n, g), func() {
					o := &h9Order{}
					for name, run := range h9Forms(o, n, []Option{WithPool(p), WithGrain(g)}) {
						o.errs = nil
						o.check(t, fmt.Sprintf("%s workers=%d n=%d grain=%d", name, workers, n, g), run(), n)
					}
				})
			}
		}
	}
}

// TestHostile9ReduceIdentityNotNeutral: an identity that is not neutral is copied into
// every leaf, so the result counts the leaves; the leaves depend on n and the grain
// only (halving down to the grain), not on the pool size or on who ran what.
func TestHostile9ReduceIdentityNotNeutral(t *testing.T) {
	var leaves func(n, g int) int
	leaves = func(n, g int) int {
		if n <= g {
			return 1
		}
		return leaves(n/2, g) + leaves(n-n/2, g)
	}
	s := make([]int, 10_000)
	for _, workers := range []int{1, 2, 3} {
		p := newPool(t, Config{Workers: workers})
		for _, g := range []int{1, 9, 64, 5000} {
			for range 3 {
				got := MapReduce(s, 1, func(int) int { return 0 }, func(a, b int) int { return a + b }, WithPool(p), WithGrain(g))
				if want := leaves(len(s), g); got != want {
					t.Fatalf("workers=%d grain=%d: MapReduce with identity 1 = %d, want one per leaf, %d", workers, g, got, want)
				}
			}
		}
	}
}

// TestHostile9ReduceHugeLengths: reductions, loops and searches over lengths near
// math.MaxInt (ranges handed whole to the leaves, and zero-size elements) split without
// overflow, cover everything once, and return.
func TestHostile9ReduceHugeLengths(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	const n = math.MaxInt
	count := func(lo, hi int) int { return hi - lo }
	add := func(a, b int) int { return a + b }
	for _, g := range []int{0, n / 3, n/2 + 1, n - 1, n} {
		opts := []Option{WithPool(p)}
		if g > 0 {
			opts = append(opts, WithGrain(g))
		}
		name := fmt.Sprintf("grain=%d", g)
		runWithWatchdog(t, name, func() {
			if got := Reduce(n, 0, count, add, opts...); got != n {
				t.Errorf("%s: Reduce(MaxInt) covered %d indices", name, got)
			}
			if got, err := TryReduce(n, 0, func(lo, hi int) (int, error) { return hi - lo, nil }, add, opts...); got != n || err != nil {
				t.Errorf("%s: TryReduce(MaxInt) = %d, %v", name, got, err)
			}
			var covered atomic.Int64
			For(n, func(lo, hi int) { covered.Add(int64(hi - lo)) }, opts...)
			if covered.Load() != n {
				t.Errorf("%s: For(MaxInt) covered %d indices", name, covered.Load())
			}
			errStop := errors.New("stop")
			if err := TryFor(n, func(lo, hi int) error { return errStop }, opts...); err != errStop {
				t.Errorf("%s: TryFor(MaxInt) = %v", name, err)
			}
			if !ForUntil(n, func(lo, hi int, s Stop) { s.Stop() }, opts...) {
				t.Errorf("%s: ForUntil(MaxInt) not stopped", name)
			}
		})
	}
	// Zero-size elements: a slice of math.MaxInt of them.
	s := make([]struct{}, n)
	yes := func(struct{}) bool { return true }
	runWithWatchdog(t, "zero-size elements", func() {
		if _, i, ok := FindFirst(s, yes, WithPool(p)); i != 0 || !ok {
			t.Errorf("FindFirst = %d, %v", i, ok)
		}
		if _, i, ok := FindLast(s, yes, WithPool(p)); i != n-1 || !ok {
			t.Errorf("FindLast = %d, %v", i, ok)
		}
		if i := Index(s, struct{}{}, WithPool(p)); i != 0 {
			t.Errorf("Index = %d", i)
		}
		if i := LastIndex(s, struct{}{}, WithPool(p)); i != n-1 {
			t.Errorf("LastIndex = %d", i)
		}
		// Past the probe on the caller's goroutine: the tree itself searches, and the
		// first match any leaf finds ends the call.
		var calls atomic.Int64
		late := func(struct{}) bool { return calls.Add(1) > 50_000 }
		if !Any(s, late, WithPool(p)) {
			t.Errorf("Any: no match")
		}
		calls.Store(0)
		if _, i, ok := FindAny(s, late, WithPool(p), WithGrain(1<<20)); !ok || i < findProbe || i >= n {
			t.Errorf("FindAny = %d, %v", i, ok)
		}
		calls.Store(0)
		if All(s, func(v struct{}) bool { return !late(v) }, WithPool(p)) {
			t.Errorf("All: true, want false")
		}
		// Chunks of a huge size: two chunks, math.MaxInt-1 and 1 long.
		got := ReduceChunks(Chunks(s, n-1), []int(nil), func(i int, c []struct{}) []int { return []int{len(c)} },
			func(a, b []int) []int { return append(a, b...) }, WithPool(p), WithGrain(1))
		if len(got) != 2 || got[0] != n-1 || got[1] != 1 {
			t.Errorf("ReduceChunks(Chunks(MaxInt, MaxInt-1)) = %v", got)
		}
	})
}

// TestHostile9ReduceNested: reductions called from inside pool work: a Call's job, a
// leaf and a combine of another reduction (on the same pool and on another one), a Go
// job, a Scope task, and many goroutines at once on a one-worker pool. All must return
// the right value.
func TestHostile9ReduceNested(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	q := newPool(t, Config{Workers: 1})
	s := make([]int64, 100_000)
	var want int64
	for i := range s {
		s[i] = int64(i % 97)
		want += s[i]
	}
	sum := func(pool *Pool) int64 { return Sum(s, WithPool(pool), WithGrain(1000)) }
	mr := func(pool *Pool) int64 { return MapReduce(s, 0, h9Id64, h9Add64, WithPool(pool), WithGrain(500)) }
	check := func(name string, got int64) {
		if got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
	runWithWatchdog(t, "nested", func() {
		check("Sum in Call", Call(p, func(*Task) int64 { return sum(p) }))
		check("MapReduce in Call on another pool", Call(p, func(*Task) int64 { return mr(q) }))
		for _, inner := range []*Pool{p, q} {
			// A leaf of an outer reduction runs an inner one, on the same pool or another.
			got := Reduce(8, int64(0), func(lo, hi int) int64 {
				var r int64
				for range hi - lo {
					r += sum(inner)
				}
				return r
			}, h9Add64, WithPool(p), WithGrain(1))
			check("Reduce of Sums", got/8)
			// So does a combine.
			got = Reduce(8, int64(0), func(lo, hi int) int64 { return 0 }, func(a, b int64) int64 {
				return a + b + mr(inner)
			}, WithPool(p), WithGrain(1))
			check("combines running MapReduce", got/7)
		}
		done := make(chan int64)
		p.Go(func(*Task) { done <- sum(p) })
		check("Sum in a Go job", <-done)
		var inScope atomic.Int64
		p.Call(func(t *Task) {
			Scope(t, func(sp *Spawner) {
				for range 4 {
					sp.Spawn(func(*Task) { inScope.Add(mr(p)) })
				}
			})
		})
		check("MapReduce in Scope tasks", inScope.Load()/4)
		var wg sync.WaitGroup
		var bad atomic.Int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					if sum(q) != want || mr(q) != want {
						bad.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if bad.Load() != 0 {
			t.Errorf("%d concurrent reductions on a one-worker pool were wrong", bad.Load())
		}
	})
}

// TestHostile9ReduceFailuresLeavePoolClean: a panic or runtime.Goexit in a leaf or a
// combine skips the joins of the forks above it; the boundary that ran the work must
// take those forks back (or wait for their thieves), so that the pool's Tasks are left
// with no stale frame. After many failures at varying points, on the caller and on the
// workers, every reduction, loop and search must still return the right value, and a
// Join on the same Tasks must still work.
func TestHostile9ReduceFailuresLeavePoolClean(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	const n = 1 << 12
	runWithWatchdog(t, "failures", func() {
		for k := range 200 {
			fail := (k * 37) % n
			how := []string{"panic", "Goexit", "combine-panic"}[k%3]
			done := make(chan any)
			go func() {
				finished := false
				defer func() {
					r := recover()
					if !finished && r == nil {
						r = "goexit"
					}
					done <- r
				}()
				Reduce(n, 0, func(lo, hi int) int {
					if lo <= fail && fail < hi {
						switch how {
						case "panic":
							panic("h9 leaf")
						case "Goexit":
							runtime.Goexit()
						}
					}
					return hi - lo
				}, func(a, b int) int {
					if how == "combine-panic" && a+b >= 64 {
						panic("h9 combine")
					}
					return a + b
				}, WithPool(p), WithGrain(1+k%8))
				finished = true
			}()
			r := <-done
			if r == nil {
				t.Fatalf("round %d (%s at %d): the reduction returned normally", k, how, fail)
			}
			if s, ok := r.(string); ok && s == "goexit" {
				continue // Goexit on the caller's goroutine
			}
			var pe *PanicError
			if err, ok := r.(error); !ok || !errors.As(err, &pe) {
				t.Fatalf("round %d (%s): recovered %v (%T), want a *PanicError", k, how, r, r)
			}
			if v := fmt.Sprint(pe.Value); !strings.HasPrefix(v, "h9 ") && !errors.Is(pe, ErrGoexit) {
				t.Fatalf("round %d (%s): panic value %v", k, how, pe.Value)
			}
		}
		// The pool still works, through every engine.
		o := &h9Order{}
		for name, run := range h9Forms(o, n, []Option{WithPool(p), WithGrain(3)}) {
			o.errs = nil
			o.check(t, "after failures: "+name, run(), n)
		}
		var covered atomic.Int64
		For(n, func(lo, hi int) { covered.Add(int64(hi - lo)) }, WithPool(p), WithGrain(5))
		if covered.Load() != n {
			t.Errorf("after failures: For covered %d", covered.Load())
		}
		s := make([]int, n)
		s[n-5] = 1
		if i := Index(s, 1, WithPool(p), WithGrain(16)); i != n-5 {
			t.Errorf("after failures: Index = %d", i)
		}
		if f := Call(p, func(t *Task) int { return fib(t, 15) }); f != 610 {
			t.Errorf("after failures: fib(15) = %d", f)
		}
	})
}

// TestHostile9ReduceNilArguments: every reduction and search names its nil function at
// once, for empty and non-empty inputs alike, before looking at the pool.
func TestHostile9ReduceNilArguments(t *testing.T) {
	for _, s := range [][]int{nil, {1, 2, 3}} {
		n := len(s)
		calls := map[string]func(){
			"Reduce: mapRange":          func() { Reduce[int](n, 0, nil, h9Add) },
			"Reduce: combine":           func() { Reduce(n, 0, h9Leaf, nil) },
			"TryReduce: mapRange":       func() { TryReduce[int](n, 0, nil, h9Add) },
			"TryReduce: combine":        func() { TryReduce(n, 0, h9TryLeaf, nil) },
			"MapReduce: mapFn":          func() { MapReduce[int, int](s, 0, nil, h9Add) },
			"MapReduce: combine":        func() { MapReduce(s, 0, func(v int) int { return v }, nil) },
			"MapReduceFunc: identity":   func() { MapReduceFunc(s, nil, func(v int) int { return v }, h9Add) },
			"MapReduceChunked: combine": func() { MapReduceChunked(s, 0, func([]int) int { return 0 }, nil) },
			"ReduceChunks: f":           func() { ReduceChunks[int, int](Chunks(s, 1), 0, nil, h9Add) },
			"ZipMapReduce: f":           func() { ZipMapReduce[int, int, int](Zip(s, s), 0, nil, h9Add) },
			"ChainMapReduceFunc: f":     func() { ChainMapReduceFunc[int, int](Chain(s, s), func() int { return 0 }, nil, h9Add) },
			"RangeReduce: combine":      func() { RangeReduce(Range(0, n), 0, func(i int) int { return i }, nil) },
			"Count: pred":               func() { Count(s, nil) },
			"MinFunc: cmp":              func() { MinFunc(s, nil) },
			"MaxByKey: key":             func() { MaxByKey[int, int](s, nil) },
			"Any: pred":                 func() { Any(s, nil) },
			"All: pred":                 func() { All(s, nil) },
			"FindFirst: pred":           func() { FindFirst(s, nil) },
			"FindLast: pred":            func() { FindLast(s, nil) },
		}
		for want, call := range calls {
			wantPanic(t, want+" is nil", call)
		}
	}
}

// TestHostile9ReduceFailureInGoJob: a reduction run by a Pool.Go job, whose leaf on the
// job's own goroutine (a worker's) panics or calls runtime.Goexit: the worker goroutine
// is left (Goexit) or the panic reaches the PanicHandler, the leaves on the other
// goroutines stop, and the pool goes on working.
func TestHostile9ReduceFailureInGoJob(t *testing.T) {
	var handled atomic.Int64
	p := newPool(t, Config{Workers: 2, PanicHandler: func(*PanicError) { handled.Add(1) }})
	const n = 1 << 12
	runWithWatchdog(t, "failure in a Go job", func() {
		for k := range 20 {
			how := []string{"panic", "Goexit"}[k%2]
			var after atomic.Int64
			done := make(chan struct{})
			p.Go(func(*Task) {
				defer close(done)
				Reduce(n, 0, func(lo, hi int) int {
					if lo == 0 { // the first leaf runs on the job's goroutine
						if how == "panic" {
							panic("h9 leaf in a Go job")
						}
						runtime.Goexit()
					}
					return hi - lo
				}, func(a, b int) int { return a + b }, WithPool(p), WithGrain(1+k%4))
				after.Add(1)
			})
			<-done
			if after.Load() != 0 {
				t.Fatalf("round %d (%s): the Reduce returned normally", k, how)
			}
		}
		if got := Reduce(n, 0, h9Leaf, h9Add, WithPool(p), WithGrain(7)); got != n {
			t.Errorf("after failures in Go jobs: Reduce = %d, want %d", got, n)
		}
	})
	// Each panic went to the handler; Goexits do not.
	p.Close()
	if h := handled.Load(); h != 10 {
		t.Errorf("PanicHandler called %d times, want 10", h)
	}
}
