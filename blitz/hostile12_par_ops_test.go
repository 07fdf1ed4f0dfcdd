package blitz

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Model-based differential testing of the parallel loops, reductions, searches, slice
// helpers, sources (Chunks, Zip, Chain, Range) and iter.Seq bridges: every operation is
// run on a pool and compared with a sequential model (a plain loop or package slices),
// with element functions derived from the input. Besides the results, every operation
// checks the documented side conditions: each index visited exactly once (at most once
// for the early-exit forms), leaves no larger than an explicit grain, folds in index
// order, a panicking element function re-raised with its value on the caller's
// goroutine, and no user function running once the call has returned.

// h12Boom is the panic value of the element functions in panic mode.
type h12Boom int

// h12Err is the error of the Try forms: the index of the element that failed.
type h12Err struct{ i int }

func (e *h12Err) Error() string { return fmt.Sprintf("h12: element %d failed", e.i) }

// h12Iv is an interval [lo, hi) of indices, folded by h12Acc's combine, which requires
// the left one to end where the right one starts: an associative, non-commutative
// operator whose result is [0, n) only if the fold visited every index once, in order.
type h12Iv struct {
	lo, hi int
	ok     bool
}

// h12Acc is the accumulator of the reductions: an interval and a (wrapping) sum.
type h12Acc struct {
	iv  h12Iv
	sum int
}

// h12Cfg is one decoded fuzz input: the pool, the grain and the slice.
type h12Cfg struct {
	workers int
	grain   int // explicit grain, 0 for the automatic one
	s       []int
}

// h12Op is one operation: which one, and two parameters its element functions derive from.
type h12Op struct{ code, a, b byte }

// h12Env runs the operations of one input on one pool.
type h12Env struct {
	t    *testing.T
	cfg  h12Cfg
	s    []int
	idx  []int // 0, 1, ..., n-1: searched instead of s where the visits are counted
	pool *Pool
	opts []Option
	name string // the operation running, for messages

	boom    bool // panic mode: the element functions panic on boomVal
	boomVal int
	first   int // first and last index of boomVal in s
	last    int

	active atomic.Bool  // a call is in progress: user functions may run
	late   atomic.Int64 // user functions that ran while no call was in progress

	badMu sync.Mutex
	bad   string // first violation recorded by a user function
}

func (e *h12Env) n() int { return len(e.s) }

// in is called first by every element function with the element's value.
func (e *h12Env) in(x int) {
	e.live()
	if e.boom && x == e.boomVal {
		panic(h12Boom(x))
	}
}

// live is called by every user function: one running outside a call is counted.
func (e *h12Env) live() {
	if !e.active.Load() {
		e.late.Add(1)
	}
}

// violate records a violation seen inside a user function (which must not call t).
func (e *h12Env) violate(format string, args ...any) {
	e.badMu.Lock()
	if e.bad == "" {
		e.bad = fmt.Sprintf(format, args...)
	}
	e.badMu.Unlock()
}

func (e *h12Env) fatalf(format string, args ...any) {
	e.t.Helper()
	e.t.Fatalf("%s (workers %d, grain %d, n %d, boom %v): %s", e.name, e.cfg.workers, e.cfg.grain, e.n(),
		e.boom, fmt.Sprintf(format, args...))
}

// checkState fails on a recorded violation or a late call.
func (e *h12Env) checkState() {
	e.t.Helper()
	e.badMu.Lock()
	bad := e.bad
	e.badMu.Unlock()
	if bad != "" {
		e.fatalf("%s", bad)
	}
	if k := e.late.Load(); k != 0 {
		e.fatalf("%d user function calls ran after their call had returned", k)
	}
}

// run runs f, one call of the operation under test, with the user functions live, and
// reports whether it panicked. A panic must carry the element function's value (panic
// mode), and there must be one when must is set in panic mode. A call that does not
// return fails the test rather than hanging it.
func (e *h12Env) run(must bool, f func()) (panicked bool) {
	e.t.Helper()
	return e.runK(must, h12AnyPanic, f)
}

// The form of a panic re-raised by a call: documented for the loops and reductions (the
// original value on the sequential path, a *PanicError on the parallel one) and for
// the iter.Seq bridges (always a *PanicError).
const (
	h12AnyPanic = iota
	h12RawPanic
	h12WrappedPanic
)

// kind is the documented form of a panic in a loop or reduction over n indices with
// leaves of grain: sequential (the original value) when n <= grain.
func h12Kind(n, grain int) int {
	if n <= grain {
		return h12RawPanic
	}
	return h12WrappedPanic
}

// runK is run with the form the panic must take.
func (e *h12Env) runK(must bool, kind int, f func()) (panicked bool) {
	e.t.Helper()
	e.checkState()
	var r any
	e.active.Store(true)
	within(e.t, 20*time.Second, e.name, func() {
		defer func() { r = recover() }()
		f()
	})
	e.active.Store(false)
	if r != nil {
		if v := h11Unwrap(r); !e.boom || v != h12Boom(e.boomVal) {
			e.fatalf("unexpected panic: %+v", r)
		}
		if _, wrapped := r.(*PanicError); (kind == h12RawPanic && wrapped) || (kind == h12WrappedPanic && !wrapped) {
			e.fatalf("panic re-raised as %T, want the documented form (%d: 1 the value, 2 a *PanicError)", r, kind)
		}
		return true
	}
	if e.boom && must {
		e.fatalf("returned; want the panic %v of the element function", h12Boom(e.boomVal))
	}
	return false
}

// runRaw runs f, expected to panic (not in a user function), and returns what it raised.
func (e *h12Env) runRaw(f func()) (r any) {
	e.t.Helper()
	e.checkState()
	within(e.t, 20*time.Second, e.name, func() {
		defer func() { r = recover() }()
		f()
	})
	return r
}

func (e *h12Env) visits() []atomic.Int32 { return make([]atomic.Int32, e.n()) }

// checkVisits checks that every index was visited once (exact), or at most once.
func (e *h12Env) checkVisits(what string, vis []atomic.Int32, exact bool) {
	e.t.Helper()
	for i := range vis {
		k := vis[i].Load()
		if k > 1 || (exact && k != 1) {
			e.fatalf("%s: index %d visited %d times", what, i, k)
		}
	}
}

