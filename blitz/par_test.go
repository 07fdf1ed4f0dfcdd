package blitz

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestForCoversEachIndexOnce(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		hits := make([]atomic.Int32, n)
		For(n, func(lo, hi int) {
			if lo < 0 || hi > n || lo >= hi {
				t.Errorf("bad range [%d, %d) of %d", lo, hi, n)
				return
			}
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
		}, opts...)
		for i := range hits {
			if h := hits[i].Load(); h != 1 {
				t.Fatalf("index %d visited %d times", i, h)
			}
		}
	})
}

func TestForGrainBoundsLeaves(t *testing.T) {
	for _, grain := range []int{1, 7, 100} {
		var mu sync.Mutex
		covered := 0
		ForGrain(1000, grain, func(lo, hi int) {
			if hi-lo > grain {
				t.Errorf("leaf [%d,%d) longer than grain %d", lo, hi, grain)
			}
			mu.Lock()
			covered += hi - lo
			mu.Unlock()
		})
		if covered != 1000 {
			t.Fatalf("grain %d: covered %d of 1000", grain, covered)
		}
	}
	wantPanic(t, "grain 0 < 1", func() { ForGrain(10, 0, func(lo, hi int) {}) })
}

func TestForUntilStopsWork(t *testing.T) {
	p, err := NewPool(Config{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n, grain = 1 << 16, 16 // 4096 leaves
	var leaves, afterHit atomic.Int64
	var first atomic.Bool
	stopped := ForUntil(n, func(lo, hi int, s Stop) {
		leaves.Add(1)
		if s.Stopped() {
			afterHit.Add(1) // started although the flag was already set
		}
		if first.CompareAndSwap(false, true) {
			s.Stop() // the first leaf to run finds what the loop looks for
		}
	}, WithPool(p), WithGrain(grain))
	if !stopped {
		t.Fatal("ForUntil reported no stop")
	}
	// Every goroutine running leaves (the workers and the caller) checks the flag before
	// each leaf, so besides the leaf that stopped the loop each can have started at most
	// the one leaf it had already checked: no scheduling makes more leaves run.
	limit := int64(p.NumWorkers() + 1)
	if a := afterHit.Load(); a > limit {
		t.Fatalf("%d leaves started after the hit (workers %d)", a, p.NumWorkers())
	}
	if l := leaves.Load(); l == n/grain {
		t.Logf("note: all %d leaves had started before the stop was seen (heavily loaded machine)", l)
	}
	if ForUntil(1000, func(lo, hi int, s Stop) {}, WithGrain(10)) {
		t.Fatal("ForUntil without Stop reported stopped")
	}
}

func TestReduceMatchesSequential(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := randInts(1, n, 1000)
		var want int64 = 7
		for _, v := range s {
			want += v
		}
		got := Reduce(n, int64(7), func(lo, hi int) int64 {
			var acc int64
			for _, v := range s[lo:hi] {
				acc += v
			}
			return acc
		}, func(a, b int64) int64 { return a + b }, opts...)
		if n == 0 {
			want = 7 // identity
		} else {
			want -= 7
		}
		if got != want {
			t.Fatalf("Reduce = %d, want %d", got, want)
		}
		// Order: concatenating ranges must give the identity permutation.
		order := Reduce(n, []int(nil), func(lo, hi int) []int {
			r := make([]int, 0, hi-lo)
			for i := lo; i < hi; i++ {
				r = append(r, i)
			}
			return r
		}, func(a, b []int) []int { return append(a, b...) }, opts...)
		for i, v := range order {
			if v != i {
				t.Fatalf("combine out of order at %d: %d", i, v)
			}
		}
		if len(order) != n {
			t.Fatalf("len %d, want %d", len(order), n)
		}
		// MapReduce keeps index order: collecting the mapped values must give the
		// sequential map.
		mr := MapReduce(s, []int64(nil), func(v int64) []int64 { return []int64{v % 10} }, func(a, b []int64) []int64 { return append(a, b...) }, opts...)
		if len(mr) != n {
			t.Fatalf("MapReduce collected %d of %d", len(mr), n)
		}
		for i, v := range s {
			if mr[i] != v%10 {
				t.Fatalf("MapReduce out of order at %d", i)
			}
		}
		ch := MapReduceChunked(s, int64(0), func(c []int64) int64 {
			var acc int64
			for _, v := range c {
				acc += v
			}
			return acc
		}, func(a, b int64) int64 { return a + b }, opts...)
		if n > 0 && ch != want {
			t.Fatalf("MapReduceChunked = %d, want %d", ch, want)
		}
	})
}

