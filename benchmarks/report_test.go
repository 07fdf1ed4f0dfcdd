package benchmarks

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
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
