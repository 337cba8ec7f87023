package stormsim

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArrivals(t *testing.T) {
	a := arrivals(240, 12*time.Second, 1)
	assert.Equal(t, a, arrivals(240, 12*time.Second, 1), "the same seed, the same schedule")
	assert.NotEqual(t, a, arrivals(240, 12*time.Second, 2))
	// A Poisson count of mean 2880: within 4 standard errors (±215).
	assert.InDelta(t, 2880, len(a), 4*math.Sqrt(2880))
	for i, at := range a {
		require.True(t, at >= 0 && at < 12*time.Second, "%v", at)
		if i > 0 {
			require.GreaterOrEqual(t, at, a[i-1], "in time order")
		}
	}
	// Exponential gaps: mean 1/240 s, and as many below the median
	// ln 2/240 as above it, within 4 standard errors.
	var below int
	for i := 1; i < len(a); i++ {
		if (a[i] - a[i-1]).Seconds() < math.Ln2/240 {
			below++
		}
	}
	n := float64(len(a) - 1)
	assert.InDelta(t, n/2, float64(below), 4*math.Sqrt(n/4))
	assert.InDelta(t, 1.0/240, (a[len(a)-1]-a[0]).Seconds()/n, 0.0002)
	assert.Empty(t, arrivals(0, time.Second, 1))
}

func TestRecovery(t *testing.T) {
	const bin = 250 * time.Millisecond
	nan := math.NaN()
	ok, bad := 1.0, 0.5
	tests := []struct {
		name   string
		give   []float64
		from   time.Duration
		want   time.Duration
		wantOK bool
	}{
		{name: "at once", give: []float64{bad, bad, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok}, from: 500 * time.Millisecond, want: 0, wantOK: true},
		{name: "one bin later", give: []float64{bad, bad, bad, ok, ok, ok, ok, ok, ok, ok, ok, ok}, from: 500 * time.Millisecond, want: bin, wantOK: true},
		{name: "a dip restarts the hold", give: []float64{ok, ok, bad, ok, ok, ok, ok, ok, ok, ok, ok}, from: 0, want: 3 * bin, wantOK: true},
		{name: "the hold does not fit in the run", give: []float64{bad, ok, ok, ok, ok, ok, ok, ok}, from: 0},
		{name: "never", give: []float64{bad, bad, bad, bad, bad, bad, bad, bad, bad, bad}, from: 0},
		{name: "exactly the threshold", give: []float64{0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95}, from: 0, want: 0, wantOK: true},
		{name: "just under it", give: []float64{0.949, ok, ok, ok, ok, ok, ok, ok, ok}, from: 0, want: bin, wantOK: true},
		{name: "nothing sent breaks no hold", give: []float64{ok, nan, ok, ok, ok, ok, ok, ok}, from: 0, want: 0, wantOK: true},
		{name: "from the middle of a bin: the next bin", give: []float64{bad, ok, ok, ok, ok, ok, ok, ok, ok}, from: 100 * time.Millisecond, want: 150 * time.Millisecond, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Recovery(tt.give, bin, tt.from, 2*time.Second, RecoveryGoodput)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
	_, recovered := Recovery([]float64{ok}, 0, 0, time.Second, 0.95)
	assert.False(t, recovered, "no bins")
}

func TestTimelineSummary(t *testing.T) {
	// 1s bins over 8s: full goodput, then 0 during the trigger (2s to
	// 4s), half in the bin after it, full again from 5s: recovered 1s
	// after the trigger's end.
	tl := &Timeline{
		BinMS: 1000, DurationS: 8,
		Triggers: []TriggerWindow{{Node: "D", Kind: TriggerSlow, FromS: 2, ToS: 4, Factor: 10}},
		Sent:     []int{10, 10, 10, 10, 10, 10, 10, 10},
		Good:     []int{10, 10, 0, 0, 5, 10, 10, 10},
		Retries:  []int64{0, 0, 5, 5, 1, 0, 0, 0, 0},
		Refused:  map[string][]int64{"budget": {0, 0, 3, 4, 0, 0, 0, 0, 0}},
		Nodes:    []NodeTimeline{{Name: "D", Visits: 4, TotalArrivals: 352, InTime: []int64{40, 40, 7, 9, 40, 40, 40, 40}}},
	}
	tl.Goodput = make(Ratios, len(tl.Sent))
	for b := range tl.Sent {
		tl.Goodput[b] = float64(tl.Good[b]) / float64(tl.Sent[b])
	}
	tl.summarize(80)
	s := tl.Summary
	require.NotNil(t, s.RecoveryS)
	assert.Equal(t, 1.0, *s.RecoveryS)
	d, ok := s.Recovered()
	assert.Equal(t, []any{time.Second, true}, []any{d, ok})
	assert.Equal(t, []any{"D", 2.0, 4.0, 2.0}, []any{s.Constrained, s.TriggerFromS, s.TriggerToS, s.RecoveryHorizonS})
	assert.Equal(t, []float64{1, 0, 35.0 / 40}, []float64{s.GoodputBefore, s.GoodputDuring, s.GoodputAfter})
	assert.Equal(t, 20, s.SentDuring)
	assert.Equal(t, []any{int64(352), 320.0, 1.1, 4.4}, []any{s.Arrivals, s.Offered, s.ArrivalsPerOffered, s.ArrivalsPerRequest})
	assert.Equal(t, int64(11), s.Retries)
	assert.Equal(t, map[string]int64{"budget": 7}, s.Refused)
	assert.Equal(t, int64(16), s.AnswersDuring, "D's answers in time in the trigger's bins only")

	// JSON: NaN as null, and back.
	tl.Goodput[3] = math.NaN()
	tl.Summary.GoodputAfter = math.NaN()
	b, err := json.Marshal(tl)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"goodput":[1,1,0,null,0.5,1,1,1]`)
	assert.Contains(t, string(b), `"goodputAfter":null`)
	var back Timeline
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, math.IsNaN(back.Goodput[3]))
	assert.True(t, math.IsNaN(back.Summary.GoodputAfter))
	assert.Equal(t, 1.0, *back.Summary.RecoveryS)
	assert.Equal(t, tl.Nodes, back.Nodes)

	// No trigger: no recovery, the whole run before.
	plain := &Timeline{BinMS: 1000, DurationS: 2, Sent: []int{4, 4}, Good: []int{4, 2}, Goodput: Ratios{1, 0.5}}
	plain.summarize(8)
	assert.Nil(t, plain.Summary.RecoveryS)
	assert.Equal(t, 0.75, plain.Summary.GoodputBefore)
	assert.True(t, math.IsNaN(plain.Summary.GoodputDuring))
}

func TestClockAndCounts(t *testing.T) {
	c := &clock{bin: time.Hour, bins: 2}
	n := newCounts(c)
	n.add(1) // before the start: counted in total, in no bin
	assert.Equal(t, -1, c.index(time.Now()))
	c.begin(time.Now())
	n.add(2)
	n.add(3)
	assert.Equal(t, []int64{5, 0}, n.values())
	assert.Equal(t, int64(6), n.total.Load(), "the total counts what came before the start too")
	most := newCounts(c)
	most.most(5)
	most.most(3)
	assert.Equal(t, []int64{5, 0}, most.values(), "the most")
	assert.Equal(t, -1, c.index(time.Now().Add(3*time.Hour)), "after the bins")
	var none *counts
	none.add(1) // no-ops on nil
	none.most(1)
	var series *nodeSeries
	series.count(_arrived)
	series.queued(1)
}
