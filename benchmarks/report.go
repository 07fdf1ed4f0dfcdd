package benchmarks

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// ImplResult is the measurement of one Impl of a case.
type ImplResult struct {
	Name string `json:"name"`
	// Ours is true for the case's own implementation, false for a baseline.
	Ours bool `json:"ours"`
	// Role is the row's label: "ours", or for the others "baseline", "our variant" or
	// "reference" (see Case.Roles).
	Role string `json:"role"`
	// N is the number of iterations testing.Benchmark settled on.
	N int `json:"n"`
	// NsPerOp is the wall time per iteration, not rounded.
	NsPerOp float64 `json:"ns_per_op"`
	// Value is the figure the table shows: NsPerOp, or the case's custom Metric.
	Value       float64 `json:"value"`
	Unit        string  `json:"unit"`
	AllocsPerOp int64   `json:"allocs_per_op"`
	BytesPerOp  int64   `json:"bytes_per_op"`
	// Extra holds every metric the body reported with b.ReportMetric.
	Extra map[string]float64 `json:"extra,omitempty"`
	// Ratio compares a baseline with ours: how many times better ours is (above 1 means
	// ours is faster, or higher for HigherIsBetter metrics). Zero for ours or when either
	// figure is missing.
	Ratio float64 `json:"ratio,omitempty"`
	// RatioText is Ratio as the tables print it: "2.10x faster", "0.81x slower" (or
	// "better"/"worse" for HigherIsBetter metrics); empty where Ratio is zero.
	RatioText string `json:"ratio_text,omitempty"`
	// Samples holds the figure of every round when the command ran with -count > 1;
	// Value is their median.
	Samples []float64 `json:"samples,omitempty"`
	// Error is set when the body failed, skipped, or did not report the case's metric.
	Error string `json:"error,omitempty"`
}

// CaseResult is one measured row group of a comparison table.
type CaseResult struct {
	Name           string       `json:"name"`
	Unit           string       `json:"unit"`
	HigherIsBetter bool         `json:"higher_is_better"`
	Note           string       `json:"note,omitempty"`
	Impls          []ImplResult `json:"impls"` // ours first, then the baselines in order
	// Targets is the outcome of each of the case's Targets, in order.
	Targets []TargetResult `json:"targets,omitempty"`
}

// TargetStatus is the outcome of a target.
type TargetStatus string

const (
	TargetMet    TargetStatus = "met"
	TargetMissed TargetStatus = "missed"
	// TargetNotMeasured: a figure the target needs is missing (a body failed or skipped,
	// or the target names a baseline the case does not have).
	TargetNotMeasured TargetStatus = "not measured"
)

// TargetResult is one Target checked against the measured figures.
type TargetResult struct {
	Kind     string  `json:"kind"` // "ratio", "at_most", "at_least" or "allocs_at_most"
	Value    float64 `json:"value"`
	Baseline string  `json:"baseline,omitempty"` // for "ratio"
	// Text is the target for people: "at least 3x faster than mutex+slice", "at most
	// 20 ns/op", "at least as fast as goroutines".
	Text   string       `json:"text"`
	Status TargetStatus `json:"status"`
	// Measured is the figure compared, as the table prints it ("1.36x faster", "19.4
	// ns/op", "0 allocs/op"), or why there is none.
	Measured string `json:"measured"`
}

// SuiteResult is every case of one suite.
type SuiteResult struct {
	Name  string       `json:"name"`
	Title string       `json:"title"`
	Cases []CaseResult `json:"cases"`
}

// Report is what the blitzbench command writes with -json.
type Report struct {
	Time       time.Time     `json:"time"`
	GoVersion  string        `json:"go_version"`
	GOOS       string        `json:"goos"`
	GOARCH     string        `json:"goarch"`
	NumCPU     int           `json:"num_cpu"`
	GOMAXPROCS int           `json:"gomaxprocs"`
	CPU        string        `json:"cpu,omitempty"`
	Benchtime  string        `json:"benchtime"`
	Count      int           `json:"count"`
	Quick      bool          `json:"quick"`
	Suites     []SuiteResult `json:"suites"`
}

