package benchmarks

import (
	"runtime"
	"testing"

	conciter "github.com/sourcegraph/conc/iter"
)

// conc/iter baselines for the blitz-par suite (see bparExtraBaselines in suite_par.go):
// its Map over elements or chunk descriptors, with its default GOMAXPROCS goroutines.

func init() {
	bparExtraBaselines = bparDepsBaselines
}

type bparSpan struct{ lo, hi int }

func bparSpans(n int) []bparSpan {
	w := runtime.GOMAXPROCS(0) * 4
	s := make([]bparSpan, w)
	for i := range s {
		s[i] = bparSpan{i * n / w, (i + 1) * n / w}
	}
	return s
}

func bparDepsBaselines(name string, cfg Config) []Impl {
	big, n := 100_000_000, 10_000_000
	if cfg.Quick {
		big, n = 8_000_000, 1_000_000
	}
	sumInput := func(size int) []int64 {
		s := make([]int64, size)
		for i := range s {
			s[i] = int64(i)
		}
		return s
	}
	sumImpls := func(size int, gbs bool) []Impl {
		report := func(b *testing.B) {
			if gbs {
				bparGBs(b, 8*size)
			}
		}
		return []Impl{
			{"conc/iter", func(b *testing.B) {
				s := sumInput(size)
				spans := bparSpans(len(s))
				b.ReportAllocs()
				for b.Loop() {
					parts := conciter.Map(spans, func(sp *bparSpan) int64 { return bparLoopSum(s[sp.lo:sp.hi]) })
					runtime.KeepAlive(bparLoopSum(parts))
				}
				report(b)
			}},
		}
	}
	switch name {
	case "Sum/100M":
		return sumImpls(big, true)
	case "Sum/1000":
		return sumImpls(1000, false)
	case "Map":
		f := func(v uint64) float64 { return float64(v>>11) * 0x1p-53 }
		return []Impl{
			{"conc/iter.Map", func(b *testing.B) {
				s := bparRandU64(n, 1)
				b.ReportAllocs()
				for b.Loop() {
					runtime.KeepAlive(conciter.Map(s, func(v *uint64) float64 { return f(*v) }))
				}
			}},
		}
	}
	return nil
}
