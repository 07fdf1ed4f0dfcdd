package blitz

import (
	"cmp"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"unsafe"
)

// sortMinGrain: inputs shorter than twice this are sorted sequentially with package slices.
const sortMinGrain = 1 << 14

// Sort sorts s in ascending order, in parallel, as slices.Sort would (NaNs first, then the
// other values in order). It is not stable.
//
// Integer and float element types (including named types based on them) are sorted with a
// parallel radix sort, which needs a scratch buffer of len(s) elements (kept for the next
// sort of a similar size until a garbage collection). Strings are sorted by a parallel
// radix sort over their bytes, 7 bytes per level, with two buffers of len(s) (key, index)
// records; shared prefixes cost one pass per 7 bytes, not a comparison each, and a prefix
// shared by all the strings of a group that ties on one level is skipped by comparing
// them. A group that one level would barely split (long strings mixed with their own
// prefixes, many duplicates) is split instead around a sampled pivot string, as in
// multikey quicksort: strings equal to the pivot, or ending on its path, are done at once.
// Already sorted, reversed (non-increasing) and all-equal inputs are detected in one
// O(n) scan and cost no sort. Small inputs are sorted sequentially. If the sort is
// interrupted (its pool refuses a nested call because it is closing), the panic reaches the
// caller with s still a permutation of its input.
func Sort[T cmp.Ordered](s []T, opts ...Option) {
	c := parResolve(len(s), sortMinGrain, opts)
	if c.seq {
		slices.Sort(s)
		return
	}
	kind := reflect.TypeFor[T]().Kind()
	if kind == reflect.Float32 || kind == reflect.Float64 {
		s = s[sortNaNsFirst(s):]
	}
	if sortedOrReversedOrdered(c, s) {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	n := len(s)
	switch kind {
	case reflect.Uint8:
		radixSort(c, unsafe.Slice((*uint8)(p), n))
	case reflect.Int8:
		radixSigned(c, unsafe.Slice((*uint8)(p), n))
	case reflect.Uint16:
		radixSort(c, unsafe.Slice((*uint16)(p), n))
	case reflect.Int16:
		radixSigned(c, unsafe.Slice((*uint16)(p), n))
	case reflect.Uint32:
		radixSort(c, unsafe.Slice((*uint32)(p), n))
	case reflect.Int32:
		radixSigned(c, unsafe.Slice((*uint32)(p), n))
	case reflect.Float32:
		radixFloat(c, unsafe.Slice((*uint32)(p), n))
	case reflect.Uint64:
		radixSort(c, unsafe.Slice((*uint64)(p), n))
	case reflect.Int64:
		radixSigned(c, unsafe.Slice((*uint64)(p), n))
	case reflect.Float64:
		radixFloat(c, unsafe.Slice((*uint64)(p), n))
	case reflect.Uint, reflect.Uintptr, reflect.Int:
		// int, uint and uintptr are 32 or 64 bits depending on the platform.
		switch {
		case unsafe.Sizeof(s[0]) == 4 && kind == reflect.Int:
			radixSigned(c, unsafe.Slice((*uint32)(p), n))
		case unsafe.Sizeof(s[0]) == 4:
			radixSort(c, unsafe.Slice((*uint32)(p), n))
		case kind == reflect.Int:
			radixSigned(c, unsafe.Slice((*uint64)(p), n))
		default:
			radixSort(c, unsafe.Slice((*uint64)(p), n))
		}
	default: // strings: a string type has the layout of string
		if uint64(n) > math.MaxUint32 {
			// The string radix sort's records hold 32-bit indices (as the keyed sorts'
			// do, which fall back the same way): past 1<<32 strings they would wrap and
			// the gather would duplicate some strings and lose others.
			sortPdq(c, s, cmp.Compare[T])
			return
		}
		sortStrings(c, unsafe.Slice((*string)(p), n))
	}
}

// radixSigned sorts two's complement integers stored in a: flipping the sign bit maps
// signed order onto unsigned order (math.MinInt64 -> 0), in one parallel pass before the
// sort and one after.
//
// Between the two passes the caller's slice holds transformed keys. If the sort is
// interrupted there (a nested call refused because the pool is closing, any panic), the
// deferred function undoes the transform before the panic continues, so the caller is
// left with a permutation of its input, never with flipped keys. It runs sequentially:
// the pool may be the very thing that refused.
func radixSigned[K radixKey](c parCall, a []K) {
	sign := ^K(0) ^ (^K(0) >> 1)
	flip := func(lo, hi int) {
		w := a[lo:hi]
		for i := range w {
			w[i] ^= sign
		}
	}
	cf := parResolve(len(a), parMinGrainCheap, []Option{WithPool(c.pool)})
	parFor(cf, len(a), flip)                                         // refused or done as a whole: no user code runs in it
	radixTraffic.Add(4 * int64(len(a)) * int64(unsafe.Sizeof(a[0]))) // this pass and the last
	restored := false
	defer func() {
		if !restored {
			flip(0, len(a))
		}
	}()
	sortTest(1)
	radixSort(c, a)
	sortTest(3)
	parFor(cf, len(a), flip)
	restored = true
}

// radixFloat sorts IEEE 754 floats (no NaNs) stored in a: negative values have all bits
// flipped and positive ones their sign bit, which maps float order onto unsigned order
// (-Inf lowest, -0 just below +0); the inverse is applied after the sort. As in
// radixSigned, an interrupted sort undoes the transform before the panic continues.
func radixFloat[K radixKey](c parCall, a []K) {
	top := uint(unsafe.Sizeof(a[0]))*8 - 1
	sign := K(1) << top
	unmap := func(lo, hi int) {
		w := a[lo:hi]
		for i, x := range w {
			w[i] = x ^ (((x >> top) - 1) | sign)
		}
	}
	cf := parResolve(len(a), parMinGrainCheap, []Option{WithPool(c.pool)})
	parFor(cf, len(a), func(lo, hi int) {
		w := a[lo:hi]
		for i, x := range w {
			w[i] = x ^ (-(x >> top) | sign)
		}
	})
	radixTraffic.Add(4 * int64(len(a)) * int64(unsafe.Sizeof(a[0]))) // this pass and the last
	restored := false
	defer func() {
		if !restored {
			unmap(0, len(a))
		}
	}()
	sortTest(1)
	radixSort(c, a)
	sortTest(3)
	parFor(cf, len(a), unmap)
	restored = true
}

// sortNaNsFirst moves the NaNs of s (x != x) to its front, where cmp.Compare orders them,
// and returns how many there are. Moving is an in-place partition: the order among NaNs and
// among the other values changes, which an unstable sort may do.
func sortNaNsFirst[T cmp.Ordered](s []T) int {
	k := 0
	for i, x := range s {
		if x != x {
			s[i], s[k] = s[k], s[i]
			k++
		}
	}
	return k
}

// sortedOrReversed reports whether s is already sorted by less; if instead it is
// non-increasing (reversed, possibly with equal runs) it reverses s and reports true. Both
// scans stop at the first element that breaks the pattern, so random input pays almost
// nothing, and sorted, reversed and all-equal inputs cost O(n) instead of a sort.
func sortedOrReversed[T any](c parCall, s []T, less func(a, b T) bool) bool {
	i := 1
	for i < len(s) && !less(s[i], s[i-1]) {
		i++
	}
	if i >= len(s) {
		return true
	}
	for i = 1; i < len(s) && !less(s[i-1], s[i]); i++ {
	}
	if i >= len(s) {
		parReverse(c, s)
		return true
	}
	return false
}

// sortedOrReversedOrdered is sortedOrReversed with the < operator compiled in (no call per
// element). s has no NaNs.
func sortedOrReversedOrdered[T cmp.Ordered](c parCall, s []T) bool {
	i := 1
	for i < len(s) && !(s[i] < s[i-1]) {
		i++
	}
	if i >= len(s) {
		return true
	}
	for i = 1; i < len(s) && !(s[i-1] < s[i]); i++ {
	}
	if i >= len(s) {
		parReverse(c, s)
		return true
	}
	return false
}

// parReverse reverses s in parallel on c's pool.
func parReverse[T any](c parCall, s []T) {
	n := len(s)
	half := n / 2
	parFor(parResolve(half, parMinGrainCheap, []Option{WithPool(c.pool)}), half, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s[i], s[n-1-i] = s[n-1-i], s[i]
		}
	})
}

