package blitz

import (
	"cmp"
	"math"
	"math/bits"
	"reflect"
	"unsafe"
)

// Keyed sorts (SortByKey, SortStableByKey): every key is extracted once, mapped onto a
// uint64 with the same order, and the (key, index) records are radix sorted, stably (see
// sort_radix_kv.go); the elements are then gathered in that order through a buffer. String
// keys take the string radix sort (sort_strings.go) with the indices alongside.

// SortStableByKey sorts s in ascending order of key(element) (keys compared as by
// cmp.Compare: NaNs first, -0 equal to +0), keeping the original order of elements with
// equal keys, in parallel. key is called exactly once per element, in parallel, so it must
// be safe for concurrent use.
//
// The keys are sorted by a parallel radix sort: elements of up to 32 bytes travel with
// their keys in (key, element) records (two buffers of len(s) records), larger ones are
// represented by their indices and moved into place afterwards through a buffer of len(s)
// elements. The work per element does not grow with log(len(s)) as a comparison sort's
// does. Inputs already sorted by key are detected after the extraction and left alone;
// small inputs are sorted the same way, sequentially. A panic in key is re-raised (as
// *PanicError when it happened in a parallel task) and leaves s unchanged.
func SortStableByKey[T any, K cmp.Ordered](s []T, key func(T) K, opts ...Option) {
	if key == nil {
		parNil("SortStableByKey", "key")
	}
	sortByKey(s, key, true, opts)
}

// sortByKey is SortByKey (stable false: equal keys may come out in any order, and a
// non-increasing input is reversed) and SortStableByKey.
func sortByKey[T any, K cmp.Ordered](s []T, key func(T) K, stable bool, opts []Option) {
	checkOptsOpen(opts) // a closed pool panics whatever n is
	n := len(s)
	if n < 2 {
		if n == 1 {
			// Nothing to move, but the keyed sorts promise one call of key per element:
			// a key with side effects, or one that panics on a bad element, must see
			// the single element as it sees every element of a longer input.
			key(s[0])
		}
		return
	}
	c := parResolve(n, sortMinGrain, opts)
	if uint64(n) > math.MaxUint32 {
		// The radix records hold 32-bit indices.
		byKey := func(a, b T) int { return cmp.Compare(key(a), key(b)) }
		if stable {
			SortStableFunc(s, byKey, opts...)
		} else {
			SortFunc(s, byKey, opts...)
		}
		return
	}
	// Small inputs (c.seq) take the same path, sequentially: key is still called once per
	// element, which SortByCachedKey promises.
	if reflect.TypeFor[K]().Kind() == reflect.String {
		sortByStringKey(c, s, func(v T) string {
			k := key(v)
			return *(*string)(unsafe.Pointer(&k)) // K is a string type: the same layout
		})
		return
	}
	sortByNumericKey(c, s, radixKeyMap[K](), key, stable)
}

// sortByNumericKey sorts s by m(key(element)) with the radix sort of (key, element)
// records when elements are small (the sort then streams through memory), else of (key,
// index) records followed by a gather of the elements (one random read per element, which
// costs less than moving a large element in every radix pass).
//
// Large inputs of small elements take sortCarried, which crosses memory three times.
func sortByNumericKey[T any, K cmp.Ordered](c parCall, s []T, m func(K) uint64, key func(T) K, stable bool) {
	n := len(s)
	var z T
	if unsafe.Sizeof(z) <= sortCarryMax && !c.seq && n >= 2*radixParMin {
		sortCarried(c, s, func(v T) uint64 { return m(key(v)) }, stable)
		return
	}
	cf := sortAux(c, n)
	if unsafe.Sizeof(z) <= sortCarryMax {
		// A small input: (key, element) records, sorted in cache.
		recs, release := kvScratch[T](2 * n)
		defer release()
		a, buf := recs[:n], recs[n:]
		parFor(cf, n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				a[i] = radixKV[T]{m(key(s[i])), s[i]}
			}
		})
		switch radixKVPresorted(a, stable) {
		case 1:
			return
		case -1:
			parReverse(c, s)
			return
		}
		radixRecKV(nil, a, buf, 64, false)
		for i := range s {
			s[i] = a[i].v
		}
		return
	}
	recs, release := kvScratch[uint32](2 * n)
	defer release()
	a, buf := recs[:n], recs[n:]
	parFor(cf, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i] = radixKV[uint32]{m(key(s[i])), uint32(i)}
		}
	})
	radixTraffic.Add(int64(n) * int64(unsafe.Sizeof(z)+16))
	switch radixKVPresorted(a, stable) {
	case 1:
		return
	case -1:
		parReverse(c, s)
		return
	}
	radixSortKV(c, a, buf)
	sortGather(c, s, a, func(i *uint32) int { return int(*i) })
}

