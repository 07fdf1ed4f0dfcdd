package stress

import (
	"math"
	"testing"
	"time"
)

// TestSoakGrowthFit checks the fit the soak's verdict rests on: a series that grows
// steadily over its second half is measured as rising by that much, and a flat one
// with noise (or with growth only in its first half, a warm-up) is not.
func TestSoakGrowthFit(t *testing.T) {
	series := func(f func(i int) float64) []soakSample {
		s := make([]soakSample, 60)
		for i := range s {
			s[i] = soakSample{At: time.Duration(i) * time.Second, HeapInuse: uint64(f(i))}
		}
		return s
	}
	heap := func(s soakSample) float64 { return float64(s.HeapInuse) }
	cases := []struct {
		name     string
		f        func(i int) float64
		min, max float64 // expected rise over the second half
	}{
		{"leak of 1 MiB/s", func(i int) float64 { return 8<<20 + float64(i)*(1<<20) }, 28 << 20, 30 << 20},
		{"flat with noise", func(i int) float64 { return 8<<20 + float64((i*7919)%5)*(1<<20) }, -3 << 20, 3 << 20},
		{"warm-up then flat", func(i int) float64 { return 8<<20 + math.Min(float64(i), 20)*(1<<20) }, -1, 1},
	}
	for _, c := range cases {
		rise, _ := growth(series(c.f), heap)
		if rise < c.min || rise > c.max {
			t.Errorf("%s: rise %.1f MiB over the second half, want %.1f..%.1f", c.name, rise/(1<<20), c.min/(1<<20), c.max/(1<<20))
		}
	}
	if got := slope([]float64{0, 1, 2}, []float64{1, 3, 5}); got != 2 {
		t.Errorf("slope of y = 2x+1 is %v", got)
	}
	if got := percentile([]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.99); got != 10 {
		t.Errorf("p99 of 1..10 = %v", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}