var errTest = errors.New("test error")

func TestTryStopsAtFirstError(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		s := randInts(2, n, 100)
		var visited atomic.Int64
		err := TryForEach(s, func(v int64) error { visited.Add(1); return nil }, opts...)
		if err != nil || visited.Load() != int64(n) {
			t.Fatalf("TryForEach without errors: err %v, visited %d of %d", err, visited.Load(), n)
		}
		if n == 0 {
			return
		}
		bad := n / 2
		err = TryFor(n, func(lo, hi int) error {
			if lo <= bad && bad < hi {
				return fmt.Errorf("index %d: %w", bad, errTest)
			}
			return nil
		}, opts...)
		if !errors.Is(err, errTest) {
			t.Fatalf("TryFor err = %v", err)
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		err = TryForEach(idx, func(i int) error {
			if i == bad {
				return errTest
			}
			return nil
		}, opts...)
		if !errors.Is(err, errTest) {
			t.Fatalf("TryForEach err = %v", err)
		}
		sum, err := TryReduce(n, 0, func(lo, hi int) (int, error) { return hi - lo, nil }, func(a, b int) int { return a + b }, opts...)
		if err != nil || sum != n {
			t.Fatalf("TryReduce = %d, %v; want %d", sum, err, n)
		}
		_, err = TryReduce(n, 0, func(lo, hi int) (int, error) {
			if lo <= bad && bad < hi {
				return 0, errTest
			}
			return hi - lo, nil
		}, func(a, b int) int { return a + b }, opts...)
		if !errors.Is(err, errTest) {
			t.Fatalf("TryReduce err = %v", err)
		}
	})
}

