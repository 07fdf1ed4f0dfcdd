package benchmarks

import (
	"fmt"
	"sort"
	"sync"
	"testing"
)

// Impl is one implementation measured in a case.
type Impl struct {
	Name  string             // e.g. "blitz", "goroutines", "errgroup", "slices.Sort"
	Bench func(b *testing.B) // a normal benchmark body: use b.ReportAllocs() and for b.Loop()
}

// Case is one row of a comparison table: ours against zero or more baselines run in the
// same process, one after the other.
type Case struct {
	Name      string
	Ours      Impl
	Baselines []Impl
	// Metric names a custom metric (reported with b.ReportMetric) to show instead of ns/op,
	// e.g. "GB/s" or "ns/fork" or "bytes/task"; empty means ns/op.
	Metric string
	// HigherIsBetter is true for throughput-like metrics (GB/s).
	HigherIsBetter bool
	Note           string // one line, e.g. the target from the issue
}

// Config is what the command passes to a suite.
type Config struct {
	Quick bool // -quick: smaller inputs, fewer rounds; the whole run in about a minute
}

// Suite is a named group of cases.
//
// To add one, create benchmarks/suite_<name>.go with an init function that calls
// Register, and keep each body a few lines: set up outside the loop, then
//
//	b.ReportAllocs()
//	for b.Loop() {
//		... one operation ...
//	}
//
// Cases returns the inputs sized by cfg.Quick. The blitzbench command measures Ours and
// then each baseline with testing.Benchmark, prints the comparison table and exits
// non-zero if any body failed; TestRegisteredSuites checks every suite's shape.
type Suite struct {
	Name  string // used with -suite NAME: "lockfree", "blitz", "blitz-par", "blitzio"
	Title string
	Cases func(cfg Config) []Case
}

var (
	registryMu sync.Mutex
	registry   = map[string]Suite{}
)

// Register adds a suite; call it from init(). It panics on a duplicate name, an empty
// name, or a nil Cases function: all three are programming errors in a suite file.
func Register(s Suite) {
	if s.Name == "" {
		panic("benchmarks: Register: suite name is empty")
	}
	if s.Cases == nil {
		panic(fmt.Sprintf("benchmarks: Register: suite %q has no Cases function", s.Name))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[s.Name]; dup {
		panic(fmt.Sprintf("benchmarks: Register: duplicate suite name %q", s.Name))
	}
	registry[s.Name] = s
}

// Suites returns the registered suites sorted by name.
func Suites() []Suite {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]Suite, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