// span checks a leaf [lo, hi) of a loop over n indices with leaves of at most grain.
func (e *h12Env) span(lo, hi, n, grain int) {
	if lo < 0 || hi > n || lo >= hi {
		e.violate("leaf [%d, %d) outside [0, %d) or empty", lo, hi, n)
	}
	if grain > 0 && hi-lo > grain {
		e.violate("leaf [%d, %d) longer than the grain %d", lo, hi, grain)
	}
}

// combine folds two accumulators, checking that they are adjacent, the lower first.
func (e *h12Env) combine(a, b h12Acc) h12Acc {
	e.live()
	switch {
	case !a.iv.ok:
		return h12Acc{b.iv, a.sum + b.sum}
	case !b.iv.ok:
		return h12Acc{a.iv, a.sum + b.sum}
	}
	if a.iv.hi != b.iv.lo {
		e.violate("combine(%v, %v): not adjacent, lower first", a.iv, b.iv)
	}
	return h12Acc{h12Iv{a.iv.lo, b.iv.hi, true}, a.sum + b.sum}
}

// h12Mod is x mod k in [0, k).
func h12Mod(x, k int) int {
	m := x % k
	if m < 0 {
		m += k
	}
	return m
}

// pred returns x%k == r with k and r derived from the operation's parameters; r == k
// (possible) matches nothing.
func h12Pred(a, b byte) func(x int) bool {
	k := 1 + int(a)%13
	r := int(b) % (k + 1)
	return func(x int) bool { return h12Mod(x, k) == r }
}

// h12Map returns x*m + c (wrapping) with m and c derived from the parameters.
func h12Map(a, b byte) func(x int) int {
	m, c := int(a)-128, int(b)
	return func(x int) int { return x*m + c }
}

// opts are the call options, with the explicit grain replaced (ForGrain's own).
func (e *h12Env) grainOr(def int) int {
	if e.cfg.grain > 0 {
		return e.cfg.grain
	}
	return def
}

// h12Names are the operations, indexed by code.
var h12Names = []string{
	"For", "ForGrain", "ForUntil", "Reduce", "MapReduce", "MapReduceFunc", "MapReduceChunked",
	"TryFor", "TryForEach", "TryReduce", "TryForContext", "Sum/Dot", "Min/Max", "MinFunc/MaxFunc",
	"MinByKey/MaxByKey", "Count", "Any/All", "FindFirst/FindLast/FindAny", "Index/IndexAny/LastIndex",
	"ForEach/ForEachIndex/Fill", "Map/MapInto/MapInPlace", "Filter/Partition", "FlatMap/Flatten",
	"Scatter", "Chunks", "Zip", "Chain", "Range", "ForEachSeq", "MapSeq", "Nested",
}

// h12RunOps runs the operations of one input on a new pool, then checks that the pool
// still works and closes it.
func h12RunOps(t *testing.T, cfg h12Cfg, ops []h12Op) {
	t.Helper()
	p, err := NewPool(Config{Workers: cfg.workers})
	if err != nil {
		t.Fatal(err)
	}
	e := &h12Env{t: t, cfg: cfg, s: cfg.s, pool: p}
	e.idx = make([]int, len(cfg.s))
	for i := range e.idx {
		e.idx[i] = i
	}
	e.opts = []Option{WithPool(p)}
	if cfg.grain > 0 {
		e.opts = append(e.opts, WithGrain(cfg.grain))
	}
	orig := slices.Clone(cfg.s)
	for _, op := range ops {
		e.runOp(op)
		if !slices.Equal(e.s, orig) {
			e.fatalf("the input slice was modified")
		}
	}
	// The pool still works after whatever the operations did (panics included).
	e.name, e.boom = "final Sum", false
	want := 0
	for _, v := range e.s {
		want += v
	}
	e.run(false, func() {
		if got := Sum(e.s, e.opts...); got != want {
			e.violate("Sum = %d, want %d", got, want)
		}
	})
	within(t, 20*time.Second, "Close", p.Close)
	e.checkState() // Close waited for every job: a user function still running would show
}

// runOp runs one operation: once normally, and, when its b parameter says so, once in
// panic mode.
func (e *h12Env) runOp(op h12Op) {
	code := int(op.code) % len(h12Names)
	e.name = h12Names[code]
	e.boom = false
	e.exec(code, op.a, op.b)
	if op.b&0x80 != 0 && e.n() > 0 {
		e.boom = true
		j := (int(op.a) * 131) % e.n()
		e.boomVal = e.s[j]
		e.first = slices.Index(e.s, e.boomVal)
		for i, v := range e.s {
			if v == e.boomVal {
				e.last = i
			}
		}
		e.exec(code, op.a, op.b)
		e.boom = false
	}
	e.checkState()
}

