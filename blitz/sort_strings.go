package blitz

import (
	"encoding/binary"
	"unsafe"
)

// String radix sort, used by Sort for string element types and by the keyed sorts for
// string keys.
//
// Each string is given a uint64 key made of its next 7 bytes from a depth d (big-endian,
// zero-padded) and, in the low byte, how many bytes it has left from d, capped at 8. Two
// strings that agree on their first d bytes compare like their keys, except when both keys
// are equal with the low byte 8 (the strings agree on 7 more bytes and both go on): such
// runs are sorted again from depth d+7. A string that ends inside the 7 bytes gets a
// smaller low byte than one that goes on with zero bytes, so "ab" < "ab\x00" < "ab\x00x"
// comes out right. The records (key, string) are sorted by the stable radix sort of
// sort_radix_kv.go, so each level is a few passes in cache per run instead of a string
// comparison (a cache miss on two string bodies) per step of a comparison sort, and
// strings equal at every level keep their input order.

// strIdx is a string key with the index of its element, for the keyed sorts.
type strIdx struct {
	s string
	i uint32
}

// strRec is the set of record values the string sort handles; both start with the string.
type strRec interface{ string | strIdx }

// strOf returns the string at the start of v.
func strOf[V strRec](v *V) string { return *(*string)(unsafe.Pointer(v)) }

// strInsertion: runs up to this long are finished by insertion sort comparing the strings.
const strInsertion = 16

// strKey returns the radix key of s from depth d (see above); len(s) >= d.
func strKey(s string, d int) uint64 {
	r := len(s) - d
	if r >= 8 {
		return binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(s[d:]), 8))&^0xff | 8
	}
	var k uint64
	for i := range r {
		k |= uint64(s[d+i]) << (56 - 8*uint(i))
	}
	return k | uint64(r)
}

// strSort sorts a by its strings, stably and in parallel, with buf (len(buf) >= len(a)) as
// scratch. The keys of a must hold strKey(string, 0).
func strSort[V strRec](c parCall, a, buf []radixKV[V]) {
	radixSortKV(c, a, buf)
	if c.seq {
		strTies(nil, a, buf, 7)
		return
	}
	c.pool.Call(func(t *Task) { strTies(t, a, buf, 7) })
}

// strTies sorts, from depth d, every run of a (sorted by keys of depth d-7) whose records
// have equal keys that do not settle the order. The runs are sorted in parallel when t is
// not nil.
func strTies[V strRec](t *Task, a, buf []radixKV[V], d int) {
	type run struct{ lo, hi int }
	var runs []run
	for i := 0; i < len(a); {
		k := a[i].k
		j := i + 1
		for j < len(a) && a[j].k == k {
			j++
		}
		if j-i > 1 && k&0xff == 8 {
			runs = append(runs, run{i, j})
		}
		i = j
	}
	sub := func(t *Task, r int) {
		lo, hi := runs[r].lo, runs[r].hi
		strSortRun(t, a[lo:hi], buf[lo:hi], d)
	}
	if t == nil || len(runs) < 2 || len(a) < radixParMin {
		for r := range runs {
			sub(t, r)
		}
		return
	}
	radixBuckets(t, 0, len(runs), sub)
}

// strSortRun sorts a (strings that agree on their first d bytes, all longer than d) from
// depth d, stably, with buf as scratch.
func strSortRun[V strRec](t *Task, a, buf []radixKV[V], d int) {
	if len(a) <= strInsertion {
		for i := 1; i < len(a); i++ {
			x := a[i]
			xs := strOf(&x.v)[d:]
			j := i
			for ; j > 0 && strOf(&a[j-1].v)[d:] > xs; j-- {
				a[j] = a[j-1]
			}
			a[j] = x
		}
		return
	}
	for i := range a {
		a[i].k = strKey(strOf(&a[i].v), d)
	}
	radixRecKV(t, a, buf, 64, false)
	strTies(t, a, buf, d+7)
}

// sortStrings sorts the strings of s (a []T of a string type, as Sort gets it), in
// parallel.
func sortStrings(c parCall, s []string) {
	n := len(s)
	recs := make([]radixKV[string], 2*n)
	a, buf := recs[:n], recs[n:]
	cf := parResolve(n, parMinGrain, []Option{WithPool(c.pool)})
	parFor(cf, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i] = radixKV[string]{strKey(s[i], 0), s[i]}
		}
	})
	radixTraffic.Add(int64(n) * (16 + 24))
	strSort(c, a, buf)
	parFor(cf, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s[i] = a[i].v
		}
	})
	radixTraffic.Add(int64(n) * (24 + 16))
}

// sortByStringKey sorts s by str(element) (called once per element, in parallel), stably.
func sortByStringKey[T any](c parCall, s []T, str func(T) string) {
	n := len(s)
	recs := make([]radixKV[strIdx], 2*n)
	a, buf := recs[:n], recs[n:]
	cf := parResolve(n, parMinGrain, []Option{WithPool(c.pool)})
	parFor(cf, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			k := str(s[i])
			a[i] = radixKV[strIdx]{strKey(k, 0), strIdx{k, uint32(i)}}
		}
	})
	radixTraffic.Add(int64(n) * int64(unsafe.Sizeof(s[0])+32))
	if strPresorted(a) {
		return
	}
	strSort(c, a, buf)
	sortGather(c, s, a, func(v *strIdx) int { return int(v.i) })
}

// strPresorted reports whether the strings of a are already in non-decreasing order, in
// which case a sort (even a stable one) has nothing to move. A random input stops the scan
// within a few elements.
func strPresorted(a []radixKV[strIdx]) bool {
	for i := 1; i < len(a); i++ {
		if a[i].v.s < a[i-1].v.s {
			return false
		}
	}
	return true
}
