package retrier

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/errown/errown/internal/obs"
)

// Option configures a Middleware.
type Option interface {
	apply(*options)
}

type options struct {
	obs.Sinks
	now    func() time.Time
	clock  func() time.Time // the budgets' now; nil for the real clock
	ticker ticker           // the budgets' coarse clock's ticks
	sleep  func(context.Context, time.Duration) error
	rand   func() float64
	// plainBudget: the budgets refund no retry (PlainBudget)
	plainBudget bool
}

func defaultOptions() options {
	return options{
		Sinks:  obs.Defaults(),
		now:    time.Now,
		ticker: realTicker,
		sleep:  sleepContext,
		rand:   rand.Float64,
	}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithSinks logs to s.Logger and sends metrics to s.Scope, each that is
// not nil. Default: obs.Defaults().
func WithSinks(s obs.Sinks) Option { return optionFunc(func(o *options) { o.Set(s) }) }

// sleepContext waits for d or ctx, returning ctx.Err() if ctx ends first.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// PlainBudget makes the budgets refund no retry that succeeds: a plain
// retry budget (Finagle's, 10% per hop), the storm lab's peer of errown's.
func PlainBudget() Option { return optionFunc(func(o *options) { o.plainBudget = true }) }
