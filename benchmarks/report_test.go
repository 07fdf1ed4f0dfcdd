package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeBench returns canned results keyed by the order of the calls, so RunSuite and the
// writers can be tested without timing anything.
func fakeBench(results ...testing.BenchmarkResult) func(func(*testing.B)) testing.BenchmarkResult {
	i := 0
	return func(func(*testing.B)) testing.BenchmarkResult {
		r := results[i]
		i++
		return r
	}
}

func noop(*testing.B) {}

func testSuite() Suite {
	return Suite{Name: "demo", Title: "a | demo", Cases: func(cfg Config) []Case {
		return []Case{
			{Name: "Fast", Ours: Impl{"ours", noop}, Baselines: []Impl{{"slow", noop}, {"broken", noop}}, Note: "target 3x",
				Targets: []Target{TimesBetter("slow", 3), AtMost(5), AllocsAtMost(2), TimesBetter("broken", 1)}},
			{Name: "Throughput", Metric: "GB/s", HigherIsBetter: true, Ours: Impl{"ours", noop}, Baselines: []Impl{{"other", noop}},
				Roles: map[string]Role{"other": RoleVariant}, Targets: []Target{AtLeast(1), TimesBetter("other", 1)}},
			{Name: "Skipped", Ours: Impl{"ours", noop}, Targets: []Target{AtMost(1)}},
		}
	}}
}

func runDemo(t *testing.T, filter string) SuiteResult {
	t.Helper()
	opt := RunOptions{Bench: fakeBench(
		testing.BenchmarkResult{N: 100, T: 1000 * time.Nanosecond, MemAllocs: 200}, // Fast/ours: 10 ns, 2 allocs
		testing.BenchmarkResult{N: 100, T: 3200 * time.Nanosecond},                 // Fast/slow: 32 ns
		testing.BenchmarkResult{}, // Fast/broken: failed
		testing.BenchmarkResult{N: 1, T: time.Second, Extra: map[string]float64{"GB/s": 2}}, // Throughput/ours
		testing.BenchmarkResult{N: 1, T: time.Second, Extra: map[string]float64{"GB/s": 4}}, // Throughput/other
		testing.BenchmarkResult{}, // Skipped/ours
	)}
	if filter != "" {
		opt.Filter = regexp.MustCompile(filter)
	}
	var progress bytes.Buffer
	opt.Progress = &progress
	res := RunSuite(testSuite(), opt)
	if !strings.Contains(progress.String(), "] Fast / ours: 10.0 ns/op, 2 allocs/op (N=100)") {
		t.Errorf("progress output:\n%s", progress.String())
	}
	return res
}

func TestRunSuite(t *testing.T) {
	res := runDemo(t, "^(Fast|Throughput)$")
	if len(res.Cases) != 2 {
		t.Fatalf("%d cases after filtering, want 2", len(res.Cases))
	}
	fast := res.Cases[0]
	if ours := fast.Impls[0]; !ours.Ours || ours.Value != 10 || ours.AllocsPerOp != 2 || ours.Ratio != 0 {
		t.Errorf("Fast/ours = %+v", ours)
	}
	if slow := fast.Impls[1]; slow.Ours || slow.Value != 32 || slow.Ratio != 3.2 {
		t.Errorf("Fast/slow = %+v, want ratio 3.2", slow)
	}
	if broken := fast.Impls[2]; broken.Error == "" || broken.Ratio != 0 {
		t.Errorf("Fast/broken = %+v, want an error", broken)
	}
	thr := res.Cases[1]
	if thr.Unit != "GB/s" || thr.Impls[0].Value != 2 || thr.Impls[1].Ratio != 0.5 {
		t.Errorf("Throughput = %+v, want ours 2 GB/s at 0.5x of 4 GB/s", thr)
	}
	if roles := []string{fast.Impls[0].Role, fast.Impls[1].Role, thr.Impls[1].Role}; !slices.Equal(roles, []string{"ours", "baseline", "our variant"}) {
		t.Errorf("roles = %q", roles)
	}
}

