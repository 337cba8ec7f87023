package stormsim

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wellFormed reports whether b parses as XML to the end.
func wellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestChartSVG(t *testing.T) {
	tests := []struct {
		name    string
		give    Chart
		wantLog bool
		want    []string // substrings of the SVG
	}{
		{
			name: "linear",
			give: Chart{Title: "t <&>", Categories: []string{"A", "B", "C"}, Series: []Series{
				{Name: "naive", Values: []float64{1, 2, 4}},
				{Name: "errown", Values: []float64{1, 1, 1.1}},
			}},
			want: []string{"<title>t &lt;&amp;&gt;</title>", "(linear scale)", `>naive</text>`, `>errown</text>`, ">4</text>", ">1.1</text>"},
		},
		{
			name: "log",
			give: Chart{Categories: []string{"A", "B"}, Series: []Series{
				{Name: "naive", Values: []float64{1, 1 << 24}, Dashed: true},
				{Name: "gap", Values: []float64{math.NaN(), 2}},
			}},
			wantLog: true,
			want:    []string{"(log scale)", ">100M</text>", ">16.8M</text>", `stroke-dasharray="6 4"`},
		},
		{name: "empty", give: Chart{Title: "nothing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantLog, tt.give.LogScale())
			svg := tt.give.SVG()
			require.NoError(t, wellFormed(svg), string(svg))
			assert.True(t, strings.HasPrefix(string(svg), `<svg xmlns="http://www.w3.org/2000/svg"`))
			for _, w := range tt.want {
				assert.Contains(t, string(svg), w)
			}
		})
	}
}

func TestTickLabelAndStep(t *testing.T) {
	labels := []struct {
		give float64
		want string
	}{
		{give: 1, want: "1"},
		{give: 1.5, want: "1.5"},
		{give: 100, want: "100"},
		{give: 1000, want: "1k"},
		{give: 16777216, want: "16.78M"},
		{give: 1e9, want: "1G"},
	}
	for _, tt := range labels {
		assert.Equal(t, tt.want, tickLabel(tt.give))
	}
	steps := []struct {
		give, want float64
	}{
		{give: 0.3, want: 0.5},
		{give: 1, want: 1},
		{give: 1.2, want: 2},
		{give: 7, want: 10},
	}
	for _, tt := range steps {
		assert.InDelta(t, tt.want, niceStep(tt.give), 1e-12, "niceStep(%v)", tt.give)
	}
}

func TestReportChart(t *testing.T) {
	s, ok := LookupScenario("deep")
	require.True(t, ok)
	rep, err := s.Run(t.Context(), ScenarioOptions{Analytic: true})
	require.NoError(t, err)
	c, err := rep.Chart()
	require.NoError(t, err)
	assert.Len(t, c.Categories, 25)
	assert.Equal(t, []string{"naive (analytic)", "budget (analytic)", "ownership (analytic)", "ownership, M drops (analytic)"},
		[]string{c.Series[0].Name, c.Series[1].Name, c.Series[2].Name, c.Series[3].Name})
	assert.True(t, c.LogScale())

	rep.Runs[1].Expected.Nodes = rep.Runs[1].Expected.Nodes[:3]
	_, err = rep.Chart()
	assert.ErrorContains(t, err, `chart: run "budget" has 3 nodes, not 25`)
	_, err = Report{}.Chart()
	assert.ErrorContains(t, err, "chart: no runs")
}

func TestReportTimeChart(t *testing.T) {
	nan := math.NaN()
	run := func(group, arm string, goodput ...float64) RunReport {
		return RunReport{Label: group + ": " + arm, Group: group, Result: &Result{Timeline: &Timeline{
			BinMS: 500, DurationS: 2, Goodput: goodput,
			Triggers: []TriggerWindow{{Node: "D", Kind: TriggerSlow, FromS: 0.5, ToS: 1}},
		}}}
	}
	rep := Report{Scenario: "capacity", Summary: "s", Runs: []RunReport{
		run("serve", "errown", 1, 0, 0.5, 1),
		run("serve", "every hop retries", 1, 0, 0, 0),
		run("leave", "errown", 1, nan, 1, 1),
		{Label: "leave: not run", Group: "leave"},
	}}
	c, ok := rep.TimeChart()
	require.True(t, ok)
	require.Len(t, c.Panels, 2, "a panel per group")
	p := c.Panels[0]
	assert.Equal(t, []any{"serve", 2.0, []Span{{From: 0.5, To: 1}}}, []any{p.Title, p.XMax, p.Shade})
	require.Len(t, p.Series, 2)
	assert.Equal(t, TimeSeries{Name: "errown", X: []float64{0.25, 0.75, 1.25, 1.75}, Y: []float64{100, 0, 50, 100}}, p.Series[0], "goodput in % at the middle of each bin")
	assert.Len(t, c.Panels[1].Series, 1, "a run that did not run draws nothing")

	require.NoError(t, wellFormed(c.SVG()))
	svg := string(c.SVG())
	assert.True(t, strings.HasPrefix(svg, "<svg "))
	assert.Contains(t, svg, "stormsim capacity: goodput at the root over time")
	assert.Equal(t, 2, strings.Count(svg, `fill="#f2c6c6"`), "the trigger shaded in each panel")
	assert.Equal(t, 1, strings.Count(svg, `dominant-baseline="middle">errown</text>`), "one legend entry per arm, the same colour in every panel")
	assert.Equal(t, 2, strings.Count(svg, `stroke="#d62728" stroke-width="1.6"`), "errown's lines, one per panel...")
	assert.Equal(t, 1, strings.Count(svg, "<title>every hop retries</title></polyline>"))
	assert.Equal(t, 3, strings.Count(svg, "<polyline"), "the leave panel's errown broken by a bin with nothing sent: a lone point draws no line")

	b, err := rep.SVG()
	require.NoError(t, err)
	assert.Equal(t, c.SVG(), b, "a report of open-loop runs draws its time chart")
	_, ok = Report{}.TimeChart()
	assert.False(t, ok)
}
