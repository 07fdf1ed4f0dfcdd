package benchmarks

import (
	"fmt"
	"html"
	"io"
	"strings"
	"unicode/utf8"
)

// svgCharWidth is the width assumed for one character of 12px sans-serif text: generous
// (most glyphs are narrower), so that the canvas is never too narrow for its text.
const svgCharWidth = 7.0

// svgTextWidth estimates the width in pixels of text drawn at fontSize, bold or not.
func svgTextWidth(text string, fontSize float64, bold bool) float64 {
	w := float64(utf8.RuneCountInString(text)) * svgCharWidth * fontSize / 12
	if bold {
		w *= 1.1
	}
	return w
}

// WriteSVG draws a suite as a horizontal bar chart: one group per case, one bar per
// implementation, then a line per target with its outcome. Each case is scaled to its own
// largest figure, since cases may use different units; the figure is printed next to
// each bar, in the unit the case's header names, so the chart never needs a shared axis.
// Our bar is drawn in a distinct colour. The canvas is as wide as its longest text.
func WriteSVG(w io.Writer, s SuiteResult) error {
	const (
		nameX    = 20
		barMaxW  = 440
		barH     = 16
		barGap   = 4
		groupGap = 18
		top      = 40
		margin   = 10
	)
	type text struct {
		x, y  int
		size  float64
		bold  bool
		class string
		fill  string
		s     string
	}
	var texts []text
	var rects []string
	add := func(t text) {
		if t.size == 0 {
			t.size = 12
		}
		texts = append(texts, t)
	}
	rowName := func(ir ImplResult) string {
		if ir.Role != "" && ir.Role != "ours" && ir.Role != "baseline" {
			return ir.Name + " (" + ir.Role + ")"
		}
		return ir.Name
	}
	// The bars start after the longest implementation name.
	labelW := 160
	for _, c := range s.Cases {
		for _, ir := range c.Impls {
			labelW = max(labelW, nameX+int(svgTextWidth(rowName(ir), 12, false))+12)
		}
	}

	add(text{x: margin, y: 22, size: 15, bold: true, class: "title", s: s.Name + ": " + s.Title})
	y := top
	for _, c := range s.Cases {
		maxV := 0.0
		for _, ir := range c.Impls {
			if ir.Error == "" && ir.Value > maxV {
				maxV = ir.Value
			}
		}
		// One scale for the whole case, so the header and every bar name the same unit.
		div, unit := displayScale(maxV, c.Unit)
		dir := "lower is better"
		if c.HigherIsBetter {
			dir = "higher is better"
		}
		add(text{x: margin, y: y + 12, bold: true, class: "case", s: fmt.Sprintf("%s (%s, %s)", c.Name, unit, dir)})
		y += 18
		for _, ir := range c.Impls {
			add(text{x: nameX, y: y + barH - 4, class: "name", s: rowName(ir)})
			label := ir.Error
			barW := 0
			if ir.Error == "" && maxV > 0 {
				barW = max(1, int(ir.Value/maxV*barMaxW))
				label = formatValue(ir.Value/div) + " " + unit
				if !ir.Ours && ir.Ratio > 0 {
					label += ", ours " + FormatRatio(ir.Ratio, c.HigherIsBetter)
				}
			}
			fill := "#9aa5b1"
			if ir.Ours {
				fill = "#d9480f"
			}
			rects = append(rects, fmt.Sprintf(`<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, labelW, y, barW, barH, fill))
			class := "figure"
			if ir.Error != "" {
				class = "error"
			}
			add(text{x: labelW + barW + 6, y: y + barH - 4, class: class, s: label})
			y += barH + barGap
		}
		for _, tr := range c.Targets {
			fill := map[TargetStatus]string{TargetMet: "#2b8a3e", TargetMissed: "#c92a2a"}[tr.Status]
			if fill == "" {
				fill = "#868e96"
			}
			add(text{x: nameX, y: y + 11, size: 11, class: "target", fill: fill,
				s: fmt.Sprintf("target %s: %s", tr.Status, tr.describe())})
			y += 15
		}
		y += groupGap
	}
	height := y + margin
	width := labelW + barMaxW + margin
	for _, t := range texts {
		width = max(width, t.x+int(svgTextWidth(t.s, t.size, t.bold)+0.999)+margin)
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&sb, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for _, r := range rects {
		sb.WriteString(r + "\n")
	}
	for _, t := range texts {
		fmt.Fprintf(&sb, `<text x="%d" y="%d" class="%s"`, t.x, t.y, t.class)
		if t.size != 12 {
			fmt.Fprintf(&sb, ` font-size="%g"`, t.size)
		}
		if t.bold {
			sb.WriteString(` font-weight="bold"`)
		}
		if t.fill != "" {
			fmt.Fprintf(&sb, ` fill="%s"`, t.fill)
		}
		fmt.Fprintf(&sb, ">%s</text>\n", html.EscapeString(t.s))
	}
	sb.WriteString("</svg>\n")
	_, err := io.WriteString(w, sb.String())
	return err
}