func TestTargets(t *testing.T) {
	res := runDemo(t, "")
	type want struct {
		text, status, measured string
	}
	var got []want
	for _, c := range res.Cases {
		for _, tr := range c.Targets {
			got = append(got, want{tr.Text, string(tr.Status), tr.Measured})
		}
	}
	wants := []want{
		{"at least 3x faster than slow", "met", "3.20x faster"},
		{"at most 5 ns/op", "missed", "10.0 ns/op"},
		{"at most 2 allocs/op", "met", "2 allocs/op"},
		{"at least as fast as broken", "not measured", "no ratio: a figure is missing"},
		{"at least 1 GB/s", "met", "2.00 GB/s"},
		{"at least as good as other", "missed", "0.50x worse"},
		{"at most 1 ns/op", "not measured", "ours: failed or skipped"},
	}
	if !slices.Equal(got, wants) {
		t.Errorf("targets:\n got %q\nwant %q", got, wants)
	}
	for _, c := range []struct {
		t    Target
		unit string
		hib  bool
		want string
	}{
		{TimesBetter("loop", 1/1.2), "ns/op", false, "at most 1.2x loop's ns/op"},
		{TimesBetter("loop", 0.8), "GB/s", true, "at least 0.8x loop's GB/s"},
		{TimesBetter("sequential", 1.7), "ns/fork", false, "at least 1.7x faster than sequential"},
		{AtMost(10_000), "ns/op", false, "at most 10 µs/op"},
		{AtMost(320), "bytes/task", false, "at most 320 bytes/task"},
	} {
		if got := targetText(c.t, c.unit, c.hib, false); got != c.want {
			t.Errorf("targetText(%+v) = %q, want %q", c.t, got, c.want)
		}
	}
	if e := evalTarget(TimesBetter("nope", 2), res.Cases[0]); e.Status != TargetNotMeasured || e.Measured != `no baseline named "nope"` {
		t.Errorf("unknown baseline: %+v", e)
	}

	tally := Tally([]SuiteResult{res})
	if s := tally.String(); s != "targets: 3 of 7 met, 2 missed, 2 not measured" {
		t.Errorf("tally = %q", s)
	}
	var sum bytes.Buffer
	if err := WriteTargetSummary(&sum, []SuiteResult{res}); err != nil {
		t.Fatal(err)
	}
	wantSum := `
== targets: 3 of 7 met, 2 missed, 2 not measured
  demo/Fast: missed: at most 5 ns/op (measured: 10.0 ns/op)
  demo/Throughput: missed: at least as good as other (measured: 0.50x worse)
  demo/Fast: not measured: at least as fast as broken (no ratio: a figure is missing)
  demo/Skipped: not measured: at most 1 ns/op (ours: failed or skipped)
`
	if sum.String() != wantSum {
		t.Errorf("summary:\n%s\nwant:\n%s", sum.String(), wantSum)
	}
}

func TestRunSuiteCountMedian(t *testing.T) {
	s := Suite{Name: "m", Title: "m", Cases: func(Config) []Case {
		return []Case{{Name: "C", Ours: Impl{"ours", noop}, Baselines: []Impl{{"base", noop}}}}
	}}
	ns := func(v int) testing.BenchmarkResult { return testing.BenchmarkResult{N: 1, T: time.Duration(v)} }
	// The rounds alternate: ours, base, ours, base, ours, base.
	res := RunSuite(s, RunOptions{Count: 3, Bench: fakeBench(ns(30), ns(90), ns(10), ns(50), ns(20), ns(70))})
	ours, base := res.Cases[0].Impls[0], res.Cases[0].Impls[1]
	if ours.Value != 20 || !slices.Equal(ours.Samples, []float64{30, 10, 20}) || !ours.Ours {
		t.Errorf("ours = %+v, want the median 20 of 30, 10, 20", ours)
	}
	if base.Value != 70 || base.Ratio != 3.5 {
		t.Errorf("base = %+v, want the median 70 and ratio 3.5", base)
	}
	var table strings.Builder
	WriteTable(&table, res)
	if !strings.Contains(table.String(), "20.0 ns/op [10.0..30.0]") {
		t.Errorf("table does not show the spread of the rounds:\n%s", table.String())
	}
}

