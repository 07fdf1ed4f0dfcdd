package blitz

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// withSortFuncPath runs f with SortFunc's choice of algorithm forced: the merge sort if
// path > 0, pdqsort if path < 0.
func withSortFuncPath(path int, f func()) {
	defer func(old int) { sortFuncOverride = old }(sortFuncOverride)
	sortFuncOverride = path
	f()
}

// TestSortFuncBothAlgorithms runs SortFunc through each of its two algorithms with honest
// and lying comparators, on inputs of distinct values (so a lost or doubled element
// shows): an honest comparator must sort, a lying one must leave a permutation.
func TestSortFuncBothAlgorithms(t *testing.T) {
	p := newPool(t, Config{Workers: 3})
	for _, path := range []int{1, -1} {
		withSortFuncPath(path, func() {
			for _, n := range []int{100, 5000, 70000} {
				for _, grain := range []int{1, 0} {
					opts := []Option{WithPool(p)}
					if grain > 0 {
						opts = append(opts, WithGrain(grain))
					}
					for inName, in := range lyingInputs(uint64(n), n) {
						cmps := lyingComparators(uint64(n))
						cmps["honest"] = cmp.Compare[int]
						for cmpName, c := range cmps {
							name := fmt.Sprintf("path%+d/n%d/g%d/%s/%s", path, n, grain, inName, cmpName)
							got := slices.Clone(in)
							runWithWatchdog(t, name, func() { SortFunc(got, c, opts...) })
							if !sameMultiset(got, in, identityKey[int]) {
								t.Fatalf("%s: not a permutation of the input", name)
							}
							if cmpName == "honest" && !slices.IsSorted(got) {
								t.Fatalf("%s: an honest comparator left the slice unsorted", name)
							}
						}
					}
				}
			}
		})
	}
}

// TestSortFuncMergePanics checks that a comparison panicking early or late in the merge
// path is re-raised and leaves a permutation of the input.
func TestSortFuncMergePanics(t *testing.T) {
	withSortFuncPath(1, func() {
		const n = 50000
		for _, c := range sortCases(t) {
			for _, after := range []int64{10, 700_000} {
				in := make([]kv, n)
				for i := range in {
					in[i] = kv{int64((i * 7919) % n), i}
				}
				s := slices.Clone(in)
				var calls atomic.Int64
				wantPanic(t, "merge boom", func() {
					SortFunc(s, func(a, b kv) int {
						if calls.Add(1) > after {
							panic("merge boom")
						}
						return cmp.Compare(a.k, b.k)
					}, c.opts...)
				})
				if !sameMultiset(s, in, func(x kv) int { return x.v }) {
					t.Fatalf("%s/after%d: the panic left s not a permutation of its input", c.name, after)
				}
				// The scratch buffer went back to the cache with garbage in it: the next
				// sort must not care.
				SortFunc(s, func(a, b kv) int { return cmp.Compare(a.v, b.v) }, c.opts...)
				if !slices.Equal(s, in) {
					t.Fatalf("%s/after%d: the sort after a panic is wrong", c.name, after)
				}
			}
		}
	})
}

func TestSortSampleRepeats(t *testing.T) {
	distinct := make([]uint64, 100_000)
	for i := range distinct {
		distinct[i] = uint64(i) * 0x9e3779b97f4a7c15 // a bijection: no two equal
	}
	if sortSampleRepeats(distinct, cmp.Compare[uint64]) {
		t.Error("distinct keys were taken for repeated ones")
	}
	few := make([]uint64, 100_000)
	for i := range few {
		few[i] = distinct[i] % 16
	}
	if !sortSampleRepeats(few, cmp.Compare[uint64]) {
		t.Error("16 distinct keys in 100,000 went unnoticed")
	}
	if !sortSampleRepeats(distinct[:63], cmp.Compare[uint64]) {
		t.Error("a slice shorter than the sample must keep to pdqsort")
	}
	before := slices.Clone(distinct)
	sortSampleRepeats(distinct, cmp.Compare[uint64])
	if !slices.Equal(before, distinct) {
		t.Error("the sample changed s")
	}
}