// NewReport returns a report header describing this process and machine.
func NewReport(benchtime time.Duration, quick bool) *Report {
	return &Report{
		Time:       time.Now().UTC(),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPU:        cpuModel(),
		Benchtime:  benchtime.String(),
		Quick:      quick,
	}
}

// cpuModel returns the CPU model name from /proc/cpuinfo, or "" where there is none.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// RunOptions controls RunSuite.
type RunOptions struct {
	Config Config
	// Filter, when set, keeps only the cases whose name it matches.
	Filter *regexp.Regexp
	// Progress, when set, receives one line per measured implementation.
	Progress io.Writer
	// Bench measures one body; nil means testing.Benchmark. Tests substitute it.
	Bench func(func(*testing.B)) testing.BenchmarkResult
	// Count is how many times each implementation is measured (0 means 1). The rounds
	// alternate between the implementations of a case, so a change in the machine's
	// load hits all of them, and the result kept is the median round.
	Count int
}

// RunSuite measures every case of s, ours first and then each baseline, one after the
// other in this process, and returns the results in registration order.
func RunSuite(s Suite, opt RunOptions) SuiteResult {
	bench := opt.Bench
	if bench == nil {
		bench = testing.Benchmark
	}
	out := SuiteResult{Name: s.Name, Title: s.Title}
	cases := s.Cases(opt.Config)
	var selected []Case
	for _, c := range cases {
		if opt.Filter == nil || opt.Filter.MatchString(c.Name) {
			selected = append(selected, c)
		}
	}
	for i, c := range selected {
		cr := CaseResult{Name: c.Name, Unit: c.Metric, HigherIsBetter: c.HigherIsBetter, Note: c.Note}
		if cr.Unit == "" {
			cr.Unit = "ns/op"
		}
		impls := append([]Impl{c.Ours}, c.Baselines...)
		rounds := make([][]ImplResult, len(impls))
		// Start every case from a collected heap with its free memory returned: a case
		// that left a large heap (a 100M-element sum, a million tasks) otherwise keeps the
		// runtime's background scavenger busy through the cases after it, and their
		// allocations fault pages back in.
		if opt.Bench == nil {
			debug.FreeOSMemory()
		}
		for round := range max(opt.Count, 1) {
			for j, impl := range impls {
				ir := measure(bench, impl, cr.Unit)
				if opt.Progress != nil {
					fig := ir.Error
					if fig == "" {
						fig = fmt.Sprintf("%s %s, %d allocs/op (N=%d)", formatValue(ir.Value), cr.Unit, ir.AllocsPerOp, ir.N)
					}
					label := ""
					if opt.Count > 1 {
						label = fmt.Sprintf(" (round %d/%d)", round+1, opt.Count)
					}
					fmt.Fprintf(opt.Progress, "[%s %d/%d] %s / %s%s: %s\n", s.Name, i+1, len(selected), c.Name, ir.Name, label, fig)
				}
				rounds[j] = append(rounds[j], ir)
			}
		}
		for j, rs := range rounds {
			ir := median(rs)
			ir.Ours = j == 0
			ir.Role = "ours"
			if j > 0 {
				ir.Role = c.Roles[ir.Name].String()
			}
			cr.Impls = append(cr.Impls, ir)
		}
		ours := cr.Impls[0]
		for j := 1; j < len(cr.Impls); j++ {
			cr.Impls[j].Ratio = ratio(ours, cr.Impls[j], c.HigherIsBetter)
			if cr.Impls[j].Ratio > 0 {
				cr.Impls[j].RatioText = FormatRatio(cr.Impls[j].Ratio, c.HigherIsBetter)
			}
		}
		for _, t := range c.Targets {
			cr.Targets = append(cr.Targets, evalTarget(t, cr))
		}
		out.Cases = append(out.Cases, cr)
	}
	return out
}

// String names the kind in the JSON report.
func (k TargetKind) String() string {
	switch k {
	case TargetRatio:
		return "ratio"
	case TargetAtMost:
		return "at_most"
	case TargetAtLeast:
		return "at_least"
	case TargetAllocsAtMost:
		return "allocs_at_most"
	}
	return fmt.Sprintf("TargetKind(%d)", int(k))
}

