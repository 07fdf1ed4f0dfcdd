package benchmarks

import (
	"cmp"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/blitzgo/blitz/blitz"
	"golang.org/x/sync/errgroup"
)

// The blitz-par suite measures blitz's parallel loops, slice functions and sorts beside
// what a Go programmer would otherwise write: the plain sequential loop or the slices
// function, and a goroutine-per-chunk version with errgroup (one goroutine per GOMAXPROCS
// chunk, then Wait). Inputs are built once per case when the suite runs; -quick
// uses inputs about ten times smaller. Mirrors blitz/par_bench_test.go.

// bparExtraBaselines, when set (by a suite_par_conc.go that needs
// github.com/sourcegraph/conc in this module's go.mod), returns more baselines for a case:
// conc/iter versions.
var bparExtraBaselines func(caseName string, cfg Config) []Impl

func init() {
	Register(Suite{
		Name:  "blitz-par",
		Title: "blitz parallel loops, slice functions and sorts against sequential Go and errgroup goroutine-per-chunk",
		Cases: bparCases,
	})
}

// bparChunks runs f on GOMAXPROCS chunks of [0, n), one goroutine each, with an
// errgroup.Group: the usual Go way to spread a loop over the cores.
func bparChunks(n int, f func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	var g errgroup.Group
	for i := range w {
		lo, hi := i*n/w, (i+1)*n/w
		g.Go(func() error { f(lo, hi); return nil })
	}
	_ = g.Wait()
}

func bparLoopSum(s []int64) int64 {
	var t int64
	for _, v := range s {
		t += v
	}
	return t
}

// bparGBs reports bytes per nanosecond (GB/s) of one iteration over bytes.
func bparGBs(b *testing.B, bytes int) {
	b.SetBytes(int64(bytes))
	if ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N); ns > 0 {
		b.ReportMetric(float64(bytes)/ns, "GB/s")
	}
}

// bparCopyRef is the machine's memory bandwidth as a reference row: a parallel copy of
// the input (GOMAXPROCS chunks, as bparChunks spreads a loop) into a buffer faulted in
// before timing. Its GB/s counts the bytes read and the bytes written, the memory
// traffic a copy makes: a sum beside it reads each byte once, so both figures are
// traffic and compare. (Counting the input's bytes alone reported half the bandwidth,
// and put Sum's GB/s above "the machine's bandwidth".)
func bparCopyRef[T any](in func() []T) Impl {
	return Impl{"copy (bandwidth)", func(b *testing.B) {
		src := in()
		dst := make([]T, len(src))
		copy(dst, src) // fault the pages in before timing
		b.ReportAllocs()
		for b.Loop() {
			bparChunks(len(src), func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
		}
		bparGBs(b, 2*int(unsafe.Sizeof(*new(T)))*len(src)) // read once, written once
	}}
}

func bparRandU64(n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 7))
	s := make([]uint64, n)
	for i := range s {
		s[i] = r.Uint64()
	}
	return s
}

// bparSortImpl measures sort on a fresh copy of in per iteration (the copy is untimed).
func bparSortImpl[T any](name string, in func() []T, sort func([]T)) Impl {
	return Impl{name, func(b *testing.B) {
		src := in()
		w := make([]T, len(src))
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			copy(w, src)
			b.StartTimer()
			sort(w)
		}
	}}
}

// bparSortRec is a 16-byte record sorted by its key field.
type bparSortRec struct{ key, val uint64 }

// bparStrings returns n random strings of 8-32 bytes, half of them starting with one of a
// few shared prefixes (as keys, paths and URLs do). Mirrors benchStrings in
// blitz/bench_sort_test.go.
func bparStrings(n int) []string {
	prefixes := []string{"user:", "https://example.com/", "/var/log/", "order-2026-11-", "item_", "k"}
	r := rand.New(rand.NewPCG(5, 5))
	const alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	s := make([]string, n)
	var sb strings.Builder
	for i := range s {
		sb.Reset()
		l := 8 + r.IntN(25)
		if r.IntN(2) == 0 {
			p := prefixes[r.IntN(len(prefixes))]
			sb.WriteString(p[:min(len(p), l-2)])
		}
		for sb.Len() < l {
			sb.WriteByte(alpha[r.IntN(len(alpha))])
		}
		s[i] = sb.String()
	}
	return s
}