// sortPdq sorts s with the parallel pattern-defeating quicksort.
func sortPdq[T any](c parCall, s []T, cmp func(a, b T) int) {
	lim := bits.Len(uint(len(s))) // as slices: allowed bad pivots before heapsort
	st := &parState{grain: min(c.grain, pdqParMin)}
	c.pool.Call(func(t *Task) { pdqsortPdq(t, st, s, 0, len(s), lim, cmp) })
}

// SortFunc sorts s in ascending order as determined by cmp, in parallel, like
// slices.SortFunc: cmp(a, b) returns a negative number when a < b, a positive number when
// a > b and zero when they are equal, and must be a strict weak ordering. It is not stable.
// Sorted, reversed and all-equal inputs take O(n). Otherwise the algorithm is a parallel
// pattern-defeating quicksort (the two sides of a large partition are sorted as separate
// tasks), in place, except for pointer-free element types of at most 32 bytes compared by
// a cheap comparator (such as cmp.Compare on a field) with no repeated keys in a sample:
// those are sorted by a parallel merge sort, which makes fewer comparisons and mispredicts
// fewer of them, with a scratch buffer of len(s) elements kept for the next sort of a
// similar size until a garbage collection (as Sort's).
//
// If cmp is not a strict weak ordering (its answers change, contradict each other, or
// compare NaNs with <), the order of the result is unspecified, but s still holds exactly
// the elements it held, and the sort returns. A panic in cmp is re-raised (as *PanicError
// when it happened in a parallel task) and leaves s a permutation of its input.
func SortFunc[T any](s []T, cmp func(a, b T) int, opts ...Option) {
	if cmp == nil {
		parNil("SortFunc", "cmp")
	}
	c := parResolve(len(s), sortMinGrain, opts)
	if c.seq {
		slices.SortFunc(s, cmp)
		return
	}
	if sortedOrReversed(c, s, func(a, b T) bool { return cmp(a, b) < 0 }) {
		return
	}
	if sortFuncByMerge(s, cmp) {
		sortMerge(c, s, cmp, true)
		return
	}
	sortPdq(c, s, cmp)
}