func TestRunSuiteMissingMetric(t *testing.T) {
	s := Suite{Name: "m", Title: "m", Cases: func(Config) []Case {
		return []Case{{Name: "C", Metric: "B/task", Ours: Impl{"ours", noop}}}
	}}
	res := RunSuite(s, RunOptions{Bench: fakeBench(testing.BenchmarkResult{N: 5, T: time.Second})})
	if e := res.Cases[0].Impls[0].Error; !strings.Contains(e, `did not report metric "B/task"`) {
		t.Fatalf("error = %q", e)
	}
}

func TestFormatRatio(t *testing.T) {
	for _, c := range []struct {
		r      float64
		higher bool
		want   string
	}{{3.2, false, "3.20x faster"}, {0.0049, false, "0.0049x slower"}, {0.76, false, "0.76x slower"}, {1, false, "1.00x faster"}, {2, true, "2.00x better"}, {0.5, true, "0.50x worse"}, {0, false, "-"}} {
		if got := FormatRatio(c.r, c.higher); got != c.want {
			t.Errorf("FormatRatio(%v, %v) = %q, want %q", c.r, c.higher, got, c.want)
		}
	}
}

func TestFormatFigure(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{{7, "ns/op", "7.00 ns/op"}, {9999, "ns/op", "9999 ns/op"}, {12345, "ns/op", "12.3 µs/op"}, {10457547, "ns/op", "10.5 ms/op"}, {2e6, "B/task", "2000000 B/task"}} {
		if got := formatFigure(c.v, c.unit); got != c.want {
			t.Errorf("formatFigure(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestWriters(t *testing.T) {
	res := runDemo(t, "")
	var table bytes.Buffer
	if err := WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("table:\n%s", table.String())
	for _, want := range []string{"== demo: a | demo", "Fast", "ours (ours)", "10.0 ns/op", "32.0 ns/op", "3.20x faster", "failed or skipped", "0.50x worse", "Fast: target 3x",
		"other (our variant)", "slow (baseline)", "3.20x faster  met: at least 3x faster\n", "missed: at most 5 ns/op; met: at most 2 allocs/op\n", "not measured: at least as fast\n"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	r := NewReport(time.Second, true)
	r.Suites = []SuiteResult{res}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## demo: a \\| demo", "| Fast | ours (ours) | 10.0 ns/op | 2 |  | missed: at most 5 ns/op; met: at most 2 allocs/op |",
		"|  | slow (baseline) | 32.0 ns/op | 0 | 3.20x faster | met: at least 3x faster |", "![demo chart](demo.svg)", "quick mode",
		"Targets: 3 of 7 met, 2 missed, 2 not measured.\n\n- demo/Fast: missed: at most 5 ns/op (measured: 10.0 ns/op)\n"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if tr := back.Suites[0].Cases[0].Targets[0]; tr.Kind != "ratio" || tr.Baseline != "slow" || tr.Value != 3 || tr.Status != TargetMet || tr.Measured != "3.20x faster" {
		t.Errorf("JSON target = %+v", tr)
	}
	if len(back.Suites) != 1 || back.Suites[0].Cases[0].Impls[1].Ratio != 3.2 || back.Suites[0].Cases[0].Impls[1].RatioText != "3.20x faster" || !back.Quick {
		t.Errorf("JSON round trip lost data: %s", js.String())
	}

	var svg bytes.Buffer
	if err := WriteSVG(&svg, res); err != nil {
		t.Fatal(err)
	}
	parseSVG(t, svg.Bytes())
}

func TestRegister(t *testing.T) {
	defer func() {
		registryMu.Lock()
		delete(registry, "zz-test")
		registryMu.Unlock()
	}()
	Register(Suite{Name: "zz-test", Title: "t", Cases: func(Config) []Case { return nil }})
	names := []string{}
	for _, s := range Suites() {
		names = append(names, s.Name)
	}
	if !slicesSorted(names) || !strings.Contains(strings.Join(names, ","), "zz-test") {
		t.Fatalf("Suites() = %v", names)
	}
	for _, c := range []struct {
		s    Suite
		want string
	}{
		{Suite{Name: "zz-test", Cases: func(Config) []Case { return nil }}, `duplicate suite name "zz-test"`},
		{Suite{Name: "", Cases: func(Config) []Case { return nil }}, "suite name is empty"},
		{Suite{Name: "zz-nocases"}, "has no Cases function"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), c.want) {
					t.Errorf("Register(%q): panic %v, want %q", c.s.Name, r, c.want)
				}
			}()
			Register(c.s)
		}()
	}
}

func slicesSorted(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] > s[i] {
			return false
		}
	}
	return true
}