func (e *h12Env) exec(code int, a, b byte) {
	s, idx, n := e.s, e.idx, e.n()
	pred := h12Pred(a, b)
	fm := h12Map(a, b)
	// The sequential models shared by several operations.
	firstMatch, lastMatch := -1, -1
	for i, v := range s {
		if pred(v) {
			if firstMatch < 0 {
				firstMatch = i
			}
			lastMatch = i
		}
	}
	anyMatch := firstMatch >= 0
	seqSum, mapSum := 0, 0
	mapped := make([]int, n)
	for i, v := range s {
		seqSum += v
		mapped[i] = fm(v)
		mapSum += mapped[i]
	}
	whole := h12Acc{h12Iv{0, n, n > 0}, 0}
	// single: the input is at most one grain, so a loop runs one leaf on the caller's
	// goroutine (the automatic grain is never below parMinGrain).
	single := n <= e.grainOr(parMinGrain)
	// elems is the body of a loop that visits [lo, hi).
	elems := func(vis []atomic.Int32, grain int, calls *atomic.Int32) func(lo, hi int) {
		return func(lo, hi int) {
			e.live()
			calls.Add(1)
			e.span(lo, hi, n, grain)
			for i := lo; i < hi; i++ {
				e.in(s[i])
				vis[i].Add(1)
			}
		}
	}

	switch code {
	case 0: // For
		vis := e.visits()
		var calls atomic.Int32
		if !e.runK(true, h12Kind(n, e.grainOr(parMinGrain)), func() { For(n, elems(vis, e.cfg.grain, &calls), e.opts...) }) {
			e.checkVisits("For", vis, true)
			if single && n > 0 && calls.Load() != 1 {
				e.fatalf("n <= grain: body called %d times, want once", calls.Load())
			}
		} else {
			e.checkVisits("For", vis, false)
		}

	case 1: // ForGrain
		g := 1 + int(a)%(n+2)
		vis := e.visits()
		var calls atomic.Int32
		if !e.runK(true, h12Kind(n, g), func() { ForGrain(n, g, elems(vis, g, &calls), e.opts...) }) {
			e.checkVisits("ForGrain", vis, true)
			if n > 0 && n <= g && calls.Load() != 1 {
				e.fatalf("n <= grain %d: body called %d times, want once", g, calls.Load())
			}
		}

	case 2: // ForUntil
		vis := e.visits()
		var stopped bool
		if !e.runK(!anyMatch, h12Kind(n, e.grainOr(parMinGrain)), func() {
			stopped = ForUntil(n, func(lo, hi int, st Stop) {
				e.live()
				e.span(lo, hi, n, e.cfg.grain)
				for i := lo; i < hi && !st.Stopped(); i++ {
					e.in(s[i])
					vis[i].Add(1)
					if pred(s[i]) {
						st.Stop()
					}
				}
			}, e.opts...)
		}) {
			if stopped != anyMatch {
				e.fatalf("ForUntil = %v, want %v (a leaf stops only at a match)", stopped, anyMatch)
			}
			e.checkVisits("ForUntil", vis, !anyMatch)
		}

	case 3: // Reduce
		vis := e.visits()
		var got h12Acc
		sentinel := h12Acc{h12Iv{-7, -7, true}, 7}
		if !e.runK(true, h12Kind(n, e.grainOr(parMinGrain)), func() {
			got = Reduce(n, sentinel, func(lo, hi int) h12Acc {
				e.live()
				e.span(lo, hi, n, e.cfg.grain)
				sum := 0
				for i := lo; i < hi; i++ {
					e.in(s[i])
					vis[i].Add(1)
					sum += s[i]
				}
				return h12Acc{h12Iv{lo, hi, true}, sum}
			}, e.combine, e.opts...)
		}) {
			want := h12Acc{whole.iv, seqSum}
			if n == 0 {
				want = sentinel
			}
			if got != want {
				e.fatalf("Reduce = %+v, want %+v", got, want)
			}
			e.checkVisits("Reduce", vis, true)
		}

	case 4: // MapReduce
		var got h12Acc
		var calls atomic.Int64
		if !e.runK(true, h12Kind(n, e.grainOr(parMinGrain)), func() {
			got = MapReduce(idx, h12Acc{}, func(i int) h12Acc {
				e.in(s[i])
				calls.Add(1)
				return h12Acc{h12Iv{i, i + 1, true}, fm(s[i])}
			}, e.combine, e.opts...)
		}) {
			if want := (h12Acc{whole.iv, mapSum}); got != want {
				e.fatalf("MapReduce = %+v, want %+v", got, want)
			}
			if calls.Load() != int64(n) {
				e.fatalf("MapReduce called mapFn %d times, want %d", calls.Load(), n)
			}
		}

	case 5: // MapReduceFunc: an accumulator that combine modifies in place
		var got *[]int
		var ids, combines atomic.Int64
		if !e.runK(true, h12Kind(n, e.grainOr(parMinGrain)), func() {
			got = MapReduceFunc(idx, func() *[]int {
				e.live()
				ids.Add(1)
				return new([]int)
			}, func(i int) *[]int {
				e.in(s[i])
				return &[]int{mapped[i]}
			}, func(x, y *[]int) *[]int {
				e.live()
				combines.Add(1)
				*x = append(*x, *y...)
				return x
			}, e.opts...)
		}) {
			if got == nil || !slices.Equal(*got, mapped) {
				e.fatalf("MapReduceFunc = %v, want %v", got, mapped)
			}
			if n == 0 && ids.Load() != 1 {
				e.fatalf("MapReduceFunc of an empty s called identity %d times, want once", ids.Load())
			}
			// identity once per leaf, each element folded into its leaf's accumulator and
			// each partial result passed to combine once: n + leaves - 1 combines.
			if n > 0 && (ids.Load() < 1 || ids.Load() > int64(n) || combines.Load() != int64(n)+ids.Load()-1) {
				e.fatalf("MapReduceFunc: %d identities and %d combines for %d elements", ids.Load(), combines.Load(), n)
			}
		}

	case 6: // MapReduceChunked
		var got h12Acc
		sentinel := h12Acc{h12Iv{-3, -3, true}, 3}
		if !e.runK(true, h12Kind(n, e.grainOr(parMinGrain)), func() {
			got = MapReduceChunked(idx, sentinel, func(c []int) h12Acc {
				e.live()
				if len(c) == 0 {
					e.violate("empty chunk")
					return h12Acc{}
				}
				lo := c[0]
				e.span(lo, lo+len(c), n, e.cfg.grain)
				sum := 0
				for j, i := range c {
					e.in(s[i])
					if i != lo+j {
						e.violate("chunk not consecutive: %v", c)
					}
					sum += fm(s[i])
				}
				return h12Acc{h12Iv{lo, lo + len(c), true}, sum}
			}, e.combine, e.opts...)
		}) {
			want := h12Acc{whole.iv, mapSum}
			if n == 0 {
				want = sentinel
			}
			if got != want {
				e.fatalf("MapReduceChunked = %+v, want %+v", got, want)
			}
		}

	case 7, 8, 10: // TryFor, TryForEach, TryForContext
		vis := e.visits()
		body := func(lo, hi int) error {
			e.live()
			e.span(lo, hi, n, e.cfg.grain)
			for i := lo; i < hi; i++ {
				e.in(s[i])
				vis[i].Add(1)
				if pred(s[i]) {
					return &h12Err{i}
				}
			}
			return nil
		}
		var err error
		cancelled := code == 10 && a&1 != 0
		cause := errors.New("h12: cancelled before the call")
		must := !anyMatch && !cancelled
		if !e.runK(must, h12Kind(n, e.grainOr(parMinGrain)), func() {
			switch code {
			case 7:
				err = TryFor(n, body, e.opts...)
			case 8:
				err = TryForEach(idx, func(i int) error { return body(i, i+1) }, e.opts...)
			case 10:
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				if cancelled {
					cancel(cause)
				}
				err = TryForContext(ctx, n, func(c context.Context, lo, hi int) error {
					if c == nil {
						e.violate("nil ctx")
					}
					return body(lo, hi)
				}, e.opts...)
			}
		}) {
			if cancelled {
				if err != cause {
					e.fatalf("pre-cancelled: err = %v, want the cause %v", err, cause)
				}
				e.checkVisits("TryForContext pre-cancelled", vis, false)
				for i := range vis {
					if vis[i].Load() != 0 {
						e.fatalf("pre-cancelled: body ran")
					}
				}
				break
			}
			var he *h12Err
			switch {
			case !anyMatch && err != nil:
				e.fatalf("err = %v, want nil", err)
			case anyMatch && (!errors.As(err, &he) || !pred(s[he.i])):
				e.fatalf("err = %v, want the error of a matching element", err)
			}
			e.checkVisits("Try", vis, !anyMatch)
		}

	case 9: // TryReduce
		var got h12Acc
		var err error
		if !e.runK(!anyMatch, h12Kind(n, e.grainOr(parMinGrain)), func() {
			got, err = TryReduce(n, h12Acc{}, func(lo, hi int) (h12Acc, error) {
				e.live()
				e.span(lo, hi, n, e.cfg.grain)
				sum := 0
				for i := lo; i < hi; i++ {
					e.in(s[i])
					if pred(s[i]) {
						return h12Acc{h12Iv{-1, -1, true}, -1}, &h12Err{i}
					}
					sum += s[i]
				}
				return h12Acc{h12Iv{lo, hi, true}, sum}, nil
			}, e.combine, e.opts...)
		}) {
			var he *h12Err
			switch {
			case !anyMatch && (err != nil || got != (h12Acc{whole.iv, seqSum})):
				e.fatalf("TryReduce = %+v, %v; want %+v, nil", got, err, h12Acc{whole.iv, seqSum})
			case anyMatch && (!errors.As(err, &he) || !pred(s[he.i]) || got != h12Acc{}):
				e.fatalf("TryReduce = %+v, %v; want the zero value and a matching element's error", got, err)
			}
		}

	case 11: // Sum, Dot, ZipDot
		if got := Sum(s, e.opts...); got != seqSum {
			e.fatalf("Sum = %d, want %d", got, seqSum)
		}
		s8 := make([]int8, n)
		var sum8 int8
		for i, v := range s {
			s8[i] = int8(v)
			sum8 += s8[i]
		}
		if got := Sum(s8, e.opts...); got != sum8 {
			e.fatalf("Sum(int8) = %d, want %d", got, sum8)
		}
		rev := slices.Clone(s)
		slices.Reverse(rev)
		dot := 0
		for i := range s {
			dot += s[i] * rev[i]
		}
		if got := Dot(s, rev, e.opts...); got != dot {
			e.fatalf("Dot = %d, want %d", got, dot)
		}
		if got := ZipDot(Zip(s, rev), e.opts...); got != dot {
			e.fatalf("ZipDot = %d, want %d", got, dot)
		}

	case 12: // Min, Max on ints and on floats with NaNs and signed zeros
		gmin, okMin := Min(s, e.opts...)
		gmax, okMax := Max(s, e.opts...)
		if n == 0 {
			if gmin != 0 || okMin || gmax != 0 || okMax {
				e.fatalf("Min/Max of empty = %d %v %d %v", gmin, okMin, gmax, okMax)
			}
			break
		}
		if gmin != slices.Min(s) || gmax != slices.Max(s) || !okMin || !okMax {
			e.fatalf("Min/Max = %d %d, want %d %d", gmin, gmax, slices.Min(s), slices.Max(s))
		}
		fs := make([]float64, n)
		for i, v := range s {
			switch h12Mod(v, 7) {
			case 0:
				fs[i] = math.Copysign(0, -1)
			case 1:
				fs[i] = 0
			default:
				fs[i] = float64(v)
			}
		}
		if a&1 != 0 {
			fs[int(b)%n] = math.NaN()
		}
		same := func(x, y float64) bool {
			return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
		}
		if got, _ := Min(fs, e.opts...); !same(got, slices.Min(fs)) {
			e.fatalf("Min(floats) = %v, want %v", got, slices.Min(fs))
		}
		if got, _ := Max(fs, e.opts...); !same(got, slices.Max(fs)) {
			e.fatalf("Max(floats) = %v, want %v", got, slices.Max(fs))
		}

	case 13: // MinFunc, MaxFunc (on indices, to tell the first extreme from later ties)
		k := 1 + int(a)%13
		consistent := b&1 == 0
		c := func(i, j int) int {
			e.in(s[i])
			e.in(s[j])
			if consistent {
				return cmp.Compare(h12Mod(s[i], k), h12Mod(s[j], k))
			}
			// Not a consistent order: the doc promises nothing but an element of s.
			return int((uint64(i)*0x9E3779B97F4A7C15^uint64(j)*0xBF58476D1CE4E5B9)>>61)%3 - 1
		}
		var gmin, gmax int
		var okMin, okMax bool
		if !e.run(n >= 2, func() {
			gmin, okMin = MinFunc(idx, c, e.opts...)
			gmax, okMax = MaxFunc(idx, c, e.opts...)
		}) {
			if n == 0 {
				if gmin != 0 || okMin || gmax != 0 || okMax {
					e.fatalf("MinFunc/MaxFunc of empty = %d %v %d %v", gmin, okMin, gmax, okMax)
				}
				break
			}
			if !okMin || !okMax || gmin < 0 || gmin >= n || gmax < 0 || gmax >= n {
				e.fatalf("MinFunc/MaxFunc = %d %v %d %v, want elements of s", gmin, okMin, gmax, okMax)
			}
			if consistent {
				e.active.Store(true)
				wmin, wmax := slices.MinFunc(idx, c), slices.MaxFunc(idx, c)
				e.active.Store(false)
				if gmin != wmin || gmax != wmax {
					e.fatalf("MinFunc/MaxFunc = index %d, %d; want the first extremes %d, %d", gmin, gmax, wmin, wmax)
				}
			}
		}

	case 14: // MinByKey, MaxByKey with float keys (NaN, signed zeros) or int keys
		k := 1 + int(a)%13
		r := int(b) % (k + 1)
		fkey := func(v int) float64 {
			switch m := h12Mod(v, k); {
			case m == r:
				return math.NaN()
			case m == 0:
				return math.Copysign(0, -1)
			default:
				return float64(m)
			}
		}
		for _, useMax := range []bool{false, true} {
			vis := e.visits()
			var gi int
			var ok bool
			if !e.run(true, func() {
				key := func(i int) float64 { e.in(s[i]); vis[i].Add(1); return fkey(s[i]) }
				if b&1 != 0 { // int keys
					ikey := func(i int) int { e.in(s[i]); vis[i].Add(1); return h12Mod(s[i], k) }
					if useMax {
						gi, ok = MaxByKey(idx, ikey, e.opts...)
					} else {
						gi, ok = MinByKey(idx, ikey, e.opts...)
					}
					return
				}
				if useMax {
					gi, ok = MaxByKey(idx, key, e.opts...)
				} else {
					gi, ok = MinByKey(idx, key, e.opts...)
				}
			}) {
				e.checkVisits("MinByKey/MaxByKey key calls", vis, true)
				want := -1
				for i, v := range s {
					var c int
					if b&1 != 0 {
						c = cmp.Compare(h12Mod(v, k), h12Mod(s[max(want, 0)], k))
					} else {
						c = cmp.Compare(fkey(v), fkey(s[max(want, 0)]))
					}
					if want < 0 || (useMax && c > 0) || (!useMax && c < 0) {
						want = i
					}
				}
				if ok != (n > 0) || (n > 0 && gi != want) {
					e.fatalf("max=%v: ByKey = index %d %v, want %d", useMax, gi, ok, want)
				}
			}
		}

	case 15: // Count
		vis := e.visits()
		want := 0
		for _, v := range s {
			if pred(v) {
				want++
			}
		}
		var got int
		if !e.run(true, func() {
			got = Count(idx, func(i int) bool { e.in(s[i]); vis[i].Add(1); return pred(s[i]) }, e.opts...)
		}) {
			if got != want {
				e.fatalf("Count = %d, want %d", got, want)
			}
			e.checkVisits("Count", vis, true)
		}

	case 16: // Any, All
		allTrue := true
		for _, v := range s {
			allTrue = allTrue && pred(v)
		}
		vis := e.visits()
		var got bool
		if !e.run(!anyMatch, func() {
			got = Any(idx, func(i int) bool { e.in(s[i]); vis[i].Add(1); return pred(s[i]) }, e.opts...)
		}) {
			if got != anyMatch {
				e.fatalf("Any = %v, want %v", got, anyMatch)
			}
			e.checkVisits("Any", vis, !anyMatch)
		}
		vis = e.visits()
		if !e.run(allTrue, func() {
			got = All(idx, func(i int) bool { e.in(s[i]); vis[i].Add(1); return pred(s[i]) }, e.opts...)
		}) {
			if got != allTrue {
				e.fatalf("All = %v, want %v", got, allTrue)
			}
			e.checkVisits("All", vis, allTrue)
		}

	case 17: // FindFirst, FindLast, FindAny
		type findFn func([]int, func(int) bool, ...Option) (int, int, bool)
		forms := []struct {
			name string
			f    findFn
			want int  // the index required, -2 for any match
			must bool // panic mode: an element that must be tested holds boomVal
		}{
			{"FindFirst", FindFirst[int], firstMatch, e.first <= firstMatch || !anyMatch},
			{"FindLast", FindLast[int], lastMatch, e.last >= lastMatch},
			{"FindAny", FindAny[int], -2, !anyMatch},
		}
		for _, fo := range forms {
			vis := e.visits()
			var v, i int
			var ok bool
			if !e.run(fo.must, func() {
				v, i, ok = fo.f(idx, func(i int) bool { e.in(s[i]); vis[i].Add(1); return pred(s[i]) }, e.opts...)
			}) {
				e.checkVisits(fo.name, vis, !anyMatch)
				switch {
				case ok != anyMatch || (!ok && (v != 0 || i != -1)):
					e.fatalf("%s = %d, %d, %v; want found=%v", fo.name, v, i, ok, anyMatch)
				case ok && (v != i || i < 0 || i >= n || !pred(s[i])):
					e.fatalf("%s = %d, %d: not a match", fo.name, v, i)
				case ok && fo.want != -2 && i != fo.want:
					e.fatalf("%s = index %d, want %d", fo.name, i, fo.want)
				}
			}
		}

	case 18: // Index, IndexAny, LastIndex (no user function)
		v := 0
		if n > 0 {
			v = s[int(b)%n]
		}
		if a&1 != 0 || n == 0 { // a value that may be absent
			v = int(a) - 128
		}
		want, wantLast := slices.Index(s, v), -1
		for i, x := range s {
			if x == v {
				wantLast = i
			}
		}
		if got := Index(s, v, e.opts...); got != want {
			e.fatalf("Index(%d) = %d, want %d", v, got, want)
		}
		if got := LastIndex(s, v, e.opts...); got != wantLast {
			e.fatalf("LastIndex(%d) = %d, want %d", v, got, wantLast)
		}
		if got := IndexAny(s, v, e.opts...); (got < 0) != (want < 0) || (got >= 0 && s[got] != v) {
			e.fatalf("IndexAny(%d) = %d, want an index of it (first %d)", v, got, want)
		}

	case 19: // ForEach, ForEachIndex, Fill
		vis := e.visits()
		var calls atomic.Int64
		if !e.run(true, func() {
			ForEach(idx, func(i int) { e.in(s[i]); vis[i].Add(1); calls.Add(1) }, e.opts...)
		}) {
			e.checkVisits("ForEach", vis, true)
		}
		s2 := slices.Clone(s)
		vis = e.visits()
		if !e.run(true, func() {
			ForEachIndex(s2, func(i int, p *int) {
				e.in(*p)
				vis[i].Add(1)
				*p = fm(*p)
			}, e.opts...)
		}) {
			e.checkVisits("ForEachIndex", vis, true)
			if !slices.Equal(s2, mapped) {
				e.fatalf("ForEachIndex wrote %v, want %v", s2, mapped)
			}
		}
		fv := int(a) - int(b)
		Fill(s2, fv, e.opts...)
		for i, x := range s2 {
			if x != fv {
				e.fatalf("Fill: s[%d] = %d, want %d", i, x, fv)
			}
		}

	case 20: // Map, MapInto, MapInPlace
		f := func(v int) int { e.in(v); return fm(v) }
		var got []int
		if !e.run(true, func() { got = Map(s, f, e.opts...) }) {
			if !slices.Equal(got, mapped) || (got == nil) != (n == 0) {
				e.fatalf("Map = %v, want %v (nil exactly when empty)", got, mapped)
			}
		}
		dst := make([]int, n)
		if !e.run(true, func() { MapInto(dst, s, f, e.opts...) }) && !slices.Equal(dst, mapped) {
			e.fatalf("MapInto = %v, want %v", dst, mapped)
		}
		s2 := slices.Clone(s)
		if !e.run(true, func() { MapInPlace(s2, f, e.opts...) }) && !slices.Equal(s2, mapped) {
			e.fatalf("MapInPlace = %v, want %v", s2, mapped)
		}

	case 21: // Filter, Partition (on indices: the kept elements are the indices, in order)
		var yes, no []int
		for i, v := range s {
			if pred(v) {
				yes = append(yes, i)
			} else {
				no = append(no, i)
			}
		}
		vis := e.visits()
		p := func(i int) bool { e.in(s[i]); vis[i].Add(1); return pred(s[i]) }
		var got []int
		if !e.run(true, func() { got = Filter(idx, p, e.opts...) }) {
			e.checkVisits("Filter", vis, true)
			if !slices.Equal(got, yes) || (got == nil) != (len(yes) == 0) {
				e.fatalf("Filter = %v, want %v (nil exactly when empty)", got, yes)
			}
		}
		vis = e.visits()
		var gy, gn []int
		if !e.run(true, func() { gy, gn = Partition(idx, p, e.opts...) }) {
			e.checkVisits("Partition", vis, true)
			if !slices.Equal(gy, yes) || !slices.Equal(gn, no) || (gy == nil) != (len(yes) == 0) || (gn == nil) != (len(no) == 0) {
				e.fatalf("Partition = %v, %v; want %v, %v (nil exactly when empty)", gy, gn, yes, no)
			}
		}

	case 22: // FlatMap, Flatten
		k := 1 + int(a)%5
		part := func(i int) []int {
			m := h12Mod(s[i], k)
			if m == 0 {
				if i%2 == 0 {
					return nil
				}
				return []int{}
			}
			out := make([]int, m)
			for j := range out {
				out[j] = i
			}
			return out
		}
		var want []int
		for i := range s {
			want = append(want, part(i)...)
		}
		var got []int
		if !e.run(true, func() {
			got = FlatMap(idx, func(i int) []int { e.in(s[i]); return part(i) }, e.opts...)
		}) {
			if !slices.Equal(got, want) || (got == nil) != (len(want) == 0) {
				e.fatalf("FlatMap = %v, want %v (nil exactly when empty)", got, want)
			}
		}
		// Flatten of s cut at positions derived from the parameters, with empty parts.
		var ss [][]int
		for lo := 0; lo < n; {
			w := int(uint(lo*int(a)+int(b))%7) * (1 + int(b)%64)
			if w == 0 {
				ss = append(ss, s[lo:lo], nil)
				w = 1 + int(b)%64
			}
			hi := min(n, lo+w)
			ss = append(ss, s[lo:hi])
			lo = hi
		}
		if a&2 != 0 {
			ss = append(ss, nil)
		}
		if got := Flatten(ss, e.opts...); !slices.Equal(got, s) || (got == nil) != (n == 0) {
			e.fatalf("Flatten = %v, want %v", got, s)
		}

	case 23: // Scatter: a permutation, or bad indices (the first one named, nothing written)
		if n == 0 {
			Scatter([]int(nil), nil, nil, e.opts...)
			break
		}
		ind := make([]int, n)
		for i := range ind {
			if a&1 != 0 {
				ind[i] = n - 1 - i
			} else {
				ind[i] = (i + int(b)) % n
			}
		}
		out := make([]int, n)
		if b&3 == 3 {
			j := int(a) % n
			ind[j] = -1 - int(b)%3
			if j+1 < n {
				ind[n-1] = n
			}
			sentinel := slices.Repeat([]int{-99}, n)
			copy(out, sentinel)
			r := e.runRaw(func() { Scatter(s, ind, out, e.opts...) })
			want := fmt.Sprintf("blitz: Scatter: indices[%d] = %d out of range [0, len(out) = %d)", j, ind[j], n)
			if fmt.Sprint(r) != want {
				e.fatalf("Scatter with bad indices panicked with %v, want %q", r, want)
			}
			if !slices.Equal(out, sentinel) {
				e.fatalf("Scatter with a bad index wrote to out")
			}
			break
		}
		Scatter(s, ind, out, e.opts...)
		for i := range s {
			if out[ind[i]] != s[i] {
				e.fatalf("Scatter: out[%d] = %d, want s[%d] = %d", ind[i], out[ind[i]], i, s[i])
			}
		}

	case 24: // Chunks, Chunked.ForEach, ReduceChunks
		size := 1 + int(a)%(n+3)
		if b&1 != 0 {
			size = 1 + int(a)%8
		}
		ch := Chunks(s, size)
		nc := (n + size - 1) / size
		if ch.Len() != nc {
			e.fatalf("Chunks(%d).Len() = %d, want %d", size, ch.Len(), nc)
		}
		wantChunk := func(i int) []int { return s[i*size : min(n, (i+1)*size)] }
		vis := make([]atomic.Int32, nc)
		if !e.run(true, func() {
			ch.ForEach(func(i int, c []int) {
				e.live()
				if i < 0 || i >= nc {
					e.violate("chunk index %d out of range", i)
					return
				}
				vis[i].Add(1)
				if !slices.Equal(c, wantChunk(i)) || cap(c) != len(c) {
					e.violate("chunk %d = %v (cap %d), want %v with its capacity clipped", i, c, cap(c), wantChunk(i))
				}
				for _, v := range c {
					e.in(v)
				}
			}, e.opts...)
		}) {
			e.checkVisits("Chunked.ForEach", vis, true)
		}
		sentinel := h12Acc{h12Iv{-5, -5, true}, 5}
		var got h12Acc
		if !e.run(true, func() {
			got = ReduceChunks(ch, sentinel, func(i int, c []int) h12Acc {
				e.live()
				sum := 0
				for _, v := range c {
					e.in(v)
					sum += fm(v)
				}
				return h12Acc{h12Iv{i, i + 1, true}, sum}
			}, e.combine, e.opts...)
		}) {
			want := h12Acc{h12Iv{0, nc, true}, mapSum}
			if nc == 0 {
				want = sentinel
			}
			if got != want {
				e.fatalf("ReduceChunks = %+v, want %+v", got, want)
			}
		}

	case 25: // Zip
		z := Zip(idx, s)
		if z.Len() != n {
			e.fatalf("Zip.Len() = %d, want %d", z.Len(), n)
		}
		vis := e.visits()
		if !e.run(true, func() {
			z.ForEach(func(i, x, v int) {
				e.in(v)
				if i < 0 || i >= n || x != i || v != s[i] {
					e.violate("Zipped.ForEach(%d, %d, %d)", i, x, v)
					return
				}
				vis[i].Add(1)
			}, e.opts...)
		}) {
			e.checkVisits("Zipped.ForEach", vis, true)
		}
		var got h12Acc
		if !e.run(true, func() {
			got = ZipMapReduce(z, h12Acc{}, func(i, v int) h12Acc {
				e.in(v)
				return h12Acc{h12Iv{i, i + 1, true}, fm(v)}
			}, e.combine, e.opts...)
		}) && got != (h12Acc{whole.iv, mapSum}) {
			e.fatalf("ZipMapReduce = %+v, want %+v", got, h12Acc{whole.iv, mapSum})
		}
		var gl *[]int
		if !e.run(true, func() {
			gl = ZipMapReduceFunc(z, func() *[]int { e.live(); return new([]int) }, func(_, v int) *[]int {
				e.in(v)
				return &[]int{fm(v)}
			}, func(x, y *[]int) *[]int { e.live(); *x = append(*x, *y...); return x }, e.opts...)
		}) && (gl == nil || !slices.Equal(*gl, mapped)) {
			e.fatalf("ZipMapReduceFunc = %v, want %v", gl, mapped)
		}

	case 26: // Chain
		m := int(b) % (n + 1)
		c := Chain(idx[:m], idx[m:])
		if c.Len() != n {
			e.fatalf("Chain.Len() = %d, want %d", c.Len(), n)
		}
		for _, i := range []int{0, m - 1, m, n - 1} {
			if i >= 0 && i < n && c.At(i) != i {
				e.fatalf("Chain.At(%d) = %d", i, c.At(i))
			}
		}
		vis := e.visits()
		if !e.run(true, func() {
			c.ForEach(func(i, v int) {
				e.in(s[v])
				if i < 0 || i >= n || v != i {
					e.violate("Chained.ForEach(%d, %d)", i, v)
					return
				}
				vis[i].Add(1)
			}, e.opts...)
		}) {
			e.checkVisits("Chained.ForEach", vis, true)
		}
		var got h12Acc
		if !e.run(true, func() {
			got = ChainMapReduce(c, h12Acc{}, func(i int) h12Acc {
				e.in(s[i])
				return h12Acc{h12Iv{i, i + 1, true}, fm(s[i])}
			}, e.combine, e.opts...)
		}) && got != (h12Acc{whole.iv, mapSum}) {
			e.fatalf("ChainMapReduce = %+v, want %+v", got, h12Acc{whole.iv, mapSum})
		}
		var gl *[]int
		if !e.run(true, func() {
			gl = ChainMapReduceFunc(c, func() *[]int { e.live(); return new([]int) }, func(i int) *[]int {
				e.in(s[i])
				return &[]int{mapped[i]}
			}, func(x, y *[]int) *[]int { e.live(); *x = append(*x, *y...); return x }, e.opts...)
		}) && (gl == nil || !slices.Equal(*gl, mapped)) {
			e.fatalf("ChainMapReduceFunc = %v, want %v", gl, mapped)
		}

	case 27: // Range, near the ends of int too
		lo := int(b) - 128
		switch a % 3 {
		case 1:
			lo = math.MaxInt - n
		case 2:
			lo = math.MinInt
		}
		r := Range(lo, lo+n)
		if r.Len() != n {
			e.fatalf("Range(%d, %d).Len() = %d, want %d", lo, lo+n, r.Len(), n)
		}
		vis := e.visits()
		if !e.run(true, func() {
			r.ForEach(func(i int) {
				j := i - lo
				if j < 0 || j >= n {
					e.violate("IntRange.ForEach(%d) outside [%d, %d)", i, lo, lo+n)
					return
				}
				e.in(s[j])
				vis[j].Add(1)
			}, e.opts...)
		}) {
			e.checkVisits("IntRange.ForEach", vis, true)
		}
		var got h12Acc
		if !e.run(true, func() {
			got = RangeReduce(r, h12Acc{}, func(i int) h12Acc {
				j := i - lo
				e.in(s[j])
				return h12Acc{h12Iv{j, j + 1, true}, fm(s[j])}
			}, e.combine, e.opts...)
		}) && got != (h12Acc{whole.iv, mapSum}) {
			e.fatalf("RangeReduce = %+v, want %+v", got, h12Acc{whole.iv, mapSum})
		}
		var gl *[]int
		if !e.run(true, func() {
			gl = RangeReduceFunc(r, func() *[]int { e.live(); return new([]int) }, func(i int) *[]int {
				e.in(s[i-lo])
				return &[]int{mapped[i-lo]}
			}, func(x, y *[]int) *[]int { e.live(); *x = append(*x, *y...); return x }, e.opts...)
		}) && (gl == nil || !slices.Equal(*gl, mapped)) {
			e.fatalf("RangeReduceFunc = %v, want %v", gl, mapped)
		}

	case 28: // ForEachSeq
		vis := e.visits()
		var inSeq atomic.Int32
		seq := func(yield func(int) bool) {
			for i := range n {
				if inSeq.Add(1) != 1 {
					e.violate("seq iterated concurrently")
				}
				ok := yield(i)
				inSeq.Add(-1)
				if !ok {
					return
				}
			}
		}
		if !e.runK(true, h12WrappedPanic, func() {
			ForEachSeq(seq, func(i int) { e.in(s[i]); vis[i].Add(1) }, e.opts...)
		}) {
			e.checkVisits("ForEachSeq", vis, true)
		} else {
			e.checkVisits("ForEachSeq", vis, false)
		}

	case 29: // MapSeq, with an early break
		brk := n
		if a&1 != 0 {
			brk = int(b) % (n + 1)
		}
		var stopped atomic.Bool
		seq := func(yield func(int) bool) {
			for i := range n {
				if !yield(i) {
					stopped.Store(true)
					return
				}
			}
		}
		var got []int
		if !e.runK(e.first < brk, h12WrappedPanic, func() {
			for v := range MapSeq(seq, func(i int) int { e.in(s[i]); return mapped[i] }, e.opts...) {
				if len(got) == brk {
					break
				}
				got = append(got, v)
			}
		}) {
			if !slices.Equal(got, mapped[:brk]) {
				e.fatalf("MapSeq (break after %d) = %v, want %v", brk, got, mapped[:brk])
			}
		}
		_ = stopped.Load() // stopping the sequence is only possible while it is suspended

	case 30: // Nested: leaves that run parallel calls on the same pool
		want := 0
		for _, v := range s {
			if pred(v) {
				want++
			}
		}
		var got int
		if !e.run(true, func() {
			got = MapReduceChunked(s, 0, func(c []int) int {
				e.live()
				k := Count(c, func(v int) bool { e.in(v); return pred(v) }, e.opts...)
				_, i, _ := FindFirst(c, func(v int) bool { e.live(); return pred(v) }, e.opts...)
				if (i >= 0) != (k > 0) {
					e.violate("nested FindFirst = %d with Count %d", i, k)
				}
				return k
			}, func(x, y int) int { e.live(); return x + y }, e.opts...)
		}) && got != want {
			e.fatalf("nested Count = %d, want %d", got, want)
		}
	}
}

