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