// TestRegisteredSuites checks every registered suite's shape (names, bodies) in quick
// mode, and runs the lockfree suite's bodies once each, so a broken body fails here
// rather than in the middle of a long blitzbench run.
func TestRegisteredSuites(t *testing.T) {
	for _, s := range Suites() {
		if s.Title == "" {
			t.Errorf("suite %s has no title", s.Name)
		}
		seen := map[string]bool{}
		for _, c := range s.Cases(Config{Quick: true}) {
			if c.Name == "" || seen[c.Name] {
				t.Errorf("suite %s: empty or duplicate case name %q", s.Name, c.Name)
			}
			seen[c.Name] = true
			for _, impl := range append([]Impl{c.Ours}, c.Baselines...) {
				if impl.Name == "" || impl.Bench == nil {
					t.Errorf("suite %s case %s: implementation %q without a name or body", s.Name, c.Name, impl.Name)
				}
			}
			isBaseline := func(name string) bool {
				return slices.ContainsFunc(c.Baselines, func(i Impl) bool { return i.Name == name })
			}
			for name := range c.Roles {
				if !isBaseline(name) {
					t.Errorf("suite %s case %s: Roles names %q, which is not a baseline", s.Name, c.Name, name)
				}
			}
			for _, tg := range c.Targets {
				if tg.Kind < TargetRatio || tg.Kind > TargetAllocsAtMost || (tg.Kind == TargetRatio) != (tg.Baseline != "") || tg.Kind == TargetRatio && tg.Value <= 0 {
					t.Errorf("suite %s case %s: malformed target %+v", s.Name, c.Name, tg)
				}
				if tg.Kind == TargetRatio && !isBaseline(tg.Baseline) {
					t.Errorf("suite %s case %s: target names %q, which is not a baseline", s.Name, c.Name, tg.Baseline)
				}
			}
		}
	}
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("1x"); err != nil {
		t.Fatal(err)
	}
	defer bt.Value.Set(old)
	for _, s := range Suites() {
		if s.Name != "lockfree" {
			continue
		}
		res := RunSuite(s, RunOptions{Config: Config{Quick: true}})
		for _, c := range res.Cases {
			for _, ir := range c.Impls {
				if ir.Error != "" {
					t.Errorf("lockfree/%s/%s: %s", c.Name, ir.Name, ir.Error)
				}
			}
		}
	}
}

// svgText is one <text> element of a chart.
type svgText struct {
	x, size     float64
	bold        bool
	class, text string
}

// parseSVG checks that the chart is well-formed XML and returns its width and texts.
func parseSVG(t *testing.T, svg []byte) (float64, []svgText) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var width float64
	var texts []svgText
	var cur *svgText
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch el.Name.Local {
			case "svg":
				width, _ = strconv.ParseFloat(attr["width"], 64)
			case "text":
				cur = &svgText{size: 12, bold: attr["font-weight"] == "bold", class: attr["class"]}
				cur.x, _ = strconv.ParseFloat(attr["x"], 64)
				if fs, ok := attr["font-size"]; ok {
					cur.size, _ = strconv.ParseFloat(fs, 64)
				}
			}
		case xml.CharData:
			if cur != nil {
				cur.text += string(el)
			}
		case xml.EndElement:
			if el.Name.Local == "text" && cur != nil {
				texts = append(texts, *cur)
				cur = nil
			}
		}
	}
	if width <= 0 || len(texts) == 0 {
		t.Fatalf("SVG without a width or texts:\n%s", svg)
	}
	return width, texts
}

