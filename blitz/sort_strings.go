package blitz

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"
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
//
// Groups on which 7 more bytes make little progress (duplicates of a few long strings
// mixed with their prefixes, which differ late or only in length) are split instead by
// quicksort steps on the whole remaining strings: each string is compared with a pivot
// and keyed by where it leaves it (see strSortRun), which settles strings equal to the
// pivot or ending on its path at once and shrinks the largest group like quicksort does,
// whatever the lengths.

// strInsertion: runs up to this long are finished by insertion sort comparing the strings.
const strInsertion = 16

// strWork counts the records that the turns of strSortRun have visited (added once per
// call), for the tests that check that the work per string stays logarithmic.
var strWork atomic.Int64

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
	if len(a) >= strSampleMin && strRadixPoor(base, a, 0) {
		// Most strings share their first 7 bytes and go on: the radix sort would peel
		// off a few of them per digit, with a pass over memory each (one string length
		// per byte for prefixes of one string). strSortRun starts with a pivot turn.
		if c.seq {
			strSortRun(nil, base, a, buf, 0)
			return
		}
		c.pool.Call(func(t *Task) { strSortRun(t, base, a, buf, 0) })
		return
	}
	radixSortKV(c, a, buf)
	if c.seq {
		strTies(nil, base, a, buf)
		return
	}
	c.pool.Call(func(t *Task) { strTies(t, base, a, buf) })
}

// strRun is a run a[lo:hi] of records whose strings agree on their first d bytes and whose
// order those bytes do not settle.
type strRun struct{ lo, hi, d int }

// strTies sorts every run of a (sorted by the keys of depth 0) whose records have equal
// keys that do not settle the order. The runs are sorted in parallel when t is not nil.
func strTies(t *Task, base []string, a, buf []radixKV[uint32]) {
	runs := strRadixRuns(a, 7, nil)
	if r, ok := strSortRuns(t, base, a, buf, runs); ok {
		strSortRun(t, base, a[r.lo:r.hi], buf[r.lo:r.hi], r.d)
	}
}

// strRadixRuns appends to runs the runs of a (sorted by strKey of depth d-7) that tie on a
// key with the low byte 8: their strings agree on 7 more bytes and all go on, to depth d.
func strRadixRuns(a []radixKV[uint32], d int, runs []strRun) []strRun {
	for i := 0; i < len(a); {
		k := a[i].k
		j := i + 1
		for j < len(a) && a[j].k == k {
			j++
		}
		if j-i > 1 && k&0xff == 8 {
			runs = append(runs, strRun{i, j, d})
		}
		i = j
	}
	return runs
}

// strSortRuns sorts the runs of a, except that, unless it sorts them in parallel, it leaves
// the largest run unsorted and returns it (ok true), for the caller to sort in its own
// frame.
//
// Recursing on every run cost a level of stack (about 350 bytes) per 7 bytes of a prefix
// shared by more than strInsertion strings: a few dozen strings with a 25 MB common prefix
// overflowed the 1 GB goroutine stack limit, a fatal error. As in quicksort's "recurse on
// the smaller side, loop on the larger" (Sedgewick), only the runs other than the largest
// are sorted by recursion here, and each of them holds at most half of a's records, so
// the recursion is at most log2(len(a)) levels deep; the largest run is sorted by the loop
// in strSortRun. The parallel case forks every run only when the runs other than the
// largest hold at least radixParMin records, so each nested fork takes that many records
// from the input and a chain of them needs an input far larger than memory.
func strSortRuns(t *Task, base []string, a, buf []radixKV[uint32], runs []strRun) (strRun, bool) {
	if len(runs) == 0 {
		return strRun{}, false
	}
	big, inRuns := 0, 0
	for i, r := range runs {
		if r.hi-r.lo > runs[big].hi-runs[big].lo {
			big = i
		}
		inRuns += r.hi - r.lo
	}
	sub := func(t *Task, i int) {
		r := runs[i]
		strSortRun(t, base, a[r.lo:r.hi], buf[r.lo:r.hi], r.d)
	}
	if t != nil && len(runs) >= 2 && inRuns-(runs[big].hi-runs[big].lo) >= radixParMin {
		radixBuckets(t, 0, len(runs), sub)
		return strRun{}, false
	}
	for i := range runs {
		if i != big {
			sub(t, i)
		}
	}
	return runs[big], true
}