// targetText describes t for people. short leaves out the baseline's name, for the
// table cell printed on that baseline's own row.
func targetText(t Target, unit string, higherIsBetter, short bool) string {
	switch t.Kind {
	case TargetRatio:
		better, good := "faster", "fast"
		if higherIsBetter {
			better, good = "better", "good"
		}
		than, of := " than "+t.Baseline, t.Baseline+"'s "
		if short {
			than, of = "", "its "
		}
		switch {
		case t.Value == 1 && short:
			return "at least as " + good
		case t.Value == 1:
			return "at least as " + good + " as " + t.Baseline
		case t.Value > 1:
			return fmt.Sprintf("at least %sx %s%s", formatBound(t.Value), better, than)
		case higherIsBetter:
			return fmt.Sprintf("at least %sx %s%s", formatBound(t.Value), of, unit)
		default:
			// Ours may be slower by up to 1/Value: say so in the baseline's terms.
			return fmt.Sprintf("at most %sx %s%s", formatBound(1/t.Value), of, unit)
		}
	case TargetAtMost, TargetAtLeast:
		div, u := displayScale(t.Value, unit)
		word := "at most "
		if t.Kind == TargetAtLeast {
			word = "at least "
		}
		return word + formatBound(t.Value/div) + " " + u
	case TargetAllocsAtMost:
		return "at most " + formatBound(t.Value) + " allocs/op"
	}
	return t.Kind.String()
}

// TargetText describes a case's target for people, as the tables print it: "at least
// 3x faster than mutex+slice", "at most 20 ns/op".
func TargetText(t Target, c Case) string {
	unit := c.Metric
	if unit == "" {
		unit = "ns/op"
	}
	return targetText(t, unit, c.HigherIsBetter, false)
}

