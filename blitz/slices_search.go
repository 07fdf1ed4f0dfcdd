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
	return parBestFunc(s, cmp, false, opts)
}

// MaxFunc returns the first maximal element of s under cmp (as slices.MaxFunc) and true, or
// the zero value and false for an empty s.
func MaxFunc[T any](s []T, cmp func(a, b T) int, opts ...Option) (T, bool) {
	if cmp == nil {
		parNil("MaxFunc", "cmp")
	}
	return parBestFunc(s, cmp, true, opts)
}

// parBestFunc returns the first element e such that no later element replaces it, where
// x strictly beats cur if cmp(x, cur) < 0 (or > 0 with max). Leaves return indices;
// combine keeps the left one unless the right one is strictly better, so the first best
// element wins.
func parBestFunc[T any](s []T, cmp func(a, b T) int, max bool, opts []Option) (T, bool) {
	if len(s) == 0 {
		var zero T
		return zero, false
	}
	i := parMapReduce(parResolve(len(s), parMinGrain, opts), len(s), 0, bestFuncReducer[T]{s, cmp, max})
	return s[i], true
}

// bestFuncReducer is the reducer of MinFunc and MaxFunc.
type bestFuncReducer[T any] struct {
	s   []T
	cmp func(a, b T) int
	max bool
}

// better reports whether x strictly beats cur.
func (r bestFuncReducer[T]) better(cur, x T) bool {
	if r.max {
		return r.cmp(x, cur) > 0
	}
	return r.cmp(x, cur) < 0
}

func (r bestFuncReducer[T]) leaf(lo, hi int) int {
	b := lo
	for i := lo + 1; i < hi; i++ {
		if r.better(r.s[b], r.s[i]) {
			b = i
		}
	}
	return b
}

func (r bestFuncReducer[T]) combine(a, b int) int {
	if r.better(r.s[a], r.s[b]) {
		return b
	}
	return a
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
	r := parMapReduce(parResolve(len(s), parMinGrain, opts), len(s), parKeyed[K]{}, bestKeyReducer[T, K]{s, key, sign})
	return s[r.i], true
}

// bestKeyReducer is the reducer of MinByKey (sign < 0) and MaxByKey (sign > 0).
type bestKeyReducer[T any, K cmp.Ordered] struct {
	s    []T
	key  func(T) K
	sign int
}