// strSortRun sorts a (indices of strings that agree on their first d bytes, none shorter
// than d) from depth d, stably, with buf as scratch. Each turn of its loop splits a into
// runs, sorts all but the largest (see strSortRuns) and goes on with the largest. A turn
// is one of two kinds:
//
//   - A radix turn sorts a by the next 7 bytes of its strings (strKey). It settles random
//     strings at once. When it leaves all of a one run (every string shares the next 7
//     bytes too), the rest of the prefix that all of them share is skipped, found by
//     comparing the strings (a prefix of L bytes would otherwise cost L/7 turns).
//   - A pivot turn is a quicksort step on the whole remaining strings: each is compared
//     with a pivot (the median of a sample, or its longest string when the others are
//     prefixes of it, see strPivot) and keyed by where it leaves the pivot (the
//     length of their common prefix and its next byte, or its end), which orders the
//     strings below the pivot, the strings equal to it and those above it, and groups only
//     strings that share a prefix one byte longer than their common prefix with the pivot
//     (strPivotKey). Those groups are at most as large as the side of the pivot they lie
//     on, whatever their lengths. The keys are usually few, and then sorted by counting
//     (strRankSort).
//
// The loop starts with radix turns and switches to pivot turns for good once a radix turn
// leaves more than half of a in its largest run without settling a whole prefix, or a
// sample of a's strings says that the next one would (strRadixPoor): then the
// strings differ late or only in length, as duplicates of a few long strings mixed with
// their prefixes do, and radix turns would peel off only the strings that end within the
// next 7 bytes, one pass over the group per 7 bytes of the long strings (a group of 25,000
// prefixes of a 10,000-byte string took 1,400 passes, 270 times as long as slices.Sort).
// Comparing whole strings costs a vectorized memory comparison per string, nothing when
// two strings share their bytes (as a string and its prefixes usually do), and strings
// equal to the pivot or ending on the pivot's path are settled at once.
//
// As in introsort, more than log2(len(a)) + 4 poor pivots (each leaving a largest run of
// more than three quarters of its input) hand what is left to a comparison sort, so the
// worst case stays O(n log n) string comparisons.
func strSortRun(t *Task, base []string, a, buf []radixKV[uint32], d int) {
	strSortRunLimit(t, base, a, buf, d, bits.Len(uint(len(a)))+4)
}

// strSortRunLimit is strSortRun with at most limit poor pivot turns.
func strSortRunLimit(t *Task, base []string, a, buf []radixKV[uint32], d, limit int) {
	var runs []strRun
	pivot, poor := false, 0
	var work int64
	defer func() { strWork.Add(work) }()
	for {
		n := len(a)
		if n <= strInsertion {
			strInsertionSort(base, a, d)
			return
		}
		if pivot && poor > limit {
			strCompareSort(base, a, d)
			return
		}
		if !pivot && n >= strSampleMin && strRadixPoor(base, a, d) {
			pivot = true
		}
		work += int64(n)
		if pivot {
			runs = strPivotTurn(t, base, a, buf, d, runs[:0])
		} else {
			strKeys(t, a, func(w []radixKV[uint32]) {
				for i := range w {
					w[i].k = strKey(base[w[i].v], d)
				}
			})
			radixRecKV(t, a, buf, 64, false)
			runs = strRadixRuns(a, d+7, runs[:0])
		}
		r, ok := strSortRuns(t, base, a, buf, runs)
		if !ok {
			return
		}
		big := r.hi - r.lo
		switch {
		case pivot:
			if 4*big > 3*n {
				poor++
			}
		case big == n:
			r.d += strCommonPrefix(base, a, r.d)
		case 2*big > n:
			pivot = true
		}
		a, buf, d = a[r.lo:r.hi], buf[r.lo:r.hi], r.d
	}
}

// strSampleMin: runs of at least this many records are sampled before a radix turn.
const strSampleMin = 64

// strRadixPoor reports whether a sample of a's strings suggests that a radix turn from
// depth d would leave most of a in one run: more than half of 9 strings spread over a
// share their next 7 bytes and go on.
func strRadixPoor(base []string, a []radixKV[uint32], d int) bool {
	var at [9]int
	strSample(at[:], len(a), d)
	var k [9]uint64
	for i, j := range at {
		k[i] = strKey(base[a[j].v], d)
	}
	for i := range k {
		if k[i]&0xff != 8 {
			continue
		}
		m := 0
		for j := range k {
			if k[j] == k[i] {
				m++
			}
		}
		if 2*m > len(k) {
			return true
		}
	}
	return false
}

// strSample fills at with positions in [0, n) for a sample of len(at) records: one in each
// of len(at) equal slices of [0, n) (n >= len(at)), at an offset drawn by a xorshift
// generator seeded with n and d, so that a periodic input (such as strings whose lengths
// repeat every few records) cannot put every sampled string at the same phase.
func strSample(at []int, n, d int) {
	e := n / len(at)
	x := uint64(n)*0x9e3779b97f4a7c15 ^ uint64(d) | 1
	for i := range at {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		at[i] = i*e + int(x%uint64(e))
	}
}

