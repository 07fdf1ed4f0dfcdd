package blitz

import (
	"context"
	"sync"
)

// Reduce computes mapRange on disjoint subranges [lo, hi) covering [0, n) in parallel and
// folds the partial results with combine, in index order: combine(left, right) always
// receives the result of the lower subrange first, so combine only needs to be associative,
// not commutative. Reduce returns identity when n <= 0; identity is not otherwise used
// (mapRange produces each leaf's value, and identity is never passed to combine), so it
// may be a map, a slice or a pointer: it is only ever the result of an empty reduction. It is Rayon's fold-then-reduce over a
// range, with the fold written as one function per subrange.
//
// A panic in mapRange or in combine stops the remaining leaves from starting (the same
// panic fuse either way) and re-raises in the caller as described on For. A
// runtime.Goexit in either blows the fuse too: on a pool worker it re-raises in the
// caller as a *PanicError whose Value is ErrGoexit; on the caller's goroutine it ends
// that goroutine once the leaves running elsewhere have returned. The other reductions
// (TryReduce, MapReduce, MapReduceChunked, ReduceChunks, ZipMapReduce, ChainMapReduce,
// RangeReduce, MinFunc...) behave the same, and none runs a user function once it has
// returned or panicked.
func Reduce[R any](n int, identity R, mapRange func(lo, hi int) R, combine func(a, b R) R, opts ...Option) R {
	if mapRange == nil {
		parNil("Reduce", "mapRange")
	}
	if combine == nil {
		parNil("Reduce", "combine")
	}
	return parMapReduce(parResolve(n, parMinGrain, opts), n, identity, funcReducer[R]{mapRange, combine})
}

// MapReduce maps every element of s with mapFn and folds the results with combine, starting
// each leaf from identity: the sequential definition is
//
//	acc := identity
//	for _, v := range s { acc = combine(acc, mapFn(v)) }
//
// identity must be a neutral element of combine and combine must be associative; the fold
// keeps index order.
//
// identity is copied into every leaf, and the leaves run at the same time: it must be a
// value whose copies are independent (a number, a string, a struct of such), or one that
// combine never modifies. A map, a slice or a pointer that combine merges into, such as
// MapReduce(words, map[string]int{}, ..., mergeInto), would be shared by all the leaves
// (with maps the program dies with "concurrent map writes"): use MapReduceFunc, which
// makes a fresh identity for each leaf, as Rayon's reduce does.
func MapReduce[T, R any](s []T, identity R, mapFn func(T) R, combine func(a, b R) R, opts ...Option) R {
	if mapFn == nil {
		parNil("MapReduce", "mapFn")
	}
	if combine == nil {
		parNil("MapReduce", "combine")
	}
	return mapReduce(s, identity, nil, mapFn, combine, opts)
}

// MapReduceFunc is MapReduce with an identity constructor, for accumulators that combine
// modifies in place (maps, slices, pointers to structs): identity is called once per leaf
// (and once for an empty s) and must return a new, independent neutral element each time,
// so no two leaves ever share one:
//
//	counts := blitz.MapReduceFunc(words,
//		func() map[string]int { return map[string]int{} },
//		func(w string) map[string]int { return map[string]int{w: 1} },
//		func(a, b map[string]int) map[string]int { // merge b into a
//			for k, v := range b {
//				a[k] += v
//			}
//			return a
//		})
//
// combine may modify and return its left argument: a leaf's accumulator is never seen by
// another leaf, and each partial result is passed to combine exactly once. The fold keeps
// index order, so combine need only be associative. (Mapping every element to a map of
// its own costs an allocation each; the same merge with MapReduceChunked, whose leaves
// count a whole chunk into one map, allocates per chunk.)
func MapReduceFunc[T, R any](s []T, identity func() R, mapFn func(T) R, combine func(a, b R) R, opts ...Option) R {
	if identity == nil {
		parNil("MapReduceFunc", "identity")
	}
	if mapFn == nil {
		parNil("MapReduceFunc", "mapFn")
	}
	if combine == nil {
		parNil("MapReduceFunc", "combine")
	}
	var zero R
	return mapReduce(s, zero, identity, mapFn, combine, opts)
}

