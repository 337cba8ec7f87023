package stormsim

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Chart is a line chart of a value per category (a node, left to right),
// one line per series, drawn by SVG as a self-contained SVG document with
// nothing but the standard library.
type Chart struct {
	// Title and Subtitle head the chart.
	Title, Subtitle string
	// XLabel and YLabel name the axes.
	XLabel, YLabel string
	// Categories name the points of every series, left to right.
	Categories []string
	// Series are the lines, coloured in order.
	Series []Series
}

// Series is one line of a Chart.
type Series struct {
	// Name is the series' legend.
	Name string
	// Values are by category; NaN (or, on a log scale, <= 0) leaves a gap.
	Values []float64
	// Dashed draws the line dashed: a computed series among measured ones.
	Dashed bool
}

// Chart returns the chart of the report's loads: one series per run, by
// node. The runs must share their nodes.
func (r Report) Chart() (Chart, error) {
	if len(r.Runs) == 0 {
		return Chart{}, errors.New("chart: no runs")
	}
	var categories []string
	for _, n := range r.Runs[0].Expected.Nodes {
		categories = append(categories, n.Name)
	}
	c := Chart{
		Title:      "stormsim " + r.Scenario + ": requests served per request at the root",
		Subtitle:   r.Summary,
		XLabel:     "node (root first)",
		YLabel:     "requests per root request",
		Categories: categories,
	}
	for _, run := range r.Runs {
		if len(run.Expected.Nodes) != len(categories) {
			return Chart{}, fmt.Errorf("chart: run %q has %d nodes, not %d", run.Label, len(run.Expected.Nodes), len(categories))
		}
		for i, n := range run.Expected.Nodes {
			if n.Name != categories[i] {
				return Chart{}, fmt.Errorf("chart: run %q has node %s where the first has %s", run.Label, n.Name, categories[i])
			}
		}
		name := run.Label
		if run.Result == nil && !strings.Contains(name, "analytic") {
			name += " (analytic)"
		}
		c.Series = append(c.Series, Series{Name: name, Values: run.Loads(), Dashed: run.Result == nil && !r.Analytic})
	}
	switch {
	case r.Analytic:
		c.Subtitle += " (computed, not run)"
	default:
		for _, s := range c.Series {
			if s.Dashed {
				c.Subtitle += " (dashed: computed, not run)"
				break
			}
		}
	}
	return c, nil
}

// Chart geometry, in SVG user units.
const (
	_chartWidth  = 760
	_chartHeight = 440
	_plotLeft    = 80
	_plotRight   = 696 // room on the right for each line's last value
	_plotTop     = 70
	_plotBottom  = 380
)

// _palette colours the series in order.
var _palette = []string{"#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// LogScale reports whether SVG draws the chart's values on a log scale:
// when they are all positive and span a decade or more.
func (c Chart) LogScale() bool {
	lo, hi := c.extent()
	return lo > 0 && hi/lo >= 10
}

// extent returns the least and greatest finite value.
func (c Chart) extent() (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	return lo, hi
}

// axis maps values to the plot's height.
type axis struct {
	log    bool
	lo, hi float64 // in value units (log: powers of ten)
	ticks  []float64
}

func (c Chart) yAxis() axis {
	lo, hi := c.extent()
	if c.LogScale() {
		a := axis{log: true, lo: math.Pow(10, math.Floor(math.Log10(lo))), hi: math.Pow(10, math.Ceil(math.Log10(hi)))}
		for v := a.lo; v <= a.hi*1.0001; v *= 10 {
			a.ticks = append(a.ticks, v)
		}
		return a
	}
	lo = math.Min(0, lo)
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 6)
	a := axis{lo: math.Floor(lo/step) * step, hi: math.Ceil(hi/step) * step}
	if a.hi < hi*1.05 {
		a.hi += step
	}
	for v := a.lo; v <= a.hi+step/1000; v += step {
		a.ticks = append(a.ticks, v)
	}
	return a
}

// niceStep returns 1, 2 or 5 times a power of ten, at least raw.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// y returns the height of v in the plot, and false when v cannot be drawn.
func (a axis) y(v float64) (float64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || (a.log && v <= 0) {
		return 0, false
	}
	f := (v - a.lo) / (a.hi - a.lo)
	if a.log {
		f = math.Log10(v/a.lo) / math.Log10(a.hi/a.lo)
	}
	return _plotBottom - f*(_plotBottom-_plotTop), true
}

