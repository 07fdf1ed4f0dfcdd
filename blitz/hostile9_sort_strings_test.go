package blitz

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"testing"
)

// hs9WorkInputs returns the shapes that made the string sort do a pass over a whole group
// per 7 bytes of its strings: duplicates of a few long strings mixed with their prefixes.
func hs9WorkInputs(n int) map[string][]string {
	return map[string][]string{
		"k1-l3000":          hs9PrefixMix(11, n, 1, 3000, 50, 0, false),
		"k2-l2000-clone":    hs9PrefixMix(12, n, 2, 2000, 50, 0, true),
		"k8-l1000":          hs9PrefixMix(13, n, 8, 1000, 50, 0, false),
		"k4-l1500-cuts40":   hs9PrefixMix(14, n, 4, 1500, 30, 40, false),
		"k3-l800-noFull":    hs9PrefixMix(15, n, 3, 800, 0, 0, false),
		"k1-l700-allCuts":   hs9PrefixMix(16, n, 1, 700, 0, 700, false),
		"k64-l500-fullOnly": hs9PrefixMix(17, n, 64, 500, 100, 0, true),
	}
}

// TestHostile9SortStringPrefixMixWork: on tens of thousands of strings drawn from a few long
// strings, each the whole string or a prefix of it, the string sort was 8 to 270 times
// slower than slices.Sort. Each turn of its loop sorted a group by the next 7 bytes of its
// strings and went on with the largest group of ties, which held every string of the group
// but the few that end within those 7 bytes: a pass over the whole group per 7 bytes of
// the long strings (a 10,000-byte string made 1,400 passes). The test counts the records
// the turns visit (not time): it must stay within a few passes per level of a binary
// split, O(log n) per string.
func TestHostile9SortStringPrefixMixWork(t *testing.T) {
	n := 20_000
	if raceEnabled {
		n = 5_000
	}
	limit := int64(n) * int64(2*bits.Len(uint(n))+8)
	p := newPool(t, Config{Workers: 2})
	for name, in := range hs9WorkInputs(n) {
		want := slices.Clone(in)
		slices.Sort(want)
		got := slices.Clone(in)
		w0 := strWork.Load()
		sortStrings(parCall{pool: p, grain: n, workers: 1, seq: true}, got)
		work := strWork.Load() - w0
		if !slices.Equal(got, want) {
			t.Fatalf("%s: the sequential string sort differs from slices.Sort", name)
		}
		t.Logf("%s: %.1f records visited per string", name, float64(work)/float64(n))
		if work > limit {
			t.Errorf("%s: the string sort visited %d records (%.0f per string), want at most %d (%d per string)",
				name, work, float64(work)/float64(n), limit, limit/int64(n))
		}
		hs7CheckStringSorts(t, name+"/parallel", in, []Option{WithPool(p), WithGrain(1)})
	}
}

// TestHostile9SortStringAdversarial checks Sort and the keyed sorts with string keys
// against package slices on shapes built against each step of the string sort: chains of
// prefixes (every length, or a few), clones of one long string with distinct backing
// arrays, strings equal but for their last byte or their length around 7-byte levels,
// 0x00 and 0xFF bytes and invalid UTF-8 at the first difference, and inputs sorted,
// reversed or in organ-pipe order (against the choice of pivots).
func TestHostile9SortStringAdversarial(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	sizes := []int{17, 100, 1000, 5000}
	if !testing.Short() && !raceEnabled {
		sizes = append(sizes, 3*radixParMin)
	}
	for _, n := range sizes {
		for name, in := range hs9AdversarialInputs(n) {
			for on, opts := range map[string][]Option{"g1": {WithPool(p), WithGrain(1)}, "auto": {WithPool(p)}} {
				hs7CheckStringSorts(t, fmt.Sprintf("n%d/%s/%s", n, name, on), in, opts)
			}
			got := slices.Clone(in)
			hs9SortSeq(got)
			want := slices.Clone(in)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("n%d/%s: the sequential string sort differs from slices.Sort", n, name)
			}
			if t.Failed() {
				return
			}
		}
	}
}

