package blitz

import (
	"math/bits"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Stable parallel radix sort of (key, value) records, used by SortByKey, SortStableByKey
// and the string sort. The layout is radixSort's (one parallel MSD pass on a wide digit
// into a scratch buffer, then every bucket sorted in cache by narrower MSD passes and
// insertion sort), with every step stable: the parallel scatter gives each (chunk, digit)
// pair its own output range in chunk order, each in-cache scatter walks its input in
// order, and the insertion sort only moves a record past strictly greater keys. So records
// with equal keys keep their input order, which is what makes SortStableByKey stable and
// what lets the string sort break ties in later passes.

// radixKV is a record sorted by k.
type radixKV[V any] struct {
	k uint64
	v V
}

// radixTraffic counts the bytes that the radix sorts read or write in passes over their
// whole input (not the passes over a bucket, which stay in cache). The benchmarks divide it
// by the number of elements sorted to report the bytes moved per element.
var radixTraffic atomic.Int64

// radixSortKV sorts a by k, stably and in parallel, using buf (len(buf) >= len(a)) as
// scratch. It runs no user code: it cannot be interrupted half-way (see radixSort).
func radixSortKV[V any](c parCall, a, buf []radixKV[V]) {
	n := len(a)
	if n < 2 {
		return
	}
	rec := int64(unsafe.Sizeof(a[0]))
	if c.seq || n < 2*radixParMin {
		radixRecKV(nil, a, buf[:n], 64, false)
		return
	}
	k0 := a[0].k
	width := min(radixTopWidth(n, int(rec)), radixTopMaxKV)
	size := max((n+4*c.workers-1)/(4*c.workers), 1<<12)
	nc := (n + size - 1) / size
	diffs := make([]uint64, nc)
	nd := 1 << width
	counts := make([]int, nc*nd)
	shift := 64 - width
	parChunks(c, n, size, func(ci, lo, hi int) {
		h := counts[ci*nd : (ci+1)*nd]
		var d uint64
		for i := range a[lo:hi] {
			x := a[lo+i].k
			d |= x ^ k0
			h[x>>shift]++
		}
		diffs[ci] = d
	})
	radixTraffic.Add(int64(n) * rec)
	var diff uint64
	for _, d := range diffs {
		diff |= d
	}
	if diff == 0 {
		return
	}
	mask := uint64(nd - 1)
	if vary := uint(bits.Len64(diff)); vary < 64 {
		width = min(width, vary)
		shift = vary - width
		nd = 1 << width
		mask = uint64(nd - 1)
		counts = counts[:nc*nd]
		clear(counts)
		parChunks(c, n, size, func(ci, lo, hi int) {
			h := counts[ci*nd : (ci+1)*nd]
			for i := range a[lo:hi] {
				h[(a[lo+i].k>>shift)&mask]++
			}
		})
		radixTraffic.Add(int64(n) * rec)
	}
	starts := radixOffsets(counts, nc, nd, n)
	parChunks(c, n, size, func(ci, lo, hi int) {
		off := counts[ci*nd : (ci+1)*nd]
		for i := lo; i < hi; i++ {
			d := (a[i].k >> shift) & mask
			buf[off[d]] = a[i]
			off[d]++
		}
	})
	radixTraffic.Add(4 * int64(n) * rec) // the scatter, then the buckets back into a
	c.pool.Call(func(t *Task) {
		radixBuckets(t, 0, nd, func(t *Task, d int) {
			if b, e := starts[d], starts[d+1]; e > b {
				radixRecKV(t, buf[b:e], a[b:e], shift, true)
			}
		})
	})
}

// radixBucketsOut sorts the buckets buf[starts[d]:starts[d+1]] (stably, in parallel; the
// keys of a bucket are equal at and above bit nbits) and hands each bucket's sorted records
// to done. A bucket small enough for the cache is sorted into a scratch buffer that each
// worker reuses, so it stays in cache: done copies out of it, and nothing is written back
// to memory but what done writes. A larger bucket (skewed keys) is sorted, with parallel
// sub-buckets, into big(lo, hi), a slice of its length that the caller provides.
func radixBucketsOut[V any](c parCall, buf []radixKV[V], starts []int, nbits uint,
	big func(lo, hi int) []radixKV[V], done func(lo, hi int, recs []radixKV[V])) {
	nd := len(starts) - 1
	avg := starts[nd] / nd
	var scratch sync.Pool
	ptrs := !stablePointerFree(reflect.TypeFor[radixKV[V]]())
	c.pool.Call(func(t *Task) {
		radixBuckets(t, 0, nd, func(t *Task, d int) {
			b, e := starts[d], starts[d+1]
			switch {
			case e == b:
			case e-b > radixLSDMax:
				w := big(b, e)
				radixRecKV(t, buf[b:e], w, nbits, true)
				done(b, e, w)
			default:
				sp, _ := scratch.Get().(*[]radixKV[V])
				if sp == nil || cap(*sp) < e-b {
					w := make([]radixKV[V], max(e-b, 2*avg))
					sp = &w
				}
				w := (*sp)[:e-b]
				radixRecKV(nil, buf[b:e], w, nbits, true)
				done(b, e, w)
				if ptrs {
					clear(w) // no stale pointers kept alive by the pool
				}
				scratch.Put(sp)
			}
		})
	})
}

// radixRecKV is radixRec for records, stable: it sorts data by k, whose bits at and above
// nbits are all equal; the result ends in other if toOther, else in data. Every step keeps
// equal keys in input order: the count and scatter walk data in order, and the insertion
// sort moves a record only past strictly greater keys.
func radixRecKV[V any](t *Task, data, other []radixKV[V], nbits uint, toOther bool) {
	n := len(data)
	if nbits == 0 { // every key of the bucket is equal
		if toOther {
			copy(other, data)
		}
		return
	}
	if n <= radixInsertion {
		radixInsertKV(data, other, toOther)
		return
	}
	if n > radixLSDMax {
		k0 := data[0].k
		var diff uint64
		for i := range data {
			diff |= data[i].k ^ k0
		}
		if diff == 0 {
			if toOther {
				copy(other, data)
			}
			return
		}
		radixWideKV(t, data, other, uint(bits.Len64(diff)), toOther)
		return
	}
	// As in radixRec: one narrow pass, then one insertion sort over the whole bucket.
	vary := nbits
	width := min(uint(max(bits.Len(uint(n))-1, 2)), radixSubMax, vary)
	var off []int32
	if width <= 8 {
		var small [256]int32
		off = small[:]
	} else {
		var big [1 << radixSubMax]int32
		off = big[:]
	}
	shift := vary - width
	mask := uint64(1)<<width - 1
	nd := 1 << width
	k0 := data[0].k
	var diff uint64
	for i := range data {
		x := data[i].k
		diff |= x ^ k0
		off[(x>>shift)&mask]++
	}
	if diff == 0 {
		if toOther {
			copy(other, data)
		}
		return
	}
	if v := uint(bits.Len64(diff)); v < vary && off[(k0>>shift)&mask] == int32(n) {
		clear(off[:nd])
		vary = v
		width = min(width, vary)
		shift = vary - width
		mask = uint64(1)<<width - 1
		nd = 1 << width
		for i := range data {
			off[(data[i].k>>shift)&mask]++
		}
	}
	s := int32(0)
	for d := range nd {
		s, off[d] = s+off[d], s
	}
	for i := range data {
		d := (data[i].k >> shift) & mask
		other[off[d]] = data[i]
		off[d]++
	}
	b := int32(0)
	for d := range nd {
		e := off[d]
		if e-b > radixInsertion {
			radixRecKV(nil, other[b:e], data[b:e], shift, false)
		}
		b = e
	}
	radixInsertKV(other, data, !toOther)
}

// radixWideKV is radixWide for records.
func radixWideKV[V any](t *Task, data, other []radixKV[V], vary uint, toOther bool) {
	n := len(data)
	radixTraffic.Add(4 * int64(n) * int64(unsafe.Sizeof(data[0])))
	shift := uint(0)
	if vary > 8 {
		shift = vary - 8
	}
	var off [256]int
	for i := range data {
		off[uint8(data[i].k>>shift)]++
	}
	var starts [257]int
	s := 0
	for d := range 256 {
		starts[d] = s
		s, off[d] = s+off[d], s
	}
	starts[256] = n
	for i := range data {
		d := uint8(data[i].k >> shift)
		other[off[d]] = data[i]
		off[d]++
	}
	sub := func(t *Task, d int) {
		b, e := starts[d], starts[d+1]
		if e > b {
			radixRecKV(t, other[b:e], data[b:e], shift, !toOther)
		}
	}
	if t == nil || n < radixParMin {
		for d := range 256 {
			sub(nil, d)
		}
		return
	}
	radixBuckets(t, 0, 256, sub)
}

// radixInsertKV sorts data by k with a stable insertion sort; the result ends in other if
// toOther (data is then left as it was), else in data.
func radixInsertKV[V any](data, other []radixKV[V], toOther bool) {
	if toOther {
		other = other[:len(data)]
		for i := range data {
			x := data[i]
			j := i
			for ; j > 0 && other[j-1].k > x.k; j-- {
				other[j] = other[j-1]
			}
			other[j] = x
		}
		return
	}
	for i := 1; i < len(data); i++ {
		x := data[i]
		j := i
		for ; j > 0 && data[j-1].k > x.k; j-- {
			data[j] = data[j-1]
		}
		data[j] = x
	}
}