// parIdentity is the identity of the MapReduce forms: newID() when it is not nil (the
// Func forms), else a copy of id. A value rather than a closure returning id, which
// would be one more allocation per call.
type parIdentity[R any] struct {
	id    R
	newID func() R
}

func (p parIdentity[R]) get() R {
	if p.newID != nil {
		return p.newID()
	}
	return p.id
}

// mapReducer is the reducer of MapReduce and MapReduceFunc.
type mapReducer[T, R any] struct {
	s     []T
	id    parIdentity[R]
	mapFn func(T) R
	comb  func(a, b R) R
}

func (m mapReducer[T, R]) leaf(lo, hi int) R {
	acc := m.id.get()
	for _, v := range m.s[lo:hi] {
		acc = m.comb(acc, m.mapFn(v))
	}
	return acc
}

func (m mapReducer[T, R]) combine(a, b R) R { return m.comb(a, b) }

func mapReduce[T, R any](s []T, id R, newID func() R, mapFn func(T) R, combine func(a, b R) R, opts []Option) R {
	ident := parIdentity[R]{id, newID}
	n := len(s)
	if n == 0 {
		return ident.get()
	}
	return parMapReduce(parResolve(n, parMinGrain, opts), n, *new(R), mapReducer[T, R]{s, ident, mapFn, combine})
}

// MapReduceChunked is the chunked variant of MapReduce: mapChunk receives whole leaves
// (consecutive subslices of s, at most one grain long) and returns their partial result,
// which lets it use a fast inner loop; the partials are folded with combine in index order.
// It returns identity for an empty s; identity is not otherwise used (each leaf's value is
// what mapChunk returns, and identity is never passed to combine), so it may be a map, a
// slice or a pointer. A mapChunk that returns a new map (or slice) per chunk and a combine
// that merges the right one into the left is the cheap way to build a map in parallel.
func MapReduceChunked[T, R any](s []T, identity R, mapChunk func(chunk []T) R, combine func(a, b R) R, opts ...Option) R {
	if mapChunk == nil {
		parNil("MapReduceChunked", "mapChunk")
	}
	if combine == nil {
		parNil("MapReduceChunked", "combine")
	}
	return parMapReduce(parResolve(len(s), parMinGrain, opts), len(s), identity, chunkedReducer[T, R]{s, mapChunk, combine})
}

// chunkedReducer is the reducer of MapReduceChunked.
type chunkedReducer[T, R any] struct {
	s        []T
	mapChunk func(chunk []T) R
	comb     func(a, b R) R
}

func (m chunkedReducer[T, R]) leaf(lo, hi int) R { return m.mapChunk(m.s[lo:hi:hi]) }
func (m chunkedReducer[T, R]) combine(a, b R) R  { return m.comb(a, b) }

// parFirstErr records the first error reported by any leaf and trips the stop flag.
type parFirstErr struct {
	st   parState
	once sync.Once
	err  error
}

func (e *parFirstErr) set(err error) {
	e.once.Do(func() { e.err = err })
	e.st.stop.Store(true)
}

// TryFor is For whose body can fail: the first error (the first one to be reported, in
// time) stops the remaining leaves from starting and is returned once the leaves already
// running have returned. Leaves already running are not interrupted; poll nothing, just
// return the error. TryFor returns nil when every leaf succeeded.
func TryFor(n int, body func(lo, hi int) error, opts ...Option) error {
	if body == nil {
		parNil("TryFor", "body")
	}
	if n <= 0 {
		return nil
	}
	c := parResolve(n, parMinGrain, opts)
	if c.seq {
		return body(0, n)
	}
	fc := newForCall(c.grain, nil)
	fc.body = func(lo, hi int) {
		if err := body(lo, hi); err != nil {
			fc.e.set(err)
		}
	}
	fc.run(c.pool, n)
	return fc.e.err
}

// TryForEach calls f on every element of s in parallel until one returns an error: that first
// error (in time) stops the remaining work (leaves check the flag before every element) and
// is returned. With no error it returns nil after every element was visited.
func TryForEach[T any](s []T, f func(T) error, opts ...Option) error {
	if f == nil {
		parNil("TryForEach", "f")
	}
	n := len(s)
	if n == 0 {
		return nil
	}
	c := parResolve(n, parMinGrain, opts)
	if c.seq {
		for _, v := range s {
			if err := f(v); err != nil {
				return err
			}
		}
		return nil
	}
	fc := newForCall(c.grain, nil)
	fc.body = func(lo, hi int) {
		for _, v := range s[lo:hi] {
			if fc.st.stop.Load() {
				return
			}
			if err := f(v); err != nil {
				fc.e.set(err)
				return
			}
		}
	}
	fc.run(c.pool, n)
	return fc.e.err
}

