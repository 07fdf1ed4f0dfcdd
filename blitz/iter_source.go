package blitz

import (
	"math"
	"strconv"
)

// Chunked is a slice viewed as consecutive chunks of a fixed size (the last one may be
// shorter), as returned by Chunks. Its methods and ReduceChunks process the chunks in
// parallel; one chunk is never split.
type Chunked[T any] struct {
	s    []T
	size int
}

// Chunks views s as chunks of size elements (the last one shorter if size does not divide
// len(s)), like slices.Chunk. It panics if size < 1, as slices.Chunk does.
func Chunks[T any](s []T, size int) Chunked[T] {
	if size < 1 {
		panic("blitz: Chunks: size " + strconv.Itoa(size) + " < 1")
	}
	return Chunked[T]{s, size}
}

// Len returns the number of chunks. The zero Chunked has none.
func (c Chunked[T]) Len() int {
	if c.size == 0 {
		return 0 // the zero value, not made by Chunks: an empty view
	}
	return ceilDiv(len(c.s), c.size)
}

// leafGrain is the automatic grain in chunks: leaves of at least parMinGrain elements.
func (c Chunked[T]) leafGrain() int { return max(1, parMinGrain/max(c.size, 1)) }

// Chunk returns chunk i (capacity clipped, so appending to it cannot overwrite chunk i+1).
// It panics if i is not in [0, Len()).
func (c Chunked[T]) Chunk(i int) []T {
	if uint(i) >= uint(c.Len()) {
		// Checked here, not left to the slice expression: i*size could wrap around to a
		// valid offset and return the wrong chunk.
		panic("blitz: Chunked.Chunk: index " + strconv.Itoa(i) + " out of range [0, " + strconv.Itoa(c.Len()) + ")")
	}
	lo := i * c.size // <= len(c.s)-1 for i < Len(): no overflow
	// lo+size may overflow for a huge size: compare with the room left instead.
	hi := len(c.s)
	if c.size < hi-lo {
		hi = lo + c.size
	}
	return c.s[lo:hi:hi]
}

// ceilDiv returns the ceiling of n/d for n >= 0 and d >= 1, without the overflow of
// (n+d-1)/d when n+d-1 exceeds math.MaxInt.
func ceilDiv(n, d int) int {
	q := n / d
	if q*d != n {
		q++
	}
	return q
}

// ForEach calls f(i, chunk) for every chunk in parallel. The grain (WithGrain) counts
// chunks; the automatic grain aims at leaves of at least a few thousand elements.
func (c Chunked[T]) ForEach(f func(i int, chunk []T), opts ...Option) {
	if f == nil {
		parNil("Chunked.ForEach", "f")
	}
	n := c.Len()
	parFor(parResolve(n, c.leafGrain(), opts), n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			f(i, c.Chunk(i))
		}
	})
}

// ReduceChunks maps every chunk of c with f and folds the results with combine in chunk
// order; it returns identity when there are no chunks. identity is not otherwise used
// (each leaf starts from f's value for its first chunk, and identity is never passed to
// combine), so it may be a map, a slice or a pointer.
func ReduceChunks[T, R any](c Chunked[T], identity R, f func(i int, chunk []T) R, combine func(a, b R) R, opts ...Option) R {
	if f == nil {
		parNil("ReduceChunks", "f")
	}
	if combine == nil {
		parNil("ReduceChunks", "combine")
	}
	n := c.Len()
	return parMapReduce(parResolve(n, c.leafGrain(), opts), n, identity, chunksReducer[T, R]{c, f, combine})
}

// chunksReducer is the reducer of ReduceChunks.
type chunksReducer[T, R any] struct {
	c    Chunked[T]
	f    func(i int, chunk []T) R
	comb func(a, b R) R
}

func (r chunksReducer[T, R]) leaf(lo, hi int) R {
	acc := r.f(lo, r.c.Chunk(lo))
	for i := lo + 1; i < hi; i++ {
		acc = r.comb(acc, r.f(i, r.c.Chunk(i)))
	}
	return acc
}

