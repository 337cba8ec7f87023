package memory

import (
	"testing"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCoarseTick(t *testing.T) {
	tests := []struct {
		give time.Duration
		want time.Duration
	}{
		{give: depmem.DefaultConfig().Window / time.Duration(depmem.DefaultConfig().Buckets), want: 100 * time.Millisecond},
		{give: time.Second, want: 100 * time.Millisecond},
		{give: 500 * time.Millisecond, want: 50 * time.Millisecond},
		{give: 100 * time.Millisecond, want: 10 * time.Millisecond},
		{give: 99 * time.Millisecond, want: 0},
		{give: time.Millisecond, want: 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, coarseTick(tt.give), "width %v", tt.give)
	}
}

func TestClockCoarseWhileStarted(t *testing.T) {
	c := newClock(nil, time.Second)
	before := c.nanos()
	assert.InDelta(t, time.Now().UnixNano(), before, float64(time.Second), "the real clock")
	assert.False(t, c.Coarse(), "exact before begin")

	c.Start()
	c.Start() // a second begin does nothing
	require.True(t, c.Coarse(), "coarse once begun")
	at := c.nanos()
	assert.GreaterOrEqual(t, at, before, "never behind an earlier reading")
	assert.Equal(t, at, c.nanos(), "between ticks: as of the last")
	require.Eventually(t, func() bool { return c.nanos() > at }, 5*time.Second, 10*time.Millisecond, "ticks")

	c.Stop()
	c.Stop() // a second end does nothing
	assert.False(t, c.Coarse(), "exact after end")
	assert.GreaterOrEqual(t, c.nanos(), at)
	// goleak (TestMain) checks that the ticking goroutine has exited.
}

func TestClockNeverCoarse(t *testing.T) {
	tests := []struct {
		name string
		give *clock
	}{
		{name: "a test's clock", give: newClock(newFakeClock().Now, time.Second)},
		{name: "buckets too narrow to tick", give: newClock(nil, time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.give.Start()
			defer tt.give.Stop()
			assert.False(t, tt.give.Coarse())
		})
	}
}

func TestMemoryStartRunsTheCoarseClock(t *testing.T) {
	m, err := NewMemory(depmem.Config{Window: 10 * time.Second, MinSamples: 1})
	require.NoError(t, err)
	require.NoError(t, m.Start())
	assert.True(t, m.clock.Coarse(), "started")
	m.Observe(edgeA, true)
	require.NoError(t, m.Stop())
	assert.False(t, m.clock.Coarse(), "stopped")
	assert.Equal(t, int64(1), m.Edges()[0].CalleeFailures, "observed in the window the exact clock reads")
}

// Now is the memory's own reading of its clock: a test's clock exactly,
// the coarse one between Start and Stop.
func TestMemoryNow(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	m, err := NewMemory(depmem.Config{}, withClock(func() time.Time { return at }))
	require.NoError(t, err)
	assert.True(t, at.Equal(m.Now()), "the test's clock: %v", m.Now())
	at = at.Add(time.Minute)
	assert.True(t, at.Equal(m.Now()), "read again, exactly: %v", m.Now())

	real, err := NewMemory(depmem.Config{})
	require.NoError(t, err)
	require.NoError(t, real.Start())
	defer func() { require.NoError(t, real.Stop()) }()
	before := time.Now()
	got := real.Now()
	assert.WithinDuration(t, before, got, 200*time.Millisecond, "coarse: within a tick of the real clock")
}

// withClock reads the time from now, exactly at every reading: the
// coarse clock never runs on it (see clock).
func withClock(now func() time.Time) Option {
	return optionFunc(func(o *options) { o.now = now })
}
