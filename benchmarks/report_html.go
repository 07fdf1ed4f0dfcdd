package benchmarks

import (
	"fmt"
	"html"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteHTML writes the report as one self-contained HTML page: styles, charts (inline
// SVG) and its small script are all in the file, and its Content-Security-Policy
// forbids every fetch, so it opens the same from a disk, a CI artifact or a mail.
//
// The page shows the machine the run measured, the targets met and missed, and per
// suite:
//
//   - a ratio chart: for every case and baseline, how many times better ours is, on a
//     logarithmic axis centred on "as fast" (green to the right when ours wins, red to
//     the left when it loses), so the whole suite reads at a glance;
//   - scaling charts, where the data has them (see Scaling): one line per
//     implementation across the parameter, e.g. workers 1..GOMAXPROCS or connections
//     10..1,000;
//   - the targets with their outcome, and the full table of figures;
//   - the detailed bar chart of WriteSVG.
//
// A small inline script marks the page's root element with data-charts (the number of
// charts visible with a non-empty box and something drawn, every <details> opened for
// the count) and data-js-errors (the messages of any script
// error), which tests read from a headless browser's DOM dump.
func WriteHTML(w io.Writer, r *Report) error {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>blitzbench report</title>
<script>
// Set first, so an error anywhere later in the page is recorded.
window.addEventListener("error", function (e) {
  var el = document.documentElement;
  el.setAttribute("data-js-errors", (el.getAttribute("data-js-errors") || "") + e.message + ";");
});
</script>
<style>
:root { --ours: #d9480f; --win: #2b8a3e; --lose: #c92a2a; --muted: #868e96; --line: #dee2e6; --bg: #f8f9fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #212529; background: var(--bg); }
header { background: #1b1f24; color: #f1f3f5; padding: 28px 40px 24px; }
header h1 { margin: 0 0 6px; font-size: 26px; letter-spacing: .2px; }
header h1 span { color: #ff922b; }
header p { margin: 0; color: #adb5bd; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 32px 60px; }
.cards { display: flex; flex-wrap: wrap; gap: 16px; margin: -44px 0 24px; }
.card { background: white; border-radius: 10px; box-shadow: 0 1px 4px rgba(0,0,0,.12); padding: 16px 20px; flex: 1 1 220px; }
.card h3 { margin: 0 0 4px; font-size: 12px; text-transform: uppercase; letter-spacing: .8px; color: var(--muted); }
.card .big { font-size: 30px; font-weight: 700; }
.card dl { margin: 0; display: grid; grid-template-columns: auto 1fr; gap: 2px 12px; font-size: 13px; }
.card dt { color: var(--muted); }
.card dd { margin: 0; }
.bar { height: 8px; border-radius: 4px; background: #ffe3e3; overflow: hidden; margin-top: 8px; display: flex; }
.bar i { display: block; height: 100%; }
nav { margin: 0 0 20px; display: flex; flex-wrap: wrap; gap: 8px; }
nav a { text-decoration: none; color: #1864ab; background: white; border: 1px solid var(--line); border-radius: 16px; padding: 3px 12px; font-size: 14px; }
section { background: white; border-radius: 10px; box-shadow: 0 1px 4px rgba(0,0,0,.08); padding: 20px 24px; margin: 0 0 24px; }
section h2 { margin: 0 0 2px; font-size: 21px; }
section h2 small { color: var(--muted); font-weight: 400; font-size: 15px; }
h4 { margin: 20px 0 6px; font-size: 14px; text-transform: uppercase; letter-spacing: .6px; color: #495057; }
.chart { overflow-x: auto; }
.chart svg { display: block; max-width: 100%; height: auto; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(460px, 1fr)); gap: 12px; }
ul.targets { list-style: none; padding: 0; margin: 0; }
ul.targets li { padding: 3px 0; font-size: 14px; }
.pill { display: inline-block; min-width: 92px; text-align: center; border-radius: 10px; font-size: 12px; font-weight: 600; padding: 1px 8px; margin-right: 8px; color: white; }
.pill.met { background: var(--win); } .pill.missed { background: var(--lose); } .pill.not { background: var(--muted); }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--bg); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.ours td { font-weight: 600; }
tr.first td { border-top: 2px solid #ced4da; }
.role { color: var(--muted); font-size: 12px; }
.win { color: var(--win); } .lose { color: var(--lose); }
details { margin-top: 14px; }
summary { cursor: pointer; color: #1864ab; font-size: 14px; }
.note { color: #495057; font-size: 13px; margin: 2px 0; }
footer { text-align: center; color: var(--muted); font-size: 13px; padding: 10px; }
</style>
</head>
<body>
`)
	// Header: the machine.
	fmt.Fprintf(&b, "<header><h1><span>blitz</span>bench report</h1><p>%s &middot; %s &middot; %s/%s &middot; %d CPUs, GOMAXPROCS %d</p></header>\n",
		esc(r.Time.UTC().Format("2006-01-02 15:04 UTC")), esc(r.GoVersion), esc(r.GOOS), esc(r.GOARCH), r.NumCPU, r.GOMAXPROCS)
	b.WriteString("<main>\n<div class=\"cards\">\n")
	tally := Tally(r.Suites)
	total := tally.Met + tally.Missed + tally.NotMeasured
	b.WriteString(`<div class="card"><h3>Targets</h3>`)
	if total == 0 {
		b.WriteString(`<div class="big">none</div><div class="note">no case run has a target</div>`)
	} else {
		fmt.Fprintf(&b, `<div class="big">%d <small style="font-size:16px;font-weight:400">of %d met</small></div>`, tally.Met, total)
		fmt.Fprintf(&b, `<div class="bar"><i style="width:%.1f%%;background:var(--win)"></i><i style="width:%.1f%%;background:var(--lose)"></i><i style="width:%.1f%%;background:var(--muted)"></i></div>`,
			pct(tally.Met, total), pct(tally.Missed, total), pct(tally.NotMeasured, total))
		fmt.Fprintf(&b, `<div class="note">%d missed, %d not measured</div>`, tally.Missed, tally.NotMeasured)
	}
	b.WriteString("</div>\n")
	cases, wins, comps := 0, 0, 0
	for _, s := range r.Suites {
		cases += len(s.Cases)
		for _, c := range s.Cases {
			for _, ir := range c.Impls[min(1, len(c.Impls)):] {
				if ir.Ratio > 0 && (ir.Role == "" || ir.Role == RoleBaseline.String()) {
					comps++
					if ir.Ratio >= 1 {
						wins++
					}
				}
			}
		}
	}
	fmt.Fprintf(&b, `<div class="card"><h3>Against outside code</h3><div class="big">%d <small style="font-size:16px;font-weight:400">of %d comparisons won</small></div><div class="note">%d suites, %d cases</div></div>`+"\n",
		wins, comps, len(r.Suites), cases)
	b.WriteString(`<div class="card"><h3>Machine</h3><dl>`)
	cpu := r.CPU
	if cpu == "" {
		cpu = "unknown"
	}
	for _, kv := range [][2]string{
		{"CPU", cpu},
		{"cores", fmt.Sprintf("%d (GOMAXPROCS %d)", r.NumCPU, r.GOMAXPROCS)},
		{"Go", r.GoVersion + " " + r.GOOS + "/" + r.GOARCH},
		{"benchtime", runDescription(r)},
	} {
		fmt.Fprintf(&b, "<dt>%s</dt><dd>%s</dd>", esc(kv[0]), esc(kv[1]))
	}
	b.WriteString("</dl></div>\n</div>\n")

	if len(tally.Lines) > 0 {
		b.WriteString("<section><h2>Targets missed or not measured</h2><ul class=\"targets\">\n")
		for _, s := range r.Suites {
			for _, c := range s.Cases {
				for _, tr := range c.Targets {
					if tr.Status != TargetMet {
						fmt.Fprintf(&b, "<li>%s <b>%s/%s</b>: %s</li>\n", pill(tr.Status), esc(s.Name), esc(c.Name), esc(tr.describe()))
					}
				}
			}
		}
		b.WriteString("</ul></section>\n")
	}

	b.WriteString("<nav>")
	for _, s := range r.Suites {
		fmt.Fprintf(&b, `<a href="#suite-%s">%s</a>`, esc(anchor(s.Name)), esc(s.Name))
	}
	b.WriteString("</nav>\n")

	for _, s := range r.Suites {
		fmt.Fprintf(&b, "<section id=\"suite-%s\"><h2>%s <small>%s</small></h2>\n", esc(anchor(s.Name)), esc(s.Name), esc(s.Title))
		b.WriteString("<h4>Ours against each baseline</h4>\n<div class=\"chart\">")
		b.WriteString(ratioChartSVG(s))
		b.WriteString("</div>\n")
		if series := Scaling(s); len(series) > 0 {
			b.WriteString("<h4>Scaling</h4>\n<div class=\"grid\">")
			for _, ss := range series {
				b.WriteString(`<div class="chart">` + scalingChartSVG(ss) + "</div>")
			}
			b.WriteString("</div>\n")
		}
		var targets []string
		for _, c := range s.Cases {
			for _, tr := range c.Targets {
				targets = append(targets, fmt.Sprintf("<li>%s <b>%s</b>: %s</li>", pill(tr.Status), esc(c.Name), esc(tr.describe())))
			}
		}
		if len(targets) > 0 {
			b.WriteString("<h4>Targets</h4>\n<ul class=\"targets\">\n" + strings.Join(targets, "\n") + "\n</ul>\n")
		}
		b.WriteString("<details><summary>All figures</summary>\n")
		writeHTMLTable(&b, s)
		b.WriteString("</details>\n<details><summary>Every bar</summary><div class=\"chart\">")
		var svg strings.Builder
		if err := WriteSVG(&svg, s); err != nil {
			return err
		}
		// The suite chart is a standalone document; inline, its root gets the class the
		// page's checks count.
		b.WriteString(strings.Replace(svg.String(), "<svg ", `<svg class="chart-svg" `, 1))
		b.WriteString("</div></details>\n</section>\n")
	}
	fmt.Fprintf(&b, "<footer>Ratios compare implementations measured one after the other in the same process. Generated by blitzbench, %s.</footer>\n</main>\n",
		esc(r.Time.UTC().Format(time.RFC3339)))
	b.WriteString(`<script>
(function () {
  // Charts inside closed <details> are not laid out: open them while measuring.
  var closed = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) { return !d.open; });
  closed.forEach(function (d) { d.open = true; });
  var n = 0;
  document.querySelectorAll("svg.chart-svg").forEach(function (s) {
    var box = s.getBoundingClientRect();
    if (s.checkVisibility() && box.width > 0 && box.height > 0 && s.querySelector("rect, polyline, circle")) n++;
  });
  closed.forEach(function (d) { d.open = false; });
  document.documentElement.setAttribute("data-charts", String(n));
})();
</script>
</body>
</html>
`)
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(n, total int) float64 { return 100 * float64(n) / float64(total) }

func runDescription(r *Report) string {
	d := r.Benchtime
	if r.Count > 1 {
		d += fmt.Sprintf(", median of %d rounds", r.Count)
	}
	if r.Quick {
		d += ", quick mode"
	}
	return d
}

func pill(s TargetStatus) string {
	class := map[TargetStatus]string{TargetMet: "met", TargetMissed: "missed"}[s]
	if class == "" {
		class = "not"
	}
	return fmt.Sprintf(`<span class="pill %s">%s</span>`, class, html.EscapeString(string(s)))
}

var anchorUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func anchor(name string) string { return anchorUnsafe.ReplaceAllString(name, "-") }

func writeHTMLTable(b *strings.Builder, s SuiteResult) {
	esc := html.EscapeString
	b.WriteString("<table><tr><th>case</th><th>implementation</th><th>figure</th><th>allocs/op</th><th>ours vs this</th></tr>\n")
	for _, c := range s.Cases {
		for j, ir := range c.Impls {
			class := ""
			if j == 0 {
				class = "ours first"
			}
			name := ""
			if j == 0 {
				name = esc(c.Name)
			}
			role := ir.Role
			if role == "" {
				role = "baseline"
			}
			fig, allocs := esc(ir.Error), "-"
			if ir.Error == "" {
				fig = esc(formatFigure(ir.Value, ir.Unit))
				allocs = strconv.FormatInt(ir.AllocsPerOp, 10)
			}
			ratio := ""
			if j > 0 && ir.Ratio > 0 {
				cls := "win"
				if ir.Ratio < 1 {
					cls = "lose"
				}
				ratio = fmt.Sprintf(`<span class="%s">%s</span>`, cls, esc(FormatRatio(ir.Ratio, c.HigherIsBetter)))
			}
			fmt.Fprintf(b, `<tr class="%s"><td>%s</td><td>%s <span class="role">%s</span></td><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td></tr>`+"\n",
				class, name, esc(ir.Name), esc(role), fig, allocs, ratio)
		}
		if c.Note != "" {
			fmt.Fprintf(b, "<tr><td></td><td colspan=\"4\" class=\"note\">%s</td></tr>\n", esc(c.Note))
		}
	}
	b.WriteString("</table>\n")
}

// ratioChartSVG draws, for every case of s and every implementation besides ours that
// has a ratio, a bar on a logarithmic axis centred on 1x: to the right (green) by how
// many times ours is better, to the left (red) by how many times it is worse. Ratios
// beyond 100x are drawn at the edge with their figure printed.
func ratioChartSVG(s SuiteResult) string {
	type row struct {
		label, role, text string
		ratio             float64
	}
	var rows []row
	for _, c := range s.Cases {
		for _, ir := range c.Impls[min(1, len(c.Impls)):] {
			if ir.Ratio <= 0 {
				continue
			}
			role := ""
			if ir.Role != "" && ir.Role != RoleBaseline.String() {
				role = ir.Role
			}
			rows = append(rows, row{c.Name + " vs " + ir.Name, role, FormatRatio(ir.Ratio, c.HigherIsBetter), ir.Ratio})
		}
	}
	if len(rows) == 0 {
		return `<p class="note">No ratios: every case of this suite ran without a baseline or failed.</p>`
	}
	const (
		rowH   = 22
		top    = 30
		plotW  = 520
		margin = 12
		limit  = 100.0 // the axis spans 1/limit .. limit
	)
	labelW := 0
	for _, r := range rows {
		l := r.label
		if r.role != "" {
			l += " (" + r.role + ")"
		}
		labelW = max(labelW, int(svgTextWidth(l, 12, false)))
	}
	labelW += 2 * margin
	height := top + len(rows)*rowH + 28
	width := labelW + plotW + 110
	x := func(ratio float64) float64 {
		v := math.Log10(min(limit, max(1/limit, ratio))) / math.Log10(limit) // -1..1
		return float64(labelW) + plotW/2 + v*plotW/2
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart-svg" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="12" role="img" aria-label="%s: ours against each baseline">`+"\n",
		width, height, width, height, html.EscapeString(s.Name))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	// Gridlines at 1/100, 1/10, 1, 10, 100.
	for _, g := range []float64{1 / limit, 0.1, 1, 10, limit} {
		gx := x(g)
		stroke, w := "#e9ecef", 1
		if g == 1 {
			stroke, w = "#495057", 2
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="%d"/>`+"\n", gx, gx, top-6, top+len(rows)*rowH, stroke, w)
		label := strconv.FormatFloat(g, 'g', -1, 64) + "x"
		if g < 1 {
			label = "1/" + strconv.FormatFloat(1/g, 'g', -1, 64) + "x"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#868e96">%s</text>`+"\n", gx, top+len(rows)*rowH+16, label)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="end" fill="#c92a2a">&#8592; ours worse</text>`+"\n", x(1)-8, top-12)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#2b8a3e">ours better &#8594;</text>`+"\n", x(1)+8, top-12)
	for i, r := range rows {
		y := top + i*rowH
		l := html.EscapeString(r.label)
		if r.role != "" {
			l += fmt.Sprintf(` <tspan fill="#868e96">(%s)</tspan>`, html.EscapeString(r.role))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-margin, y+15, l)
		x0, x1 := x(1), x(r.ratio)
		fill := "#2b8a3e"
		if r.ratio < 1 {
			fill = "#c92a2a"
			x0, x1 = x1, x0
		}
		opacity := "1"
		if r.role != "" {
			opacity = "0.45" // our own variants and references: context, not competitors
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="14" rx="2" fill="%s" fill-opacity="%s"><title>%s</title></rect>`+"\n",
			x0, y+4, max(1, x1-x0), fill, opacity, html.EscapeString(r.label+": "+r.text))
		tx, anchor := x(r.ratio)+5, "start"
		if r.ratio < 1 {
			tx, anchor = x(r.ratio)-5, "end"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="%s" fill="#495057">%s</text>`+"\n", tx, y+15, anchor, html.EscapeString(r.text))
	}
	b.WriteString("</svg>")
	return b.String()
}

// ScalingSeries is a group of cases of one suite that differ only by one numeric
// parameter, drawn as a line chart: Scaling finds them.
type ScalingSeries struct {
	// Name is the cases' common name with the parameter's value replaced by "N":
	// "FibJoin/workers=N fib(30)".
	Name string
	// Param is the parameter's name ("workers", "conns").
	Param          string
	Unit           string
	HigherIsBetter bool
	// X holds the parameter's values, ascending.
	X []float64
	// Lines holds ours first, then every other implementation by name; Y[i] is its
	// figure at X[i], NaN where that case lacks it (or it failed).
	Lines []ScalingLine
}

// ScalingLine is one implementation's figures across a ScalingSeries.
type ScalingLine struct {
	Name string
	Ours bool
	Y    []float64
}

// scalingName matches a case name with a numeric parameter: "Prefix/key=123 rest".
var scalingName = regexp.MustCompile(`^(.*?)\b([A-Za-z][A-Za-z_]*)=([0-9]+(?:\.[0-9]+)?)(.*)$`)

// Scaling groups the cases of s whose names differ only by the value of one numeric
// parameter written key=VALUE ("FibJoin/workers=1", "FibJoin/workers=2"; "Echo/conns=10"
// to "Echo/conns=1000"), with the same unit, into series of at least two points. Ours is
// one line whatever its name in each case (it often names its configuration); every
// other implementation is a line by its name. This is the data shape a suite uses to
// get a scaling chart: name its cases with the parameter as key=VALUE.
func Scaling(s SuiteResult) []ScalingSeries {
	type point struct {
		x float64
		c CaseResult
	}
	groups := map[string][]point{}
	var order []string
	params := map[string]string{}
	for _, c := range s.Cases {
		m := scalingName.FindStringSubmatch(c.Name)
		if m == nil {
			continue
		}
		x, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		key := m[1] + m[2] + "=N" + m[4] + "\x00" + c.Unit
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], point{x, c})
		params[key] = m[2]
	}
	var out []ScalingSeries
	for _, key := range order {
		pts := groups[key]
		slices.SortStableFunc(pts, func(a, b point) int {
			switch {
			case a.x < b.x:
				return -1
			case a.x > b.x:
				return 1
			}
			return 0
		})
		pts = slices.CompactFunc(pts, func(a, b point) bool { return a.x == b.x })
		if len(pts) < 2 {
			continue
		}
		ss := ScalingSeries{Name: strings.SplitN(key, "\x00", 2)[0], Param: params[key], Unit: pts[0].c.Unit, HigherIsBetter: pts[0].c.HigherIsBetter}
		lines := map[string]int{}
		ss.Lines = append(ss.Lines, ScalingLine{Name: "ours", Ours: true})
		for _, p := range pts {
			ss.X = append(ss.X, p.x)
		}
		nan := func() []float64 {
			y := make([]float64, len(pts))
			for i := range y {
				y[i] = math.NaN()
			}
			return y
		}
		ss.Lines[0].Y = nan()
		for i, p := range pts {
			for j, ir := range p.c.Impls {
				v := math.NaN()
				if ir.Error == "" {
					v = ir.Value
				}
				if j == 0 {
					ss.Lines[0].Y[i] = v
					continue
				}
				li, ok := lines[ir.Name]
				if !ok {
					li = len(ss.Lines)
					lines[ir.Name] = li
					ss.Lines = append(ss.Lines, ScalingLine{Name: ir.Name, Y: nan()})
				}
				ss.Lines[li].Y[i] = v
			}
		}
		out = append(out, ss)
	}
	return out
}

// scalingPalette colours the lines after ours.
var scalingPalette = []string{"#1971c2", "#2f9e44", "#7048e8", "#0c8599", "#c2255c", "#5c940d", "#868e96", "#e67700"}

// scalingChartSVG draws a ScalingSeries: the parameter on the x axis (logarithmic when it
// spans 20x or more), the figure on the y axis (logarithmic when it spans 50x or more),
// one line with markers per implementation, ours thick and orange.
func scalingChartSVG(ss ScalingSeries) string {
	const (
		width, height          = 520, 300
		left, right, top, bott = 64, 150, 36, 40
	)
	plotW, plotH := float64(width-left-right), float64(height-top-bott)
	// A line is drawn if it has two points or more (ours always): an implementation
	// measured at one parameter value only (a baseline of one case) says nothing about
	// scaling and would crowd the legend.
	drawn := func(l ScalingLine) bool {
		n := 0
		for _, v := range l.Y {
			if !math.IsNaN(v) && v > 0 {
				n++
			}
		}
		return n >= 2 || (l.Ours && n > 0)
	}
	yMin, yMax := math.Inf(1), math.Inf(-1)
	for _, l := range ss.Lines {
		if !drawn(l) {
			continue
		}
		for _, v := range l.Y {
			if !math.IsNaN(v) && v > 0 {
				yMin, yMax = min(yMin, v), max(yMax, v)
			}
		}
	}
	if math.IsInf(yMin, 1) {
		yMin, yMax = 1, 1
	}
	div, unit := displayScale(yMax, ss.Unit)
	xLog := ss.X[0] > 0 && ss.X[len(ss.X)-1]/ss.X[0] >= 20
	yLog := yMax/yMin >= 50
	lo, hi := 0.0, yMax*1.1
	if yLog {
		lo, hi = math.Log10(yMin)-0.1, math.Log10(yMax)+0.1
	}
	if hi == lo {
		hi = lo + 1
	}
	px := func(x float64) float64 {
		a, b, v := ss.X[0], ss.X[len(ss.X)-1], x
		if xLog {
			a, b, v = math.Log10(a), math.Log10(b), math.Log10(x)
		}
		if b == a {
			return float64(left) + plotW/2
		}
		return float64(left) + plotW*(v-a)/(b-a)
	}
	py := func(y float64) float64 {
		v := y
		if yLog {
			v = math.Log10(y)
		}
		return float64(top) + plotH*(1-(v-lo)/(hi-lo))
	}
	esc := html.EscapeString
	var b strings.Builder
	dir := "lower is better"
	if ss.HigherIsBetter {
		dir = "higher is better"
	}
	fmt.Fprintf(&b, `<svg class="chart-svg" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="12" role="img" aria-label="%s">`+"\n",
		width, height, width, height, esc(ss.Name))
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%d" y="18" font-weight="bold" font-size="13">%s</text>`+"\n", left, esc(ss.Name))
	fmt.Fprintf(&b, `<text x="%d" y="31" fill="#868e96" font-size="11">%s, %s%s</text>`+"\n", left, esc(unit), dir, map[bool]string{true: ", log scale", false: ""}[yLog])
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%g" height="%g" fill="#f8f9fa" stroke="#dee2e6"/>`+"\n", left, top, plotW, plotH)
	// y ticks: ends and middle.
	for _, f := range []float64{0, 0.5, 1} {
		v := lo + f*(hi-lo)
		if yLog {
			v = math.Pow(10, v)
		}
		y := py(v)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#495057">%s</text>`+"\n", left-5, y+4, esc(formatValue(v/div)))
	}
	for _, x := range ss.X {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#e9ecef"/>`+"\n", px(x), px(x), top, float64(top)+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#495057">%s</text>`+"\n", px(x), float64(top)+plotH+15, esc(formatParam(x)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#868e96" font-size="11">%s</text>`+"\n", float64(left)+plotW/2, height-6, esc(ss.Param))
	ly := top + 8
	for i := len(ss.Lines) - 1; i >= 0; i-- { // ours drawn last, on top
		l := ss.Lines[i]
		if !drawn(l) {
			continue
		}
		color, w := scalingPalette[(i-1+len(scalingPalette))%len(scalingPalette)], 2
		if l.Ours {
			color, w = "#d9480f", 3
		}
		var pts []string
		var marks strings.Builder
		for j, v := range l.Y {
			if math.IsNaN(v) || (yLog && v <= 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(ss.X[j]), py(v)))
			fmt.Fprintf(&marks, `<circle cx="%.1f" cy="%.1f" r="%d" fill="%s"><title>%s at %s=%s: %s</title></circle>`+"\n",
				px(ss.X[j]), py(v), w+1, color, esc(l.Name), esc(ss.Param), formatParam(ss.X[j]), esc(formatFigure(v, ss.Unit)))
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%d" points="%s"/>`+"\n", color, w, strings.Join(pts, " "))
		}
		b.WriteString(marks.String())
	}
	for i, l := range ss.Lines { // legend, ours first; a line with no figure (failed) has none
		if !drawn(l) {
			continue
		}
		color := scalingPalette[(i-1+len(scalingPalette))%len(scalingPalette)]
		if l.Ours {
			color = "#d9480f"
		}
		name := l.Name
		if r := []rune(name); len(r) > 20 {
			name = string(r[:19]) + "…"
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="4" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`+"\n",
			width-right+10, ly, color, width-right+27, ly+5, esc(name))
		ly += 16
	}
	b.WriteString("</svg>")
	return b.String()
}

// formatParam prints a parameter value for an axis: as is below 10,000, then with an SI
// suffix and three significant digits ("16.8M" for 16,777,216 nodes).
func formatParam(x float64) string {
	switch a := math.Abs(x); {
	case a >= 1e9:
		return strconv.FormatFloat(x/1e9, 'g', 3, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(x/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(x/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}