// hs9AdversarialInputs returns the shapes of TestHostile9SortStringAdversarial, of n strings.
func hs9AdversarialInputs(n int) map[string][]string {
	out := map[string][]string{}
	long := strings.Repeat("\xff\x00\x80abc\xc3(", 400) // 3,200 bytes, invalid UTF-8, 0x00, 0xFF
	chain := make([]string, n)
	for i := range chain {
		chain[i] = long[:(i*7919)%(len(long)+1)]
	}
	out["chain"] = chain
	sorted := slices.Clone(chain)
	slices.Sort(sorted)
	out["chain-sorted"] = sorted
	out["chain-reversed"] = slices.Concat(nil, sorted)
	slices.Reverse(out["chain-reversed"])
	organ := make([]string, 0, n)
	for i := 0; i < n; i += 2 {
		organ = append(organ, sorted[i])
	}
	for i := n - 1 - n%2; i > 0; i -= 2 {
		organ = append(organ, sorted[i])
	}
	out["chain-organ"] = organ[:min(len(organ), n)]
	clones := make([]string, n)
	for i := range clones {
		switch i % 3 {
		case 0:
			clones[i] = strings.Clone(long)
		case 1:
			clones[i] = long[:len(long)-1-i%17]
		default:
			b := []byte(long)
			b[len(b)-1-i%5] ^= byte(i) // differs near the end, in either direction
			clones[i] = string(b)
		}
	}
	out["clones"] = clones
	lengths := make([]string, n)
	for i := range lengths {
		lengths[i] = strings.Repeat("\x00", i%30) // differ only in length, around 7 and 14
	}
	out["zeros"] = lengths
	tails := make([]string, n)
	for i := range tails {
		tails[i] = long[:1000+i%50] + string([]byte{byte(i * 37), byte(i >> 3)})
	}
	out["tails"] = tails
	fewCuts := make([]string, n)
	for i := range fewCuts {
		fewCuts[i] = long[:[]int{0, 1, 6, 7, 8, 63, 64, 65, 3199, 3200}[i%10]]
	}
	out["fewcuts"] = fewCuts
	return out
}

// TestHostile9SortStringCompareFallback runs the string sort with its budget of poor
// pivot turns exhausted from the start, so that every group left to the pivot turns is
// finished by the comparison sort, and checks the result (and its stability: the records
// of equal strings keep their input order).
func TestHostile9SortStringCompareFallback(t *testing.T) {
	for name, in := range hs9AdversarialInputs(3000) {
		a := make([]radixKV[uint32], len(in))
		buf := make([]radixKV[uint32], len(in))
		for i := range a {
			a[i] = radixKV[uint32]{strKey(in[i], 0), uint32(i)}
		}
		radixRecKV(nil, a, buf, 64, false)
		strSortRunLimit(nil, in, a, buf, 0, -1)
		want := make([]int, len(in))
		for i := range want {
			want[i] = i
		}
		slices.SortStableFunc(want, func(x, y int) int { return strings.Compare(in[x], in[y]) })
		for i := range a {
			if int(a[i].v) != want[i] {
				t.Fatalf("%s: at %d got index %d (%q...), want %d", name, i, a[i].v, hs9Head(in[a[i].v]), want[i])
			}
		}
	}
}

func hs9Head(s string) string { return s[:min(len(s), 20)] }

