package retrier

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/uber-go/tally/v4"
	"go.uber.org/zap"
)

func TestOptionsNilKeepsDefaults(t *testing.T) {
	o := defaultOptions()

	WithSinks(obs.Sinks{Logger: nil}).apply(&o)
	WithSinks(obs.Sinks{Scope: nil}).apply(&o)

	if o.Logger == nil || o.Scope != tally.NoopScope {
		t.Errorf("options = %+v, want the defaults kept", o)
	}
}

func TestOptionsApply(t *testing.T) {
	logger := zap.NewExample()
	scope := tally.NewTestScope("", nil)
	o := defaultOptions()

	for _, opt := range []Option{WithSinks(obs.Sinks{Logger: logger}), WithSinks(obs.Sinks{Scope: scope}), fixedRand(0.25)} {
		opt.apply(&o)
	}

	if o.Logger != logger || o.Scope != scope || o.rand() != 0.25 {
		t.Errorf("options = %+v, want the logger, scope and rand given", o)
	}
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
			if err := sleepContext(tt.ctx, tt.give); !errors.Is(err, tt.want) {
				t.Errorf("sleepContext = %v, want %v", err, tt.want)
			}
			if elapsed := time.Since(start); elapsed > time.Minute {
				t.Errorf("sleepContext took %v", elapsed)
			}
		})
	}
}

func TestSleepContextWaits(t *testing.T) {
	start := time.Now()

	if err := sleepContext(context.Background(), 5*time.Millisecond); err != nil {
		t.Fatalf("sleepContext: %v", err)
	}

	if elapsed := time.Since(start); elapsed < 5*time.Millisecond {
		t.Errorf("slept %v, want at least 5ms", elapsed)
	}
}
