package benchmarks

import (
	"testing"
	"time"
)

// TestHostile9TargetDirections: every kind of target is checked in the right direction
// for both kinds of metric, tolerances (ratios below 1) included, on both sides of each
// bound. The figures are canned (fakeBench), nothing is timed.
func TestHostile9TargetDirections(t *testing.T) {
	ns := func(v float64) testing.BenchmarkResult { return testing.BenchmarkResult{N: 1, T: time.Duration(v)} }
	gbs := func(v float64) testing.BenchmarkResult {
		return testing.BenchmarkResult{N: 1, T: time.Second, Extra: map[string]float64{"GB/s": v}}
	}
	for _, c := range []struct {
		name       string
		higher     bool
		target     Target
		ours, base testing.BenchmarkResult
		want       TargetStatus
	}{
		// Lower is better (ns/op): ratio = base/ours.
		{"2x faster, is 2.5x", false, TimesBetter("b", 2), ns(40), ns(100), TargetMet},
		{"2x faster, is 1.5x", false, TimesBetter("b", 2), ns(100), ns(150), TargetMissed},
		{"at most 1.2x b's time, is 1.1x", false, TimesBetter("b", 1/1.2), ns(110), ns(100), TargetMet},
		{"at most 1.2x b's time, is 1.3x", false, TimesBetter("b", 1/1.2), ns(130), ns(100), TargetMissed},
		{"at most 50 ns, is 40", false, AtMost(50), ns(40), ns(1), TargetMet},
		{"at most 50 ns, is 60", false, AtMost(50), ns(60), ns(1), TargetMissed},
		{"at least 50 ns, is 40", false, AtLeast(50), ns(40), ns(1), TargetMissed},
		// Higher is better (GB/s): ratio = ours/base.
		{"2x better, is 3x", true, TimesBetter("b", 2), gbs(30), gbs(10), TargetMet},
		{"2x better, is 0.5x", true, TimesBetter("b", 2), gbs(5), gbs(10), TargetMissed},
		{"at least 0.8x b's GB/s, is 0.9x", true, TimesBetter("b", 0.8), gbs(9), gbs(10), TargetMet},
		{"at least 0.8x b's GB/s, is 0.7x", true, TimesBetter("b", 0.8), gbs(7), gbs(10), TargetMissed},
		{"at least 25 GB/s, is 20", true, AtLeast(25), gbs(20), gbs(1), TargetMissed},
		{"at least 25 GB/s, is 30", true, AtLeast(25), gbs(30), gbs(1), TargetMet},
		{"at most 25 GB/s, is 30", true, AtMost(25), gbs(30), gbs(1), TargetMissed},
	} {
		metric := ""
		if c.higher {
			metric = "GB/s"
		}
		s := Suite{Name: "d", Title: "d", Cases: func(Config) []Case {
			return []Case{{Name: "C", Metric: metric, HigherIsBetter: c.higher, Ours: Impl{"ours", noop},
				Baselines: []Impl{{"b", noop}}, Targets: []Target{c.target}}}
		}}
		res := RunSuite(s, RunOptions{Bench: fakeBench(c.ours, c.base)})
		if got := res.Cases[0].Targets[0]; got.Status != c.want {
			t.Errorf("%s: %s (measured %s), want %s", c.name, got.Status, got.Measured, c.want)
		}
	}
}
