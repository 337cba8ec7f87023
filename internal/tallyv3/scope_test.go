package tallyv3

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tallyv3 "github.com/uber-go/tally"
	"github.com/uber-go/tally/v4"
)

func TestScopeReportsToV3(t *testing.T) {
	v3 := tallyv3.NewTestScope("app", map[string]string{"service": "orders"})
	s := Scope(v3).SubScope("errown").Tagged(map[string]string{"callee": "users"})

	s.Counter("retries").Inc(3)
	s.Gauge("budget_left").Update(7.5)
	s.Timer("latency").Record(20 * time.Millisecond)
	s.Timer("latency").Start().Stop()
	s.Histogram("radius", tally.ValueBuckets{1, 2, 4}).RecordValue(2)
	s.Histogram("wait", tally.DurationBuckets{time.Millisecond, time.Second}).RecordDuration(5 * time.Millisecond)
	s.Histogram("wait", nil).Start().Stop()

	snap := v3.Snapshot()
	const id = "app.errown.%s+callee=users,service=orders"
	key := func(name string) string { return fmt.Sprintf(id, name) }

	require.Contains(t, snap.Counters(), key("retries"))
	assert.Equal(t, int64(3), snap.Counters()[key("retries")].Value())
	assert.Equal(t, map[string]string{"service": "orders", "callee": "users"}, snap.Counters()[key("retries")].Tags())

	require.Contains(t, snap.Gauges(), key("budget_left"))
	assert.Equal(t, 7.5, snap.Gauges()[key("budget_left")].Value())

	require.Contains(t, snap.Timers(), key("latency"))
	assert.Len(t, snap.Timers()[key("latency")].Values(), 2, "a record and a stopwatch")
	assert.Equal(t, 20*time.Millisecond, snap.Timers()[key("latency")].Values()[0])

	require.Contains(t, snap.Histograms(), key("radius"))
	assert.Equal(t, map[float64]int64{1: 0, 2: 1, 4: 0}, onlyFinite(snap.Histograms()[key("radius")].Values()))
	require.Contains(t, snap.Histograms(), key("wait"))
	wait := snap.Histograms()[key("wait")].Durations()
	assert.Equal(t, int64(1), wait[time.Second], "a duration histogram: the record of 5ms")
	assert.Equal(t, int64(1), wait[time.Millisecond], "and the stopwatch, well under 1ms")
}

// reportingTagging is a v3 reporter that says it reports and tags.
type reportingTagging struct{ tallyv3.StatsReporter }

func (reportingTagging) Capabilities() tallyv3.Capabilities { return reportingTagging{} }
func (reportingTagging) Reporting() bool                    { return true }
func (reportingTagging) Tagging() bool                      { return true }

func TestScopeCapabilities(t *testing.T) {
	root, closer := tallyv3.NewRootScope(tallyv3.ScopeOptions{Reporter: reportingTagging{tallyv3.NullStatsReporter}}, 0)
	defer closer.Close()
	caps := Scope(root).SubScope("errown").Capabilities()
	assert.True(t, caps.Reporting())
	assert.True(t, caps.Tagging())
	assert.False(t, Scope(tallyv3.NoopScope).Capabilities().Reporting())
	assert.False(t, Scope(tallyv3.NoopScope).Capabilities().Tagging())
}

func TestBuckets(t *testing.T) {
	tests := []struct {
		name string
		give tally.Buckets
		want tallyv3.Buckets
	}{
		{"none", nil, nil},
		{"values", tally.ValueBuckets{1, 2}, tallyv3.ValueBuckets{1, 2}},
		{"durations", tally.DurationBuckets{time.Second}, tallyv3.DurationBuckets{time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, buckets(tt.give))
		})
	}
}

func onlyFinite(m map[float64]int64) map[float64]int64 {
	out := map[float64]int64{}
	for k, v := range m {
		if k < 1e300 {
			out[k] = v
		}
	}
	return out
}
