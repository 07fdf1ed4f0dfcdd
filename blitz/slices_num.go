package blitz

import (
	"cmp"
	"strconv"
)

// Number is the set of types Sum and Dot accept: every integer, float and complex type.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// Sum returns the sum of the elements of s (0 for an empty s). Integer sums wrap around on
// overflow exactly as the sequential loop does (addition modulo 2^n is associative). Float
// sums are computed in a different order from a sequential loop (per leaf, eight running
// sums, then a tree of partial sums), so they can differ from it by rounding, usually by
// less, since pairwise summation accumulates less error.
func Sum[T Number](s []T, opts ...Option) T {
	c := parResolve(len(s), parMinGrainCheap, opts)
	if c.seq {
		return sumLeaf(s)
	}
	return parMapReduce(c, len(s), 0, sumReducer[T]{s})
}

// sumReducer is the reducer of Sum.
type sumReducer[T Number] struct{ s []T }

func (r sumReducer[T]) leaf(lo, hi int) T { return sumLeaf(r.s[lo:hi]) }
func (sumReducer[T]) combine(a, b T) T    { return a + b }

// sumLeaf is the sequential kernel of Sum. Eight independent accumulators break the
// add-latency chain so the loop runs at load bandwidth instead of one add per cycle; the
// reslice to exactly 8 elements lets the compiler drop the bounds checks in the body
// (checked with -gcflags=-d=ssa/check_bce).
func sumLeaf[T Number](s []T) T {
	var s0, s1, s2, s3, s4, s5, s6, s7 T
	for len(s) >= 8 {
		v := s[:8:8]
		s0 += v[0]
		s1 += v[1]
		s2 += v[2]
		s3 += v[3]
		s4 += v[4]
		s5 += v[5]
		s6 += v[6]
		s7 += v[7]
		s = s[8:]
	}
	for _, x := range s {
		s0 += x
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// Dot returns the dot product sum(a[i]*b[i]). It panics if len(a) != len(b).
func Dot[T Number](a, b []T, opts ...Option) T {
	if len(a) != len(b) {
		parLenMismatch("Dot", "a", "b", len(a), len(b))
	}
	c := parResolve(len(a), parMinGrainCheap, opts)
	if c.seq {
		return dotLeaf(a, b)
	}
	return parMapReduce(c, len(a), 0, dotReducer[T]{a, b})
}

// dotReducer is the reducer of Dot.
type dotReducer[T Number] struct{ a, b []T }

func (r dotReducer[T]) leaf(lo, hi int) T { return dotLeaf(r.a[lo:hi], r.b[lo:hi]) }
func (dotReducer[T]) combine(x, y T) T    { return x + y }

func dotLeaf[T Number](a, b []T) T {
	b = b[:len(a)]
	var s0, s1, s2, s3 T
	for len(a) >= 4 && len(b) >= 4 {
		x, y := a[:4:4], b[:4:4]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		a, b = a[4:], b[4:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Min returns the minimal element of s and true, or the zero value and false for an empty s.
// For floats it follows the builtin min: if any element is a NaN the result is a NaN (as
// slices.Min).
func Min[T cmp.Ordered](s []T, opts ...Option) (T, bool) {
	if len(s) == 0 {
		var zero T
		return zero, false
	}
	c := parResolve(len(s), parMinGrainCheap, opts)
	if c.seq {
		return minLeaf(s), true
	}
	return parMapReduce(c, len(s), s[0], minReducer[T]{s}), true
}

// Max returns the maximal element of s and true, or the zero value and false for an empty s.
// NaNs propagate as in Min.
func Max[T cmp.Ordered](s []T, opts ...Option) (T, bool) {
	if len(s) == 0 {
		var zero T
		return zero, false
	}
	c := parResolve(len(s), parMinGrainCheap, opts)
	if c.seq {
		return maxLeaf(s), true
	}
	return parMapReduce(c, len(s), s[0], maxReducer[T]{s}), true
}

// minReducer and maxReducer are the reducers of Min and Max.
type (
	minReducer[T cmp.Ordered] struct{ s []T }
	maxReducer[T cmp.Ordered] struct{ s []T }
)

func (r minReducer[T]) leaf(lo, hi int) T { return minLeaf(r.s[lo:hi]) }
func (minReducer[T]) combine(a, b T) T    { return min(a, b) }
func (r maxReducer[T]) leaf(lo, hi int) T { return maxLeaf(r.s[lo:hi]) }
func (maxReducer[T]) combine(a, b T) T    { return max(a, b) }

func minLeaf[T cmp.Ordered](s []T) T {
	m0, m1, m2, m3 := s[0], s[0], s[0], s[0]
	for len(s) >= 4 {
		v := s[:4:4]
		m0 = min(m0, v[0])
		m1 = min(m1, v[1])
		m2 = min(m2, v[2])
		m3 = min(m3, v[3])
		s = s[4:]
	}
	for _, x := range s {
		m0 = min(m0, x)
	}
	return min(min(m0, m1), min(m2, m3))
}

func maxLeaf[T cmp.Ordered](s []T) T {
	m0, m1, m2, m3 := s[0], s[0], s[0], s[0]
	for len(s) >= 4 {
		v := s[:4:4]
		m0 = max(m0, v[0])
		m1 = max(m1, v[1])
		m2 = max(m2, v[2])
		m3 = max(m3, v[3])
		s = s[4:]
	}
	for _, x := range s {
		m0 = max(m0, x)
	}
	return max(max(m0, m1), max(m2, m3))
}

// parLenMismatch panics with a message naming both arguments.
func parLenMismatch(fn, a, b string, la, lb int) {
	panic("blitz: " + fn + ": len(" + a + ") = " + strconv.Itoa(la) + " != len(" + b + ") = " + strconv.Itoa(lb))
}