func TestTryForContext(t *testing.T) {
	forCases(t, func(t *testing.T, n int, opts []Option) {
		var covered atomic.Int64
		err := TryForContext(context.Background(), n, func(ctx context.Context, lo, hi int) error {
			covered.Add(int64(hi - lo))
			return nil
		}, opts...)
		if err != nil || covered.Load() != int64(n) {
			t.Fatalf("err %v, covered %d of %d", err, covered.Load(), n)
		}
		if n == 0 {
			return
		}
		err = TryForContext(context.Background(), n, func(ctx context.Context, lo, hi int) error {
			if lo == 0 {
				return errTest
			}
			return nil
		}, opts...)
		if !errors.Is(err, errTest) {
			t.Fatalf("err = %v, want errTest", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		called := false
		if err := TryForContext(ctx, n, func(context.Context, int, int) error { called = true; return nil }, opts...); !errors.Is(err, context.Canceled) || called {
			t.Fatalf("pre-cancelled: err %v, body called %v", err, called)
		}
	})
	// Cancelling the parent stops new leaves: the leaf that cancels is the first to run,
	// so at most one leaf per goroutine can start after it.
	p, err := NewPool(Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var afterCancel atomic.Int64
	var first atomic.Bool
	err = TryForContext(ctx, 1<<14, func(lctx context.Context, lo, hi int) error {
		if lctx.Err() != nil {
			afterCancel.Add(1) // began although the context was already cancelled
		}
		if first.CompareAndSwap(false, true) {
			cancel()
			<-lctx.Done() // the leaf's context follows the parent
		}
		return nil
	}, WithPool(p), WithGrain(4))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// Every leaf checks the context before it begins: only a leaf whose goroutine had
	// passed that check when cancel ran can begin after it, one per goroutine.
	if a := afterCancel.Load(); a > int64(p.NumWorkers()+1) {
		t.Fatalf("%d leaves began after the context was cancelled", a)
	}
}

func TestTryForEachStopsRemainingWork(t *testing.T) {
	p, err := NewPool(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 1 << 16
	s := make([]int, n)
	var calls, afterErr atomic.Int64
	var errored atomic.Bool
	err = TryForEach(s, func(int) error {
		if errored.Load() {
			afterErr.Add(1)
		}
		if calls.Add(1) == 10 {
			errored.Store(true)
			return errTest
		}
		return nil
	}, WithPool(p), WithGrain(32))
	if !errors.Is(err, errTest) {
		t.Fatalf("err = %v", err)
	}
	// Leaves check the stop flag before every element. The flag is set a few
	// instructions after errored, so a call can begin after the error only in that
	// window or if its goroutine had passed the check already: a handful per goroutine
	// at most, never the rest of the slice.
	if a := afterErr.Load(); a > 4*int64(p.NumWorkers()+1) {
		t.Fatalf("%d calls began after the error (%d calls in all)", a, calls.Load())
	}
}

func TestPanicStopsWorkAndReraises(t *testing.T) {
	p, err := NewPool(Config{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n, grain = 1 << 16, 16
	var first atomic.Bool
	r := func() (r any) {
		defer func() { r = recover() }()
		For(n, func(lo, hi int) {
			if first.CompareAndSwap(false, true) {
				panic("boom in the first leaf")
			}
		}, WithPool(p), WithGrain(grain))
		return nil
	}()
	var pe *PanicError
	if e, ok := r.(error); !ok || !errors.As(e, &pe) || pe.Value != "boom in the first leaf" {
		t.Fatalf("recovered %v (%T), want *PanicError with the leaf's value", r, r)
	}
	if len(pe.Stack) == 0 || !strings.Contains(string(pe.Stack), "TestPanicStopsWorkAndReraises") {
		t.Fatalf("PanicError stack does not show the panicking leaf:\n%s", pe.Stack)
	}
	// The fuse is the loop's stop flag, which ForUntil's leaves can observe: a panic in
	// one leaf sets it before unwinding, and every leaf that begins after it is counted.
	// Each goroutine can begin at most the one leaf it had already checked the flag for.
	var afterFuse atomic.Int64
	first.Store(false)
	func() {
		defer func() { recover() }()
		ForUntil(n, func(lo, hi int, s Stop) {
			if s.Stopped() {
				afterFuse.Add(1)
			}
			if first.CompareAndSwap(false, true) {
				panic("boom")
			}
		}, WithPool(p), WithGrain(grain))
	}()
	if a := afterFuse.Load(); a > int64(p.NumWorkers()+1) {
		t.Fatalf("%d leaves began after the panic fuse was set", a)
	}
	// A panic in a reduction's combine is re-raised too.
	wantPanic(t, "combine boom", func() {
		Reduce(1000, 0, func(lo, hi int) int { return 1 }, func(a, b int) int { panic("combine boom") }, WithPool(p), WithGrain(10))
	})
}

func TestNilFunctionsPanicWithName(t *testing.T) {
	wantPanic(t, "For: body is nil", func() { For(10, nil) })
	wantPanic(t, "Reduce: combine is nil", func() { Reduce[int](10, 0, func(lo, hi int) int { return 0 }, nil) })
	wantPanic(t, "MapReduce: mapFn is nil", func() { MapReduce[int, int]([]int{1}, 0, nil, func(a, b int) int { return a }) })
	wantPanic(t, "TryForEach: f is nil", func() { TryForEach[int](nil, nil) })
	wantPanic(t, "ForUntil: body is nil", func() { ForUntil(1, nil) })
	wantPanic(t, "WithGrain: grain -1 < 1", func() { WithGrain(-1) })
}

func TestNestedCallsDoNotDeadlock(t *testing.T) {
	s := randInts(3, 5000, 10)
	var total atomic.Int64
	For(100, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			total.Add(Sum(s[:i*50], WithGrain(64)))
		}
	}, WithGrain(1))
	var want int64
	for i := range 100 {
		for _, v := range s[:i*50] {
			want += v
		}
	}
	if total.Load() != want {
		t.Fatalf("nested sums = %d, want %d", total.Load(), want)
	}
}

func TestOptionsDoNotAllocate(t *testing.T) {
	s := make([]int64, 100)
	p := Default()
	allocs := testing.AllocsPerRun(100, func() { Sum(s, WithPool(p), WithGrain(1000)) })
	if allocs != 0 {
		t.Fatalf("sequential Sum with options allocates %v times", allocs)
	}
}