// TestSVG draws a suite with long names and figures in several magnitudes, and checks
// that no text runs past the right edge and that every bar's unit is its case header's.
func TestSVG(t *testing.T) {
	long := strings.Repeat("a very long implementation name ", 3)
	s := Suite{Name: "svg", Title: "a suite whose title is much longer than the default width of a chart used to allow for, with room to spare", Cases: func(Config) []Case {
		return []Case{
			{Name: "Mixed", Ours: Impl{"ours", noop}, Baselines: []Impl{{long, noop}, {"micro", noop}, {"broken", noop}},
				Roles: map[string]Role{"micro": RoleVariant}, Targets: []Target{TimesBetter(long, 2), AtMost(1e6)}},
			{Name: "Nanos", Ours: Impl{"ours", noop}, Baselines: []Impl{{"other", noop}}},
			{Name: "Rate", Metric: "GB/s", HigherIsBetter: true, Ours: Impl{"ours", noop}, Baselines: []Impl{{"other", noop}}},
		}
	}}
	ns := func(v float64) testing.BenchmarkResult { return testing.BenchmarkResult{N: 1, T: time.Duration(v)} }
	res := RunSuite(s, RunOptions{Bench: fakeBench(
		ns(900e3), ns(2.5e6), ns(12e3), testing.BenchmarkResult{}, // Mixed: µs and ms figures
		ns(7), ns(9),
		testing.BenchmarkResult{N: 1, T: time.Second, Extra: map[string]float64{"GB/s": 30}},
		testing.BenchmarkResult{N: 1, T: time.Second, Extra: map[string]float64{"GB/s": 20}},
	)})
	var svg bytes.Buffer
	if err := WriteSVG(&svg, res); err != nil {
		t.Fatal(err)
	}
	width, texts := parseSVG(t, svg.Bytes())
	headerUnit, figures := "", 0
	for _, tx := range texts {
		if right := tx.x + svgTextWidth(tx.text, tx.size, tx.bold); right > width {
			t.Errorf("text %q ends at about %.0f px, past the width %.0f", tx.text, right, width)
		}
		switch tx.class {
		case "case":
			_, rest, _ := strings.Cut(tx.text, " (")
			headerUnit, _, _ = strings.Cut(rest, ",")
		case "figure":
			figures++
			fig, _, _ := strings.Cut(tx.text, ",")
			if f := strings.Fields(fig); len(f) != 2 || f[1] != headerUnit {
				t.Errorf("bar %q does not use its header's unit %q", tx.text, headerUnit)
			}
		}
	}
	if figures != 7 {
		t.Errorf("%d bar figures, want 7", figures)
	}
	for _, want := range []string{"Mixed (ms/op, lower is better)", ">0.90 ms/op<", ">2.50 ms/op, ours 2.78x faster<", ">0.012 ms/op, ours 0.013x slower<",
		"micro (our variant)", "Nanos (ns/op", "Rate (GB/s, higher is better)", "20.0 GB/s, ours 1.50x better",
		`fill="#2b8a3e">target met: at least 2x faster than a very long`, `fill="#2b8a3e">target met: at most 1 ms/op (measured: 900 µs/op)`} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("chart lacks %q:\n%s", want, svg.String())
		}
	}
}

