package blitz

import (
	"reflect"
	"time"
	"unsafe"
)

// Parallel stable merge sort, used by SortStableFunc.
//
// slices.SortStableFunc sorts in place without a buffer (insertion-sorted blocks merged by
// SymMerge with rotations), O(n log^2 n) moves. With one scratch buffer of len(s) elements a
// merge sort does O(n log n) moves and both of its phases parallelize: the two parts sort in
// parallel, and a merge is split by picking the middle of the longer run and binary-searching
// its position in the other run (stability decides which side of equal keys it goes).
// Levels alternate between s and the buffer, and the blocks at the bottom are insertion
// sorted straight into whichever of the two their level wants, so no level copies.
//
// With random keys the sort is bound by mispredicted branches, not by its loops: the
// comparator branches on its result (cmp.Compare does), and in a merge of two runs of equal
// length that branch goes either way with even odds. See stableSkewed for how the split
// trades comparisons for mispredictions when comparisons are cheap.

const (
	stableBlock = 24 // runs insertion sorted (16-48 measured within 3%)
	// stableParMin: subarrays and merges at most this long are done sequentially (a
	// smaller explicit grain lowers it). 8K-128K measured alike.
	stableParMin = 1 << 13
)

// stableSkewed reports whether the sort of T cuts its runs a quarter in rather than in the
// middle (see stableCut).
//
// Merging a run into one three times as long, the comparison mostly goes the way of the
// long run and the branch predictor bets on it: it mispredicts about once per element of
// the short run (a quarter of the comparisons) instead of every other comparison. The
// uneven tree makes 23% more comparisons and moves, but per bit of order learned the merge
// is faster: 5.5 ns against 6.4-6.7 for an even merge (8192 random uint64, cmp.Compare).
// Measured on whole sorts (2 workers, medians of 7 interleaved runs): 10M uint64 with
// cmp.Compare 780 ms cut evenly, 679 ms a quarter in; 2M uint64 compared through a
// multiply-xorshift mix 171 -> 147 ms; 2M 32-byte structs by one of 1000 keys, or
// [4]uint64 compared field by field, within noise.
//
// The extra comparisons only pay while a comparison costs less than the misprediction it
// saves. A comparator that follows pointers pays a cache miss on most of them: 2M strings
// with a common 14-byte prefix compared by strings.Compare took 413 ms cut evenly, 483 ms a
// quarter in (and still about 8% more at two fifths). So the uneven cut is kept to small
// pointer-free element types, whose comparisons can only compute on the values handed to
// them; large elements are excluded because every extra level moves them once more. A
// pointer-free type with a costly comparator is the case the type alone guesses wrong, and
// a common one: sorting int indices by a captured key table (an argsort) is pointer-free
// but misses the cache on every comparison (10M indices into a 10M-key table, one core:
// 4.65 s cut evenly, 6.7 s a quarter in). stableSkewFor therefore also times a sample of
// the comparator.
func stableSkewed[T any]() bool {
	t := reflect.TypeFor[T]()
	return t.Size() <= 32 && stablePointerFree(t)
}

// stableSkewMin is the smallest sort that times its comparator to choose the uneven cut:
// below it the choice matters little and the sample would cost more than it could save.
const stableSkewMin = 1 << 12

// stableSkewSample is the number of comparisons the timing sample makes.
const stableSkewSample = 128

// stableSkewMaxNs is the most a sampled comparison may cost, on average, for the uneven
// cut: cmp.Compare on uint64 or a few-multiply hash mix costs 2-5 ns here, a comparator
// that misses the cache 50-100 ns.
const stableSkewMaxNs = 12

// stableSkewTries is the number of samples stableCheapCmp may time: the comparator is
// cheap if any one of them is.
const stableSkewTries = 3

// The samples must fit in the smallest sort that takes them.
const _ = uint(stableSkewMin - stableSkewTries*stableSkewSample)