// h12Decode turns fuzz bytes into an input: data[0] workers, data[1:3] grain,
// data[3:5] length, data[5] value range, data[6:14] seed, then operations of 3 bytes.
func h12Decode(data []byte) (h12Cfg, []h12Op) {
	at := func(i int) byte {
		if i < len(data) {
			return data[i]
		}
		return 0
	}
	var cfg h12Cfg
	cfg.workers = 1 + int(at(0))%4
	n := (int(at(3)) | int(at(4))<<8) % 5001
	switch g := int(at(2)); at(1) % 6 {
	case 0:
		cfg.grain = 0 // automatic
	case 1:
		cfg.grain = 1
	case 2:
		cfg.grain = 1 + g
	case 3:
		cfg.grain = max(1, n-1+g%3) // n-1, n, n+1
	case 4:
		cfg.grain = n + 1 + g*100
	case 5:
		cfg.grain = math.MaxInt - g
	}
	var seed uint64
	for i := range 8 {
		seed |= uint64(at(6+i)) << (8 * i)
	}
	cfg.s = h12Values(n, at(5), seed)
	var ops []h12Op
	for i := 14; i+2 < len(data) && len(ops) < 40; i += 3 {
		ops = append(ops, h12Op{data[i], data[i+1], data[i+2]})
	}
	return cfg, ops
}

