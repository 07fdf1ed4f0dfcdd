package blitz

import (
	"math/bits"
	"sync"
	"unsafe"
	"weak"
)

// Parallel radix sort for integer and float keys, used by Sort.
//
// A comparison sort cannot sort 10M keys 5x faster than slices.Sort on two cores (the
// best it can do is about 2x). Radix sort does O(1) work per key per digit. The layout is
// "one MSD pass through memory, then MSD passes in cache":
//
//  1. One parallel pass finds which bits vary at all (OR of key XOR first key) and so the
//     highest varying digit: keys that share their top bits (small integers in a uint64)
//     cost no passes for those bits.
//  2. A parallel MSD pass distributes the keys by a wide digit (radixTopWidth: 10 bits for
//     10M uint64) into a scratch buffer: each chunk counts its digits (parallel), prefix
//     sums give every (chunk, digit) pair its own output range, and each chunk scatters its
//     keys (parallel, no two chunks write the same slot, so no synchronization is needed
//     beyond the join between the passes).
//  3. The buckets (about 128 KB each) are sorted independently, in parallel, back into the
//     caller's slice. In a bucket, which is in cache, a narrower MSD pass on the bits below
//     the bucket's highest varying bit leaves sub-buckets of a few keys, which insertion sort
//     finishes. Buckets too big for the cache (skewed inputs) take another 8-bit pass first.
//
// So random keys cross memory in five streams of 8 bytes per uint64 (the count read, the
// scatter's read and write, the buckets' read and write: 40 bytes per key, which the
// benchmarks report as B/elem), whatever the key width; an LSD sort would make one read and
// one write per 8-bit digit, 128 bytes for a uint64.
//
// Keys are unsigned words. Signed and float keys are mapped onto unsigned order by a
// bijection applied in place before the sort and undone after it (radixSigned, radixFloat
// in sort.go): two cheap parallel passes, instead of an extra operation on every key in
// every pass. NaNs never reach the radix sort (Sort moves them to the front first, where
// cmp.Compare puts them), and -0 sorts before +0, which cmp.Compare considers equal, so
// either order is correct.

// radixKey is the set of unsigned key words.
type radixKey interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

const (
	radixInsertion = 24      // buckets up to this size are insertion sorted
	radixLSDMax    = 1 << 16 // buckets up to this size are sorted in cache with narrow digits
	radixParMin    = 1 << 14 // sub-bucket loops over at least this many keys run in parallel
	radixTopMax    = 12      // widest first (parallel MSD) digit, for the largest inputs
	// radixTopMaxKV is the widest first digit of the record sorts. Every digit value is a
	// stream that the scatter writes to its own pages, and records fill pages three times
	// as fast as keys: 10M 24-byte records (SortByKey) with an 11-bit digit took 230-240 ms,
	// with a 10-bit one 218-220 ms, 9 and 8 bits 240 ms.
	radixTopMaxKV  = 10
	radixBucketLog = 17 // the first digit aims at buckets of about 1<<radixBucketLog bytes

	radixSubMax = 12 // widest digit of the in-cache MSD passes
)

// radixScratch caches the scratch buffer of the last large radix sort. A fresh 80 MB buffer
// costs more in page faults and zeroing than a whole pass of the sort. The cache holds only
// a weak pointer, so the buffer is reused by back-to-back sorts but freed by the next GC
// when nobody sorts; a buffer is taken out of the cache for the duration of one sort, so
// concurrent sorts never share one. (A sync.Pool keeps its item in the releasing P's
// private slot, where a sort that starts on another P misses it about half the time.)
var radixScratch struct {
	mu  sync.Mutex
	buf weak.Pointer[[]uint64]
}

// radixBuffer returns a scratch slice of n keys and the function that gives it back.
func radixBuffer[K radixKey](n int) ([]K, func()) {
	var k K
	words := (n*int(unsafe.Sizeof(k)) + 7) / 8
	radixScratch.mu.Lock()
	bp := radixScratch.buf.Value()
	if bp != nil && cap(*bp) >= words {
		radixScratch.buf = weak.Pointer[[]uint64]{}
	} else {
		bp = nil
	}
	radixScratch.mu.Unlock()
	if bp == nil {
		b := make([]uint64, words)
		bp = &b
	}
	// Reinterpreting the words as keys is safe: K has no pointers and uint64's alignment
	// satisfies every key type.
	buf := unsafe.Slice((*K)(unsafe.Pointer(unsafe.SliceData(*bp))), n)
	return buf, func() {
		radixScratch.mu.Lock()
		if old := radixScratch.buf.Value(); old == nil || cap(*old) < cap(*bp) {
			radixScratch.buf = weak.Make(bp)
		}
		radixScratch.mu.Unlock()
	}
}