// sortFuncByMerge reports whether SortFunc sorts s by the merge sort with uneven cuts
// rather than by pdqsort. With random keys both are bound by the comparator's own branch,
// which mispredicts about every other time in a quicksort partition or an even merge; the
// uneven merge trades 23% more comparisons for half the mispredictions (see stableSkewed)
// and makes fewer comparisons than quicksort to begin with. It needs a scratch buffer of
// len(s) elements, so it is kept to where it wins: small pointer-free elements, a cheap
// comparator (stableSkewFor), and no sign of repeated keys, which pdqsort sorts faster.
func sortFuncByMerge[T any](s []T, cmp func(a, b T) int) bool {
	if sortFuncOverride != 0 {
		return sortFuncOverride > 0
	}
	return stableSkewFor(s, cmp) && !sortSampleRepeats(s, cmp)
}

// sortFuncOverride, when non-zero (tests only), forces SortFunc's choice: the merge sort if
// positive, pdqsort if negative.
var sortFuncOverride int

// sortSampleRepeats reports whether a sample of 64 elements of s, taken at even strides,
// holds two that compare equal. SortFunc then keeps to pdqsort: its partition of the
// elements equal to a repeated pivot sorts an input with k distinct keys in O(n log k)
// comparisons, where the merge sort makes O(n log n) (10M uint64 with 16 distinct values,
// 2 workers: 230-250 ms by pdqsort, 640-1000 ms by the merge sort). Inputs with few
// distinct keys are all but certain to repeat one within the sample; 64 random 64-bit keys
// repeat with odds of about 2^-52. The sample is
// sorted by insertion in a local array, so it costs about a thousand comparisons and
// leaves s untouched; a comparator that lies only changes which algorithm runs.
func sortSampleRepeats[T any](s []T, cmp func(a, b T) int) bool {
	const k = 64
	if len(s) < k {
		return true
	}
	var w [k]T
	step := len(s) / k
	for i := range w {
		w[i] = s[i*step+step/2]
	}
	for i := 1; i < k; i++ {
		for j := i; j > 0 && cmp(w[j], w[j-1]) < 0; j-- {
			w[j], w[j-1] = w[j-1], w[j]
		}
	}
	for i := 1; i < k; i++ {
		if cmp(w[i-1], w[i]) == 0 {
			return true
		}
	}
	return false
}