func (r chunksReducer[T, R]) combine(a, b R) R { return r.comb(a, b) }

// Zipped pairs two slices of the same length element by element, as returned by Zip.
type Zipped[A, B any] struct {
	a []A
	b []B
}

// Zip pairs a[i] with b[i]. It panics if len(a) != len(b).
func Zip[A, B any](a []A, b []B) Zipped[A, B] {
	if len(a) != len(b) {
		parLenMismatch("Zip", "a", "b", len(a), len(b))
	}
	return Zipped[A, B]{a, b}
}

// Len returns the number of pairs.
func (z Zipped[A, B]) Len() int { return len(z.a) }

// ForEach calls f(i, a[i], b[i]) for every index, in parallel.
func (z Zipped[A, B]) ForEach(f func(i int, a A, b B), opts ...Option) {
	if f == nil {
		parNil("Zipped.ForEach", "f")
	}
	parFor(parResolve(len(z.a), parMinGrain, opts), len(z.a), func(lo, hi int) {
		b := z.b[lo:hi]
		for i, x := range z.a[lo:hi] {
			f(lo+i, x, b[i])
		}
	})
}

// ZipMapReduce maps every pair with f and folds the results with combine in index order,
// each leaf starting from a copy of identity: identity must be a value type, or one that
// combine never modifies (see MapReduce); ZipMapReduceFunc takes a constructor instead.
func ZipMapReduce[A, B, R any](z Zipped[A, B], identity R, f func(a A, b B) R, combine func(x, y R) R, opts ...Option) R {
	if f == nil {
		parNil("ZipMapReduce", "f")
	}
	if combine == nil {
		parNil("ZipMapReduce", "combine")
	}
	return zipMapReduce(z, identity, nil, f, combine, opts)
}

// ZipMapReduceFunc is ZipMapReduce with an identity constructor, called once per leaf
// (and once for an empty z), for accumulators that combine modifies in place (see
// MapReduceFunc).
func ZipMapReduceFunc[A, B, R any](z Zipped[A, B], identity func() R, f func(a A, b B) R, combine func(x, y R) R, opts ...Option) R {
	if identity == nil {
		parNil("ZipMapReduceFunc", "identity")
	}
	if f == nil {
		parNil("ZipMapReduceFunc", "f")
	}
	if combine == nil {
		parNil("ZipMapReduceFunc", "combine")
	}
	var zero R
	return zipMapReduce(z, zero, identity, f, combine, opts)
}

func zipMapReduce[A, B, R any](z Zipped[A, B], id R, newID func() R, f func(a A, b B) R, combine func(x, y R) R, opts []Option) R {
	ident := parIdentity[R]{id, newID}
	if len(z.a) == 0 {
		return ident.get()
	}
	return parMapReduce(parResolve(len(z.a), parMinGrain, opts), len(z.a), *new(R), zipReducer[A, B, R]{z, ident, f, combine})
}

// zipReducer is the reducer of ZipMapReduce and ZipMapReduceFunc.
type zipReducer[A, B, R any] struct {
	z    Zipped[A, B]
	id   parIdentity[R]
	f    func(a A, b B) R
	comb func(x, y R) R
}

func (r zipReducer[A, B, R]) leaf(lo, hi int) R {
	acc := r.id.get()
	b := r.z.b[lo:hi]
	for i, x := range r.z.a[lo:hi] {
		acc = r.comb(acc, r.f(x, b[i]))
	}
	return acc
}

func (r zipReducer[A, B, R]) combine(x, y R) R { return r.comb(x, y) }

// ZipDot returns the dot product of the two slices of z (see Dot).
func ZipDot[T Number](z Zipped[T, T], opts ...Option) T { return Dot(z.a, z.b, opts...) }

// Chained is two slices seen as one sequence, a followed by b, as returned by Chain.
type Chained[T any] struct {
	a, b []T
}

