package blitz

import (
	"cmp"
	"sync/atomic"
)

// MinFunc returns the first minimal element of s under cmp (as slices.MinFunc) and true, or
// the zero value and false for an empty s.
func MinFunc[T any](s []T, cmp func(a, b T) int, opts ...Option) (T, bool) {
	if cmp == nil {
		parNil("MinFunc", "cmp")
	}
	return parBestFunc(s, func(a, b T) bool { return cmp(b, a) < 0 }, opts)
}

// MaxFunc returns the first maximal element of s under cmp (as slices.MaxFunc) and true, or
// the zero value and false for an empty s.
func MaxFunc[T any](s []T, cmp func(a, b T) int, opts ...Option) (T, bool) {
	if cmp == nil {
		parNil("MaxFunc", "cmp")
	}
	return parBestFunc(s, func(a, b T) bool { return cmp(b, a) > 0 }, opts)
}

// parBestFunc returns the first element e such that no later element replaces it, where
// better(cur, x) reports that x strictly beats cur. Leaves return indices; combine keeps the
// left one unless the right one is strictly better, so the first best element wins.
func parBestFunc[T any](s []T, better func(cur, x T) bool, opts []Option) (T, bool) {
	if len(s) == 0 {
		var zero T
		return zero, false
	}
	leaf := func(lo, hi int) int {
		b := lo
		for i := lo + 1; i < hi; i++ {
			if better(s[b], s[i]) {
				b = i
			}
		}
		return b
	}
	i := parMapReduce(parResolve(len(s), parMinGrain, opts), len(s), 0, leaf, func(a, b int) int {
		if better(s[a], s[b]) {
			return b
		}
		return a
	})
	return s[i], true
}

type parKeyed[K any] struct {
	i int
	k K
}

// MinByKey returns the first element of s with the smallest key(element) (keys compared
// with cmp.Compare, so a NaN key is smallest) and true, or the zero value and false for an
// empty s. key is called exactly once per element.
func MinByKey[T any, K cmp.Ordered](s []T, key func(T) K, opts ...Option) (T, bool) {
	if key == nil {
		parNil("MinByKey", "key")
	}
	return parBestKey(s, key, -1, opts)
}

// MaxByKey returns the first element of s with the largest key(element) and true, or the
// zero value and false for an empty s. key is called exactly once per element.
func MaxByKey[T any, K cmp.Ordered](s []T, key func(T) K, opts ...Option) (T, bool) {
	if key == nil {
		parNil("MaxByKey", "key")
	}
	return parBestKey(s, key, +1, opts)
}

func parBestKey[T any, K cmp.Ordered](s []T, key func(T) K, sign int, opts []Option) (T, bool) {
	if len(s) == 0 {
		var zero T
		return zero, false
	}
	// better reports whether key k beats the best key b so far, in cmp.Compare order (a
	// NaN is smaller than every other value), written out so that it inlines: for floats
	// cmp.Compare's four NaN tests per call halve the speed of this loop.
	better := func(k, b K) bool { return k < b || (k != k && b == b) } // cmp.Less(k, b)
	if sign > 0 {
		better = func(k, b K) bool { return b < k || (b != b && k == k) } // cmp.Less(b, k)
	}
	leaf := func(lo, hi int) parKeyed[K] {
		bi, bk := lo, key(s[lo])
		w := s[lo+1 : hi]
		// The first test settles the common case (not better) in one comparison; it is
		// false for NaNs, which the second test orders as cmp.Compare does.
		if sign < 0 {
			for i, x := range w {
				if k := key(x); !(k >= bk) && (k < bk || (k != k && bk == bk)) {
					bi, bk = lo+1+i, k
				}
			}
		} else {
			for i, x := range w {
				if k := key(x); !(k <= bk) && (bk < k || (bk != bk && k == k)) {
					bi, bk = lo+1+i, k
				}
			}
		}
		return parKeyed[K]{bi, bk}
	}
	r := parMapReduce(parResolve(len(s), parMinGrain, opts), len(s), parKeyed[K]{}, leaf, func(a, b parKeyed[K]) parKeyed[K] {
		if better(b.k, a.k) {
			return b
		}
		return a
	})
	return s[r.i], true
}