// bparSeqMinByKey and bparSeqMap are the sequential definitions with the function passed
// as a value, as any library function receives it; noinline keeps the compiler from
// specializing them to the benchmark's closure, which no library call gets.
//
//go:noinline
func bparSeqMinByKey[T any, K cmp.Ordered](s []T, key func(T) K) T {
	best, bk := s[0], key(s[0])
	for _, x := range s[1:] {
		if k := key(x); k < bk {
			best, bk = x, k
		}
	}
	return best
}

//go:noinline
func bparSeqMap[T, U any](s []T, f func(T) U) []U {
	out := make([]U, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

type bparRec struct {
	id    int64
	score float64
}

func bparCases(cfg Config) []Case {
	big, n := 100_000_000, 10_000_000
	if cfg.Quick {
		big, n = 8_000_000, 1_000_000
	}
	var (
		once                    sync.Once
		sumIn                   []int64
		random, sorted, reverse []uint64
	)
	// Inputs are built on first use, so listing the cases costs nothing.
	setup := func() {
		once.Do(func() {
			sumIn = make([]int64, big)
			for i := range sumIn {
				sumIn[i] = int64(i)
			}
			random = bparRandU64(n, 1)
			sorted = slices.Clone(random)
			slices.Sort(sorted)
			reverse = slices.Clone(sorted)
			slices.Reverse(reverse)
		})
	}
	sumCase := func(name string, size int, metric string, note string, target Target) Case {
		in := func() []int64 { setup(); return sumIn[:size] }
		report := func(b *testing.B) {
			if metric != "" {
				bparGBs(b, 8*size)
			}
		}
		c := Case{
			Name: name, Note: note, Metric: metric, HigherIsBetter: metric != "", Targets: []Target{target},
			Ours: Impl{"blitz.Sum", func(b *testing.B) {
				s := in()
				b.ReportAllocs()
				for b.Loop() {
					runtime.KeepAlive(blitz.Sum(s))
				}
				report(b)
			}},
			Baselines: []Impl{
				{"loop", func(b *testing.B) {
					s := in()
					b.ReportAllocs()
					for b.Loop() {
						runtime.KeepAlive(bparLoopSum(s))
					}
					report(b)
				}},
				{"errgroup", func(b *testing.B) {
					s := in()
					b.ReportAllocs()
					for b.Loop() {
						var mu sync.Mutex
						var t int64
						bparChunks(len(s), func(lo, hi int) {
							x := bparLoopSum(s[lo:hi])
							mu.Lock()
							t += x
							mu.Unlock()
						})
						runtime.KeepAlive(t)
					}
					report(b)
				}},
			},
		}
		if metric != "" {
			c.Roles = map[string]Role{"copy (bandwidth)": RoleReference}
			c.Baselines = append(c.Baselines, bparCopyRef(in))
		}
		return c
	}
	sortCase := func(name, note string, targets []Target, in func() []uint64, ours func([]uint64), base []Impl) Case {
		return Case{Name: name, Note: note, Targets: targets, Ours: bparSortImpl("blitz", in, ours), Baselines: base}
	}
	// "At most 0.2x of Sort/random" compares two cases, which a Target cannot express.
	const presorted = "target: at most 0.2x the time of Sort/random's blitz row (compares two cases: not checked)"
	rnd := func() []uint64 { setup(); return random }
	srt := func() []uint64 { setup(); return sorted }
	rev := func() []uint64 { setup(); return reverse }
	eq := func() []uint64 { return make([]uint64, n) }
	var few16 []uint64
	var fewOnce sync.Once
	few := func() []uint64 {
		fewOnce.Do(func() {
			few16 = bparRandU64(n, 2)
			for i := range few16 {
				few16[i] %= 16
			}
		})
		return few16
	}
	var sortRecs []bparSortRec
	var sortStrs []string
	var sortOnce sync.Once
	sortSetup := func() {
		sortOnce.Do(func() {
			r := rand.New(rand.NewPCG(4, 4))
			sortRecs = make([]bparSortRec, n)
			for i := range sortRecs {
				sortRecs[i] = bparSortRec{r.Uint64(), uint64(i)}
			}
			sortStrs = bparStrings(n / 10)
		})
	}
	recIn := func() []bparSortRec { sortSetup(); return sortRecs }
	strIn := func() []string { sortSetup(); return sortStrs }
	recKey := func(r bparSortRec) uint64 { return r.key }
	recCmp := func(a, b bparSortRec) int { return cmp.Compare(a.key, b.key) }
	// The copy bandwidth beside the radix sorts, which are bound by it: a copy of the
	// input (read and written once) in ns/op, to compare with the sort's passes.
	copyRef := bparCopyRef[uint64]
	cmpU := cmp.Compare[uint64]
	recs := func() []bparRec {
		r := rand.New(rand.NewPCG(3, 4))
		s := make([]bparRec, n)
		for i := range s {
			s[i] = bparRec{int64(i), r.Float64()}
		}
		return s
	}
	score := func(r bparRec) float64 { return r.score }
	const seqMinByKey, seqMap = "sequential MinByKey(s, key)", "sequential Map(s, f)"

	cases := []Case{
		sumCase("Sum/100M", big, "GB/s", "Rayon 2 threads: ~28 GB/s; copy = the machine's bandwidth", AtLeast(25)),
		sumCase("Sum/1000", 1000, "", "small inputs never touch the pool", TimesBetter("loop", 1/1.2)),
		{
			Name: "Sort/random", Note: "Rayon par_sort_unstable 5.6-6.4x slices.Sort on 2 vCPUs; radix moves 40 B/elem (5 streams of 8 bytes: count, scatter read+write, buckets read+write; go test -bench BenchmarkSort in blitz reports it per run)",
			Targets: []Target{TimesBetter("slices.Sort", 7)}, Ours: bparSortImpl("blitz", rnd, func(w []uint64) { blitz.Sort(w) }),
			Roles:     map[string]Role{"copy (bandwidth)": RoleReference},
			Baselines: []Impl{bparSortImpl("slices.Sort", rnd, slices.Sort[[]uint64]), copyRef(rnd)},
		},
		sortCase("Sort/sorted", presorted, nil, srt,
			func(w []uint64) { blitz.Sort(w) }, []Impl{bparSortImpl("slices.Sort", srt, slices.Sort[[]uint64])}),
		sortCase("Sort/reversed", presorted, nil, rev,
			func(w []uint64) { blitz.Sort(w) }, []Impl{bparSortImpl("slices.Sort", rev, slices.Sort[[]uint64])}),
		sortCase("Sort/equal", presorted, nil, eq,
			func(w []uint64) { blitz.Sort(w) }, []Impl{bparSortImpl("slices.Sort", eq, slices.Sort[[]uint64])}),
		sortCase("Sort/few16", "16 distinct values: 48 B/elem (one more count pass, since only 4 bits vary)", nil, few,
			func(w []uint64) { blitz.Sort(w) }, []Impl{bparSortImpl("slices.Sort", few, slices.Sort[[]uint64])}),
		sortCase("SortFunc/random", "", []Target{TimesBetter("slices.SortFunc", 2.2)}, rnd,
			func(w []uint64) { blitz.SortFunc(w, cmpU) },
			[]Impl{bparSortImpl("slices.SortFunc", rnd, func(w []uint64) { slices.SortFunc(w, cmpU) })}),
		sortCase("SortStableFunc/random", "Rayon par_sort ~400 ms", []Target{TimesBetter("slices.SortStableFunc", 6)}, rnd,
			func(w []uint64) { blitz.SortStableFunc(w, cmpU) },
			[]Impl{bparSortImpl("slices.SortStableFunc", rnd, func(w []uint64) { slices.SortStableFunc(w, cmpU) })}),
		{
			Name: "SortByKey/records16", Note: "16-byte records by a uint64 field; 112 B/elem moved (keys extracted in the first pass, records built by the scatter, buckets sorted in cache and copied out)",
			Targets:   []Target{TimesBetter("slices.SortFunc", 6)},
			Ours:      bparSortImpl("blitz", recIn, func(w []bparSortRec) { blitz.SortByKey(w, recKey) }),
			Baselines: []Impl{bparSortImpl("slices.SortFunc", recIn, func(w []bparSortRec) { slices.SortFunc(w, recCmp) })},
		},
		{
			Name: "SortStableByKey/records16", Note: "16-byte records by a uint64 field; 112 B/elem moved, as SortByKey",
			Targets: []Target{TimesBetter("slices.SortStableFunc", 10)},
			Ours:    bparSortImpl("blitz", recIn, func(w []bparSortRec) { blitz.SortStableByKey(w, recKey) }),
			Baselines: []Impl{bparSortImpl("slices.SortStableFunc", recIn,
				func(w []bparSortRec) { slices.SortStableFunc(w, recCmp) })},
		},
		{
			Name: "Sort/strings", Note: "strings of 8-32 bytes, half with shared prefixes; a tenth as many as the other sorts",
			Targets:   []Target{TimesBetter("slices.Sort", 3)},
			Ours:      bparSortImpl("blitz", strIn, func(w []string) { blitz.Sort(w) }),
			Baselines: []Impl{bparSortImpl("slices.Sort", strIn, slices.Sort[[]string])},
		},
		{
			Name: "FindFirst/at0", Note: "match at index 0 of 10M (Rayon ~15-20 us)", Targets: []Target{AtMost(10_000)},
			Ours: Impl{"blitz.FindFirst", func(b *testing.B) {
				s := make([]int64, n)
				s[0] = 1
				b.ReportAllocs()
				for b.Loop() {
					_, i, _ := blitz.FindFirst(s, func(v int64) bool { return v == 1 })
					runtime.KeepAlive(i)
				}
			}},
			Baselines: []Impl{{"slices.IndexFunc", func(b *testing.B) {
				s := make([]int64, n)
				s[0] = 1
				b.ReportAllocs()
				for b.Loop() {
					runtime.KeepAlive(slices.IndexFunc(s, func(v int64) bool { return v == 1 }))
				}
			}}},
		},
		{
			Name: "Any/early", Note: "match at index 10 of 10M", Targets: []Target{AtMost(10_000)},
			Ours: Impl{"blitz.Any", func(b *testing.B) {
				s := make([]int64, n)
				s[10] = 1
				b.ReportAllocs()
				for b.Loop() {
					runtime.KeepAlive(blitz.Any(s, func(v int64) bool { return v == 1 }))
				}
			}},
			Baselines: []Impl{{"slices.ContainsFunc", func(b *testing.B) {
				s := make([]int64, n)
				s[10] = 1
				b.ReportAllocs()
				for b.Loop() {
					runtime.KeepAlive(slices.ContainsFunc(s, func(v int64) bool { return v == 1 }))
				}
			}}},
		},
		{
			Name: "MinByKey", Note: "10M records; loop: key inlined; sequential MinByKey: key as a value, as a library receives it",
			Targets: []Target{TimesBetter(seqMinByKey, 1.7)},
			Roles:   map[string]Role{seqMinByKey: RoleVariant},
			Ours: Impl{"blitz.MinByKey", func(b *testing.B) {
				s := recs()
				b.ReportAllocs()
				for b.Loop() {
					m, _ := blitz.MinByKey(s, score)
					runtime.KeepAlive(m)
				}
			}},
			Baselines: []Impl{
				{"loop", func(b *testing.B) {
					s := recs()
					b.ReportAllocs()
					for b.Loop() {
						best := s[0]
						for _, r := range s[1:] {
							if r.score < best.score {
								best = r
							}
						}
						runtime.KeepAlive(best)
					}
				}},
				{seqMinByKey, func(b *testing.B) {
					s := recs()
					b.ReportAllocs()
					for b.Loop() {
						runtime.KeepAlive(bparSeqMinByKey(s, score))
					}
				}},
				{"slices.MinFunc", func(b *testing.B) {
					s := recs()
					b.ReportAllocs()
					for b.Loop() {
						runtime.KeepAlive(slices.MinFunc(s, func(a, b bparRec) int { return cmp.Compare(a.score, b.score) }))
					}
				}},
			},
		},
		{
			Name: "Map", Note: "10M uint64 -> float64 into a new slice; loop: f inlined; sequential Map: f as a value, as a library receives it",
			Targets: []Target{TimesBetter(seqMap, 1.7)},
			Roles:   map[string]Role{seqMap: RoleVariant},
			Ours: Impl{"blitz.Map", func(b *testing.B) {
				s := rnd()
				b.ReportAllocs()
				for b.Loop() {
					runtime.KeepAlive(blitz.Map(s, func(v uint64) float64 { return float64(v>>11) * 0x1p-53 }))
				}
			}},
			Baselines: []Impl{
				{"loop", func(b *testing.B) {
					s := rnd()
					b.ReportAllocs()
					for b.Loop() {
						out := make([]float64, len(s))
						for i, v := range s {
							out[i] = float64(v>>11) * 0x1p-53
						}
						runtime.KeepAlive(out)
					}
				}},
				{seqMap, func(b *testing.B) {
					s := rnd()
					b.ReportAllocs()
					for b.Loop() {
						runtime.KeepAlive(bparSeqMap(s, func(v uint64) float64 { return float64(v>>11) * 0x1p-53 }))
					}
				}},
				{"errgroup", func(b *testing.B) {
					s := rnd()
					b.ReportAllocs()
					for b.Loop() {
						out := make([]float64, len(s))
						bparChunks(len(s), func(lo, hi int) {
							for i := lo; i < hi; i++ {
								out[i] = float64(s[i]>>11) * 0x1p-53
							}
						})
						runtime.KeepAlive(out)
					}
				}},
			},
		},
		{
			Name: "MapInto", Note: "Map into a reused slice: no zeroing of a new 80 MB output on one goroutine",
			Ours: Impl{"blitz.MapInto", func(b *testing.B) {
				s := rnd()
				dst := make([]float64, len(s))
				b.ReportAllocs()
				for b.Loop() {
					blitz.MapInto(dst, s, func(v uint64) float64 { return float64(v>>11) * 0x1p-53 })
				}
			}},
			Baselines: []Impl{{"loop", func(b *testing.B) {
				s := rnd()
				dst := make([]float64, len(s))
				b.ReportAllocs()
				for b.Loop() {
					for i, v := range s {
						dst[i] = float64(v>>11) * 0x1p-53
					}
				}
			}}},
		},
		{
			Name: "Filter", Note: "10M uint64, 50% kept, order preserved", Targets: []Target{TimesBetter("loop", 1.7)},
			Ours: Impl{"blitz.Filter", func(b *testing.B) {
				s := rnd()
				b.ReportAllocs()
				for b.Loop() {
					runtime.KeepAlive(blitz.Filter(s, func(v uint64) bool { return v&1 == 0 }))
				}
			}},
			Baselines: []Impl{{"loop", func(b *testing.B) {
				s := rnd()
				b.ReportAllocs()
				for b.Loop() {
					var out []uint64
					for _, v := range s {
						if v&1 == 0 {
							out = append(out, v)
						}
					}
					runtime.KeepAlive(out)
				}
			}}},
		},
	}
	if bparExtraBaselines != nil {
		for i := range cases {
			cases[i].Baselines = append(cases[i].Baselines, bparExtraBaselines(cases[i].Name, cfg)...)
		}
	}
	return cases
}