// stableSkewFor reports whether sorting a with cmp cuts its runs a quarter in: the element
// type must pass stableSkewed, and a sample of the comparator must be cheap. Each sample
// compares neighbours in a private copy of stableSkewSample elements of a (so a's own cache
// misses are not counted, while whatever cmp reaches through captured state is, cold, as in
// the sort).
//
// A sample is only ever made to look costly by the machine (the goroutine descheduled, a
// garbage collection scanning its stack), never cheap; so up to stableSkewTries samples
// are timed, each on different elements, and one cheap sample decides. The elements
// differ so that a comparator that misses the cache (an argsort's key table) is cold in
// every sample, not warmed by the one before. With a single sample, SortFunc on 10M random
// uint64 chose pdqsort (20% slower there) in one call of six in a quiet program, and in
// most rounds of a benchmark run with a garbage collection in progress.
func stableSkewFor[T any](a []T, cmp func(a, b T) int) bool {
	if stableSkewOverride != 0 {
		return stableSkewOverride > 0
	}
	if len(a) < stableSkewMin || !stableSkewed[T]() {
		return false
	}
	for i := range stableSkewTries {
		if stableCheapCmp(a[i*stableSkewSample:], cmp) {
			return true
		}
	}
	return false
}

// stableSkewOverride, when not zero, makes stableSkewFor choose the uneven cut (1) or the
// even one (-1) whatever the type and the timing: tests set it to check both trees at
// every size, since the timed choice would otherwise decide which one they get.
var stableSkewOverride int

// stableCheapCmp times stableSkewSample-1 comparisons of neighbours among a's first
// stableSkewSample elements (see stableSkewFor). It is called only for element types of
// at most 32 bytes, so its array is at most 4 KiB of stack.
func stableCheapCmp[T any](a []T, cmp func(a, b T) int) bool {
	var w [stableSkewSample]T
	copy(w[:], a)
	start := stableClock()
	for i := 1; i < len(w); i++ {
		cmp(w[i], w[i-1]) // an indirect call: not optimised away
	}
	return stableClock().Sub(start) <= time.Duration(len(w)-1)*stableSkewMaxNs*time.Nanosecond
}

// stableClock is time.Now; tests replace it to decide what a sample measures.
var stableClock = time.Now

// stablePointerFree reports whether values of type t hold no pointers.
func stablePointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || stablePointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !stablePointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// stableCut returns where a run of n >= 2 elements is cut before both parts are sorted and
// merged: a quarter in if skewed, else the middle. Sorting 8192 random uint64 with
// cmp.Compare, cut at 1/2: 632 µs, 1/3: 577, 1/4: 560, 1/5: 565, 1/6: 588.
func stableCut(n int, skewed bool) int {
	if skewed {
		return max(n/4, 1)
	}
	return n / 2
}

// stableInsertion sorts a stably by insertion.
//
// While an element v is being inserted, a[hole] holds a copy of its right neighbour and v
// lives only in a variable. If cmp panics then, the deferred function puts v back into the
// hole, so a is left a permutation of its input, not with one element lost and another
// doubled.
func stableInsertion[T any](a []T, cmp func(a, b T) int) {
	var zero T
	sz := int(unsafe.Sizeof(zero))
	if len(a) < 2 || sz == 0 {
		return
	}
	var hole unsafe.Pointer // nil when no element is out of a
	var v T
	defer func() {
		if hole != nil {
			*(*T)(hole) = v
		}
	}()
	first := unsafe.Pointer(&a[0])
	for i := 1; i < len(a); i++ {
		v = a[i]
		hole = unsafe.Pointer(&a[i])
		for {
			prev := unsafe.Add(hole, -sz)
			w := *(*T)(prev)
			if cmp(v, w) >= 0 {
				break
			}
			*(*T)(hole) = w
			hole = prev
			if hole == first {
				break
			}
		}
		*(*T)(hole) = v
	}
	hole = nil
}

