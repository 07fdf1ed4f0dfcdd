package blitz

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// Benchmarks of the parallel surface beside their baselines in the same run: the plain
// sequential loop or slices function ("seq"), and a goroutine-per-chunk version
// ("goroutines", the errgroup pattern with a sync.WaitGroup: errgroup itself is measured in
// the blitzbench suite, whose module may depend on golang.org/x/sync). -short uses smaller
// inputs.

func benchN(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// goroutineChunks runs f on runtime.GOMAXPROCS chunks of [0, n), one goroutine each.
func goroutineChunks(n int, f func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for i := range w {
		lo, hi := i*n/w, (i+1)*n/w
		wg.Add(1)
		go func() { defer wg.Done(); f(lo, hi) }()
	}
	wg.Wait()
}

func plainSum(s []int64) int64 {
	var t int64
	for _, v := range s {
		t += v
	}
	return t
}

func reportGBs(b *testing.B, bytes int) {
	b.SetBytes(int64(bytes))
	if ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N); ns > 0 {
		b.ReportMetric(float64(bytes)/ns, "GB/s")
	}
}

var sinkI64 int64

func BenchmarkSum(b *testing.B) {
	for _, n := range []int{1000, benchN(100_000_000, 4_000_000)} {
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(i)
		}
		b.Run(fmt.Sprintf("n=%d/blitz", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkI64 = Sum(s)
			}
			reportGBs(b, 8*n)
		})
		b.Run(fmt.Sprintf("n=%d/loop", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkI64 = plainSum(s)
			}
			reportGBs(b, 8*n)
		})
		b.Run(fmt.Sprintf("n=%d/goroutines", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var mu sync.Mutex
				var t int64
				goroutineChunks(n, func(lo, hi int) {
					x := plainSum(s[lo:hi])
					mu.Lock()
					t += x
					mu.Unlock()
				})
				sinkI64 = t
			}
			reportGBs(b, 8*n)
		})
		if n > 1000 {
			// The machine's copy bandwidth in this process: copy reads n*8 bytes and
			// writes as many; the figure reported is bytes read per second, comparable
			// with Sum's, with the copy split across the workers as Sum is.
			dst := make([]int64, n)
			b.Run(fmt.Sprintf("n=%d/copy", n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					goroutineChunks(n, func(lo, hi int) { copy(dst[lo:hi], s[lo:hi]) })
				}
				reportGBs(b, 8*n)
			})
		}
	}
}

func randU64(n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 7))
	s := make([]uint64, n)
	for i := range s {
		s[i] = r.Uint64()
	}
	return s
}

var sinkBool bool

func BenchmarkFindFirst(b *testing.B) {
	n := benchN(10_000_000, 1_000_000)
	s := make([]int64, n)
	s[0] = 1
	isOne := func(v int64) bool { return v == 1 }
	b.Run("first=0/blitz", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, i, _ := FindFirst(s, isOne)
			sinkI64 = int64(i)
		}
	})
	b.Run("first=0/seq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkI64 = int64(slices.IndexFunc(s, isOne))
		}
	})
	m := slices.Clone(s)
	m[0], m[n/2] = 0, 1
	b.Run("first=n/2/blitz", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, i, _ := FindFirst(m, isOne)
			sinkI64 = int64(i)
		}
	})
	b.Run("first=n/2/seq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkI64 = int64(slices.IndexFunc(m, isOne))
		}
	})
}

func BenchmarkAny(b *testing.B) {
	n := benchN(10_000_000, 1_000_000)
	s := make([]int64, n)
	s[10] = 1
	isOne := func(v int64) bool { return v == 1 }
	b.Run("early/blitz", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkBool = Any(s, isOne)
		}
	})
	b.Run("early/seq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkBool = slices.ContainsFunc(s, isOne)
		}
	})
}

type benchRec struct {
	id    int64
	score float64
}

func benchRecs(n int) []benchRec {
	r := rand.New(rand.NewPCG(3, 4))
	s := make([]benchRec, n)
	for i := range s {
		s[i] = benchRec{int64(i), r.Float64()}
	}
	return s
}

var sinkRec benchRec

// seqMinByKey and seqMap are the sequential definitions with the function passed as a
// value, as a library function receives it (noinline: inlined, the compiler would
// specialize the loop to the benchmark's closure, which no library call gets).
//
//go:noinline
func seqMinByKey[T any, K cmp.Ordered](s []T, key func(T) K) T {
	best, bk := s[0], key(s[0])
	for _, x := range s[1:] {
		if k := key(x); k < bk {
			best, bk = x, k
		}
	}
	return best
}

//go:noinline
func seqMap[T, U any](s []T, f func(T) U) []U {
	out := make([]U, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

func BenchmarkMinByKey(b *testing.B) {
	s := benchRecs(benchN(10_000_000, 1_000_000))
	key := func(r benchRec) float64 { return r.score }
	b.Run("blitz", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkRec, _ = MinByKey(s, key)
		}
	})
	b.Run("seqfunc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkRec = seqMinByKey(s, key)
		}
	})
	b.Run("seq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			best := s[0]
			bk := key(best)
			for _, r := range s[1:] {
				if k := key(r); k < bk {
					best, bk = r, k
				}
			}
			sinkRec = best
		}
	})
}

var sinkF64s []float64

func BenchmarkMap(b *testing.B) {
	s := randU64(benchN(10_000_000, 1_000_000), 5)
	f := func(v uint64) float64 { return float64(v>>11) * 0x1p-53 }
	b.Run("blitz", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkF64s = Map(s, f)
		}
	})
	b.Run("seqfunc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkF64s = seqMap(s, f)
		}
	})
	b.Run("seq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := make([]float64, len(s))
			for i, v := range s {
				out[i] = f(v)
			}
			sinkF64s = out
		}
	})
	dst := make([]float64, len(s))
	b.Run("into/blitz", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			MapInto(dst, s, f)
		}
	})
	b.Run("into/seq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, v := range s {
				dst[i] = f(v)
			}
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := make([]float64, len(s))
			goroutineChunks(len(s), func(lo, hi int) {
				for i := lo; i < hi; i++ {
					out[i] = f(s[i])
				}
			})
			sinkF64s = out
		}
	})
}

var sinkU64s []uint64

func BenchmarkFilter(b *testing.B) {
	s := randU64(benchN(10_000_000, 1_000_000), 6)
	half := func(v uint64) bool { return v&1 == 0 } // keeps 50%
	b.Run("blitz", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkU64s = Filter(s, half)
		}
	})
	b.Run("seq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out []uint64
			for _, v := range s {
				if half(v) {
					out = append(out, v)
				}
			}
			sinkU64s = out
		}
	})
}
