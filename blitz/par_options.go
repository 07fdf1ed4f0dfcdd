package blitz

import (
	"fmt"
	"sync/atomic"
)

// Parallel algorithms: how the files fit together.
//
// The loops, reductions, slice functions and sorts (files par_*.go, slices_*.go, iter_*.go,
// sort*.go) are a layer on top of the pool's Call and Join, in the manner of Rayon's
// parallel iterators (without the iterator adaptors: each function is one whole loop):
//
//   - Every call resolves its options once (parResolve): the pool (WithPool, else Default),
//     the grain (WithGrain, else about eight leaves per worker, but never below a minimum
//     that keeps a leaf worth a fork) and whether the input is small enough to run on the
//     caller's goroutine without touching the pool at all.
//   - parRun/parReduce are the fork-join loop and reduction (Rayon's bridge of a producer
//     and a consumer, without the adaptors): split [lo, hi) in halves,
//     the left half on this worker, the right half stealable, leaves of at most one grain.
//     Reductions combine in index order, so combine need only be associative.
//   - One parState per call carries the stop flag, which is both the early-exit flag
//     (ForUntil, Find*, Any, All, Try*) and the panic fuse: it is checked at every split and
//     before every leaf (and inside the built-in leaves), and a leaf (or a reduction's
//     combine) that panics sets it before unwinding, so siblings stop starting work while the pool carries the panic
//     (as *PanicError with the child's stack) back to the caller.
//   - Outputs whose positions depend on earlier elements (Filter, Partition, Flatten) use
//     two passes over fixed chunks: count, prefix-sum, write.
//   - Sorts: radix for integer and float keys (sort_radix.go), pattern-defeating quicksort
//     with parallel partitions for the rest (sort_pdq.go), merge sort with parallel merges
//     for stability (sort_stable.go).
//
// Go differs from Rayon in one visible way: Rayon's closures are generic parameters, so the
// body is inlined into the leaf; Go passes func values, and a leaf calls the user's
// function indirectly once per element (a few ns). The built-in leaves (Sum,
// Min, Max, Dot, Index, Fill, the sorts' kernels) avoid that, and the chunked variants
// (MapReduceChunked, Chunked, For itself) give the user's code whole ranges.

// Option configures one call of a parallel loop, reduction, slice function or sort.
//
// Every parallel function takes a trailing opts ...Option, so the same function runs on the
// default pool or on an explicit one, with the automatic grain or a chosen one:
//
//	blitz.Sum(s)                                  // default pool, automatic grain
//	blitz.Sum(s, blitz.WithPool(p))               // explicit *Pool
//	blitz.ForEach(s, f, blitz.WithGrain(1))       // one element per leaf: expensive f
//
// Option is a small value type (not a closure), so passing options does not allocate; the
// variadic slice does not escape. Later options override earlier ones.
type Option struct {
	pool  *Pool
	grain int
}

// WithPool runs the call on p instead of the default pool (Default). A nil p means the
// default pool. Once p is closed (see Pool.Close), the call panics with ErrClosed, as
// Pool.Call does, whatever the size of its input: small inputs, which run on the
// caller's goroutine without entering the pool, included. (An empty input may return
// at once without looking at the pool.) The default pool cannot be closed.
func WithPool(p *Pool) Option { return Option{pool: p} }

// WithGrain sets the leaf size: ranges of at most n elements run sequentially inside one
// task and are never split further. It overrides the automatic grain, which splits the input
// into about eight leaves per worker but never below a minimum that keeps a leaf worth a
// fork (parMinGrain elements for user functions, more for the built-in cheap leaves such
// as Sum). Use a small grain (even 1) when each element is expensive. WithGrain panics if
// n < 1.
func WithGrain(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("blitz: WithGrain: grain %d < 1", n))
	}
	return Option{grain: n}
}

const (
	// parMinGrain is the smallest automatic leaf for calls that run a user function per
	// element: a fork, steal and join through the closure API costs about a microsecond, so a
	// leaf of cheap per-element work should be at least that long.
	parMinGrain = 1024
	// parMinGrainCheap is the smallest automatic leaf for the built-in leaves that touch one
	// word per element in a few cycles (Sum, Min, Count of a comparable value, Fill...).
	parMinGrainCheap = 16384
	// parLeavesPerWorker is how many leaves the automatic grain aims for per worker: more
	// than one so that a worker slowed down by the (shared) machine is balanced by stealing.
	parLeavesPerWorker = 8
)

// parCall is the resolved configuration of one parallel call.
type parCall struct {
	pool    *Pool
	grain   int  // leaf size (>= 1)
	workers int  // pool's worker count
	seq     bool // run sequentially on the caller's goroutine
}