// TestSortScratchReuse checks the buffer cache behind the merge sorts: a pointer-free
// type gets the cached buffer back; a type with pointers never gets cached memory (the
// garbage collector could not see its pointers in a []uint64), nor does a zero-size type.
func TestSortScratchReuse(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a GC would empty the cache
	a, release := sortScratch[kv](1000)
	pa := unsafe.Pointer(unsafe.SliceData(a))
	release()
	b, release := sortScratch[[2]uint32](1000)
	if unsafe.Pointer(unsafe.SliceData(b)) != pa {
		t.Error("a pointer-free type did not get the cached buffer")
	}
	if len(b) != 1000 {
		t.Errorf("len %d, want 1000", len(b))
	}
	// While b is out, the cache is empty: a second sort gets its own buffer.
	c, releaseC := sortScratch[kv](1000)
	if unsafe.Pointer(unsafe.SliceData(c)) == pa {
		t.Error("two sorts got the same buffer")
	}
	releaseC()
	release()
	// The cache now holds one of the two buffers: find out which, put it back, and check
	// that a type with pointers does not get it.
	d, releaseD := sortScratch[uint64](10)
	cached := unsafe.Pointer(unsafe.SliceData(d))
	releaseD()
	p, releaseP := sortScratch[kvs](10)
	if unsafe.Pointer(unsafe.SliceData(p)) == cached {
		t.Error("a type with pointers got the uint64 cache's memory")
	}
	releaseP()
	z, releaseZ := sortScratch[struct{}](5)
	if len(z) != 5 {
		t.Errorf("zero-size: len %d, want 5", len(z))
	}
	releaseZ()
}

// TestSortFuncMergeConcurrent runs merge sorts from several goroutines at once: each must
// get a buffer of its own (under -race a shared one is a reported race; without it, a
// wrong result).
func TestSortFuncMergeConcurrent(t *testing.T) {
	withSortFuncPath(1, func() {
		p := newPool(t, Config{Workers: 2})
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for g := range 8 {
			wg.Go(func() {
				in := make([]uint64, 30_000+g*1000)
				for i := range in {
					in[i] = uint64(i*7919+g) % uint64(len(in))
				}
				want := slices.Clone(in)
				slices.Sort(want)
				for range 3 {
					s := slices.Clone(in)
					if g%2 == 0 {
						SortFunc(s, cmp.Compare[uint64], WithPool(p))
					} else {
						SortStableFunc(s, cmp.Compare[uint64], WithPool(p))
					}
					if !slices.Equal(s, want) {
						errs <- fmt.Sprintf("goroutine %d: wrong result", g)
						return
					}
				}
			})
		}
		runWithWatchdog(t, "concurrent merge sorts", wg.Wait)
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})
}

// TestStableInsertionPanicKeepsPermutation panics in the comparator at every call of an
// in-place insertion sort: the element being inserted must be back in the slice.
func TestStableInsertionPanicKeepsPermutation(t *testing.T) {
	in := []int{5, 3, 9, 1, 7, 2, 8, 6, 4, 0, 11, 10, 13, 12, 15, 14, 17, 16, 19, 18, 21, 20, 23, 22}
	for after := range 200 {
		a := slices.Clone(in)
		calls := 0
		func() {
			defer func() { _ = recover() }()
			stableInsertion(a, func(x, y int) int {
				if calls++; calls > after {
					panic("insertion boom")
				}
				return cmp.Compare(x, y)
			})
		}()
		if !sameMultiset(a, in, identityKey[int]) {
			t.Fatalf("panic after %d calls: %v is not a permutation of the input", after, a)
		}
		if calls <= after && !slices.IsSorted(a) {
			t.Fatalf("no panic, yet %v is not sorted", a)
		}
	}
}

// TestStableLeavesAndMergeSmall checks the pointer-walking kernels at their edges: empty
// and one-element inputs, and zero-size elements (where every element has one address).
func TestStableLeavesAndMergeSmall(t *testing.T) {
	for n := range 6 {
		src := make([]int, n)
		for i := range src {
			src[i] = n - i
		}
		dst := make([]int, n)
		stableInsertionTo(src, dst, cmp.Compare[int])
		if !slices.IsSorted(dst) || !sameMultiset(dst, src, identityKey[int]) {
			t.Fatalf("stableInsertionTo(%v) = %v", src, dst)
		}
		a := slices.Clone(src)
		stableInsertion(a, cmp.Compare[int])
		if !slices.Equal(a, dst) {
			t.Fatalf("stableInsertion(%v) = %v", src, a)
		}
	}
	// Zero-size elements: these must return without dividing by the element size.
	z := make([]struct{}, 5000)
	SortStableFunc(z, func(a, b struct{}) int { return 0 })
	SortFunc(z, func(a, b struct{}) int { return 0 })
	mergeSeq(z[:10], z[10:30], make([]struct{}, 30), func(a, b struct{}) int { return 0 })
	stableInsertion(z[:30], func(a, b struct{}) int { return -1 })
	stableInsertionTo(z[:30], make([]struct{}, 30), func(a, b struct{}) int { return -1 })
}