// sampleReport is a report with what the HTML page must handle: a blitz-like suite whose
// cases scale with workers, a network-like suite whose cases scale with connections over
// two decades (log axis), HigherIsBetter metrics, our variants, a failed body, and
// targets met, missed and not measured.
func sampleReport(t *testing.T) *Report {
	t.Helper()
	ns := func(v float64) testing.BenchmarkResult { return testing.BenchmarkResult{N: 1, T: time.Duration(v)} }
	blitzSuite := Suite{Name: "blitz", Title: "fork-join pool", Cases: func(Config) []Case {
		return []Case{
			{Name: "FibJoin/workers=1 fib(30)", Ours: Impl{"blitz 1 worker", noop}, Baselines: []Impl{{"sequential", noop}, {"errgroup", noop}},
				Targets: []Target{TimesBetter("errgroup", 30)}},
			{Name: "FibJoin/workers=2 fib(30)", Ours: Impl{"blitz 2 workers", noop}, Baselines: []Impl{{"sequential", noop}, {"errgroup", noop}},
				Targets: []Target{TimesBetter("sequential", 1.8)}},
			{Name: "FibJoin/workers=4 fib(30)", Ours: Impl{"blitz 4 workers", noop}, Baselines: []Impl{{"sequential", noop}, {"errgroup", noop}}},
			{Name: "Sum/100M", Metric: "GB/s", HigherIsBetter: true, Ours: Impl{"blitz.Sum", noop}, Baselines: []Impl{{"loop", noop}, {"copy", noop}},
				Roles: map[string]Role{"copy": RoleReference}, Targets: []Target{AtLeast(25)}},
		}
	}}
	netSuite := Suite{Name: "net", Title: "loopback echo <&> HTTP", Cases: func(Config) []Case {
		var cs []Case
		for _, n := range []int{10, 100, 1000} {
			cs = append(cs, Case{Name: fmt.Sprintf("Echo/conns=%d", n), Ours: Impl{"blitzio", noop},
				Baselines: []Impl{{"net+goroutines", noop}, {"broken", noop}}, Targets: []Target{TimesBetter("net+goroutines", 1)}})
		}
		return cs
	}}
	gbs := func(v float64) testing.BenchmarkResult {
		return testing.BenchmarkResult{N: 1, T: time.Second, Extra: map[string]float64{"GB/s": v}}
	}
	r := NewReport(time.Second, false)
	r.Count = 3
	r.Suites = []SuiteResult{
		RunSuite(blitzSuite, RunOptions{Bench: fakeBench(
			ns(3.5e6), ns(2.7e6), ns(480e6),
			ns(1.6e6), ns(2.7e6), ns(480e6),
			ns(0.9e6), ns(2.7e6), ns(470e6),
			gbs(38.5), gbs(12), gbs(27.8),
		)}),
		RunSuite(netSuite, RunOptions{Bench: fakeBench(
			ns(30e3), ns(45e3), testing.BenchmarkResult{},
			ns(80e3), ns(70e3), testing.BenchmarkResult{},
			ns(400e3), ns(900e3), testing.BenchmarkResult{},
		)}),
	}
	return r
}

func TestScaling(t *testing.T) {
	r := sampleReport(t)
	got := Scaling(r.Suites[0])
	if len(got) != 1 {
		t.Fatalf("%d series in the blitz suite, want 1: %+v", len(got), got)
	}
	s := got[0]
	if s.Name != "FibJoin/workers=N fib(30)" || s.Param != "workers" || !slices.Equal(s.X, []float64{1, 2, 4}) || len(s.Lines) != 3 {
		t.Fatalf("series = %+v", s)
	}
	if l := s.Lines[0]; !l.Ours || !slices.Equal(l.Y, []float64{3.5e6, 1.6e6, 0.9e6}) {
		t.Errorf("ours = %+v: ours must be one line across differently named implementations", l)
	}
	if l := s.Lines[2]; l.Name != "errgroup" || l.Y[2] != 470e6 {
		t.Errorf("errgroup line = %+v", l)
	}
	net := Scaling(r.Suites[1])
	if len(net) != 1 || !slices.Equal(net[0].X, []float64{10, 100, 1000}) || net[0].Param != "conns" {
		t.Fatalf("net series = %+v", net)
	}
	// The failed baseline is a line of NaNs, drawn as nothing.
	if l := net[0].Lines[2]; l.Name != "broken" || !math.IsNaN(l.Y[0]) {
		t.Errorf("broken line = %+v", l)
	}
	// Cases that share a prefix but not a parameter, or have a single value, are not series.
	one := SuiteResult{Cases: []CaseResult{{Name: "A/n=1"}, {Name: "B/n=2"}, {Name: "Sort/random"}}}
	if got := Scaling(one); len(got) != 0 {
		t.Errorf("Scaling of unrelated cases = %+v", got)
	}
}

func writeSampleHTML(t *testing.T) (string, string) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, sampleReport(t)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.String()
}