// tickLabel writes v compactly: 1, 2.5, 10, 1k, 10M.
func tickLabel(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', 4, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// SVG returns the chart as an SVG document.
func (c Chart) SVG() []byte {
	var b bytes.Buffer
	esc := html.EscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		_chartWidth, _chartHeight, _chartWidth, _chartHeight)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(c.Title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", _chartWidth, _chartHeight)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", _plotLeft-60, esc(c.Title))
	if c.Subtitle != "" {
		fmt.Fprintf(&b, `<text x="%d" y="44" fill="#555">%s</text>`+"\n", _plotLeft-60, esc(c.Subtitle))
	}

	a := c.yAxis()
	scale := "linear scale"
	if a.log {
		scale = "log scale"
	}
	for _, v := range a.ticks {
		y, _ := a.y(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#ddd"/>`+"\n", _plotLeft, num(y), _plotRight, num(y))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", _plotLeft-6, num(y), tickLabel(v))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", _plotLeft, _plotTop, _plotLeft, _plotBottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", _plotLeft, _plotBottom, _plotRight, _plotBottom)
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">%s (%s)</text>`+"\n",
		(_plotTop+_plotBottom)/2, esc(c.YLabel), scale)

	x := func(i int) float64 {
		if len(c.Categories) < 2 {
			return (_plotLeft + _plotRight) / 2
		}
		const pad = 16
		return _plotLeft + pad + float64(i)*float64(_plotRight-_plotLeft-2*pad)/float64(len(c.Categories)-1)
	}
	for i, name := range c.Categories {
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", num(x(i)), _plotBottom+18, esc(name))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (_plotLeft+_plotRight)/2, _plotBottom+42, esc(c.XLabel))

	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="white" fill-opacity="0.85"/>`+"\n",
		_plotLeft+8, _plotTop+4, c.legendWidth(), 18*len(c.Series)+4)
	var ends []endLabel
	for k, s := range c.Series {
		color := _palette[k%len(_palette)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var points []string
		flush := func() {
			if len(points) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, dash, strings.Join(points, " "))
			}
			points = points[:0]
		}
		for i, v := range s.Values {
			y, ok := a.y(v)
			if !ok || i >= len(c.Categories) {
				flush()
				continue
			}
			points = append(points, num(x(i))+","+num(y))
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"><title>%s %s: %s</title></circle>`+"\n",
				num(x(i)), num(y), color, esc(s.Name), esc(c.Categories[i]), strconv.FormatFloat(v, 'g', 6, 64))
		}
		flush()
		for i := len(s.Values) - 1; i >= 0 && i < len(c.Categories); i-- {
			if y, ok := a.y(s.Values[i]); ok {
				ends = append(ends, endLabel{x: x(i) + 8, y: y, text: tickLabel(roundTo(s.Values[i], 3)), color: color})
				break
			}
		}
		ly := _plotTop + 14 + 18*k
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", _plotLeft+14, ly, _plotLeft+40, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", _plotLeft+46, ly, esc(s.Name))
	}
	for _, l := range spread(ends, 12) {
		fmt.Fprintf(&b, `<text x="%s" y="%s" fill="%s" dominant-baseline="middle">%s</text>`+"\n", num(l.x), num(l.y), l.color, esc(l.text))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// legendWidth is the width of the legend's background.
func (c Chart) legendWidth() int {
	longest := 0
	for _, s := range c.Series {
		longest = max(longest, len([]rune(s.Name)))
	}
	return 44 + 7*longest
}

// endLabel is the value written after a line's last point.
type endLabel struct {
	x, y  float64
	text  string
	color string
}

// spread moves labels apart vertically so that no two are closer than gap,
// keeping their order from top to bottom.
func spread(labels []endLabel, gap float64) []endLabel {
	sort.SliceStable(labels, func(i, j int) bool { return labels[i].y < labels[j].y })
	for i := 1; i < len(labels); i++ {
		if labels[i].y < labels[i-1].y+gap {
			labels[i].y = labels[i-1].y + gap
		}
	}
	return labels
}

// roundTo rounds v to digits significant digits.
func roundTo(v float64, digits int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}
