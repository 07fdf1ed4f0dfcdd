package main

import (
	"testing"

	"github.com/blitzgo/blitz/benchmarks"
)

// hostile9MissedSuite is a suite whose targets are missed whatever the machine: its
// bodies report a fixed figure in a unit of their own, so a check of how blitzbench
// treats a missed target does not depend on how fast anything ran (the tests of this
// package never assert on timing).
const hostile9MissedSuite = "zz-hostile9-missed"

func init() {
	benchmarks.Register(benchmarks.Suite{
		Name:  hostile9MissedSuite,
		Title: "a test suite whose targets cannot be met",
		Cases: func(benchmarks.Config) []benchmarks.Case {
			body := func(b *testing.B) {
				for b.Loop() {
				}
				b.ReportMetric(1, "widgets/op")
			}
			return []benchmarks.Case{{
				Name:   "AlwaysMissed",
				Metric: "widgets/op",
				Ours:   benchmarks.Impl{Name: "ours", Bench: body},
				// Both figures are 1: ours is 1x the other, never 2x; and 1 is above 0.
				Baselines: []benchmarks.Impl{{Name: "other", Bench: body}},
				Targets:   []benchmarks.Target{benchmarks.AtMost(0), benchmarks.TimesBetter("other", 2)},
			}}
		},
	})
}