// sortCarried sorts s by keyOf(element) (called once per element, in parallel) with the
// radix sort of (key, element) records, in parallel; len(s) >= 2*radixParMin.
//
// The first pass extracts the keys into a buffer of uint64 (8 bytes per element, not a
// whole record) and counts their first digit; the scatter then reads each key and its
// element and writes the record into its bucket; every bucket is sorted in cache and its
// elements copied into s (radixBucketsOut). For 16-byte elements: 24 + 48 + 40 = 112 bytes
// moved per element, and scratch of 32 bytes per element (keys and records).
func sortCarried[T any](c parCall, s []T, keyOf func(T) uint64, stable bool) {
	n := len(s)
	keys, buf, release := carriedScratch[T](n)
	defer release()
	width := min(radixTopWidth(n, int(unsafe.Sizeof(radixKV[T]{}))), radixTopMaxKV)
	size := max((n+4*c.workers-1)/(4*c.workers), 1<<12)
	nc := (n + size - 1) / size
	diffs := make([]uint64, nc)
	nd := 1 << width
	counts := make([]int, nc*nd)
	shift := 64 - width
	// The first pass runs user code (keyOf) and only writes keys: a panic leaves s as it was.
	parChunks(c, n, size, func(ci, lo, hi int) {
		hist := counts[ci*nd : (ci+1)*nd]
		w := keys[lo:hi]
		for i := range w {
			w[i] = keyOf(s[lo+i])
		}
		k0 := w[0]
		var d uint64
		for _, x := range w {
			d |= x ^ k0
			hist[x>>shift]++
		}
		diffs[ci] = d
	})
	esz := int64(unsafe.Sizeof(s[0]))
	radixTraffic.Add(int64(n) * (esz + 8))
	switch radixKeysPresorted(keys, stable) {
	case 1:
		return
	case -1:
		parReverse(c, s)
		return
	}
	var diff uint64
	for ci, d := range diffs {
		diff |= d | (keys[ci*size] ^ keys[0])
	}
	// diff != 0: all-equal keys are non-decreasing, which returned above.
	mask := uint64(nd - 1)
	if vary := uint(bits.Len64(diff)); vary < 64 {
		width = min(width, vary)
		shift = vary - width
		nd = 1 << width
		mask = uint64(nd - 1)
		counts = counts[:nc*nd]
		clear(counts)
		parChunks(c, n, size, func(ci, lo, hi int) {
			hist := counts[ci*nd : (ci+1)*nd]
			for _, x := range keys[lo:hi] {
				hist[(x>>shift)&mask]++
			}
		})
		radixTraffic.Add(int64(n) * 8)
	}
	starts := radixOffsets(counts, nc, nd, n)
	parChunks(c, n, size, func(ci, lo, hi int) {
		off := counts[ci*nd : (ci+1)*nd]
		for i := lo; i < hi; i++ {
			x := keys[i]
			d := (x >> shift) & mask
			buf[off[d]] = radixKV[T]{x, s[i]}
			off[d]++
		}
	})
	rec := int64(unsafe.Sizeof(buf[0]))
	radixTraffic.Add(int64(n) * (8 + esz + rec)) // the scatter
	radixTraffic.Add(int64(n) * (rec + esz))     // the buckets: read, then copied into s
	// Until here s was only read. The bucket phase runs no user code: its Call is refused
	// before it starts (s intact) or runs to the end.
	radixBucketsOut(c, buf, starts, shift,
		func(lo, hi int) []radixKV[T] { return make([]radixKV[T], hi-lo) },
		func(lo, hi int, recs []radixKV[T]) {
			w := s[lo:hi]
			for i := range w {
				w[i] = recs[i].v
			}
		})
}

// carriedScratch returns sortCarried's buffers, n keys and n records, and the function
// that gives them back: one cached radix buffer for both when the records hold no pointers
// (the garbage collector may not see pointers in it), else the keys from the cache and new
// records.
func carriedScratch[T any](n int) ([]uint64, []radixKV[T], func()) {
	var r radixKV[T]
	sz := unsafe.Sizeof(r) // a multiple of 8: the record starts with a uint64
	if !stablePointerFree(reflect.TypeFor[radixKV[T]]()) || unsafe.Alignof(r) > 8 {
		keys, release := radixBuffer[uint64](n)
		return keys, make([]radixKV[T], n), release
	}
	words, release := radixBuffer[uint64](n + n*int(sz/8))
	recs := unsafe.Slice((*radixKV[T])(unsafe.Pointer(unsafe.SliceData(words[n:]))), n)
	return words[:n], recs, release
}

// radixKeysPresorted is radixKVPresorted for bare keys.
func radixKeysPresorted(k []uint64, stable bool) int {
	i := 1
	for i < len(k) && k[i] >= k[i-1] {
		i++
	}
	if i == len(k) {
		return 1
	}
	if stable {
		for i = 1; i < len(k) && k[i] < k[i-1]; i++ {
		}
	} else {
		for i = 1; i < len(k) && k[i] <= k[i-1]; i++ {
		}
	}
	if i == len(k) {
		return -1
	}
	return 0
}

// sortCarryMax is the largest element that the keyed sorts carry in their radix records;
// larger ones are sorted by index and gathered. 10M 16-byte records by a uint64 field:
// carried, the gather's random reads (a cache and TLB miss per element) are gone.
const sortCarryMax = 32