// formatBound prints a target's number as written in the issues: 3, 1.8, 320, 0.25.
func formatBound(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// evalTarget checks t against the measured case.
func evalTarget(t Target, c CaseResult) TargetResult {
	tr := TargetResult{Kind: t.Kind.String(), Value: t.Value, Baseline: t.Baseline,
		Text: targetText(t, c.Unit, c.HigherIsBetter, false), Status: TargetNotMeasured}
	ours := c.Impls[0]
	var got float64
	switch t.Kind {
	case TargetRatio:
		i := slices.IndexFunc(c.Impls[1:], func(ir ImplResult) bool { return ir.Name == t.Baseline })
		switch {
		case i < 0:
			tr.Measured = fmt.Sprintf("no baseline named %q", t.Baseline)
			return tr
		case c.Impls[1+i].Ratio <= 0:
			tr.Measured = "no ratio: a figure is missing"
			return tr
		}
		got, tr.Measured = c.Impls[1+i].Ratio, c.Impls[1+i].RatioText
	case TargetAtMost, TargetAtLeast, TargetAllocsAtMost:
		if ours.Error != "" {
			tr.Measured = "ours: " + ours.Error
			return tr
		}
		got, tr.Measured = ours.Value, formatFigure(ours.Value, c.Unit)
		if t.Kind == TargetAllocsAtMost {
			got, tr.Measured = float64(ours.AllocsPerOp), fmt.Sprintf("%d allocs/op", ours.AllocsPerOp)
		}
	default:
		tr.Measured = "unknown target kind"
		return tr
	}
	met := got >= t.Value
	if t.Kind == TargetAtMost || t.Kind == TargetAllocsAtMost {
		met = got <= t.Value
	}
	tr.Status = TargetMissed
	if met {
		tr.Status = TargetMet
	}
	return tr
}

// median returns the round with the median figure, with every round's figure in
// Samples when there was more than one. A failed round makes the result failed: a body
// that fails now and then is broken.
func median(rounds []ImplResult) ImplResult {
	if len(rounds) == 1 {
		return rounds[0]
	}
	for _, r := range rounds {
		if r.Error != "" {
			return r
		}
	}
	sorted := slices.Clone(rounds)
	slices.SortFunc(sorted, func(a, b ImplResult) int { return cmp.Compare(a.Value, b.Value) })
	m := sorted[(len(sorted)-1)/2]
	for _, r := range rounds {
		m.Samples = append(m.Samples, r.Value)
	}
	return m
}

func measure(bench func(func(*testing.B)) testing.BenchmarkResult, impl Impl, unit string) ImplResult {
	ir := ImplResult{Name: impl.Name, Unit: unit}
	if impl.Bench == nil {
		ir.Error = "no benchmark body"
		return ir
	}
	r := bench(impl.Bench)
	if r.N == 0 {
		// testing.Benchmark returns a zero result when the body failed or skipped.
		ir.Error = "failed or skipped"
		return ir
	}
	ir.N = r.N
	ir.NsPerOp = float64(r.T.Nanoseconds()) / float64(r.N)
	if v, ok := r.Extra["ns/op"]; ok {
		ir.NsPerOp = v
	}
	ir.AllocsPerOp = r.AllocsPerOp()
	ir.BytesPerOp = r.AllocedBytesPerOp()
	if len(r.Extra) > 0 {
		ir.Extra = r.Extra
	}
	if unit == "ns/op" {
		ir.Value = ir.NsPerOp
	} else if v, ok := r.Extra[unit]; ok {
		ir.Value = v
	} else {
		ir.Error = fmt.Sprintf("did not report metric %q", unit)
	}
	return ir
}

// ratio says how many times better ours is than base: base/ours for lower-is-better
// figures, ours/base for higher-is-better ones. Zero when it is undefined.
func ratio(ours, base ImplResult, higherIsBetter bool) float64 {
	if ours.Error != "" || base.Error != "" || ours.Value <= 0 || base.Value <= 0 {
		return 0
	}
	if higherIsBetter {
		return ours.Value / base.Value
	}
	return base.Value / ours.Value
}

// FormatRatio renders a Ratio for people, in one shape whichever way it goes: "3.20x
// faster" when ours is better, "0.76x slower" when it is worse (the baseline's time is
// 0.76 of ours), "-" when undefined. For HigherIsBetter metrics the words are "better"
// and "worse".
func FormatRatio(r float64, higherIsBetter bool) string {
	if r <= 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return "-"
	}
	better, worse := "faster", "slower"
	if higherIsBetter {
		better, worse = "better", "worse"
	}
	word := better
	if r < 1 {
		word = worse
	}
	return formatTimes(r) + " " + word
}

// formatTimes prints a ratio as "3.20x", with two significant digits below 0.1.
func formatTimes(r float64) string {
	if r < 0.1 {
		return fmt.Sprintf("%.2gx", r)
	}
	return fmt.Sprintf("%.2fx", r)
}

// formatValue prints a figure with about three significant digits and a fixed number
// of decimals per magnitude, so the figures of a column line up.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// displayScale picks how a figure of this size is shown: nanoseconds per operation of
// ten microseconds or more in µs/op or ms/op, so long runs stay readable (the JSON keeps
// ns). It returns the divisor and the unit to print.
func displayScale(v float64, unit string) (float64, string) {
	if unit == "ns/op" {
		switch {
		case v >= 1e6:
			return 1e6, "ms/op"
		case v >= 1e4:
			return 1e3, "µs/op"
		}
	}
	return 1, unit
}

// formatFigure prints a figure with its unit, scaled by displayScale.
func formatFigure(v float64, unit string) string {
	div, u := displayScale(v, unit)
	return formatValue(v/div) + " " + u
}