// TestHostile9SortStringParallelTurns sorts inputs large enough for the parallel steps of
// the string sort (runs sorted in parallel, keys of a turn computed in parallel), also
// under the race detector: two chains of prefixes of about 20,000 strings each, and one of
// 40,000 strings with copies of the whole string. The sorts run from the test goroutine,
// then at once from inside jobs of two pools, each job sorting on its own pool (a nested
// call from a worker) and on the other one.
func TestHostile9SortStringParallelTurns(t *testing.T) {
	pools := []*Pool{newPool(t, Config{Workers: 2}), newPool(t, Config{Workers: 1})}
	n := 2*radixParMin + 7000
	inputs := map[string][]string{
		"k2-l3000":       hs9PrefixMix(21, n, 2, 3000, 50, 0, false),
		"k1-l2000-clone": hs9PrefixMix(22, n, 1, 2000, 40, 0, true),
	}
	for name, in := range inputs {
		hs7CheckStringSorts(t, name, in, []Option{WithPool(pools[0])})
	}
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runWithWatchdog(t, fmt.Sprintf("jobs of pool %d", i), func() {
				p.Call(func(*Task) {
					for _, target := range []*Pool{p, pools[1-i]} {
						for name, in := range inputs {
							want := slices.Clone(in)
							slices.Sort(want)
							got := slices.Clone(in)
							Sort(got, WithPool(target))
							if !slices.Equal(got, want) {
								errs <- fmt.Sprintf("pool %d: %s sorted from inside a job differs from slices.Sort", i, name)
							}
						}
					}
				})
			})
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestHostile9SortStringCloseDuring closes the pool while Sort and SortStableByKey sort
// duplicates of long strings mixed with their prefixes (the pivot turns, whose keys and
// runs are computed in parallel): each sort either returns sorted or panics with ErrClosed,
// and in both cases s holds exactly the strings (records) it held.
func TestHostile9SortStringCloseDuring(t *testing.T) {
	n, rounds := 2*radixParMin+7000, 4
	if testing.Short() || raceEnabled {
		rounds = 2
	}
	in := hs9PrefixMix(31, n, 2, 2000, 50, 0, false)
	type rec struct {
		s  string
		id int
	}
	sorts := map[string]func(s []rec, opts ...Option){
		"Sort": func(s []rec, opts ...Option) {
			ss := make([]string, len(s))
			for i := range s {
				ss[i] = s[i].s
			}
			defer func() {
				for i := range s {
					s[i].s = ss[i]
				}
			}()
			Sort(ss, opts...)
		},
		"SortStableByKey": func(s []rec, opts ...Option) {
			SortStableByKey(s, func(r rec) string { return r.s }, opts...)
		},
	}
	for name, sort := range sorts {
		for round := range rounds {
			p, err := NewPool(Config{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]rec, n)
			for i := range got {
				got[i] = rec{in[i], i}
			}
			var r any
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer func() { r = recover() }()
				sort(got, WithPool(p), WithGrain(1024))
			}()
			for range round {
				Sort(make([]int, 200))
			}
			p.Close()
			runWithWatchdog(t, name+": Close during the sort", func() { <-done })
			if r != nil {
				if e, ok := r.(error); !ok || !errors.Is(e, ErrClosed) {
					t.Fatalf("%s round %d: the sort panicked with %v, want ErrClosed", name, round, r)
				}
			} else if !slices.IsSortedFunc(got, func(x, y rec) int { return strings.Compare(x.s, y.s) }) {
				t.Fatalf("%s round %d: the sort returned but s is not sorted", name, round)
			}
			gs := make([]string, n)
			for i := range got {
				gs[i] = got[i].s
			}
			slices.Sort(gs)
			want := slices.Clone(in)
			slices.Sort(want)
			if !slices.Equal(gs, want) {
				t.Fatalf("%s round %d: s is not a permutation of its input after a Close during the sort", name, round)
			}
			if name == "SortStableByKey" {
				ids := make([]int, n)
				for i := range got {
					ids[i] = got[i].id
				}
				slices.Sort(ids)
				for i := range ids {
					if ids[i] != i {
						t.Fatalf("%s round %d: record %d lost or duplicated", name, round, i)
					}
				}
			}
		}
	}
}

// hs9Organ returns n prefixes of one string of l bytes, their lengths rising then falling
// (organ-pipe order), l+1 distinct strings in all.
func hs9Organ(n, l int) []string {
	long := strings.Repeat("x", l)
	s := make([]string, n)
	for i := range s {
		s[i] = long[:min(i, n-i)%(l+1)]
	}
	return s
}

