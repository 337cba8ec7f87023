package coarseclock

import (
	"testing"
	"time"

	"github.com/errown/errown/internal/testtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTick(t *testing.T) {
	tests := []struct {
		giveWidth, giveMin time.Duration
		want               time.Duration
	}{
		{giveWidth: time.Minute, giveMin: time.Millisecond, want: MaxTick},
		{giveWidth: time.Second, giveMin: 10 * time.Millisecond, want: 100 * time.Millisecond},
		{giveWidth: 500 * time.Millisecond, giveMin: 10 * time.Millisecond, want: 50 * time.Millisecond},
		{giveWidth: 99 * time.Millisecond, giveMin: 10 * time.Millisecond, want: 0},
		{giveWidth: 0, giveMin: 0, want: 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Tick(tt.giveWidth, tt.giveMin), "width %v, min %v", tt.giveWidth, tt.giveMin)
	}
}

// fakeTicker ticks when told to, and says when the clock has read.
type fakeTicker struct{ c chan time.Time }

func (f *fakeTicker) new(time.Duration) (<-chan time.Time, func()) { return f.c, func() {} }

func TestClock(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	ft := &fakeTicker{c: make(chan time.Time)}
	c := New(clock, time.Second, ft.new)
	assert.Equal(t, now, c.Started())

	now = now.Add(3 * time.Second)
	assert.False(t, c.Coarse())
	assert.Equal(t, 3*time.Second, c.Elapsed(), "before Start: exact")

	c.Start()
	c.Start() // a second Start does nothing
	require.True(t, c.Coarse())
	now = now.Add(time.Second)
	assert.Equal(t, 3*time.Second, c.Elapsed(), "between ticks: as of the last reading")
	ft.c <- time.Time{}
	assert.Eventually(t, func() bool { return c.Elapsed() == 4*time.Second }, 5*time.Second, time.Millisecond, "after a tick")

	c.Stop()
	c.Stop() // a second Stop does nothing
	assert.False(t, c.Coarse())
	now = now.Add(time.Second)
	assert.Equal(t, 5*time.Second, c.Elapsed(), "after Stop: exact")
}

func TestClockNeverTicks(t *testing.T) {
	c := New(nil, 0, nil)
	c.Start()
	defer c.Stop()
	assert.False(t, c.Coarse(), "tick 0: always exact")
	before := c.Elapsed()
	testtime.Sleep(time.Millisecond)
	assert.Greater(t, c.Elapsed(), before)
}
