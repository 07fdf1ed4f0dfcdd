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
	// Roles marks baselines, by name, that are not outside code: RoleVariant for another
	// implementation of ours (blitz on one worker beside two, Pool.Go beside Pool.Call),
	// RoleReference for a figure that is neither ours nor a competitor (the machine's copy
	// bandwidth, the CPU of a process without a pool). A baseline not named here is a
	// RoleBaseline. The tables label each row with its role.
	Roles map[string]Role
	// Metric names a custom metric (reported with b.ReportMetric) to show instead of ns/op,
	// e.g. "GB/s" or "ns/fork" or "bytes/task"; empty means ns/op.
	Metric string
	// HigherIsBetter is true for throughput-like metrics (GB/s).
	HigherIsBetter bool
	// Targets are the goals set for this case (by the project's issues), checked after
	// measuring: each prints met or missed beside its row, and blitzbench lists the missed
	// ones at the end. A missed target is information, not a failure.
	Targets []Target
	Note    string // one line of context, e.g. where a target comes from or why it is missed
}

// Role is what a baseline row is to ours; see Case.Roles.
type Role int

const (
	// RoleBaseline is outside code ours is compared with: goroutines, errgroup, slices.Sort.
	RoleBaseline Role = iota
	// RoleVariant is another implementation of ours, or of the same function written
	// sequentially for the comparison: labelled "(our variant)".
	RoleVariant
	// RoleReference is a reference figure rather than a competitor, such as the machine's
	// copy bandwidth or an idle process: labelled "(reference)".
	RoleReference
)

// String is the label the tables print after the implementation's name.
func (r Role) String() string {
	switch r {
	case RoleVariant:
		return "our variant"
	case RoleReference:
		return "reference"
	}
	return "baseline"
}

// TargetKind says what a Target bounds.
type TargetKind int

const (
	// TargetRatio: ours at least Value times better than the baseline named Baseline, as
	// the row's Ratio counts it (the baseline's time over ours, or ours over the baseline's
	// for HigherIsBetter metrics).
	TargetRatio TargetKind = iota + 1
	// TargetAtMost: ours' figure, in the case's unit (ns/op unless Case.Metric), at most
	// Value.
	TargetAtMost
	// TargetAtLeast: ours' figure, in the case's unit, at least Value.
	TargetAtLeast
	// TargetAllocsAtMost: ours' allocs/op at most Value.
	TargetAllocsAtMost
)

// Target is one goal for ours in a case. Build it with TimesBetter, AtMost, AtLeast or
// AllocsAtMost. A goal these cannot express (a difference such as "at most 10 ns/fork
// above sequential", or a comparison between two cases) stays as prose in Case.Note.
type Target struct {
	Kind     TargetKind
	Value    float64
	Baseline string // the baseline's Impl.Name, for TargetRatio only
}

// TimesBetter is the target "ours at least r times better than the baseline named
// baseline": TimesBetter("goroutines", 1) is "at least as fast as goroutines". An r below
// 1 is a tolerance: TimesBetter("loop", 1/1.2) reads "at most 1.2x loop's time".
func TimesBetter(baseline string, r float64) Target {
	return Target{Kind: TargetRatio, Value: r, Baseline: baseline}
}

// AtMost is the target "ours' figure at most v", in the case's unit.
func AtMost(v float64) Target { return Target{Kind: TargetAtMost, Value: v} }

// AtLeast is the target "ours' figure at least v", in the case's unit.
func AtLeast(v float64) Target { return Target{Kind: TargetAtLeast, Value: v} }

// AllocsAtMost is the target "ours at most n allocations per operation".
func AllocsAtMost(n int64) Target { return Target{Kind: TargetAllocsAtMost, Value: float64(n)} }

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
// then each baseline with testing.Benchmark, prints the comparison table with each
// target's outcome, and exits non-zero if any body failed (a missed target does not);
// TestRegisteredSuites checks every suite's shape, and that the names in Case.Roles and
// in ratio targets are baselines of the case.
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
