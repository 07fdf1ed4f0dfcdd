package blitz

import (
	"fmt"
	"sync"
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
//   - forRun/reduceRun are the fork-join loop and reduction (Rayon's bridge of a producer
//     and a consumer, without the adaptors): split [lo, hi) in halves,
//     the left half on this worker, the right half stealable, leaves of at most one grain.
//     Reductions combine in index order, so combine need only be associative. Their forks
//     allocate nothing (see forCall): a call allocates its shared state once.
//   - One parState per call (in its forCall, reduceCall or parFindState) carries the stop flag, which is both the early-exit flag
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
// variadic slice does not escape. Later options override earlier ones (except
// WithPool(nil), which sets nothing: see WithPool).
type Option struct {
	pool  *Pool
	grain int
}

// WithPool runs the call on p instead of the default pool (Default). A nil p means the
// default pool in the sense of "no pool chosen": WithPool(nil) is the same as no WithPool
// at all, so it does not override an earlier WithPool(p) in the same call (to switch back
// to the default pool explicitly, pass WithPool(Default())). Once p is closed (see Pool.Close), the call panics with ErrClosed, as
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

// The fork-join trees of the loops and reductions fork with Jobs, not with the closure
// Join: a closure that captures the range and the call's state escapes to the heap at
// every fork (Go's escape analysis is static: a func value stored in a frame that another
// worker may run escapes), which cost 1 allocation per fork for the loops and 3 for the
// reductions (the two closures of Join2 and the results they write). Instead, everything a
// call's leaves share lives in one struct allocated once per call (forCall, reduceCall,
// parFindState), and a fork's input is a small value, {*call, lo, hi}, copied into a
// frame of the Task's slab (job.go): zero allocations per fork. The struct cannot live on
// the caller's goroutine stack, since the frames that point to it are on the heap and Go
// moves stacks, so it is the call's one allocation; the reductions' leaves and combines
// are methods of a small value type (a reducer) stored in it by value, rather than
// closures, so that they allocate nothing more.
//
// A panic (or runtime.Goexit) in the half run on the forking goroutine skips the join of
// the forked half: the pushed frame is left on the Task's frame stack, and the boundary
// that runs the work (Pool.Call, or the thief's execute) unwinds it, taking it back if
// nobody started it and waiting for the thief otherwise, as with any Job. The deferred
// guards in between only set the stop flag first, so the forked half, if a thief runs it,
// starts no more leaves.

// forCall is the state of one parallel loop shared by all its forks: the stop flag (st,
// usually &e.st), the body, and the first error of the Try forms.
type forCall struct {
	st   *parState
	body func(lo, hi int)
	e    parFirstErr
}

// forSpan is the input of one fork of a loop: the range [lo, hi) of call c.
type forSpan struct {
	c      *forCall
	lo, hi int
}

// forJob forks the halves of every loop (the slab key of the type pair [forSpan, Unit]).
var forJob Job[forSpan, Unit]

// newForCall returns the state of a loop with the given grain and body, whose stop flag
// is its own.
func newForCall(grain int, body func(lo, hi int)) *forCall {
	fc := &forCall{body: body}
	fc.e.st.grain = grain
	fc.st = &fc.e.st
	return fc
}

// run runs the loop over [0, n) on pool p.
func (fc *forCall) run(p *Pool, n int) {
	p.Call(func(t *Task) { forRun(t, forSpan{fc, 0, n}) })
}

// forRun runs the body over sp's range split in halves down to the grain. The left half
// runs on the current worker and the right half is offered to thieves, so leaves start
// roughly in index order (FindFirst relies on that for a quick exit).
func forRun(t *Task, sp forSpan) (u Unit) {
	c := sp.c
	st := c.st
	lo, hi := sp.lo, sp.hi
	for hi-lo > st.grain {
		if st.stop.Load() {
			return u
		}
		mid := int(uint(lo+hi) >> 1)
		right := forSpan{c, mid, hi}
		f := forJob.Fork(t, forRun, right)
		forRun(t, forSpan{c, lo, mid})
		if _, stolen := f.Stolen(t); stolen {
			return u
		}
		lo = mid // not stolen: run the right half here, as the next iteration
	}
	if st.stop.Load() {
		return u
	}
	st.leaf(lo, hi, c.body)
	return u
}

// leaf runs one leaf and blows the fuse if it panics. It deliberately does not recover: the
// panic keeps unwinding with the user's frames on the stack, so the pool's recover (which
// wraps it in *PanicError) records the child's stack, while the fuse makes the siblings stop
// starting new leaves before the joiner re-raises.
func (st *parState) leaf(lo, hi int, leaf func(lo, hi int)) {
	ok := false
	defer st.guard(&ok)
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

// reducer is the leaf and the combine of one reduction: a small value type holding the
// call's inputs (the slice, the user's functions), stored by value in the call's
// reduceCall, so that a reduction allocates nothing per fork and no closure per call.
// leaf returns the partial result of [lo, hi); combine folds the partial results of two
// adjacent ranges, the lower one first.
type reducer[R any] interface {
	leaf(lo, hi int) R
	combine(a, b R) R
}

// reduceCall is the state of one reduction shared by all its forks: the stop flag (st,
// usually &e.st), the reducer, the first error of TryReduce, and the Job its forks use.
type reduceCall[R any, L reducer[R]] struct {
	st  *parState
	red L
	e   parFirstErr
	pj  *parJob[reduceSpan[R, L], R]
}

// parJob is the Job and the function of the forks of one generic fork-join tree
// (reduceRun[R, L], findRun[L]), made once per instantiation and kept in parJobs. The
// function value cannot simply be taken at each call: the value of a generic function
// taken inside generic code is a closure over its type dictionary, allocated each time
// (and it escapes, into the frames).
type parJob[In, Out any] struct {
	job Job[In, Out]
	fn  func(t *Task, in In) Out
}

// parJobs maps any((*In)(nil)) to the *parJob[In, Out] of the tree whose forks take In
// (each tree has its own input type).
var parJobs sync.Map

// loadParJob returns the parJob of the tree whose forks take In, or nil before
// storeParJob made it.
func loadParJob[In, Out any]() *parJob[In, Out] {
	if v, ok := parJobs.Load(any((*In)(nil))); ok {
		return v.(*parJob[In, Out])
	}
	return nil
}

// storeParJob makes the parJob of the tree whose forks take In and run fn (racing first
// calls keep the first one made).
func storeParJob[In, Out any](fn func(t *Task, in In) Out) *parJob[In, Out] {
	v, _ := parJobs.LoadOrStore(any((*In)(nil)), &parJob[In, Out]{fn: fn})
	return v.(*parJob[In, Out])
}

// reduceSpan is the input of one fork of a reduction: the range [lo, hi) of call c.
type reduceSpan[R any, L reducer[R]] struct {
	c      *reduceCall[R, L]
	lo, hi int
}

// newReduceCall returns the state of a reduction with the given grain and reducer, whose
// stop flag is its own.
func newReduceCall[R any, L reducer[R]](grain int, red L) *reduceCall[R, L] {
	pj := loadParJob[reduceSpan[R, L], R]()
	if pj == nil {
		pj = storeParJob(reduceRun[R, L])
	}
	rc := &reduceCall[R, L]{red: red, pj: pj}
	rc.e.st.grain = grain
	rc.st = &rc.e.st
	return rc
}

// run runs the reduction over [0, n) on pool p.
func (rc *reduceCall[R, L]) run(p *Pool, n int) R {
	return Call(p, func(t *Task) R { return reduceRun(t, reduceSpan[R, L]{rc, 0, n}) })
}

// reduceRun is forRun for leaves that return a value. After the stop flag is set the
// result is discarded by the caller (error or panic), so stopped branches return the zero
// value without calling combine.
//
// combine is user code too (Reduce's combine, MinFunc's cmp...): a panic or Goexit in it
// blows the fuse exactly as one in a leaf does, so the sibling subtrees that are still
// running or waiting start no more leaves. One guard per node covers both, a defer on the
// same terms as parState.leaf's.
func reduceRun[R any, L reducer[R]](t *Task, sp reduceSpan[R, L]) (r R) {
	c := sp.c
	st := c.st
	if st.stop.Load() {
		return r
	}
	ok := false
	defer st.guard(&ok)
	if sp.hi-sp.lo > st.grain {
		mid := int(uint(sp.lo+sp.hi) >> 1)
		right := reduceSpan[R, L]{c, mid, sp.hi}
		f := c.pj.job.Fork(t, c.pj.fn, right)
		a := reduceRun(t, reduceSpan[R, L]{c, sp.lo, mid})
		b, stolen := f.Stolen(t)
		if !stolen {
			b = reduceRun(t, right)
		}
		if !st.stop.Load() {
			r = c.red.combine(a, b)
		}
	} else {
		r = c.red.leaf(sp.lo, sp.hi)
	}
	ok = true
	return r
}

// funcReducer is the reducer of a leaf and a combine given as functions (Reduce).
type funcReducer[R any] struct {
	mapRange func(lo, hi int) R
	comb     func(a, b R) R
}

func (f funcReducer[R]) leaf(lo, hi int) R { return f.mapRange(lo, hi) }
func (f funcReducer[R]) combine(a, b R) R  { return f.comb(a, b) }

// parReduce runs the reduction of leaf and combine over [lo, hi) on t, with st's stop
// flag (see reduceRun).
func parReduce[R any](t *Task, st *parState, lo, hi int, leaf func(lo, hi int) R, combine func(a, b R) R) R {
	rc := newReduceCall(st.grain, funcReducer[R]{leaf, combine})
	rc.st = st
	return reduceRun(t, reduceSpan[R, funcReducer[R]]{rc, lo, hi})
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
	newForCall(c.grain, leaf).run(c.pool, n)
}

// parMapReduce is parFor with a result; identity is the result for n == 0.
func parMapReduce[R any, L reducer[R]](c parCall, n int, identity R, red L) R {
	if n <= 0 {
		return identity
	}
	if c.seq {
		return red.leaf(0, n)
	}
	return newReduceCall(c.grain, red).run(c.pool, n)
}

// parNil panics with a message naming a nil function argument, as package slices would
// report a nil function (by a nil dereference) but clearer.
func parNil(fn, arg string) {
	panic("blitz: " + fn + ": " + arg + " is nil")
}
