package blitz

// Parallel stable merge sort, used by SortStableFunc.
//
// slices.SortStableFunc sorts in place without a buffer (insertion-sorted blocks merged by
// SymMerge with rotations), O(n log^2 n) moves. With one scratch buffer of len(s) elements a
// merge sort does O(n log n) moves and both of its phases parallelize: the two halves sort in
// parallel, and a merge is split by picking the middle of the longer run and binary-searching
// its position in the other run (stability decides which side of equal keys it goes).
// Levels alternate between s and the buffer, so no level copies.

const (
	stableBlock = 16 // runs insertion sorted before the first merge (8-32 measured alike)
	// stableParMin: subarrays and merges at most this long are done sequentially (a
	// smaller explicit grain lowers it).
	stableParMin = 1 << 13
)

// stableInsertion sorts a stably by insertion.
func stableInsertion[T any](a []T, cmp func(a, b T) int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && cmp(a[j], a[j-1]) < 0; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// mergeSeq merges the sorted runs x and y into out (len(out) == len(x)+len(y)); on equal
// keys the element of x comes first, which keeps the merge stable.
func mergeSeq[T any](x, y, out []T, cmp func(a, b T) int) {
	out = out[:len(x)+len(y)]
	i, j, k := 0, 0, 0
	for i < len(x) && j < len(y) {
		if cmp(y[j], x[i]) < 0 {
			out[k] = y[j]
			j++
		} else {
			out[k] = x[i]
			i++
		}
		k++
	}
	k += copy(out[k:], x[i:])
	copy(out[k:], y[j:])
}

// stableSortSeq sorts a stably, bottom-up, with buf (len(buf) >= len(a)) as scratch.
func stableSortSeq[T any](a, buf []T, cmp func(a, b T) int) {
	n := len(a)
	if n < 2 {
		return
	}
	for lo := 0; lo < n; lo += stableBlock {
		stableInsertion(a[lo:min(lo+stableBlock, n)], cmp)
	}
	src, dst := a, buf[:n]
	for w := stableBlock; w < n; w *= 2 {
		for lo := 0; lo < n; lo += 2 * w {
			m, hi := min(lo+w, n), min(lo+2*w, n)
			if m == hi || cmp(src[m], src[m-1]) >= 0 {
				copy(dst[lo:hi], src[lo:hi]) // already in order
				continue
			}
			mergeSeq(src[lo:m], src[m:hi], dst[lo:hi], cmp)
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}

// stableRec sorts a stably; the result ends in buf if toBuf, else in a.
func stableRec[T any](t *Task, st *parState, a, buf []T, toBuf bool, cmp func(a, b T) int) {
	n := len(a)
	if st.stop.Load() {
		return // a comparison panicked in another task: the result is discarded
	}
	if n <= st.grain {
		stableSortSeq(a, buf, cmp)
		if toBuf {
			copy(buf, a)
		}
		return
	}
	mid := n / 2
	Join(t,
		func(t *Task) {
			ok := false
			defer st.guard(&ok)
			stableRec(t, st, a[:mid], buf[:mid], !toBuf, cmp)
			ok = true
		},
		func(t *Task) {
			ok := false
			defer st.guard(&ok)
			stableRec(t, st, a[mid:], buf[mid:], !toBuf, cmp)
			ok = true
		})
	src, dst := buf, a
	if toBuf {
		src, dst = a, buf
	}
	parMerge(t, st, src[:mid], src[mid:], dst, cmp)
}

// parMerge merges the sorted runs x and y into out, stably, splitting large merges into two
// independent merges around the middle element of the longer run.
func parMerge[T any](t *Task, st *parState, x, y, out []T, cmp func(a, b T) int) {
	if st.stop.Load() {
		return
	}
	if len(out) <= st.grain || len(x) == 0 || len(y) == 0 {
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