// SortDesc sorts s in descending order (NaNs last), in parallel. It is Sort followed by a
// parallel reversal.
func SortDesc[T cmp.Ordered](s []T, opts ...Option) {
	Sort(s, opts...)
	parReverse(parResolve(len(s), sortMinGrain, opts), s)
}

// SortByKey sorts s in ascending order of key(element) (keys compared as by cmp.Compare:
// NaNs first, -0 equal to +0), in parallel. It is not guaranteed to be stable (the current
// implementation is, except that an input whose keys are non-increasing is reversed).
// key is called exactly once per element, in parallel, so it must be safe for concurrent
// use. See SortStableByKey for the algorithm: a radix sort of the extracted keys with the
// elements (or, for elements over 32 bytes, their indices followed by one permutation of
// the elements). A panic in key is re-raised (as *PanicError when it happened in a parallel
// task) and leaves s unchanged.
func SortByKey[T any, K cmp.Ordered](s []T, key func(T) K, opts ...Option) {
	if key == nil {
		parNil("SortByKey", "key")
	}
	sortByKey(s, key, false, opts)
}

// SortByCachedKey sorts s in ascending order of key(element), calling key exactly once per
// element (in parallel). It is stable: the same sort as SortStableByKey, which also calls
// key once per element.
func SortByCachedKey[T any, K cmp.Ordered](s []T, key func(T) K, opts ...Option) {
	if key == nil {
		parNil("SortByCachedKey", "key")
	}
	sortByKey(s, key, true, opts)
}

// SortStableFunc sorts s as determined by cmp (see SortFunc), keeping the original order of
// equal elements, in parallel, like slices.SortStableFunc. It uses a scratch buffer of
// len(s) elements: a parallel merge sort whose merges are themselves split in parallel.
// Sorted, all-equal and strictly decreasing inputs take O(n). As for SortFunc, a cmp
// that is not a strict weak ordering leaves the order unspecified but s a permutation of
// its input, and so does a panic in cmp (which is re-raised).
func SortStableFunc[T any](s []T, cmp func(a, b T) int, opts ...Option) {
	if cmp == nil {
		parNil("SortStableFunc", "cmp")
	}
	n := len(s)
	checkOptsOpen(opts) // a closed pool panics whatever n is
	if n <= 2*stableBlock {
		stableInsertion(s, cmp)
		return
	}
	c := parResolve(n, sortMinGrain, opts)
	// Sorted (ascending with equal runs) is left alone; only a strictly decreasing input
	// may be reversed without breaking stability.
	i := 1
	for i < n && cmp(s[i], s[i-1]) >= 0 {
		i++
	}
	if i == n {
		return
	}
	for i = 1; i < n && cmp(s[i], s[i-1]) < 0; i++ {
	}
	if i == n {
		parReverse(c, s)
		return
	}
	sortMerge(c, s, cmp, stableSkewFor(s, cmp))
}

// sortTestHook, when set (by tests only), is called at numbered points between the parallel
// passes of Sort, so that tests can interrupt a sort there as a refused nested call would.
var sortTestHook func(stage int)

// sortTest calls sortTestHook if a test set it.
func sortTest(stage int) {
	if sortTestHook != nil {
		sortTestHook(stage)
	}
}
