package retrier

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/zap"
)

func TestOptionsNilKeepsDefaults(t *testing.T) {
	o := defaultOptions()

	WithSinks(obs.Sinks{Logger: nil}).apply(&o)
	WithSinks(obs.Sinks{Scope: nil}).apply(&o)

	assert.NotNil(t, o.Logger, "options = %+v, want the default logger kept", o)
	assert.True(t, o.Scope == tally.NoopScope, "options = %+v, want the default scope kept", o)
}

func TestOptionsApply(t *testing.T) {
	logger := zap.NewExample()
	scope := tally.NewTestScope("", nil)
	o := defaultOptions()

	for _, opt := range []Option{WithSinks(obs.Sinks{Logger: logger}), WithSinks(obs.Sinks{Scope: scope}), fixedRand(0.25)} {
		opt.apply(&o)
	}

	assert.Same(t, logger, o.Logger, "options = %+v, want the logger given", o)
	assert.True(t, o.Scope == scope, "options = %+v, want the scope given", o)
	assert.Equal(t, 0.25, o.rand(), "options = %+v, want the rand given", o)
}

func TestSleepContext(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		give time.Duration
		want error
	}{
		{name: "no wait", ctx: context.Background(), give: 0, want: nil},
		{name: "negative wait", ctx: context.Background(), give: -time.Second, want: nil},
		{name: "short wait", ctx: context.Background(), give: time.Millisecond, want: nil},
		{name: "cancelled, no wait", ctx: cancelled, give: 0, want: context.Canceled},
		{name: "cancelled, long wait", ctx: cancelled, give: time.Hour, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			assert.ErrorIs(t, sleepContext(tt.ctx, tt.give), tt.want, "sleepContext")
			assert.LessOrEqual(t, time.Since(start), time.Minute, "sleepContext took")
		})
	}
}

func TestSleepContextWaits(t *testing.T) {
	start := time.Now()

	require.NoError(t, sleepContext(context.Background(), 5*time.Millisecond), "sleepContext")

	assert.GreaterOrEqual(t, time.Since(start), 5*time.Millisecond, "slept")
}

// withClock replaces the budgets' and the deadline check's clock and the
// wait between attempts. sleep must return ctx.Err() once ctx is done,
// and nil once d has passed.
func withClock(now func() time.Time, sleep func(context.Context, time.Duration) error) Option {
	return optionFunc(func(o *options) {
		o.now = now
		o.clock = now
		o.sleep = sleep
	})
}

// withTicker replaces the ticker of the budgets' coarse clock.
func withTicker(t ticker) Option {
	return optionFunc(func(o *options) { o.ticker = t })
}

// withRand replaces the jitter source, which must return values in [0, 1)
// and be safe for concurrent use.
func withRand(f func() float64) Option {
	return optionFunc(func(o *options) { o.rand = f })
}