// tableRows flattens a suite into the rows both table formats print. A target is shown
// on the row it concerns: a ratio target beside its baseline, the others beside ours.
func tableRows(s SuiteResult) [][]string {
	var rows [][]string
	for _, c := range s.Cases {
		cells := make([][]string, len(c.Impls))
		for _, tr := range c.Targets {
			row := 0
			if tr.Kind == TargetRatio.String() {
				row = max(0, 1+slices.IndexFunc(c.Impls[1:], func(ir ImplResult) bool { return ir.Name == tr.Baseline }))
			}
			text := tr.Text
			if row > 0 {
				text = targetText(Target{Kind: TargetRatio, Value: tr.Value, Baseline: tr.Baseline}, c.Unit, c.HigherIsBetter, true)
			}
			cells[row] = append(cells[row], string(tr.Status)+": "+text)
		}
		for j, ir := range c.Impls {
			name, role, ratioText := "", ir.Role, FormatRatio(ir.Ratio, c.HigherIsBetter)
			if role == "" { // a report from before roles
				role = "baseline"
			}
			if j == 0 {
				name, role, ratioText = c.Name, "ours", ""
			}
			fig, allocs := ir.Error, "-"
			if ir.Error == "" {
				fig = formatFigure(ir.Value, ir.Unit)
				if len(ir.Samples) > 1 {
					// The spread of the rounds: how far to trust the median.
					div, _ := displayScale(ir.Value, ir.Unit)
					fig += fmt.Sprintf(" [%s..%s]", formatValue(slices.Min(ir.Samples)/div), formatValue(slices.Max(ir.Samples)/div))
				}
				allocs = fmt.Sprint(ir.AllocsPerOp)
			}
			rows = append(rows, []string{name, ir.Name + " (" + role + ")", fig, allocs, ratioText, strings.Join(cells[j], "; ")})
		}
	}
	return rows
}

var tableHeader = []string{"case", "implementation", "figure", "allocs/op", "ours vs this", "target"}

// describe is the target with the figure it was checked against, or with why it could
// not be checked: "at most 20 ns/op (measured: 7.16 ns/op)".
func (tr TargetResult) describe() string {
	if tr.Status == TargetNotMeasured {
		return fmt.Sprintf("%s (%s)", tr.Text, tr.Measured)
	}
	return fmt.Sprintf("%s (measured: %s)", tr.Text, tr.Measured)
}

// TargetTally counts the targets of some suites and lists the ones not met.
type TargetTally struct {
	Met, Missed, NotMeasured int
	// Lines holds one line per target missed or not measured, missed ones first:
	// "lockfree/DequePushPop: missed: at most 5 ns/op (measured: 19.4 ns/op)".
	Lines []string
}

// Tally counts the targets of suites.
func Tally(suites []SuiteResult) TargetTally {
	var t TargetTally
	var notMeasured []string
	for _, s := range suites {
		for _, c := range s.Cases {
			for _, tr := range c.Targets {
				line := fmt.Sprintf("%s/%s: %s: %s", s.Name, c.Name, tr.Status, tr.describe())
				switch tr.Status {
				case TargetMet:
					t.Met++
				case TargetMissed:
					t.Missed++
					t.Lines = append(t.Lines, line)
				default:
					t.NotMeasured++
					notMeasured = append(notMeasured, line)
				}
			}
		}
	}
	t.Lines = append(t.Lines, notMeasured...)
	return t
}

// String is the one-line count: "targets: 19 of 24 met, 3 missed, 2 not measured".
func (t TargetTally) String() string {
	total := t.Met + t.Missed + t.NotMeasured
	if total == 0 {
		return "targets: none in the cases run"
	}
	out := fmt.Sprintf("targets: %d of %d met, %d missed", t.Met, total, t.Missed)
	if t.NotMeasured > 0 {
		out += fmt.Sprintf(", %d not measured", t.NotMeasured)
	}
	return out
}