// externalRef matches anything that would make a browser fetch: a src, href or url()
// outside the page (in-page #anchors and data: URLs are fine).
var externalRef = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*[^"'#\s>]|url\(\s*["']?\s*[^"'#d)]|@import`)

func TestHTML(t *testing.T) {
	_, page := writeSampleHTML(t)
	if m := externalRef.FindString(page); m != "" {
		t.Errorf("the page refers to something outside itself: %q", m)
	}
	svgs := strings.Count(page, `<svg class="chart-svg"`)
	// Per suite a ratio chart and the detailed chart, plus one scaling chart each.
	if svgs != 6 {
		t.Errorf("%d charts, want 6", svgs)
	}
	for _, want := range []string{
		"Content-Security-Policy", "default-src 'none'",
		"<h1><span>blitz</span>bench report</h1>", "4 <small style=\"font-size:16px;font-weight:400\">of 6 met", "GOMAXPROCS", "median of 3 rounds",
		`id="suite-blitz"`, `id="suite-net"`, `href="#suite-net"`,
		"FibJoin/workers=N fib(30)", "Echo/conns=N", ", log scale", // 400 to 30 µs/op spans over 10x, not 50x: linear
		"loopback echo &lt;&amp;&gt; HTTP", // titles are escaped
		`<span class="pill missed">missed</span> <b>blitz/FibJoin/workers=2 fib(30)</b>`,
		"ours better &#8594;", "1/100x", "100x",
		"failed or skipped",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Every chart is well-formed XML on its own.
	for i, part := range strings.Split(page, `<svg class="chart-svg"`)[1:] {
		end := strings.Index(part, "</svg>")
		if end < 0 {
			t.Fatalf("chart %d has no end", i)
		}
		doc := `<svg class="chart-svg"` + part[:end+len("</svg>")]
		if err := xml.Unmarshal([]byte(doc), new(struct{})); err != nil {
			t.Errorf("chart %d is not well-formed: %v\n%s", i, err, doc)
		}
	}
}

// chromium returns the path of a headless-capable Chromium, or skips t saying why.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on this machine (on Debian: apt-get install -y chromium); the page is checked without a browser by TestHTML")
	return ""
}

// runChromium runs a headless Chromium on the page with extra arguments and returns its
// stdout and stderr; it skips t if the browser cannot start here at all.
func runChromium(t *testing.T, bin, page string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}, args...)
	all = append(all, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			t.Fatalf("chromium did not finish within 90s; stderr:\n%s", stderr.String())
		}
		t.Skipf("chromium cannot run here (%v); stderr:\n%s", err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

var (
	chartsAttr   = regexp.MustCompile(`<html[^>]*\bdata-charts="(\d+)"`)
	jsErrorsAttr = regexp.MustCompile(`<html[^>]*\bdata-js-errors="([^"]*)"`)
	consoleError = regexp.MustCompile(`(?m)^.*CONSOLE.*(Uncaught|Error|Refused).*$`)
)

// TestHTMLInChromium opens the page in a real headless browser: every chart must be laid
// out with a non-empty box and something drawn in it, no script error and no console
// error (a blocked fetch included) may appear, and the screenshot must not be blank. A
// page with a deliberate error checks that the error detection itself works.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	page, _ := writeSampleHTML(t)
	dom, stderr := runChromium(t, bin, page, "--dump-dom")
	m := chartsAttr.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's script did not run (no data-charts on <html>); DOM:\n%.2000s\nstderr:\n%s", dom, stderr)
	}
	if m[1] != "6" {
		t.Errorf("%s of 6 charts rendered with a non-empty box", m[1])
	}
	if e := jsErrorsAttr.FindStringSubmatch(dom); e != nil {
		t.Errorf("script errors in the page: %s", e[1])
	}
	if c := consoleError.FindAllString(stderr, -1); len(c) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(c, "\n"))
	}

	shot := filepath.Join(filepath.Dir(page), "report.png")
	_, stderr = runChromium(t, bin, page, "--screenshot="+shot, "--window-size=1280,2200", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	colors := map[color.RGBA]int{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 3 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0}]++
		}
	}
	// Our orange, the win green and the loss red of the charts must all be on screen.
	for name, want := range map[string]color.RGBA{"ours (orange)": {0xd9, 0x48, 0x0f, 0}, "win (green)": {0x2b, 0x8a, 0x3e, 0}, "loss (red)": {0xc9, 0x2a, 0x2a, 0}} {
		if colors[want] == 0 {
			t.Errorf("no %s pixel in the screenshot: the charts did not paint", name)
		}
	}
	if len(colors) < 50 {
		t.Errorf("the screenshot has %d distinct colours: blank or nearly", len(colors))
	}
	if dir := os.Getenv("BLITZBENCH_SCREENSHOT_DIR"); dir != "" { // to look at it
		data, _ := os.ReadFile(shot)
		os.WriteFile(filepath.Join(dir, "report.png"), data, 0o644)
		html, _ := os.ReadFile(page)
		os.WriteFile(filepath.Join(dir, "report.html"), html, 0o644)
	}

	// The detection is real: a page whose script fails is caught by both checks. (One
	// more browser start, about 7 s here: not with -short.)
	if testing.Short() {
		return
	}
	bad := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(bad, []byte(`<!DOCTYPE html><html><head><script>
window.addEventListener("error", function (e) { document.documentElement.setAttribute("data-js-errors", e.message); });
</script></head><body><script>undefinedFunction();</script></body></html>`), 0o644)
	dom, stderr = runChromium(t, bin, bad, "--dump-dom")
	if jsErrorsAttr.FindStringSubmatch(dom) == nil || consoleError.FindString(stderr) == "" {
		t.Errorf("a page with a script error went unnoticed: DOM %q, stderr:\n%s", dom, stderr)
	}
}