// strKeys runs set on a in chunks, in parallel when t is not nil and a is large.
func strKeys(t *Task, a []radixKV[uint32], set func(w []radixKV[uint32])) {
	if t == nil || len(a) < 2*radixParMin {
		set(a)
		return
	}
	const chunk = radixParMin
	radixBuckets(t, 0, (len(a)+chunk-1)/chunk, func(_ *Task, c int) {
		set(a[c*chunk : min(len(a), (c+1)*chunk)])
	})
}

// strInsertionSort sorts a (at most strInsertion records) by their strings from depth d,
// stably.
func strInsertionSort(base []string, a []radixKV[uint32], d int) {
	for i := 1; i < len(a); i++ {
		x := a[i]
		xs := base[x.v][d:]
		j := i
		for ; j > 0 && base[a[j-1].v][d:] > xs; j-- {
			a[j] = a[j-1]
		}
		a[j] = x
	}
}

// strCompareSort sorts a by their strings from depth d with pattern-defeating quicksort,
// equal strings by index, which keeps them in input order (the radix steps are stable, so
// a's records of equal strings are in index order).
func strCompareSort(base []string, a []radixKV[uint32], d int) {
	slices.SortFunc(a, func(x, y radixKV[uint32]) int {
		if c := strings.Compare(base[x.v][d:], base[y.v][d:]); c != 0 {
			return c
		}
		return cmp.Compare(x.v, y.v)
	})
}

// Keys of a pivot turn. With l the length of the common prefix of a string x and the
// pivot p (both from the turn's depth), x is below p when it ends at l (a proper prefix of
// p) or its byte at l is below p's, and above p when p ends at l or x's byte at l is above
// p's. Of two strings below p, the one with the shorter common prefix is the smaller (it
// leaves p's path downwards earlier), and at equal l a string that ends there comes
// before those that go on; above p it is the other way round: the longer the common
// prefix, the smaller. Strings with the same key (side, l, byte at l) agree on l+1 bytes
// and are sorted again from there; strings equal to p, or ending at the same l, are equal.
// With P = len(p) (l <= P, and l < P below p), the keys are dense, so that the radix sort
// of a turn has few bits to sort:
//
//	below p: l*257 (x ends at l) or l*257 + 1+x[l]
//	equal:   P*257
//	above p: P*257 + 1 + (P-l)*256 + x[l]

// strPivotKey returns the pivot turn key of x against the pivot p (see above).
func strPivotKey(x, p string) uint64 {
	l := strPrefixLen(x, p)
	eq := uint64(len(p)) * 257
	switch {
	case l == len(x) && l == len(p):
		return eq
	case l == len(x):
		return uint64(l) * 257
	case l == len(p) || x[l] > p[l]:
		return eq + 1 + uint64(len(p)-l)*256 + uint64(x[l])
	default:
		return uint64(l)*257 + 1 + uint64(x[l])
	}
}

// strPivotDepth returns the depth (from the turn's) from which records with the pivot turn
// key k against a pivot of length pl are sorted again, and false if they are all equal.
func strPivotDepth(k uint64, pl int) (int, bool) {
	eq := uint64(pl) * 257
	switch {
	case k > eq:
		return pl - int((k-eq-1)/256) + 1, true
	case k == eq || k%257 == 0:
		return 0, false
	default:
		return int(k/257) + 1, true
	}
}

// strPivotTurn is a pivot turn of strSortRun over a (see there): it sorts a by the keys of
// strPivotKey and appends the runs of equal keys that do not settle the order to runs.
func strPivotTurn(t *Task, base []string, a, buf []radixKV[uint32], d int, runs []strRun) []strRun {
	p := base[a[strPivot(base, a, d)].v][d:]
	strKeys(t, a, func(w []radixKV[uint32]) {
		for i := range w {
			w[i].k = strPivotKey(base[w[i].v][d:], p)
		}
	})
	if len(a) < strRankMin || !strRankSort(a, buf) {
		radixRecKV(t, a, buf, 64, false)
	}
	for i := 0; i < len(a); {
		k := a[i].k
		j := i + 1
		for j < len(a) && a[j].k == k {
			j++
		}
		if j-i > 1 {
			if l, ok := strPivotDepth(k, len(p)); ok {
				runs = append(runs, strRun{i, j, d + l})
			}
		}
		i = j
	}
	return runs
}

// strRankMin: pivot turns over at least this many records try strRankSort first.
const strRankMin = 1 << 12

// strRankMax is the most distinct keys that strRankSort sorts; strRankSlots, the size of
// its hash table (half full at most); strRankProbes, the longest run of other keys' slots
// it steps over to find a key's.
const (
	strRankProbes = 32
	strRankBits   = 11
	strRankSlots  = 1 << strRankBits
	strRankMax    = strRankSlots / 2
)