// h12Values makes n values from seed, from ranges with many duplicates to the full int.
func h12Values(n int, mode byte, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, uint64(mode)))
	s := make([]int, n)
	for i := range s {
		switch mode % 6 {
		case 0:
			s[i] = r.IntN(3) - 1
		case 1:
			s[i] = r.IntN(201) - 100
		case 2:
			s[i] = int(r.Uint64())
		case 3:
			s[i] = i
		case 4:
			s[i] = n - i
		case 5:
			s[i] = []int{math.MinInt, math.MaxInt, 0, -1, 1}[r.IntN(5)]
		}
	}
	return s
}

// h12AllOps returns every operation with several parameter settings, and in panic mode.
func h12AllOps() []h12Op {
	var ops []h12Op
	for code := range len(h12Names) {
		for _, ab := range [][2]byte{{0, 0}, {3, 1}, {4, 7}, {1, 0x83}, {12, 0x8e}} {
			ops = append(ops, h12Op{byte(code), ab[0], ab[1]})
		}
	}
	return ops
}

// FuzzParOps drives the parallel operations and their sequential models with the same
// inputs: the input encodes the pool's workers, the grain, the slice and a sequence of
// operations (see h12Decode).
func FuzzParOps(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 3, 1})
	f.Add([]byte{3, 1, 0, 200, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9, 17, 5, 0x81, 21, 4, 2, 29, 1, 0x85})
	f.Add([]byte{2, 3, 1, 0x88, 0x13, 2, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 13, 1, 1, 14, 2, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, ops := h12Decode(data)
		h12RunOps(t, cfg, ops)
	})
}