// Chain returns a followed by b as one parallel source, without copying. It panics if
// len(a)+len(b) exceeds math.MaxInt (possible only for zero-size element types).
func Chain[T any](a, b []T) Chained[T] {
	if len(a) > math.MaxInt-len(b) {
		panic("blitz: Chain: len(a) + len(b) = " + strconv.Itoa(len(a)) + " + " + strconv.Itoa(len(b)) + " exceeds math.MaxInt")
	}
	return Chained[T]{a, b}
}

// Len returns len(a) + len(b).
func (c Chained[T]) Len() int { return len(c.a) + len(c.b) }

// At returns element i of the chain.
func (c Chained[T]) At(i int) T {
	if i < len(c.a) {
		return c.a[i]
	}
	return c.b[i-len(c.a)]
}

// span calls f on the pieces of [lo, hi) that lie in a and in b, with their chain index.
func (c Chained[T]) span(lo, hi int, f func(base int, s []T)) {
	na := len(c.a)
	if lo < na {
		f(lo, c.a[lo:min(hi, na)])
	}
	if hi > na {
		f(max(lo, na), c.b[max(lo, na)-na:hi-na])
	}
}

// ForEach calls f(i, v) for every element of the chain (i counts across both slices), in
// parallel.
func (c Chained[T]) ForEach(f func(i int, v T), opts ...Option) {
	if f == nil {
		parNil("Chained.ForEach", "f")
	}
	n := c.Len()
	parFor(parResolve(n, parMinGrain, opts), n, func(lo, hi int) {
		c.span(lo, hi, func(base int, s []T) {
			for i, v := range s {
				f(base+i, v)
			}
		})
	})
}

// ChainMapReduce maps every element of the chain with f and folds with combine in order,
// each leaf starting from a copy of identity: identity must be a value type, or one that
// combine never modifies (see MapReduce); ChainMapReduceFunc takes a constructor instead.
func ChainMapReduce[T, R any](c Chained[T], identity R, f func(T) R, combine func(a, b R) R, opts ...Option) R {
	if f == nil {
		parNil("ChainMapReduce", "f")
	}
	if combine == nil {
		parNil("ChainMapReduce", "combine")
	}
	return chainMapReduce(c, identity, nil, f, combine, opts)
}

// ChainMapReduceFunc is ChainMapReduce with an identity constructor, called once per leaf
// (and once for an empty chain), for accumulators that combine modifies in place (see
// MapReduceFunc).
func ChainMapReduceFunc[T, R any](c Chained[T], identity func() R, f func(T) R, combine func(a, b R) R, opts ...Option) R {
	if identity == nil {
		parNil("ChainMapReduceFunc", "identity")
	}
	if f == nil {
		parNil("ChainMapReduceFunc", "f")
	}
	if combine == nil {
		parNil("ChainMapReduceFunc", "combine")
	}
	var zero R
	return chainMapReduce(c, zero, identity, f, combine, opts)
}

func chainMapReduce[T, R any](c Chained[T], id R, newID func() R, f func(T) R, combine func(a, b R) R, opts []Option) R {
	ident := parIdentity[R]{id, newID}
	n := c.Len()
	if n == 0 {
		return ident.get()
	}
	return parMapReduce(parResolve(n, parMinGrain, opts), n, *new(R), chainReducer[T, R]{c, ident, f, combine})
}

// chainReducer is the reducer of ChainMapReduce and ChainMapReduceFunc.
type chainReducer[T, R any] struct {
	c    Chained[T]
	id   parIdentity[R]
	f    func(T) R
	comb func(a, b R) R
}

func (r chainReducer[T, R]) leaf(lo, hi int) R {
	acc := r.id.get()
	r.c.span(lo, hi, func(_ int, s []T) {
		for _, v := range s {
			acc = r.comb(acc, r.f(v))
		}
	})
	return acc
}

func (r chainReducer[T, R]) combine(a, b R) R { return r.comb(a, b) }