// stableInsertionTo sorts src stably by insertion into dst (len(dst) == len(src)), leaving
// src as it was. Like mergeSeq, it walks a pointer rather than a bounds-checked index, to
// keep less across each call of cmp; it never moves it below dst[0]. Its loop is
// stableInsertion's without the panic bookkeeping, which a sort into a separate buffer
// does not need (src keeps every element): calling stableInsertionTo(a, a) for the
// in-place sort instead, with the bookkeeping in the one loop, made the whole 1M-uint64
// merge sort 5% slower (112 against 107 ms).
func stableInsertionTo[T any](src, dst []T, cmp func(a, b T) int) {
	n := len(src)
	dst = dst[:n]
	var zero T
	sz := int(unsafe.Sizeof(zero))
	if n == 0 || sz == 0 {
		copy(dst, src)
		return
	}
	first := unsafe.Pointer(&dst[0])
	dst[0] = src[0]
	for i := 1; i < n; i++ {
		v := src[i]
		hole := unsafe.Pointer(&dst[i])
		for {
			prev := unsafe.Add(hole, -sz)
			w := *(*T)(prev)
			if cmp(v, w) >= 0 {
				break
			}
			*(*T)(hole) = w
			hole = prev
			if hole == first {
				break
			}
		}
		*(*T)(hole) = v
	}
}

// mergeSeq merges the sorted runs x and y into out (len(out) == len(x)+len(y)); on equal
// keys the element of x comes first, which keeps the merge stable.
//
// With a comparator called through a func value, each step costs more in the loop around
// the call than in the comparison: Go's calling convention saves no register across a
// call, so every value the loop keeps is stored before the call and loaded after it. A
// step that always goes the same way (no misprediction at all) measured 3.2-3.6 ns, about
// as much as a step of a random merge of a run into one three times as long. So the loop
// keeps as little as it can: one pointer into each run, one into out, and the last element
// of each run; the heads are loaded again after each call rather than kept (which would
// add a store per step). Walking pointers instead of three indices into bounds-checked
// slices, with the heads kept, made a merge of 4096 random uint64 into 12288 12% faster
// (3.16 against 3.61 ns per element; 1:1 runs 3.84 against 4.27); not keeping the heads
// took off another 5% (3.00-3.03 against 3.17; 1:1 runs alike). The pointers never pass a
// run's last element, as unsafe.Pointer arithmetic requires. A branch-free step
// (SETcc/CMOV picking the side) measured slower: the comparator's own branch still
// mispredicts, and the next loads then wait for the comparison instead of running ahead on
// a predicted branch. Merging from both ends at once was slower too.
func mergeSeq[T any](x, y, out []T, cmp func(a, b T) int) {
	nx, ny := len(x), len(y)
	out = out[:nx+ny]
	var zero T
	sz := unsafe.Sizeof(zero)
	if nx == 0 || ny == 0 || sz == 0 {
		k := copy(out, x)
		copy(out[k:], y)
		return
	}
	px := unsafe.Pointer(&x[0])
	py := unsafe.Pointer(&y[0])
	xl := unsafe.Pointer(&x[nx-1])
	yl := unsafe.Pointer(&y[ny-1])
	po := unsafe.Pointer(&out[0])
	for {
		if cmp(*(*T)(py), *(*T)(px)) < 0 {
			*(*T)(po) = *(*T)(py)
			po = unsafe.Add(po, sz)
			if py == yl {
				py = nil // y is used up
				break
			}
			py = unsafe.Add(py, sz)
		} else {
			*(*T)(po) = *(*T)(px)
			po = unsafe.Add(po, sz)
			if px == xl {
				px = nil // x is used up
				break
			}
			px = unsafe.Add(px, sz)
		}
	}
	// po stays inside out: the loop stops as soon as one run is used up, and the other
	// still has an element to come.
	k := int((uintptr(po) - uintptr(unsafe.Pointer(&out[0]))) / sz)
	if px != nil {
		copy(out[k:], x[(uintptr(px)-uintptr(unsafe.Pointer(&x[0])))/sz:])
	} else {
		copy(out[k:], y[(uintptr(py)-uintptr(unsafe.Pointer(&y[0])))/sz:])
	}
}