func (r bestKeyReducer[T, K]) leaf(lo, hi int) parKeyed[K] {
	s, key := r.s, r.key
	bi, bk := lo, key(s[lo])
	w := s[lo+1 : hi]
	// The first test settles the common case (not better) in one comparison; it is
	// false for NaNs, which the second test orders as cmp.Compare does.
	if r.sign < 0 {
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

// combine keeps a unless b's key beats it, in cmp.Compare order (a NaN is smaller than
// every other value), written out: for floats cmp.Compare's four NaN tests per call halve
// the speed.
func (r bestKeyReducer[T, K]) combine(a, b parKeyed[K]) parKeyed[K] {
	var better bool
	if r.sign < 0 {
		better = b.k < a.k || (b.k != b.k && a.k == a.k) // cmp.Less(b.k, a.k)
	} else {
		better = a.k < b.k || (a.k != a.k && b.k == b.k) // cmp.Less(a.k, b.k)
	}
	if better {
		return b
	}
	return a
}

// Count returns the number of elements of s for which pred is true.
func Count[T any](s []T, pred func(T) bool, opts ...Option) int {
	if pred == nil {
		parNil("Count", "pred")
	}
	return parMapReduce(parResolve(len(s), parMinGrain, opts), len(s), 0, countReducer[T]{s, pred})
}

// countReducer is the reducer of Count.
type countReducer[T any] struct {
	s    []T
	pred func(T) bool
}

func (r countReducer[T]) leaf(lo, hi int) int {
	n := 0
	for _, v := range r.s[lo:hi] {
		if r.pred(v) {
			n++
		}
	}
	return n
}

func (countReducer[T]) combine(a, b int) int { return a + b }

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
	return parFindIndex(parResolve(len(s), parMinGrain, opts), len(s), findAny, notSearcher[T]{s, pred}) < 0
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

// searcher is the scan of one search: fwd returns the first match in [lo, hi) or -1, back
// the last one. Like reducer, a small value type stored in the call's parFindState, so
// that a search allocates nothing per fork and no closure per call.
type searcher interface {
	fwd(lo, hi int) int
	back(lo, hi int) int
}

// predSearcher is the searcher of the Find functions, Any and All.
type predSearcher[T any] struct {
	s    []T
	pred func(T) bool
}

func (p predSearcher[T]) fwd(lo, hi int) int {
	for i := lo; i < hi; i++ {
		if p.pred(p.s[i]) {
			return i
		}
	}
	return -1
}

func (p predSearcher[T]) back(lo, hi int) int {
	for i := hi - 1; i >= lo; i-- {
		if p.pred(p.s[i]) {
			return i
		}
	}
	return -1
}

// notSearcher is the searcher of All: the elements for which pred is false.
type notSearcher[T any] struct {
	s    []T
	pred func(T) bool
}

func (p notSearcher[T]) fwd(lo, hi int) int {
	for i := lo; i < hi; i++ {
		if !p.pred(p.s[i]) {
			return i
		}
	}
	return -1
}

func (p notSearcher[T]) back(lo, hi int) int {
	for i := hi - 1; i >= lo; i-- {
		if !p.pred(p.s[i]) {
			return i
		}
	}
	return -1
}

// eqSearcher is the searcher of Index, IndexAny and LastIndex.
type eqSearcher[T comparable] struct {
	s []T
	v T
}

func (p eqSearcher[T]) fwd(lo, hi int) int {
	for i, x := range p.s[lo:hi] {
		if x == p.v {
			return lo + i
		}
	}
	return -1
}

func (p eqSearcher[T]) back(lo, hi int) int {
	w := p.s[lo:hi]
	for i := len(w) - 1; i >= 0; i-- {
		if w[i] == p.v {
			return lo + i
		}
	}
	return -1
}

// funcSearcher is a searcher given as functions (Scatter's check of its indices).
type funcSearcher struct {
	f, b func(lo, hi int) int
}

func (p funcSearcher) fwd(lo, hi int) int  { return p.f(lo, hi) }
func (p funcSearcher) back(lo, hi int) int { return p.b(lo, hi) }

func parFindPred[T any](s []T, pred func(T) bool, mode findMode, opts []Option) int {
	return parFindIndex(parResolve(len(s), parMinGrain, opts), len(s), mode, predSearcher[T]{s, pred})
}

func parFindEq[T comparable](s []T, v T, mode findMode, opts []Option) int {
	return parFindIndex(parResolve(len(s), parMinGrainCheap, opts), len(s), mode, eqSearcher[T]{s, v})
}

// parFindState is shared by the leaves of one search. best is the match found so far:
// for findFirst the lowest (starts at n), for findLast the highest (starts at -1), for
// findAny the first one published (starts at -1). Ranges that cannot beat best are skipped
// at split points and between blocks inside leaves.
type parFindState[L searcher] struct {
	st   parState
	best atomic.Int64
	mode findMode
	srch L
	pj   *parJob[findSpan[L], Unit]
}

// findSpan is the input of one fork of a search: the range [lo, hi) of search f.
type findSpan[L searcher] struct {
	f      *parFindState[L]
	lo, hi int
}

func (f *parFindState[L]) skip(lo, hi int) bool {
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
func (f *parFindState[L]) found(i int) {
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

// findRun searches sp's range split in halves down to the grain (see forRun). For
// findLast the high half is searched here and the low half forked: the high half is the
// one that can make the low half unnecessary.
func findRun[L searcher](t *Task, sp findSpan[L]) (u Unit) {
	f := sp.f
	lo, hi := sp.lo, sp.hi
	for hi-lo > f.st.grain {
		if f.skip(lo, hi) {
			return u
		}
		mid := int(uint(lo+hi) >> 1)
		here, fork := findSpan[L]{f, lo, mid}, findSpan[L]{f, mid, hi}
		if f.mode == findLast {
			here, fork = fork, here
		}
		fu := f.pj.job.Fork(t, f.pj.fn, fork)
		findRun(t, here)
		if _, stolen := fu.Stolen(t); stolen {
			return u
		}
		lo, hi = fork.lo, fork.hi // not stolen: search it here, as the next iteration
	}
	if f.skip(lo, hi) {
		return u
	}
	ok := false
	defer f.st.guard(&ok)
	f.leaf(lo, hi)
	ok = true
	return u
}

// leaf searches [lo, hi) block by block, checking between blocks whether the rest can
// still beat the best match so far.
func (f *parFindState[L]) leaf(lo, hi int) {
	if f.mode == findLast {
		for e := hi; e > lo; e -= findBlock {
			b := max(e-findBlock, lo)
			if f.skip(b, e) {
				return
			}
			if i := f.srch.back(b, e); i >= 0 {
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
		if i := f.srch.fwd(b, e); i >= 0 {
			f.found(i)
			return
		}
		b = e
	}
}

// parFindIndex is the search engine behind the Find, Index, Any and All functions. srch
// finds the first (fwd) or last (back) match of a range. Its call allocates its
// parFindState, unless the match is among the first elements (see findProbe) or the
// input is small enough to be searched on the caller's goroutine.
func parFindIndex[L searcher](c parCall, n int, mode findMode, srch L) int {
	if n == 0 {
		return -1
	}
	if c.seq {
		if mode == findLast {
			return srch.back(0, n)
		}
		return srch.fwd(0, n)
	}
	probe := min(n, findProbe)
	lo, hi := 0, n
	if mode == findLast {
		if i := srch.back(n-probe, n); i >= 0 {
			return i
		}
		hi = n - probe
	} else {
		if i := srch.fwd(0, probe); i >= 0 {
			return i
		}
		lo = probe
	}
	if lo >= hi {
		return -1
	}
	pj := loadParJob[findSpan[L], Unit]()
	if pj == nil {
		pj = storeParJob(findRun[L])
	}
	f := &parFindState[L]{mode: mode, srch: srch, pj: pj}
	f.st.grain = c.grain
	if mode == findFirst {
		f.best.Store(int64(n))
	} else {
		f.best.Store(-1)
	}
	c.pool.Call(func(t *Task) { findRun(t, findSpan[L]{f, lo, hi}) })
	b := int(f.best.Load())
	if b >= n {
		return -1
	}
	return b
}