// IntRange is the half-open integer range [Lo, Hi) as a parallel source, as returned by
// Range.
type IntRange struct {
	Lo, Hi int
}

// Range returns the parallel source [lo, hi); it is empty if hi <= lo. It panics if the
// range holds more than math.MaxInt integers (hi - lo overflows int, as for
// Range(-1, math.MaxInt)): its length could not be counted in an int.
func Range(lo, hi int) IntRange {
	if hi > lo && hi-lo < 0 {
		panicRangeLen("Range", "hi - lo", lo, hi)
	}
	return IntRange{lo, hi}
}

// Len returns the number of integers in the range. It panics if there are more than
// math.MaxInt of them (an IntRange made without Range).
func (r IntRange) Len() int {
	if r.Hi <= r.Lo {
		return 0
	}
	n := r.Hi - r.Lo
	if n < 0 { // wrapped around: Hi - Lo > math.MaxInt
		panicRangeLen("IntRange.Len", "Hi - Lo", r.Lo, r.Hi)
	}
	return n
}

func panicRangeLen(fn, expr string, lo, hi int) {
	panic("blitz: " + fn + ": " + expr + " exceeds math.MaxInt (lo = " + strconv.Itoa(lo) + ", hi = " + strconv.Itoa(hi) + ")")
}

// ForEach calls f(i) for every i in the range, in parallel.
func (r IntRange) ForEach(f func(i int), opts ...Option) {
	if f == nil {
		parNil("IntRange.ForEach", "f")
	}
	n := r.Len()
	parFor(parResolve(n, parMinGrain, opts), n, func(lo, hi int) {
		for i := r.Lo + lo; i < r.Lo+hi; i++ {
			f(i)
		}
	})
}

// RangeReduce maps every i in r with f and folds with combine in order, each leaf starting
// from a copy of identity; identity is returned for an empty range. identity must be a
// value type, or one that combine never modifies (see MapReduce); RangeReduceFunc takes a
// constructor instead.
func RangeReduce[R any](r IntRange, identity R, f func(i int) R, combine func(a, b R) R, opts ...Option) R {
	if f == nil {
		parNil("RangeReduce", "f")
	}
	if combine == nil {
		parNil("RangeReduce", "combine")
	}
	return rangeReduce(r, identity, nil, f, combine, opts)
}

// RangeReduceFunc is RangeReduce with an identity constructor, called once per leaf (and
// once for an empty range), for accumulators that combine modifies in place (see
// MapReduceFunc).
func RangeReduceFunc[R any](r IntRange, identity func() R, f func(i int) R, combine func(a, b R) R, opts ...Option) R {
	if identity == nil {
		parNil("RangeReduceFunc", "identity")
	}
	if f == nil {
		parNil("RangeReduceFunc", "f")
	}
	if combine == nil {
		parNil("RangeReduceFunc", "combine")
	}
	var zero R
	return rangeReduce(r, zero, identity, f, combine, opts)
}

func rangeReduce[R any](r IntRange, id R, newID func() R, f func(i int) R, combine func(a, b R) R, opts []Option) R {
	ident := parIdentity[R]{id, newID}
	n := r.Len()
	if n == 0 {
		return ident.get()
	}
	return parMapReduce(parResolve(n, parMinGrain, opts), n, *new(R), rangeReducer[R]{r.Lo, ident, f, combine})
}

// rangeReducer is the reducer of RangeReduce and RangeReduceFunc: leaf [lo, hi) covers
// the integers [base+lo, base+hi).
type rangeReducer[R any] struct {
	base int
	id   parIdentity[R]
	f    func(i int) R
	comb func(a, b R) R
}

func (r rangeReducer[R]) leaf(lo, hi int) R {
	acc := r.id.get()
	for i := r.base + lo; i < r.base+hi; i++ {
		acc = r.comb(acc, r.f(i))
	}
	return acc
}

func (r rangeReducer[R]) combine(a, b R) R { return r.comb(a, b) }