// radixSort sorts the unsigned keys of a in place, in parallel.
func radixSort[K radixKey](c parCall, a []K) {
	n := len(a)
	k0 := a[0]
	// The top digit is wide enough that its buckets (about 128 KB) fit in the L2 cache
	// with their scratch, and at most 12 bits so that its scatter writes to few enough
	// streams: each stream writes its own pages, and more streams than the TLB has
	// entries make every write a TLB miss. 10M random uint64 with the top digit 9/10/11/12
	// bits wide: 337/328/372/390 ms of CPU per sort.
	nb := uint(unsafe.Sizeof(k0)) * 8
	width := min(radixTopWidth(n, int(unsafe.Sizeof(k0))), nb)
	size := max((n+4*c.workers-1)/(4*c.workers), 1<<12)
	nc := (n + size - 1) / size

	// One parallel read pass finds the varying bits (OR of key XOR first key, per chunk)
	// and, speculatively, counts the digit made of the topmost bits: when the top bit
	// varies (random keys) that is the digit to use and the counts are ready; otherwise
	// (keys with constant top bits) the counts are redone at the right place.
	diffs := make([]K, nc)
	nd := 1 << width
	counts := make([]int, nc*nd)
	shift := nb - width
	mask := K(nd - 1)
	parChunks(c, n, size, func(ci, lo, hi int) {
		h := counts[ci*nd : (ci+1)*nd]
		var d K
		for _, x := range a[lo:hi] {
			d |= x ^ k0
			h[(x>>shift)&mask]++
		}
		diffs[ci] = d
	})
	ksz := int64(unsafe.Sizeof(k0))
	radixTraffic.Add(int64(n) * ksz)
	var diff K
	for _, d := range diffs {
		diff |= d
	}
	if diff == 0 {
		return
	}
	if vary := uint(bits.Len64(uint64(diff))); vary < nb {
		width = min(width, vary)
		shift = vary - width
		nd = 1 << width
		mask = K(nd - 1)
		counts = counts[:nc*nd]
		clear(counts)
		parChunks(c, n, size, func(ci, lo, hi int) {
			h := counts[ci*nd : (ci+1)*nd]
			for _, x := range a[lo:hi] {
				h[(x>>shift)&mask]++
			}
		})
		radixTraffic.Add(int64(n) * ksz)
	}
	buf, release := radixBuffer[K](n)
	defer release()

	// Prefix sums give every (chunk, digit) pair its output range; then each chunk
	// scatters its keys (parallel, no two chunks write the same slot).
	starts := radixOffsets(counts, nc, nd, n)
	parChunks(c, n, size, func(ci, lo, hi int) {
		off := counts[ci*nd : (ci+1)*nd]
		for _, x := range a[lo:hi] {
			d := (x >> shift) & mask
			buf[off[d]] = x
			off[d]++
		}
	})

	radixTraffic.Add(4 * int64(n) * ksz) // the scatter, then the buckets back into a
	sortTest(2)
	// Sort the buckets (now in buf) back into a; a big bucket (skewed input) forks its own
	// sub-buckets. Until here a was only read, so an interruption (a refused call) left it
	// intact. This last phase overwrites a, but it cannot be interrupted half-way: its
	// Call either is refused before it starts or runs to the end (Join never refuses, and
	// no user code runs in it).
	c.pool.Call(func(t *Task) {
		radixBuckets(t, 0, nd, func(t *Task, d int) {
			b, e := starts[d], starts[d+1]
			if e > b {
				radixRec(t, buf[b:e], a[b:e], shift, true)
			}
		})
	})
}

// radixOffsets turns counts, the digit histograms of nc chunks (nd counts per chunk, chunk
// by chunk), into each (chunk, digit) pair's first output index, in place, so that every
// chunk scatters into its own slots: digit by digit, chunk by chunk within a digit, which
// keeps the scatter stable. It returns the start of every digit's bucket, with starts[nd]
// = n.
func radixOffsets(counts []int, nc, nd, n int) []int {
	starts := make([]int, nd+1)
	t := 0
	for d := range nd {
		starts[d] = t
		for ci := range nc {
			k := counts[ci*nd+d]
			counts[ci*nd+d] = t
			t += k
		}
	}
	starts[nd] = n
	return starts
}

// radixTopWidth is the width of the first digit for n keys or records of size bytes.
func radixTopWidth(n, size int) uint {
	return min(max(uint(bits.Len(uint(n)*uint(size)>>radixBucketLog)), 8), radixTopMax)
}