// kvScratch returns n records and the function that gives them back: the cached radix
// buffer when V holds no pointers (the garbage collector may not see pointers in it), else
// a new slice.
func kvScratch[V any](n int) ([]radixKV[V], func()) {
	var r radixKV[V]
	sz := unsafe.Sizeof(r)
	if !stablePointerFree(reflect.TypeFor[radixKV[V]]()) || unsafe.Alignof(r) > 8 {
		return make([]radixKV[V], n), func() {}
	}
	words, release := radixBuffer[uint64](int((uintptr(n)*sz + 7) / 8))
	return unsafe.Slice((*radixKV[V])(unsafe.Pointer(unsafe.SliceData(words))), n), release
}

// sortAux returns the parallel call for the keyed sorts' cheap passes over n elements
// (extraction, gather, copy): sequential when the sort itself is.
func sortAux(c parCall, n int) parCall {
	cf := parResolve(n, parMinGrain, []Option{WithPool(c.pool)})
	cf.seq = cf.seq || c.seq
	return cf
}

// radixKVPresorted reports 1 if the keys of a are non-decreasing (nothing to do), -1 if
// they are non-increasing and reversing the elements sorts them (for a stable sort only
// when they are strictly decreasing, since reversing swaps equal keys), and 0 otherwise.
// Random keys stop both scans within a few elements.
func radixKVPresorted[V any](a []radixKV[V], stable bool) int {
	i := 1
	for i < len(a) && a[i].k >= a[i-1].k {
		i++
	}
	if i == len(a) {
		return 1
	}
	if stable {
		for i = 1; i < len(a) && a[i].k < a[i-1].k; i++ {
		}
	} else {
		for i = 1; i < len(a) && a[i].k <= a[i-1].k; i++ {
		}
	}
	if i == len(a) {
		return -1
	}
	return 0
}

// sortGather permutes s into the order of the records' indices (s[j] = old
// s[idx(&order[j].v)]) through a new buffer of len(s) elements (only elements too large to
// carry in the radix records come here, and string-keyed ones). It runs no user code, and
// a refused parallel call leaves s as it was: the gather only writes the buffer, and the
// copy back is refused or done as a whole.
func sortGather[T, V any](c parCall, s []T, order []radixKV[V], idx func(*V) int) {
	n := len(s)
	tmp := make([]T, n)
	cf := sortAux(c, n)
	parFor(cf, n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			tmp[j] = s[idx(&order[j].v)]
		}
	})
	parCopy(cf, s, tmp)
	radixTraffic.Add(int64(n) * int64(unsafe.Sizeof(order[0])+4*unsafe.Sizeof(s[0])))
}

// radixKeyMap returns the function that maps a numeric key onto a uint64 with the order
// of cmp.Compare: signed integers have their sign bit flipped; floats have all bits
// flipped when negative and the sign bit set otherwise, after -0 is replaced by +0 (equal
// for cmp.Compare, so a stable sort must keep their order) and any NaN is mapped to 0,
// below -Inf (cmp.Compare puts NaNs first and considers them all equal).
func radixKeyMap[K cmp.Ordered]() func(K) uint64 {
	var z K
	size := unsafe.Sizeof(z)
	switch reflect.TypeFor[K]().Kind() {
	case reflect.Float32:
		return func(k K) uint64 {
			f := *(*float32)(unsafe.Pointer(&k))
			if f != f {
				return 0
			}
			if f == 0 {
				f = 0
			}
			u := math.Float32bits(f)
			return uint64(u ^ (-(u >> 31) | 1<<31))
		}
	case reflect.Float64:
		return func(k K) uint64 {
			f := *(*float64)(unsafe.Pointer(&k))
			if f != f {
				return 0
			}
			if f == 0 {
				f = 0
			}
			u := math.Float64bits(f)
			return u ^ (-(u >> 63) | 1<<63)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		switch size {
		case 1:
			return func(k K) uint64 { return uint64(*(*uint8)(unsafe.Pointer(&k)) ^ 1<<7) }
		case 2:
			return func(k K) uint64 { return uint64(*(*uint16)(unsafe.Pointer(&k)) ^ 1<<15) }
		case 4:
			return func(k K) uint64 { return uint64(*(*uint32)(unsafe.Pointer(&k)) ^ 1<<31) }
		default:
			return func(k K) uint64 { return *(*uint64)(unsafe.Pointer(&k)) ^ 1<<63 }
		}
	default: // unsigned integers and uintptr
		switch size {
		case 1:
			return func(k K) uint64 { return uint64(*(*uint8)(unsafe.Pointer(&k))) }
		case 2:
			return func(k K) uint64 { return uint64(*(*uint16)(unsafe.Pointer(&k))) }
		case 4:
			return func(k K) uint64 { return uint64(*(*uint32)(unsafe.Pointer(&k))) }
		default:
			return func(k K) uint64 { return *(*uint64)(unsafe.Pointer(&k)) }
		}
	}
}