// sortScratch returns a scratch slice of n elements of T for a merge sort and the function
// that gives it back. A pointer-free T takes its buffer from the cache the radix sorts use
// (see radixScratch): a fresh buffer costs zeroing, and page faults when the heap has to
// grow for it (80 MB for 10M uint64: 7-14 ms here from memory the heap already had).
// Reinterpreting
// the cached uint64 words as T is safe because T holds no pointers the garbage collector
// would need to see, and no Go type needs more alignment than uint64. Other types (and
// zero-size ones) get a new slice.
func sortScratch[T any](n int) ([]T, func()) {
	t := reflect.TypeFor[T]()
	if t.Size() == 0 || !stablePointerFree(t) {
		return make([]T, n), func() {}
	}
	words, release := radixBuffer[uint64](int((uintptr(n)*t.Size() + 7) / 8))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(words))), n), release
}

// sortMerge sorts s stably with the parallel merge sort (sequentially if c.seq), cutting
// its runs a quarter in if skewed (see stableSkewed).
func sortMerge[T any](c parCall, s []T, cmp func(a, b T) int, skewed bool) {
	buf, release := sortScratch[T](len(s))
	// On a panic every task of the sort has returned (Join waits for both sides), so the
	// buffer can go back to the cache whatever happened.
	defer release()
	if c.seq {
		stableSortTo(s, buf, false, skewed, cmp)
		return
	}
	st := &parState{grain: min(c.grain, stableParMin)}
	c.pool.Call(func(t *Task) { stableRecCut(t, st, s, buf, false, skewed, cmp) })
}

// stableSortTo sorts a stably, top-down, with buf (len(buf) >= len(a)) as scratch; the
// result ends in buf[:len(a)] if toBuf, else in a. Each level sorts its two parts into the
// other slice and merges them back.
func stableSortTo[T any](a, buf []T, toBuf, skewed bool, cmp func(a, b T) int) {
	n := len(a)
	buf = buf[:n]
	if n <= stableBlock {
		if toBuf {
			stableInsertionTo(a, buf, cmp)
		} else {
			stableInsertion(a, cmp)
		}
		return
	}
	m := stableCut(n, skewed)
	stableSortTo(a[:m], buf[:m], !toBuf, skewed, cmp)
	stableSortTo(a[m:], buf[m:], !toBuf, skewed, cmp)
	if toBuf {
		// a is only read: a panic in cmp leaves it as the children left it.
		if cmp(a[m], a[m-1]) >= 0 {
			copy(buf, a) // already in order
			return
		}
		mergeSeq(a[:m], a[m:], buf, cmp)
		return
	}
	stableMergeBack(buf, m, a, cmp)
}

// stableMergeBack merges the sorted runs src[:m] and src[m:] (in the scratch buffer) into
// dst (the caller's slice). A merge interrupted by a panicking cmp has written only part of
// dst, so some elements would be there twice and others not at all; src still holds every
// element (a merge only reads it), so the deferred copy restores dst to a permutation of
// its input before the panic continues.
func stableMergeBack[T any](src []T, m int, dst []T, cmp func(a, b T) int) {
	done := false
	defer func() {
		if !done {
			copy(dst, src)
		}
	}()
	if cmp(src[m], src[m-1]) >= 0 {
		copy(dst, src) // already in order
	} else {
		mergeSeq(src[:m], src[m:], dst, cmp)
	}
	done = true
}

