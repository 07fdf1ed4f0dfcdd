package blitz

import (
	"encoding/binary"
	"slices"
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
// comes out right. The records (key, index of the string) are sorted by the stable radix sort of
// sort_radix_kv.go, so each level is a few passes in cache per run instead of a string
// comparison (a cache miss on two string bodies) per step of a comparison sort, and
// strings equal at every level keep their input order.

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

// The records are (key, index into base): 16 bytes without pointers, so they live in the
// cached radix buffer and the garbage collector never scans them (records holding the
// strings themselves spent a third of the sort's CPU time in GC scanning).

// strSort sorts a by the strings base[a[i].v], stably and in parallel, with buf
// (len(buf) >= len(a)) as scratch. The keys of a must hold strKey(string, 0).
func strSort(c parCall, base []string, a, buf []radixKV[uint32]) {
	radixSortKV(c, a, buf)
	if c.seq {
		strTies(nil, base, a, buf, 7)
		return
	}
	c.pool.Call(func(t *Task) { strTies(t, base, a, buf, 7) })
}

// strTies sorts, from depth d, every run of a (sorted by keys of depth d-7) whose records
// have equal keys that do not settle the order. The runs are sorted in parallel when t is
// not nil.
func strTies(t *Task, base []string, a, buf []radixKV[uint32], d int) {
	if lo, hi, ok := strTiesButLargest(t, base, a, buf, d); ok {
		strSortRun(t, base, a[lo:hi], buf[lo:hi], d)
	}
}

// strTiesButLargest is strTies except that, unless it sorts the runs in parallel, it
// leaves the largest run unsorted and returns its bounds (ok true), for the caller to sort
// in its own frame.
//
// Recursing on every run cost a level of stack (about 350 bytes) per 7 bytes of a prefix
// shared by more than strInsertion strings: a few dozen strings with a 25 MB common prefix
// overflowed the 1 GB goroutine stack limit, a fatal error. As in quicksort's "recurse on
// the smaller side, loop on the larger" (Sedgewick), only the runs other than the largest
// are sorted by recursion here, and each of them holds at most half of a's records, so
// the recursion is at most log2(len(a)) levels deep; the largest run is sorted by the loop
// in strSortRun. The parallel case forks every run (as before) only when the runs other
// than the largest hold at least radixParMin records, so each nested fork takes that many
// records from the input and a chain of them needs an input far larger than memory.
func strTiesButLargest(t *Task, base []string, a, buf []radixKV[uint32], d int) (lo, hi int, ok bool) {
	type run struct{ lo, hi int }
	var runs []run
	big, bigLen, inRuns := 0, 0, 0
	for i := 0; i < len(a); {
		k := a[i].k
		j := i + 1
		for j < len(a) && a[j].k == k {
			j++
		}
		if j-i > 1 && k&0xff == 8 {
			if j-i > bigLen {
				big, bigLen = len(runs), j-i
			}
			runs = append(runs, run{i, j})
			inRuns += j - i
		}
		i = j
	}
	if len(runs) == 0 {
		return 0, 0, false
	}
	sub := func(t *Task, r int) {
		lo, hi := runs[r].lo, runs[r].hi
		strSortRun(t, base, a[lo:hi], buf[lo:hi], d)
	}
	if t != nil && len(runs) >= 2 && inRuns-bigLen >= radixParMin {
		radixBuckets(t, 0, len(runs), sub)
		return 0, 0, false
	}
	for r := range runs {
		if r != big {
			sub(t, r)
		}
	}
	return runs[big].lo, runs[big].hi, true
}

// strSortRun sorts a (indices of strings that agree on their first d bytes, none shorter
// than d) from depth d, stably, with buf as scratch. Each turn of its loop sorts by the
// next 7 bytes and goes on with the largest run of ties (see strTiesButLargest).
//
// A turn that leaves all of a one run (every string shares the next 7 bytes too) skips the
// rest of the prefix that all of them share, found by comparing the strings, which is
// far faster than a radix pass per 7 bytes: strings sharing a prefix of L bytes would
// otherwise cost L/7 passes over the run (40000 copies of a 10 KB string took 13 times as
// long as slices.Sort).
func strSortRun(t *Task, base []string, a, buf []radixKV[uint32], d int) {
	for {
		if len(a) <= strInsertion {
			for i := 1; i < len(a); i++ {
				x := a[i]
				xs := base[x.v][d:]
				j := i
				for ; j > 0 && base[a[j-1].v][d:] > xs; j-- {
					a[j] = a[j-1]
				}
				a[j] = x
			}
			return
		}
		for i := range a {
			a[i].k = strKey(base[a[i].v], d)
		}
		radixRecKV(t, a, buf, 64, false)
		lo, hi, ok := strTiesButLargest(t, base, a, buf, d+7)
		if !ok {
			return
		}
		if lo == 0 && hi == len(a) {
			d += 7 + strCommonPrefix(base, a, d+7)
		} else {
			d += 7
		}
		a, buf = a[lo:hi], buf[lo:hi]
	}
}

// strCommonPrefix returns the length of the longest common prefix of the strings
// base[a[i].v][d:] (all at least d bytes long).
func strCommonPrefix(base []string, a []radixKV[uint32], d int) int {
	first := base[a[0].v][d:]
	l := len(first)
	for i := 1; i < len(a) && l > 0; i++ {
		l = strPrefixLen(first[:l], base[a[i].v][d:])
	}
	return l
}

// strPrefixLen returns the length of the longest common prefix of x and y, comparing
// blocks of 64 bytes with == (the runtime's vectorized memequal) before single bytes.
func strPrefixLen(x, y string) int {
	n := min(len(x), len(y))
	i := 0
	for i+64 <= n && x[i:i+64] == y[i:i+64] {
		i += 64
	}
	for i < n && x[i] == y[i] {
		i++
	}
	return i
}

// strRecords returns the records (strKey(base[i], 0), i) and scratch for them, built in
// parallel, and the function that gives the buffer back.
func strRecords(c parCall, base []string) (a, buf []radixKV[uint32], release func()) {
	n := len(base)
	recs, release := kvScratch[uint32](2 * n)
	a, buf = recs[:n], recs[n:]
	cf := sortAux(c, n)
	parFor(cf, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i] = radixKV[uint32]{strKey(base[i], 0), uint32(i)}
		}
	})
	radixTraffic.Add(int64(n) * (16 + 16))
	return a, buf, release
}

// sortStrings sorts the strings of s (a []T of a string type, as Sort gets it), in
// parallel. len(s) < 1<<32 (the records hold 32-bit indices).
func sortStrings(c parCall, s []string) {
	a, buf, release := strRecords(c, s)
	defer release()
	strSort(c, s, a, buf)
	sortGather(c, s, a, func(i *uint32) int { return int(*i) })
}

// sortByStringKey sorts s by str(element) (called once per element, in parallel), stably.
func sortByStringKey[T any](c parCall, s []T, str func(T) string) {
	n := len(s)
	keys := make([]string, n)
	cf := sortAux(c, n)
	parFor(cf, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			keys[i] = str(s[i])
		}
	})
	if slices.IsSorted(keys) {
		return // nothing to move, even for a stable sort; random keys stop the scan early
	}
	a, buf, release := strRecords(c, keys)
	defer release()
	strSort(c, keys, a, buf)
	sortGather(c, s, a, func(i *uint32) int { return int(*i) })
}