// radixRec sorts the keys in data whose bits at and above nbits are all equal. The sorted
// keys end in other if toOther, else in data; the other slice is scratch. t is non-nil
// when sub-buckets may be sorted in parallel.
//
// A bucket is sorted by further MSD passes on the digit just below its highest varying
// bit, with a digit narrow enough that the sub-buckets come out a few keys long, which
// insertion sort then finishes. For random keys that is one counting pass, one scatter
// and a short insertion sort per key, all in cache (an LSD sort of the remaining 52 bits
// of a uint64 bucket took 7 scatter passes and made the whole sort 1.8x slower).
func radixRec[K radixKey](t *Task, data, other []K, nbits uint, toOther bool) {
	n := len(data)
	if nbits == 0 { // every key of the bucket is equal
		if toOther {
			copy(other, data)
		}
		return
	}
	if n <= radixInsertion {
		radixInsert(data, other, toOther)
		return
	}
	if n > radixLSDMax {
		// Skip the bits that no key of the bucket varies in: keys that share more than the
		// bucket's prefix would otherwise cost passes over memory that move nothing.
		k0 := data[0]
		var diff K
		for _, x := range data {
			diff |= x ^ k0
		}
		if diff == 0 {
			if toOther {
				copy(other, data)
			}
			return
		}
		radixWide(t, data, other, uint(bits.Len64(uint64(diff))), toOther)
		return
	}
	// One narrow MSD pass leaves sub-buckets of about two keys; one insertion sort over the
	// whole bucket then finishes them all. Keys never cross a sub-bucket boundary, so it costs
	// one comparison per key plus the inversions inside sub-buckets (about half a move per
	// key), and no call or branch per sub-bucket (sorting each sub-bucket on its own cost a
	// mispredicted size test and a call for every two keys). Sub-buckets of more than
	// radixInsertion keys (skewed inputs) are sorted first by recursion, which leaves the
	// final insertion sort a single comparison per key there.
	vary := nbits
	width := min(uint(max(bits.Len(uint(n))-1, 2)), radixSubMax, vary)
	// Zeroing the counts costs as much as counting a small bucket: small buckets take a
	// small array (each is zeroed where it is declared, only on its branch).
	var off []int32
	if width <= 8 {
		var small [256]int32
		off = small[:]
	} else {
		var big [1 << radixSubMax]int32
		off = big[:]
	}
	shift := vary - width
	mask := K(1)<<width - 1
	nd := 1 << width
	// The count also finds the bits that vary in the bucket (OR of key XOR first key).
	k0 := data[0]
	var diff K
	for _, x := range data {
		diff |= x ^ k0
		off[(x>>shift)&mask]++
	}
	if diff == 0 {
		if toOther {
			copy(other, data)
		}
		return
	}
	if v := uint(bits.Len64(uint64(diff))); v < vary && off[(k0>>shift)&mask] == int32(n) {
		// Every key fell in one sub-bucket: the digit lies in bits that no key varies in
		// (keys that share more than the bucket's prefix). Count again just below the
		// highest varying bit rather than pass over bits that move nothing.
		clear(off[:nd])
		vary = v
		width = min(width, vary)
		shift = vary - width
		mask = K(1)<<width - 1
		nd = 1 << width
		for _, x := range data {
			off[(x>>shift)&mask]++
		}
	}
	s := int32(0)
	for d := range nd {
		s, off[d] = s+off[d], s
	}
	for _, x := range data {
		d := (x >> shift) & mask
		other[off[d]] = x
		off[d]++
	}
	// off[d] is now the end of sub-bucket d and the start of d+1.
	b := int32(0)
	for d := range nd {
		e := off[d]
		if e-b > radixInsertion {
			radixRec(nil, other[b:e], data[b:e], shift, false)
		}
		b = e
	}
	radixInsert(other, data, !toOther)
}

// radixWide is radixRec's pass for a bucket too big for the cache (skewed inputs): an
// 8-bit digit, whose 256 sub-buckets are sorted as tasks when t is not nil.
func radixWide[K radixKey](t *Task, data, other []K, vary uint, toOther bool) {
	n := len(data)
	// Too big for the cache: the varying-bits read, the count and the scatter go to memory.
	radixTraffic.Add(4 * int64(n) * int64(unsafe.Sizeof(data[0])))
	shift := uint(0)
	if vary > 8 {
		shift = vary - 8
	}
	var off [256]int
	for _, x := range data {
		off[uint8(x>>shift)]++
	}
	var starts [257]int
	s := 0
	for d := range 256 {
		starts[d] = s
		s, off[d] = s+off[d], s
	}
	starts[256] = n
	for _, x := range data {
		d := uint8(x >> shift)
		other[off[d]] = x
		off[d]++
	}
	sub := func(t *Task, d int) {
		b, e := starts[d], starts[d+1]
		if e > b {
			radixRec(t, other[b:e], data[b:e], shift, !toOther)
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

// radixInsert sorts data by insertion; the result ends in other if toOther (data is then
// left as it was), else in data.
func radixInsert[K radixKey](data, other []K, toOther bool) {
	if toOther {
		other = other[:len(data)]
		for i, x := range data {
			j := i
			for ; j > 0 && other[j-1] > x; j-- {
				other[j] = other[j-1]
			}
			other[j] = x
		}
		return
	}
	for i := 1; i < len(data); i++ {
		x := data[i]
		j := i
		for ; j > 0 && data[j-1] > x; j-- {
			data[j] = data[j-1]
		}
		data[j] = x
	}
}

// radixBuckets runs sub for the buckets [lo, hi) with fork-join halving.
func radixBuckets(t *Task, lo, hi int, sub func(t *Task, d int)) {
	if hi-lo == 1 {
		sub(t, lo)
		return
	}
	mid := (lo + hi) / 2
	Join(t, func(t *Task) { radixBuckets(t, lo, mid, sub) }, func(t *Task) { radixBuckets(t, mid, hi, sub) })
}
