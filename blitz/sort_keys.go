package blitz

import (
	"cmp"
	"math"
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
// Small elements cross memory three times: the records are built in the sort's first pass
// (which also counts the first digit), scattered by that digit, and every bucket is sorted
// into a per-worker buffer in cache and its elements copied from there into s: 128 bytes
// per 16-byte element, against 200 for separate build, count, sort and copy-back passes.
func sortByNumericKey[T any, K cmp.Ordered](c parCall, s []T, m func(K) uint64, key func(T) K, stable bool) {
	n := len(s)
	var z T
	if unsafe.Sizeof(z) <= sortCarryMax {
		recs, release := kvScratch[T](2 * n)
		defer release()
		a, buf := recs[:n], recs[n:]
		reversed := false
		radixSortKVWith(c, a, buf, radixHooks[T]{
			fill: func(a []radixKV[T], lo, hi int) {
				for i := lo; i < hi; i++ {
					a[i] = radixKV[T]{m(key(s[i])), s[i]}
				}
			},
			sorted: func() bool {
				switch radixKVPresorted(a, stable) {
				case 1:
					return true
				case -1:
					reversed = true
					return true
				}
				return false
			},
			done: func(lo, hi int, recs []radixKV[T]) {
				w := s[lo:hi]
				for i := range w {
					w[i] = recs[i].v
				}
			},
		})
		if reversed {
			parReverse(c, s)
		}
		// The fill reads s, the copy back writes it.
		radixTraffic.Add(2 * int64(n) * int64(unsafe.Sizeof(z)))
		return
	}
	cf := sortAux(c, n)
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