// TestHostile9SortStringChainTraffic: two million prefixes of one 100-byte string took the
// string sort 2.5 to 5 times as long as slices.Sort. The first radix pass, on each
// string's first 7 bytes, gave all but the shortest strings their own digit value one byte
// at a time ("x", "xx", "xxx"... differ in one byte each), so the radix sort of the
// records, past the size it sorts in cache, made a pass over memory per byte of key (745
// bytes moved per string where 112 is the floor). The pivot turns then took as pivot the
// median of strings sampled at even strides, which settles half of a chain per turn, and
// in organ-pipe order (lengths repeating every 101 strings) the strides sampled only short
// strings (2.6 visits per string where the longest of a sample at jittered positions takes
// 1.02). The test counts the bytes the radix passes move per string and the records the
// turns visit, not time.
func TestHostile9SortStringChainTraffic(t *testing.T) {
	n := 400_000
	if testing.Short() || raceEnabled {
		n = 2*radixLSDMax + 1000
	}
	p := newPool(t, Config{Workers: 2})
	for name, in := range map[string][]string{
		"organ": hs9Organ(n, 100),
		"mix":   hs9PrefixMix(41, n, 1, 300, 30, 0, false),
	} {
		for _, seq := range []bool{true, false} {
			got := slices.Clone(in)
			t0, w0 := radixTraffic.Load(), strWork.Load()
			sortStrings(parCall{pool: p, grain: 1 << 14, workers: 2, seq: seq}, got)
			traffic, work := radixTraffic.Load()-t0, strWork.Load()-w0
			want := slices.Clone(in)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%s seq=%v: the string sort differs from slices.Sort", name, seq)
			}
			t.Logf("%s seq=%v: %.1f bytes moved and %.2f records visited per string", name, seq,
				float64(traffic)/float64(n), float64(work)/float64(n))
			if traffic > 160*int64(n) {
				t.Errorf("%s seq=%v: the radix passes moved %.0f bytes per string, want at most 160",
					name, seq, float64(traffic)/float64(n))
			}
			if work > 2*int64(n) {
				t.Errorf("%s seq=%v: the turns visited %.2f records per string, want at most 2",
					name, seq, float64(work)/float64(n))
			}
		}
	}
}

// TestHostile9SortStringRankCollisions: the counting sort of a pivot turn's keys
// (strRankSort) found each key's slot in its hash table by linear probing with no bound,
// so keys chosen to share one hash value (the keys are the lengths and bytes at which the
// strings leave the pivot, which the input controls) cost a probe per key already stored,
// up to a thousand per record. Keys that collide this much must be left to the radix sort:
// strRankSort declines them and leaves a untouched. The public sorts still sort strings
// built to give such keys.
func TestHostile9SortStringRankCollisions(t *testing.T) {
	var keys []uint64
	for k := uint64(0); len(keys) < 600; k++ {
		if (k*0x9e3779b97f4a7c15)>>(64-strRankBits) == 0 {
			keys = append(keys, k)
		}
	}
	a := make([]radixKV[uint32], 20_000)
	for i := range a {
		a[i] = radixKV[uint32]{keys[(i*7919)%len(keys)], uint32(i)}
	}
	orig := slices.Clone(a)
	buf := make([]radixKV[uint32], len(a))
	if strRankSort(a, buf) {
		t.Errorf("strRankSort sorted %d keys that all share one hash value (a probe per stored key), want it to decline", len(keys))
	} else if !slices.Equal(a, orig) {
		t.Errorf("strRankSort declined but changed a")
	}
	// Strings whose pivot turn keys are those: below a pivot of all "\xff", a string that
	// leaves it at l with the byte c has the key l*257 + 1 + c.
	pl := int(keys[len(keys)-1]/257) + 2
	pivot := strings.Repeat("\xff", pl)
	in := make([]string, 0, 3*len(keys)+50)
	for _, k := range keys {
		l, c := int(k/257), int(k%257)-1
		if c < 0 || c == 0xff || l >= pl {
			continue
		}
		s := pivot[:l] + string([]byte{byte(c)}) + "tail"
		in = append(in, s, s, s)
	}
	for range 50 {
		in = append(in, pivot)
	}
	p := newPool(t, Config{Workers: 2})
	hs7CheckStringSorts(t, "colliding", in, []Option{WithPool(p), WithGrain(1)})
	got := slices.Clone(in)
	hs9SortSeq(got)
	want := slices.Clone(in)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the sequential string sort differs from slices.Sort")
	}
}