func TestUpdateResults(t *testing.T) {
	r := sampleReport(t)
	doc := []byte("# Recorded results\n\nProse kept as written.\n\n## Full report\n\nold tables\n### old suite\n")
	got, err := UpdateResults(doc, r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{"# Recorded results\n\nProse kept as written.\n\n## Full report\n\n(Generated by `blitzbench -results`",
		"\n### blitz: fork-join pool\n", "\n### net: loopback echo <&> HTTP\n", "| FibJoin/workers=2 fib(30) | blitz 2 workers (ours) | 1.60 ms/op |"} {
		if !strings.Contains(s, want) {
			t.Errorf("updated document lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "old tables") || strings.Contains(s, "old suite") || strings.Contains(s, "# blitzbench report") {
		t.Errorf("the old section or the report's title survived:\n%s", s)
	}
	// Regenerating is idempotent, and a document without the section gets it appended.
	again, _ := UpdateResults(got, r)
	if string(again) != s {
		t.Errorf("a second update changed the document")
	}
	fresh, _ := UpdateResults([]byte("# Notes\n"), r)
	if !strings.HasPrefix(string(fresh), "# Notes\n\n## Full report\n") {
		t.Errorf("appended section:\n%.200s", fresh)
	}
}

func TestFormatParam(t *testing.T) {
	for x, want := range map[float64]string{1: "1", 1023: "1023", 1000: "1000", 16777216: "16.8M", 1048576: "1.05M", 25000: "25k", 2.5: "2.5"} {
		if got := formatParam(x); got != want {
			t.Errorf("formatParam(%v) = %q, want %q", x, got, want)
		}
	}
}

// Cases named with a numeric parameter as key=VALUE become a scaling series: ours is one
// line whatever it is called in each case, every other implementation a line by name.
func ExampleScaling() {
	ours := func(name string, v float64) ImplResult {
		return ImplResult{Name: name, Ours: true, Value: v, Unit: "ns/op"}
	}
	base := func(name string, v float64) ImplResult { return ImplResult{Name: name, Value: v, Unit: "ns/op"} }
	s := SuiteResult{Name: "net", Cases: []CaseResult{
		{Name: "Echo/conns=10", Unit: "ns/op", Impls: []ImplResult{ours("blitzio", 30), base("goroutines", 45)}},
		{Name: "Echo/conns=100", Unit: "ns/op", Impls: []ImplResult{ours("blitzio", 80), base("goroutines", 70)}},
		{Name: "Echo/conns=1000", Unit: "ns/op", Impls: []ImplResult{ours("blitzio", 400), base("goroutines", 900)}},
		{Name: "Handshake", Unit: "ns/op", Impls: []ImplResult{ours("blitzio", 5)}},
	}}
	for _, ss := range Scaling(s) {
		fmt.Println(ss.Name, ss.Param, ss.X)
		for _, l := range ss.Lines {
			fmt.Println(" ", l.Name, l.Y)
		}
	}
	// Output:
	// Echo/conns=N conns [10 100 1000]
	//   ours [30 80 400]
	//   goroutines [45 70 900]
}