// parResolve resolves opts for an input of n elements whose automatic leaf must be at least
// minGrain elements.
func parResolve(n, minGrain int, opts []Option) parCall {
	var c parCall
	for i := range opts {
		if opts[i].pool != nil {
			c.pool = opts[i].pool
		}
		if opts[i].grain > 0 {
			c.grain = opts[i].grain
		}
	}
	if c.pool == nil {
		c.pool = Default()
	}
	c.pool.checkOpen() // a closed pool fails the same way whatever n is
	c.workers = c.pool.NumWorkers()
	if c.grain == 0 {
		// ceilDiv: n + leaves - 1 would overflow for n near math.MaxInt.
		c.grain = max(ceilDiv(max(n, 0), c.workers*parLeavesPerWorker), minGrain)
	}
	// Even a one-worker pool runs in parallel: Pool.Call makes the calling goroutine a
	// guest worker beside the pool's workers.
	c.seq = n <= c.grain
	return c
}

// parState is shared by all leaves of one parallel call. stop is both the early-exit flag
// and the panic fuse: it is checked at every split point and before every leaf, and inside
// the built-in leaves every few thousand elements, so once it is set no new work starts.
type parState struct {
	stop  atomic.Bool
	grain int
}

// parRun runs leaf over [lo, hi) split in halves down to the grain. The left half runs on
// the current worker and the right half is offered to thieves, so leaves start roughly in
// index order (FindFirst relies on that for a quick exit).
func (st *parState) parRun(t *Task, lo, hi int, leaf func(lo, hi int)) {
	if hi-lo > st.grain {
		if st.stop.Load() {
			return
		}
		mid := int(uint(lo+hi) >> 1)
		Join(t,
			func(t *Task) { st.parRun(t, lo, mid, leaf) },
			func(t *Task) { st.parRun(t, mid, hi, leaf) })
		return
	}
	if st.stop.Load() {
		return
	}
	st.leaf(lo, hi, leaf)
}

// leaf runs one leaf and blows the fuse if it panics. It deliberately does not recover: the
// panic keeps unwinding with the user's frames on the stack, so the pool's recover (which
// wraps it in *PanicError) records the child's stack, while the fuse makes the siblings stop
// starting new leaves before the joiner re-raises.
func (st *parState) leaf(lo, hi int, leaf func(lo, hi int)) {
	ok := false
	defer func() {
		if !ok {
			st.stop.Store(true)
		}
	}()
	leaf(lo, hi)
	ok = true
}

// guard blows the fuse if the task it is deferred in did not finish (*ok still false), that
// is, if it is unwinding from a panic. Deferred as `ok := false; defer st.guard(&ok); ...;
// ok = true`, it lets the panic continue with the user's frames on the stack.
func (st *parState) guard(ok *bool) {
	if !*ok {
		st.stop.Store(true)
	}
}

// parReduce is parRun for leaves that return a value. After the stop flag is set the
// result is discarded by the caller (error or panic), so stopped branches return the zero
// value without calling combine.
//
// combine is user code too (Reduce's combine, MinFunc's cmp...): a panic or Goexit in it
// blows the fuse exactly as one in a leaf does, so the sibling subtrees that Join runs or
// waits for after the failure start no more leaves. One guard per call covers both, a
// defer on the same terms as parState.leaf's.
func parReduce[R any](t *Task, st *parState, lo, hi int, leaf func(lo, hi int) R, combine func(a, b R) R) (r R) {
	if st.stop.Load() {
		return r
	}
	ok := false
	defer func() {
		if !ok {
			st.stop.Store(true)
		}
	}()
	if hi-lo > st.grain {
		mid := int(uint(lo+hi) >> 1)
		a, b := Join2(t,
			func(t *Task) R { return parReduce(t, st, lo, mid, leaf, combine) },
			func(t *Task) R { return parReduce(t, st, mid, hi, leaf, combine) })
		if !st.stop.Load() {
			r = combine(a, b)
		}
	} else {
		r = leaf(lo, hi)
	}
	ok = true
	return r
}

// parFor runs leaf over [0, n) with the resolved call c: sequentially on the caller's
// goroutine for small inputs, else on the pool.
func parFor(c parCall, n int, leaf func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if c.seq {
		leaf(0, n)
		return
	}
	st := &parState{grain: c.grain}
	c.pool.Call(func(t *Task) { st.parRun(t, 0, n, leaf) })
}

// parMapReduce is parFor with a result; identity is the result for n == 0.
func parMapReduce[R any](c parCall, n int, identity R, leaf func(lo, hi int) R, combine func(a, b R) R) R {
	if n <= 0 {
		return identity
	}
	if c.seq {
		return leaf(0, n)
	}
	st := &parState{grain: c.grain}
	return Call(c.pool, func(t *Task) R { return parReduce(t, st, 0, n, leaf, combine) })
}

// parNil panics with a message naming a nil function argument, as package slices would
// report a nil function (by a nil dereference) but clearer.
func parNil(fn, arg string) {
	panic("blitz: " + fn + ": " + arg + " is nil")
}
