package tallyv3

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
)

func TestLateReportsOnceBound(t *testing.T) {
	late := NewLate()
	s := late.SubScope("errown").Tagged(map[string]string{"callee": "users"})
	before := s.Counter("calls")
	gauge := s.Gauge("budget_left")
	timer := s.Timer("latency")
	hist := s.Histogram("radius", tally.ValueBuckets{1, 2})

	// Before Bind: nothing to report to, nothing panics.
	before.Inc(5)
	gauge.Update(1)
	timer.Record(time.Second)
	hist.RecordValue(1)
	assert.False(t, late.Bound())
	assert.False(t, s.Capabilities().Reporting())

	root := tally.NewTestScope("", nil)
	late.Bind(root)
	late.Bind(tally.NewTestScope("other", nil)) // only the first counts
	require.True(t, late.Bound())
	after := s.Counter("retries") // built after Bind

	before.Inc(2)
	after.Inc(3)
	gauge.Update(4)
	timer.Record(20 * time.Millisecond)
	timer.Start().Stop()
	hist.RecordValue(2)
	hist.RecordDuration(time.Millisecond)
	hist.Start().Stop()

	snap := root.Snapshot()
	const tags = "+callee=users"
	assert.Equal(t, int64(2), snap.Counters()["errown.calls"+tags].Value(), "only what came after Bind")
	assert.Equal(t, int64(3), snap.Counters()["errown.retries"+tags].Value())
	assert.Equal(t, 4.0, snap.Gauges()["errown.budget_left"+tags].Value())
	assert.Len(t, snap.Timers()["errown.latency"+tags].Values(), 2)
	assert.Equal(t, int64(1), snap.Histograms()["errown.radius"+tags].Values()[2])
	assert.Equal(t, s.Capabilities(), root.Capabilities())
}

func TestLateBindRace(t *testing.T) {
	late := NewLate()
	c := late.SubScope("errown").Counter("calls")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				c.Inc(1)
				late.SubScope("errown").Gauge("g").Update(1)
			}
		}()
	}
	root := tally.NewTestScope("", nil)
	late.Bind(root)
	wg.Wait()
	c.Inc(1)
	assert.GreaterOrEqual(t, root.Snapshot().Counters()["errown.calls+"].Value(), int64(1))
}