// stableRecCut sorts a stably, cutting runs a quarter in if skewed; the result ends in buf
// if toBuf, else in a.
//
// A panicking cmp must leave the caller's slice a permutation of its input. Every node of
// the recursion keeps this invariant: whenever it returns early (st.stop set) or by a
// panic, a holds a permutation of the node's input. A node's input is always in a; a node
// with toBuf only reads a in its merge (into buf), and the leaves that sort into buf only
// read a; the in-place insertion sort restores its hole (stableInsertion); and a merge
// from buf back into a, the one step that overwrites a, is undone by copying buf (which
// then holds every element of the node) back over a when it is interrupted or when a
// stop left some of its parallel parts unmerged.
func stableRecCut[T any](t *Task, st *parState, a, buf []T, toBuf, skewed bool, cmp func(a, b T) int) {
	n := len(a)
	if st.stop.Load() {
		return // a comparison panicked in another task: the result is discarded
	}
	if n <= st.grain {
		stableSortTo(a, buf, toBuf, skewed, cmp)
		return
	}
	// The parallel levels are cut like the sequential ones: cutting them in the middle
	// instead made the 10M uint64 sort 6% slower (717 against 673 ms).
	mid := stableCut(n, skewed)
	Join(t,
		func(t *Task) {
			ok := false
			defer st.guard(&ok)
			stableRecCut(t, st, a[:mid], buf[:mid], !toBuf, skewed, cmp)
			ok = true
		},
		func(t *Task) {
			ok := false
			defer st.guard(&ok)
			stableRecCut(t, st, a[mid:], buf[mid:], !toBuf, skewed, cmp)
			ok = true
		})
	if st.stop.Load() {
		// A child may have stopped before sorting: its output is not valid. a holds a
		// permutation (invariant above), and the caller discards the result.
		return
	}
	if toBuf {
		parMerge(t, st, a[:mid], a[mid:], buf, cmp)
		return
	}
	// Both children finished, so buf holds all of the node's elements: if the merge back
	// into a is interrupted (a panic) or partly skipped (a stop), copy them back over a.
	merged := false
	defer func() {
		if !merged || st.stop.Load() {
			copy(a, buf)
		}
	}()
	parMerge(t, st, buf[:mid], buf[mid:], a, cmp)
	merged = true
}

// parMerge merges the sorted runs x and y into out, stably, splitting large merges into two
// independent merges around the middle element of the longer run.
//
// Every split must make both halves smaller, or the recursion never ends (a stack
// overflow, seen with WithGrain(1)): it does whenever the longer run has two elements or
// more, since the middle element is then at index 1 or beyond. Two runs of one element
// each are the exception (the middle of x is x[0], and y[0] may go either side), so a
// merge of two elements is always done sequentially, whatever the grain.
func parMerge[T any](t *Task, st *parState, x, y, out []T, cmp func(a, b T) int) {
	if st.stop.Load() {
		return
	}
	if len(out) <= max(st.grain, 2) || len(x) == 0 || len(y) == 0 {
		mergeSeq(x, y, out, cmp)
		return
	}
	var xi, yj int
	if len(x) >= len(y) {
		xi = len(x) / 2
		// y[:yj] are strictly less than x[xi]: elements of y equal to x[xi] go after it.
		yj = searchFirst(y, func(v T) bool { return cmp(v, x[xi]) >= 0 })
	} else {
		yj = len(y) / 2
		// x[:xi] are <= y[yj]: elements of x equal to y[yj] go before it.
		xi = searchFirst(x, func(v T) bool { return cmp(v, y[yj]) > 0 })
	}
	k := xi + yj
	Join(t,
		func(t *Task) {
			ok := false
			defer st.guard(&ok)
			parMerge(t, st, x[:xi], y[:yj], out[:k], cmp)
			ok = true
		},
		func(t *Task) {
			ok := false
			defer st.guard(&ok)
			parMerge(t, st, x[xi:], y[yj:], out[k:], cmp)
			ok = true
		})
}

// searchFirst returns the smallest index i such that f(s[i]) is true, or len(s); f must be
// false then true along s.
func searchFirst[T any](s []T, f func(T) bool) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !f(s[m]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