// strRankSort sorts a by k, stably, with buf as scratch, if a holds at most strRankMax
// distinct keys, each found within strRankProbes slots of its hash (else it returns false
// and leaves a in its order), by a counting sort on
// the rank of each key among them: one pass counts the keys in a small hash table, the
// distinct keys are sorted, and one pass scatters the records into buf, which is copied
// back. A pivot turn usually has few distinct keys (the sides of the pivot, and for each a
// handful of places where strings leave it), spread over many bits, which a radix sort
// would go through a digit at a time: with two million strings, a pass over memory per
// digit made the pivot turns cost several times as much as this.
func strRankSort(a, buf []radixKV[uint32]) bool {
	var keys [strRankSlots]uint64
	var used [strRankSlots]bool
	var count [strRankSlots]int
	// slot returns k's slot, or -1 if it is more than strRankProbes slots past the one k
	// hashes to: keys that collide that much (the input chooses them) are left to the radix
	// sort rather than cost a probe per key already stored.
	slot := func(k uint64) int {
		h := int((k * 0x9e3779b97f4a7c15) >> (64 - strRankBits))
		for p := 0; used[h] && keys[h] != k; p++ {
			if p == strRankProbes {
				return -1
			}
			h = (h + 1) & (strRankSlots - 1)
		}
		return h
	}
	distinct := 0
	lastK, lastS := a[0].k, slot(a[0].k)
	for i := range a {
		k := a[i].k
		if k != lastK {
			lastK, lastS = k, slot(k)
		}
		if lastS < 0 {
			return false
		}
		if !used[lastS] {
			if distinct == strRankMax {
				return false
			}
			used[lastS], keys[lastS] = true, k
			distinct++
		}
		count[lastS]++
	}
	var order [strRankMax]uint16
	o := order[:0]
	for h := range used {
		if used[h] {
			o = append(o, uint16(h))
		}
	}
	slices.SortFunc(o, func(x, y uint16) int { return cmp.Compare(keys[x], keys[y]) })
	off := 0
	for _, h := range o {
		off, count[h] = off+count[h], off
	}
	lastK, lastS = a[0].k, slot(a[0].k)
	for i := range a {
		k := a[i].k
		if k != lastK {
			lastK, lastS = k, slot(k)
		}
		buf[count[lastS]] = a[i]
		count[lastS]++
	}
	copy(a, buf[:len(a)])
	return true
}

// strPivot returns the index in a of the pivot of a pivot turn from depth d: the median of
// three of its strings, or of nine (the median of three medians, Tukey's ninther) for
// larger a, spread over a. If every sampled string is a prefix of the longest one, the
// longest is the pivot instead: the strings of a are then likely prefixes of one string
// (a chain), which a pivot turn settles up to the pivot's length, so the longest of the
// sample settles about nine tenths of them where the median settles half.
func strPivot(base []string, a []radixKV[uint32], d int) int {
	s := func(i int) string { return base[a[i].v][d:] }
	med := func(i, j, k int) int {
		if s(j) < s(i) {
			i, j = j, i
		}
		if s(k) < s(j) {
			j = k
			if s(j) < s(i) {
				j = i
			}
		}
		return j
	}
	var at [9]int
	sample := at[:3]
	if len(a) >= 128 {
		sample = at[:]
	}
	strSample(sample, len(a), d)
	long := sample[0]
	for _, i := range sample {
		if len(s(i)) > len(s(long)) {
			long = i
		}
	}
	chain := true
	for _, i := range sample {
		if !strings.HasPrefix(s(long), s(i)) {
			chain = false
			break
		}
	}
	switch {
	case chain:
		return long
	case len(sample) == 3:
		return med(at[0], at[1], at[2])
	}
	return med(med(at[0], at[1], at[2]), med(at[3], at[4], at[5]), med(at[6], at[7], at[8]))
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

// strPrefixLen returns the length of the longest common prefix of x and y. Strings that
// share their bytes (a string and its prefixes) are not read; otherwise the first 8 bytes
// are compared as one word, then blocks of growing size with == (the runtime's vectorized
// memequal), and the block that differs is narrowed down by halves (a galloping search),
// so a prefix of L bytes costs O(L) bytes compared in O(log L) calls.
func strPrefixLen(x, y string) int {
	n := min(len(x), len(y))
	if n == 0 || unsafe.StringData(x) == unsafe.StringData(y) {
		return n
	}
	if n >= 8 {
		u := binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(x), 8))
		v := binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(y), 8))
		if u != v {
			return bits.LeadingZeros64(u^v) / 8
		}
	}
	i, w := 0, 32
	for i+w <= n && x[i:i+w] == y[i:i+w] {
		i += w
		w *= 2
	}
	// The first difference (or n) is in [i, i+w).
	for w > 32 {
		w /= 2
		if i+w <= n && x[i:i+w] == y[i:i+w] {
			i += w
		}
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
