package stormsim

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// TimeChart is a chart of values over time in panels stacked one above
// the other, one line per series, spans of time shaded (a trigger), drawn
// by SVG as a self-contained SVG document with nothing but the standard
// library. A series keeps its colour in every panel.
type TimeChart struct {
	// Title and Subtitle head the chart.
	Title, Subtitle string
	// XLabel and YLabel name every panel's axes.
	XLabel, YLabel string
	// YMax is the top of every panel's y axis (its bottom is 0).
	YMax float64
	// Panels are drawn top to bottom.
	Panels []TimePanel
}

// TimePanel is one panel of a TimeChart.
type TimePanel struct {
	// Title heads the panel.
	Title string
	// XMax is the right end of the x axis (its left end is 0).
	XMax float64
	// Shade are the spans of x shaded.
	Shade []Span
	// Series are the lines.
	Series []TimeSeries
}

// Span is a span of x, From to To.
type Span struct{ From, To float64 }

// TimeSeries is one line of a TimePanel: Y at X; a NaN Y leaves a gap.
type TimeSeries struct {
	Name string
	X, Y []float64
}

// TimeChart returns the chart of the report's open-loop runs: the root's
// goodput over time, one panel per group of runs (RunReport.Group), one
// line per run, the triggers shaded; false when no run has a Timeline.
func (r Report) TimeChart() (TimeChart, bool) {
	c := TimeChart{
		Title:    "stormsim " + r.Scenario + ": goodput at the root over time",
		Subtitle: r.Summary,
		XLabel:   "seconds from the start of the load (shaded: the trigger)",
		YLabel:   "goodput % (per bin)",
		YMax:     100,
	}
	panels := make(map[string]int)
	for _, run := range r.Runs {
		if run.Result == nil || run.Result.Timeline == nil {
			continue
		}
		t := run.Result.Timeline
		k, ok := panels[run.Group]
		if !ok {
			k = len(c.Panels)
			panels[run.Group] = k
			p := TimePanel{Title: run.Group, XMax: t.DurationS}
			for _, tr := range t.Triggers {
				p.Shade = append(p.Shade, Span{From: tr.FromS, To: tr.ToS})
			}
			c.Panels = append(c.Panels, p)
		}
		s := TimeSeries{Name: strings.TrimPrefix(run.Label, run.Group+": ")}
		bin := t.BinMS / 1000
		for b, g := range t.Goodput {
			s.X = append(s.X, (float64(b)+0.5)*bin)
			s.Y = append(s.Y, 100*g)
		}
		c.Panels[k].Series = append(c.Panels[k].Series, s)
	}
	return c, len(c.Panels) > 0
}

// TimeChart geometry, in SVG user units.
const (
	_tcWidth       = 760
	_tcLeft        = 70
	_tcRight       = 730
	_tcTop         = 96 // the first panel's top, below the legend
	_tcPanelHeight = 230
	_tcPlotHeight  = 170 // of a panel, from its title down
)

// SVG returns the chart as an SVG document.
func (c TimeChart) SVG() []byte {
	var b bytes.Buffer
	esc := html.EscapeString
	height := _tcTop + _tcPanelHeight*len(c.Panels) + 10
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		_tcWidth, height, _tcWidth, height)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(c.Title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", _tcWidth, height)
	fmt.Fprintf(&b, `<text x="10" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", esc(c.Title))
	if c.Subtitle != "" {
		fmt.Fprintf(&b, `<text x="10" y="44" fill="#555">%s</text>`+"\n", esc(c.Subtitle))
	}

	// One colour per series name, in order of first appearance, and the
	// legend in a row.
	colors := make(map[string]string)
	var names []string
	for _, p := range c.Panels {
		for _, s := range p.Series {
			if _, ok := colors[s.Name]; !ok {
				colors[s.Name] = _palette[len(names)%len(_palette)]
				names = append(names, s.Name)
			}
		}
	}
	x := 10
	for _, name := range names {
		fmt.Fprintf(&b, `<line x1="%d" y1="68" x2="%d" y2="68" stroke="%s" stroke-width="2"/>`+"\n", x, x+22, colors[name])
		fmt.Fprintf(&b, `<text x="%d" y="68" dominant-baseline="middle">%s</text>`+"\n", x+26, esc(name))
		x += 40 + 7*len([]rune(name))
	}

	for k, p := range c.Panels {
		c.panel(&b, p, _tcTop+k*_tcPanelHeight, colors)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// panel draws p with its title at top.
func (c TimeChart) panel(b *bytes.Buffer, p TimePanel, top int, colors map[string]string) {
	esc := html.EscapeString
	plotTop, plotBottom := float64(top+14), float64(top+_tcPlotHeight)
	xmax := p.XMax
	if xmax <= 0 {
		xmax = 1
	}
	ymax := c.YMax
	if ymax <= 0 {
		ymax = 1
	}
	px := func(v float64) float64 { return _tcLeft + v/xmax*(_tcRight-_tcLeft) }
	py := func(v float64) float64 { return plotBottom - math.Min(math.Max(v, 0), ymax)/ymax*(plotBottom-plotTop) }

	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", _tcLeft, top+6, esc(p.Title))
	for _, s := range p.Shade {
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="#f2c6c6" fill-opacity="0.6"/>`+"\n",
			num(px(s.From)), num(plotTop), num(px(s.To)-px(s.From)), num(plotBottom-plotTop))
	}
	ystep := niceStep(ymax / 4)
	for v := 0.0; v <= ymax+ystep/1000; v += ystep {
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#ddd"/>`+"\n", _tcLeft, num(py(v)), _tcRight, num(py(v)))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", _tcLeft-6, num(py(v)), tickLabel(v))
	}
	xstep := niceStep(xmax / 12)
	for v := 0.0; v <= xmax+xstep/1000; v += xstep {
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num(px(v)), num(plotBottom+16), tickLabel(v))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#333"/>`+"\n", _tcLeft, num(plotTop), _tcLeft, num(plotBottom))
	fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#333"/>`+"\n", _tcLeft, num(plotBottom), _tcRight, num(plotBottom))
	fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="middle" fill="#555">%s</text>`+"\n", (_tcLeft+_tcRight)/2, num(plotBottom+32), esc(c.XLabel))
	fmt.Fprintf(b, `<text transform="translate(16 %s) rotate(-90)" text-anchor="middle" fill="#555">%s</text>`+"\n", num((plotTop+plotBottom)/2), esc(c.YLabel))

	for _, s := range p.Series {
		var points []string
		flush := func() {
			if len(points) > 1 {
				fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"><title>%s</title></polyline>`+"\n", colors[s.Name], strings.Join(points, " "), esc(s.Name))
			}
			points = points[:0]
		}
		for i := range s.X {
			if i >= len(s.Y) || math.IsNaN(s.Y[i]) || math.IsInf(s.Y[i], 0) {
				flush()
				continue
			}
			points = append(points, num(px(s.X[i]))+","+strconv.FormatFloat(py(s.Y[i]), 'f', 1, 64))
		}
		flush()
	}
}
