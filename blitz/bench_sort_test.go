package blitz

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Sort benchmarks, each blitz row beside its slices baseline in the same run (sub-benchmarks
// "blitz" and "slices" of one input). Besides ns/op they report cpu-ms/op, the process CPU
// time per sort (useful on a shared machine, where wall time depends on the other load),
// and for the radix paths B/elem, the bytes the sort moved through memory per element in
// passes over the whole input (see radixTraffic). -short uses smaller inputs.

// benchSortInputs returns named inputs of n uint64: random, sorted, reversed, all equal and
// few distinct (16 values).
func benchSortInputs(n int) []benchInput[uint64] {
	rnd := randU64(n, 1)
	sorted := slices.Clone(rnd)
	slices.Sort(sorted)
	rev := slices.Clone(sorted)
	slices.Reverse(rev)
	few := randU64(n, 2)
	for i := range few {
		few[i] %= 16
	}
	return []benchInput[uint64]{{"random", rnd}, {"sorted", sorted}, {"reversed", rev},
		{"equal", make([]uint64, n)}, {"few16", few}}
}

type benchInput[T any] struct {
	name string
	in   []T
}

// benchSort measures sort(w) where w is refilled from in before every iteration (outside
// the timer). When radix is set it reports the bytes moved through memory per element.
func benchSort[T any](b *testing.B, in []T, radix bool, sort func([]T)) {
	w := make([]T, len(in))
	b.ReportAllocs()
	var cpu0 = processCPU()
	radixTraffic.Store(0)
	for b.Loop() {
		b.StopTimer()
		copy(w, in)
		c := processCPU()
		b.StartTimer()
		cpu0 += processCPU() - c // the copy's CPU time is not the sort's
		sort(w)
	}
	b.ReportMetric(float64((processCPU()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	if radix && len(in) > 0 {
		b.ReportMetric(float64(radixTraffic.Load())/float64(b.N)/float64(len(in)), "B/elem")
	}
}

func BenchmarkSort(b *testing.B) {
	n := benchN(10_000_000, 1_000_000)
	for _, in := range benchSortInputs(n) {
		b.Run(in.name+"/blitz", func(b *testing.B) { benchSort(b, in.in, true, func(w []uint64) { Sort(w) }) })
		b.Run(in.name+"/slices", func(b *testing.B) { benchSort(b, in.in, false, slices.Sort) })
	}
	// Signed and float keys pay the order-preserving transform (two more passes).
	fl := make([]float64, n)
	r := rand.New(rand.NewPCG(3, 3))
	for i := range fl {
		fl[i] = r.NormFloat64()
	}
	b.Run("float64/blitz", func(b *testing.B) { benchSort(b, fl, true, func(w []float64) { Sort(w) }) })
	b.Run("float64/slices", func(b *testing.B) { benchSort(b, fl, false, slices.Sort) })
}

func BenchmarkSortFunc(b *testing.B) {
	n := benchN(10_000_000, 1_000_000)
	for _, in := range benchSortInputs(n) {
		b.Run(in.name+"/blitz", func(b *testing.B) {
			benchSort(b, in.in, false, func(w []uint64) { SortFunc(w, cmp.Compare[uint64]) })
		})
		b.Run(in.name+"/slices", func(b *testing.B) {
			benchSort(b, in.in, false, func(w []uint64) { slices.SortFunc(w, cmp.Compare[uint64]) })
		})
	}
}

func BenchmarkSortStableFunc(b *testing.B) {
	n := benchN(10_000_000, 1_000_000)
	for _, in := range benchSortInputs(n) {
		b.Run(in.name+"/blitz", func(b *testing.B) {
			benchSort(b, in.in, false, func(w []uint64) { SortStableFunc(w, cmp.Compare[uint64]) })
		})
		b.Run(in.name+"/slices", func(b *testing.B) {
			benchSort(b, in.in, false, func(w []uint64) { slices.SortStableFunc(w, cmp.Compare[uint64]) })
		})
	}
}

// benchRecord is a 16-byte record sorted by its K field.
type benchRecord struct{ K, V uint64 }

func benchRecords(n int) []benchRecord {
	r := rand.New(rand.NewPCG(4, 4))
	s := make([]benchRecord, n)
	for i := range s {
		s[i] = benchRecord{r.Uint64(), uint64(i)}
	}
	return s
}

func benchRecordKey(r benchRecord) uint64 { return r.K }

func benchRecordCmp(a, b benchRecord) int { return cmp.Compare(a.K, b.K) }

func BenchmarkSortByKey(b *testing.B) {
	in := benchRecords(benchN(10_000_000, 1_000_000))
	b.Run("random/blitz", func(b *testing.B) {
		benchSort(b, in, true, func(w []benchRecord) { SortByKey(w, benchRecordKey) })
	})
	b.Run("random/slices", func(b *testing.B) {
		benchSort(b, in, false, func(w []benchRecord) { slices.SortFunc(w, benchRecordCmp) })
	})
}

func BenchmarkSortStableByKey(b *testing.B) {
	in := benchRecords(benchN(10_000_000, 1_000_000))
	// Few distinct keys make stability matter: most elements have equal keys.
	few := slices.Clone(in)
	for i := range few {
		few[i].K %= 1000
	}
	for _, c := range []benchInput[benchRecord]{{"random", in}, {"keys1000", few}} {
		b.Run(c.name+"/blitz", func(b *testing.B) {
			benchSort(b, c.in, true, func(w []benchRecord) { SortStableByKey(w, benchRecordKey) })
		})
		b.Run(c.name+"/slices", func(b *testing.B) {
			benchSort(b, c.in, false, func(w []benchRecord) { slices.SortStableFunc(w, benchRecordCmp) })
		})
	}
}

// benchStrings returns n random strings of 8-32 bytes; half of them start with one of a
// few shared prefixes (as keys, paths and URLs do), some longer than 8 bytes.
func benchStrings(n int) []string {
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

func BenchmarkSortStrings(b *testing.B) {
	in := benchStrings(benchN(1_000_000, 200_000))
	b.Run("random/blitz", func(b *testing.B) { benchSort(b, in, true, func(w []string) { Sort(w) }) })
	b.Run("random/slices", func(b *testing.B) { benchSort(b, in, false, slices.Sort[[]string]) })
}

// BenchmarkSortCopyBandwidth is the machine's memory bandwidth in this process, as the
// radix sorts see it: copy of 10M uint64 split over the workers (GB/s counts the bytes
// read; as many are written).
func BenchmarkSortCopyBandwidth(b *testing.B) {
	n := benchN(10_000_000, 1_000_000)
	src, dst := randU64(n, 9), make([]uint64, n)
	copy(dst, src) // fault the pages in before timing
	b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			goroutineChunks(n, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
		}
		reportGBs(b, 8*n)
	})
}
