package benchmarks

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// WriteSVG draws a suite as a horizontal bar chart: one group per case, one bar per
// implementation. Each case is scaled to its own largest figure, since cases may use
// different units; the figure is printed next to each bar, so the chart never needs a
// shared axis. Our bar is drawn in a distinct colour.
func WriteSVG(w io.Writer, s SuiteResult) error {
	const (
		width    = 860
		labelW   = 260
		barMaxW  = 440
		barH     = 16
		barGap   = 4
		groupGap = 18
		top      = 40
	)
	height := top + 10
	for _, c := range s.Cases {
		height += 18 + len(c.Impls)*(barH+barGap) + groupGap
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&sb, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&sb, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(s.Name+": "+s.Title))
	y := top
	for _, c := range s.Cases {
		dir := "lower is better"
		if c.HigherIsBetter {
			dir = "higher is better"
		}
		fmt.Fprintf(&sb, `<text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y+12, html.EscapeString(fmt.Sprintf("%s (%s, %s)", c.Name, c.Unit, dir)))
		y += 18
		maxV := 0.0
		for _, ir := range c.Impls {
			if ir.Error == "" && ir.Value > maxV {
				maxV = ir.Value
			}
		}
		for _, ir := range c.Impls {
			fmt.Fprintf(&sb, `<text x="20" y="%d">%s</text>`+"\n", y+barH-4, html.EscapeString(ir.Name))
			label := ir.Error
			barW := 0
			if ir.Error == "" && maxV > 0 {
				barW = max(1, int(ir.Value/maxV*barMaxW))
				label = formatFigure(ir.Value, ir.Unit)
				if !ir.Ours && ir.Ratio > 0 {
					label += ", ours " + FormatRatio(ir.Ratio, c.HigherIsBetter)
				}
			}
			fill := "#9aa5b1"
			if ir.Ours {
				fill = "#d9480f"
			}
			fmt.Fprintf(&sb, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", labelW, y, barW, barH, fill)
			fmt.Fprintf(&sb, `<text x="%d" y="%d">%s</text>`+"\n", labelW+barW+6, y+barH-4, html.EscapeString(label))
			y += barH + barGap
		}
		y += groupGap
	}
	sb.WriteString("</svg>\n")
	_, err := io.WriteString(w, sb.String())
	return err
}