// Count returns the number of elements of s for which pred is true.
func Count[T any](s []T, pred func(T) bool, opts ...Option) int {
	if pred == nil {
		parNil("Count", "pred")
	}
	return parMapReduce(parResolve(len(s), parMinGrain, opts), len(s), 0, func(lo, hi int) int {
		n := 0
		for _, v := range s[lo:hi] {
			if pred(v) {
				n++
			}
		}
		return n
	}, func(a, b int) int { return a + b })
}

// Any reports whether pred is true for some element of s. It stops all work at the first
// match found (see FindAny).
func Any[T any](s []T, pred func(T) bool, opts ...Option) bool {
	if pred == nil {
		parNil("Any", "pred")
	}
	return parFindPred(s, pred, findAny, opts) >= 0
}

// All reports whether pred is true for every element of s (true for an empty s). It stops
// all work at the first element for which pred is false.
func All[T any](s []T, pred func(T) bool, opts ...Option) bool {
	if pred == nil {
		parNil("All", "pred")
	}
	return parFindPred(s, func(v T) bool { return !pred(v) }, findAny, opts) < 0
}

// FindAny returns some element of s for which pred is true, its index and true, or the
// zero value, -1 and false. Which match is returned when there are several is unspecified:
// the first one any worker finds stops the others.
func FindAny[T any](s []T, pred func(T) bool, opts ...Option) (T, int, bool) {
	if pred == nil {
		parNil("FindAny", "pred")
	}
	return parFound(s, parFindPred(s, pred, findAny, opts))
}

// FindFirst returns the first element of s (lowest index) for which pred is true, its
// index and true, or the zero value, -1 and false. Work on ranges above a match already
// found is skipped, so a match near the start ends the call quickly: the first elements
// are checked on the caller's goroutine before the pool is involved.
func FindFirst[T any](s []T, pred func(T) bool, opts ...Option) (T, int, bool) {
	if pred == nil {
		parNil("FindFirst", "pred")
	}
	return parFound(s, parFindPred(s, pred, findFirst, opts))
}

// FindLast returns the last element of s (highest index) for which pred is true, its
// index and true, or the zero value, -1 and false.
func FindLast[T any](s []T, pred func(T) bool, opts ...Option) (T, int, bool) {
	if pred == nil {
		parNil("FindLast", "pred")
	}
	return parFound(s, parFindPred(s, pred, findLast, opts))
}

// Index returns the index of the first occurrence of v in s, or -1 (as slices.Index).
func Index[T comparable](s []T, v T, opts ...Option) int {
	return parFindEq(s, v, findFirst, opts)
}

// IndexAny returns the index of some occurrence of v in s, or -1: unlike Index it stops at
// whichever occurrence a worker finds first, so it is faster when v occurs several times.
func IndexAny[T comparable](s []T, v T, opts ...Option) int {
	return parFindEq(s, v, findAny, opts)
}

// LastIndex returns the index of the last occurrence of v in s, or -1.
func LastIndex[T comparable](s []T, v T, opts ...Option) int {
	return parFindEq(s, v, findLast, opts)
}

func parFound[T any](s []T, i int) (T, int, bool) {
	if i < 0 {
		var zero T
		return zero, -1, false
	}
	return s[i], i, true
}

type findMode uint8

const (
	findAny findMode = iota
	findFirst
	findLast
)

const (
	// findProbe elements at the start (FindLast: the end) are scanned on the caller's
	// goroutine before the pool is used: a match there costs no fork at all.
	findProbe = 1024
	// findBlock is how many elements a leaf scans between two checks of the shared state.
	findBlock = 512
)

func parFindPred[T any](s []T, pred func(T) bool, mode findMode, opts []Option) int {
	fwd := func(lo, hi int) int {
		for i := lo; i < hi; i++ {
			if pred(s[i]) {
				return i
			}
		}
		return -1
	}
	back := func(lo, hi int) int {
		for i := hi - 1; i >= lo; i-- {
			if pred(s[i]) {
				return i
			}
		}
		return -1
	}
	return parFindIndex(parResolve(len(s), parMinGrain, opts), len(s), mode, fwd, back)
}