// TestHostile12ParOpsTable runs every operation on the edge sizes around an explicit
// grain and around the automatic one, for pools of 1, 2 and 4 workers.
func TestHostile12ParOpsTable(t *testing.T) {
	const g = 64
	ops := h12AllOps()
	type shape struct {
		grain int
		sizes []int
	}
	shapes := []shape{
		{g, []int{0, 1, 2, g - 1, g, g + 1, 4999}},
		{0, []int{0, 1, 2, parMinGrain - 1, parMinGrain, parMinGrain + 1, 4999}},
		{1, []int{2, 3, 100}},
		{math.MaxInt, []int{1, 4999}},
	}
	for _, w := range []int{1, 2, 4} {
		for _, sh := range shapes {
			for _, n := range sh.sizes {
				if raceEnabled && n > 1000 && w != 2 {
					continue // the race detector's cost: the big sizes with one pool size
				}
				for mode := range byte(6) {
					if mode != 1 && (n > 100 || w != 2) {
						continue
					}
					t.Run(fmt.Sprintf("w%d/g%d/n%d/v%d", w, sh.grain, n, mode), func(t *testing.T) {
						h12RunOps(t, h12Cfg{w, sh.grain, h12Values(n, mode, uint64(n))}, ops)
					})
				}
			}
		}
	}
}
