package memory

import (
	"net/http"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/uber-go/tally/v4"
	"go.uber.org/zap"
)

// Option configures a Memory.
type Option interface {
	apply(*options)
}

type options struct {
	obs.Sinks
	now    func() time.Time // nil: the real clock
	client *http.Client
}

func newOptions(opts []Option) options {
	o := options{
		Sinks:  obs.Defaults(),
		client: &http.Client{},
	}
	for _, opt := range opts {
		opt.apply(&o)
	}
	return o
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithLogger logs to l. Default zap.NewNop().
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(o *options) { o.SetLogger(l) })
}

// WithScope sends metrics to s. Default tally.NoopScope.
func WithScope(s tally.Scope) Option {
	return optionFunc(func(o *options) { o.SetScope(s) })
}

// withClock reads the time from now, exactly at every reading: the
// coarse clock never runs on it (see clock).
func withClock(now func() time.Time) Option {
	return optionFunc(func(o *options) { o.now = now })
}