func parFindEq[T comparable](s []T, v T, mode findMode, opts []Option) int {
	fwd := func(lo, hi int) int {
		for i, x := range s[lo:hi] {
			if x == v {
				return lo + i
			}
		}
		return -1
	}
	back := func(lo, hi int) int {
		w := s[lo:hi]
		for i := len(w) - 1; i >= 0; i-- {
			if w[i] == v {
				return lo + i
			}
		}
		return -1
	}
	return parFindIndex(parResolve(len(s), parMinGrainCheap, opts), len(s), mode, fwd, back)
}

// parFindState is shared by the leaves of one search. best is the match found so far:
// for findFirst the lowest (starts at n), for findLast the highest (starts at -1), for
// findAny the first one published (starts at -1). Ranges that cannot beat best are skipped
// at split points and between blocks inside leaves.
type parFindState struct {
	st   parState
	best atomic.Int64
	mode findMode
}

func (f *parFindState) skip(lo, hi int) bool {
	if f.st.stop.Load() {
		return true
	}
	switch f.mode {
	case findFirst:
		return int(f.best.Load()) < lo
	case findLast:
		return int(f.best.Load()) >= hi
	}
	return false
}

// found publishes match i. The CAS loops keep best monotonic when two leaves race: a
// higher index found later by another leaf must never overwrite a lower one (findFirst).
func (f *parFindState) found(i int) {
	switch f.mode {
	case findAny:
		f.best.CompareAndSwap(-1, int64(i))
		f.st.stop.Store(true)
	case findFirst:
		for {
			b := f.best.Load()
			if int64(i) >= b || f.best.CompareAndSwap(b, int64(i)) {
				return
			}
		}
	case findLast:
		for {
			b := f.best.Load()
			if int64(i) <= b || f.best.CompareAndSwap(b, int64(i)) {
				return
			}
		}
	}
}

func (f *parFindState) run(t *Task, lo, hi int, fwd, back func(lo, hi int) int) {
	if hi-lo > f.st.grain {
		if f.skip(lo, hi) {
			return
		}
		mid := int(uint(lo+hi) >> 1)
		left := func(t *Task) { f.run(t, lo, mid, fwd, back) }
		right := func(t *Task) { f.run(t, mid, hi, fwd, back) }
		if f.mode == findLast {
			// Search the high half first: it is the one that can make the low half
			// unnecessary.
			Join(t, right, left)
		} else {
			Join(t, left, right)
		}
		return
	}
	if f.skip(lo, hi) {
		return
	}
	f.st.leaf(lo, hi, func(lo, hi int) {
		if f.mode == findLast {
			for e := hi; e > lo; e -= findBlock {
				b := max(e-findBlock, lo)
				if f.skip(b, e) {
					return
				}
				if i := back(b, e); i >= 0 {
					f.found(i)
					return
				}
			}
			return
		}
		for b := lo; b < hi; {
			// b+findBlock may overflow when hi is near math.MaxInt (zero-size elements).
			e := b + min(findBlock, hi-b)
			if f.skip(b, e) {
				return
			}
			if i := fwd(b, e); i >= 0 {
				f.found(i)
				return
			}
			b = e
		}
	})
}

// parFindIndex is the search engine behind the Find, Index, Any and All functions. fwd
// returns the first match in [lo, hi) or -1, back the last one.
func parFindIndex(c parCall, n int, mode findMode, fwd, back func(lo, hi int) int) int {
	if n == 0 {
		return -1
	}
	if c.seq {
		if mode == findLast {
			return back(0, n)
		}
		return fwd(0, n)
	}
	probe := min(n, findProbe)
	lo, hi := 0, n
	if mode == findLast {
		if i := back(n-probe, n); i >= 0 {
			return i
		}
		hi = n - probe
	} else {
		if i := fwd(0, probe); i >= 0 {
			return i
		}
		lo = probe
	}
	if lo >= hi {
		return -1
	}
	f := &parFindState{mode: mode}
	f.st.grain = c.grain
	if mode == findFirst {
		f.best.Store(int64(n))
	} else {
		f.best.Store(-1)
	}
	c.pool.Call(func(t *Task) { f.run(t, lo, hi, fwd, back) })
	b := int(f.best.Load())
	if b >= n {
		return -1
	}
	return b
}