// TryReduce is Reduce whose leaves can fail: the first error (in time) stops the remaining
// leaves and is returned with the zero R. Without an error it returns what Reduce would.
// As for Reduce, identity is only the result for n <= 0, so any type is safe.
func TryReduce[R any](n int, identity R, mapRange func(lo, hi int) (R, error), combine func(a, b R) R, opts ...Option) (R, error) {
	if mapRange == nil {
		parNil("TryReduce", "mapRange")
	}
	if combine == nil {
		parNil("TryReduce", "combine")
	}
	if n <= 0 {
		return identity, nil
	}
	c := parResolve(n, parMinGrain, opts)
	if c.seq {
		// The zero R with an error, as on the parallel path (where the partial results
		// are discarded), not whatever the failing leaf returned beside its error.
		r, err := mapRange(0, n)
		if err != nil {
			var zero R
			return zero, err
		}
		return r, nil
	}
	rc := newReduceCall(c.grain, tryReducer[R]{mapRange: mapRange, comb: combine})
	rc.red.e = &rc.e
	r := rc.run(c.pool, n)
	if rc.e.err != nil {
		var zero R
		return zero, rc.e.err
	}
	return r, nil
}

// tryReducer is the reducer of TryReduce: a failing leaf records its error in e (its
// reduceCall's) and trips the stop flag.
type tryReducer[R any] struct {
	mapRange func(lo, hi int) (R, error)
	comb     func(a, b R) R
	e        *parFirstErr
}

func (m tryReducer[R]) leaf(lo, hi int) R {
	v, err := m.mapRange(lo, hi)
	if err != nil {
		m.e.set(err)
	}
	return v
}

func (m tryReducer[R]) combine(a, b R) R { return m.comb(a, b) }

// TryForContext is TryFor with cancellation: body receives a context that is cancelled
// when ctx is, or as soon as any leaf returns an error, so long-running leaves can stop
// early. Leaves not yet started when that happens never start. It returns the first error
// a leaf returned, or else ctx's error (its cause, see context.Cause) if ctx ended before
// TryForContext returned (even if every leaf had run: small inputs, run as one leaf, and
// large ones behave the same), or else nil.
func TryForContext(ctx context.Context, n int, body func(ctx context.Context, lo, hi int) error, opts ...Option) error {
	if ctx == nil {
		parNil("TryForContext", "ctx")
	}
	if body == nil {
		parNil("TryForContext", "body")
	}
	if ctx.Err() != nil || n <= 0 {
		// The cause, not ctx.Err(), as when ctx ends during the call: a ctx made with
		// context.WithCancelCause (or WithDeadlineCause...) reports the same error
		// whether it ended before the call or while the leaves ran. For an unended ctx
		// (n <= 0) it is nil.
		return context.Cause(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := parResolve(n, parMinGrain, opts)
	if c.seq {
		// As on the parallel path: a ctx that ended while the body ran is reported even
		// if the body did not notice it.
		if err := body(ctx, 0, n); err != nil {
			return err
		}
		return context.Cause(ctx)
	}
	fc := newForCall(c.grain, nil)
	e := &fc.e
	// Cancelling the parent trips the stop flag too, so no new leaf starts; the callback
	// runs on its own goroutine and only sets the flag, which the leaves read atomically.
	stopWatch := context.AfterFunc(ctx, func() { e.st.stop.Store(true) })
	defer stopWatch()
	fc.body = func(lo, hi int) {
		// AfterFunc sets the flag asynchronously; this check makes a cancellation
		// visible to the next leaf of every worker at once.
		if ctx.Err() != nil {
			e.st.stop.Store(true)
			return
		}
		if err := body(ctx, lo, hi); err != nil {
			e.set(err)
			cancel()
		}
	}
	fc.run(c.pool, n)
	if e.err != nil { // written by a leaf; Call's return orders it before this read
		return e.err
	}
	return context.Cause(ctx)
}
