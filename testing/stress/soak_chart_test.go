package stress

import (
	"fmt"
	"html"
	"strings"
	"time"
)

// soakChart draws the soak's series as an SVG document: one panel per series (heap in
// use, goroutines, fds, latency p50 and p99, throughput), each with its own y axis from
// zero, sharing the time axis.
func soakChart(samples []soakSample, duration time.Duration) string {
	type line struct {
		name  string
		color string
		y     func(soakSample) float64
	}
	panels := []struct {
		title string
		unit  string
		lines []line
	}{
		{"heap in use", "MiB", []line{{"heap", "#d9480f", func(s soakSample) float64 { return float64(s.HeapInuse) / (1 << 20) }}}},
		{"goroutines", "", []line{{"goroutines", "#1971c2", func(s soakSample) float64 { return float64(s.Goroutines) }}}},
		{"open file descriptors", "", []line{{"fds", "#2f9e44", func(s soakSample) float64 { return float64(s.FDs) }}}},
		{"request latency", "ms", []line{
			{"p50", "#1971c2", func(s soakSample) float64 { return float64(s.P50) / 1e6 }},
			{"p99", "#c92a2a", func(s soakSample) float64 { return float64(s.P99) / 1e6 }},
		}},
		{"throughput", "requests/s", []line{{"throughput", "#7048e8", func(s soakSample) float64 { return s.Throughput }}}},
	}
	const (
		width  = 760
		left   = 70
		right  = 20
		panelH = 120
		gap    = 50
		top    = 50
	)
	plotW := float64(width - left - right)
	tMax := duration.Seconds()
	for _, s := range samples {
		tMax = max(tMax, s.At.Seconds())
	}
	height := top + len(panels)*(panelH+gap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">soak: %d samples over %s</text>`+"\n",
		left, len(samples), html.EscapeString(duration.String()))
	for i, p := range panels {
		y0 := top + i*(panelH+gap) + 20 // top of the plot area
		yMax := 0.0
		for _, l := range p.lines {
			for _, s := range samples {
				yMax = max(yMax, l.y(s))
			}
		}
		if yMax == 0 {
			yMax = 1
		}
		yMax *= 1.1
		title := p.title
		if p.unit != "" {
			title += " (" + p.unit + ")"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, y0-6, html.EscapeString(title))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%g" height="%d" fill="#f8f9fa" stroke="#ced4da"/>`+"\n", left, y0, plotW, panelH)
		for _, frac := range []float64{0, 0.5, 1} {
			y := float64(y0) + float64(panelH)*(1-frac)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#495057">%s</text>`+"\n", left-6, y+4, fmtAxis(yMax*frac))
			if frac > 0 && frac < 1 {
				fmt.Fprintf(&b, `<line x1="%d" x2="%g" y1="%.1f" y2="%.1f" stroke="#dee2e6"/>`+"\n", left, float64(left)+plotW, y, y)
			}
		}
		for _, frac := range []float64{0, 0.25, 0.5, 0.75, 1} {
			x := float64(left) + plotW*frac
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#495057">%ss</text>`+"\n", x, y0+panelH+14, fmtAxis(tMax*frac))
		}
		lx := float64(left) + plotW - 10
		for j := len(p.lines) - 1; j >= 0; j-- {
			l := p.lines[j]
			var pts []string
			for _, s := range samples {
				x := float64(left) + plotW*s.At.Seconds()/tMax
				y := float64(y0) + float64(panelH)*(1-l.y(s)/yMax)
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", l.color, strings.Join(pts, " "))
			if len(p.lines) > 1 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="end" fill="%s" font-weight="bold">%s</text>`+"\n", lx, y0+16, l.color, l.name)
				lx -= 40
			}
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func fmtAxis(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