// WriteTargetSummary prints the end-of-run summary: how many targets were met, then
// each one missed or not measured. Missed targets are information; they do not make
// blitzbench fail.
func WriteTargetSummary(w io.Writer, suites []SuiteResult) error {
	t := Tally(suites)
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n== %s\n", t)
	for _, l := range t.Lines {
		fmt.Fprintf(&sb, "  %s\n", l)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// WriteTable prints a suite's comparison table for a terminal: per case, our figure and
// each baseline's, with allocs/op and how many times faster (or slower) ours is.
func WriteTable(w io.Writer, s SuiteResult) error {
	if _, err := fmt.Fprintf(w, "\n== %s: %s\n", s.Name, s.Title); err != nil {
		return err
	}
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tableHeader, "\t"))
	for _, row := range tableRows(s) {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for line := range strings.Lines(table.String()) {
		// Rows with empty last cells end in padding.
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	for _, c := range s.Cases {
		if c.Note != "" {
			if _, err := fmt.Fprintf(w, "  %s: %s\n", c.Name, c.Note); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteMarkdown writes the whole report as Markdown: a header describing the machine,
// then one table per suite, with a link to each suite's chart when charts is true.
func WriteMarkdown(w io.Writer, r *Report, charts bool) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# blitzbench report\n\n")
	fmt.Fprintf(&sb, "%s, %s %s/%s, %d CPUs (GOMAXPROCS %d)", r.Time.Format(time.RFC3339), r.GoVersion, r.GOOS, r.GOARCH, r.NumCPU, r.GOMAXPROCS)
	if r.CPU != "" {
		fmt.Fprintf(&sb, ", %s", r.CPU)
	}
	fmt.Fprintf(&sb, ", benchtime %s", r.Benchtime)
	if r.Count > 1 {
		fmt.Fprintf(&sb, ", median of %d rounds", r.Count)
	}
	if r.Quick {
		sb.WriteString(", quick mode")
	}
	sb.WriteString(".\n\nRatios compare ours with each baseline measured in the same process: \"3.00x faster\" means the baseline's figure is three times ours, \"0.50x slower\" that it is half of ours (\"better\"/\"worse\" where higher is better).\n")
	sb.WriteString("A target is shown beside the row it concerns; missed targets are information, not failures.\n")
	tally := Tally(r.Suites)
	fmt.Fprintf(&sb, "\n%s%s.\n", strings.ToUpper(tally.String()[:1]), tally.String()[1:])
	if len(tally.Lines) > 0 {
		sb.WriteString("\n")
		for _, l := range tally.Lines {
			fmt.Fprintf(&sb, "- %s\n", mdEscape(l))
		}
	}
	for _, s := range r.Suites {
		fmt.Fprintf(&sb, "\n## %s: %s\n\n", s.Name, mdEscape(s.Title))
		fmt.Fprintf(&sb, "| %s |\n|%s\n", strings.Join(tableHeader, " | "), strings.Repeat("---|", len(tableHeader)))
		for _, row := range tableRows(s) {
			for i := range row {
				row[i] = mdEscape(row[i])
			}
			fmt.Fprintf(&sb, "| %s |\n", strings.Join(row, " | "))
		}
		var notes []string
		for _, c := range s.Cases {
			if c.Note != "" {
				notes = append(notes, fmt.Sprintf("- %s: %s\n", mdEscape(c.Name), mdEscape(c.Note)))
			}
		}
		if len(notes) > 0 {
			sb.WriteString("\n" + strings.Join(notes, ""))
		}
		if charts {
			fmt.Fprintf(&sb, "\n![%s chart](%s.svg)\n", s.Name, s.Name)
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// resultsMarker is the heading of the generated part of a results document such as
// benchmarks/RESULTS.md: everything from it to the end is WriteMarkdown's report.
const resultsMarker = "## Full report\n"

// UpdateResults returns doc (a results document such as benchmarks/RESULTS.md) with its
// "## Full report" section, which runs to the end of the document, replaced by the
// report r as WriteMarkdown prints it, one heading level down; the prose before that
// heading is kept as written. A document without the heading gets the section appended.
// The page WriteHTML writes from the same Report shows the same figures.
func UpdateResults(doc []byte, r *Report) ([]byte, error) {
	var md strings.Builder
	if err := WriteMarkdown(&md, r, false); err != nil {
		return nil, err
	}
	body := strings.TrimPrefix(md.String(), "# blitzbench report\n\n")
	var out strings.Builder
	head := string(doc)
	if i := strings.Index(head, resultsMarker); i >= 0 && (i == 0 || head[i-1] == '\n') {
		head = head[:i]
	} else if head != "" {
		head = strings.TrimRight(head, "\n") + "\n\n"
	}
	out.WriteString(head)
	out.WriteString(resultsMarker + "\n")
	out.WriteString("(Generated by `blitzbench -results` from the run's results.json; the same run's\n`report.html` draws these figures.)\n\n")
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "## ") {
			line = "#" + line
		}
		out.WriteString(line)
	}
	return []byte(out.String()), nil
}
