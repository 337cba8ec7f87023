package egress

import (
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/obs"
	"go.uber.org/yarpc/api/middleware"
)

// Option configures a Middleware.
type Option interface {
	apply(*options)
}

type options struct {
	obs.Sinks
	inner   middleware.UnaryOutbound
	orphans *calls.Orphans
	now     func() time.Time
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithSinks logs to s.Logger and sends metrics to s.Scope, each that is
// not nil. Default: obs.Defaults().
func WithSinks(s obs.Sinks) Option { return optionFunc(func(o *options) { o.Set(s) }) }

// WithInner runs mw inside the egress middleware: each call goes to mw
// rather than straight to the outbound, and a retry middleware there
// (package internal/retrier) reports its attempts and refusals. It is
// yarpc.UnaryOutboundMiddleware(egress, mw) without the per-call
// allocations of yarpc's chain; with errown's own *retrier.Middleware it
// allocates nothing. Default: none.
func WithInner(mw middleware.UnaryOutbound) Option {
	return optionFunc(func(o *options) { o.inner = mw })
}

// WithOrphans counts in o every failed call made outside any tracked
// request (a handler that called with a fresh context), so the inbound
// middleware given the same o marks the storm telemetry of the requests
// in flight meanwhile as unknown. Default: not counted.
func WithOrphans(o *calls.Orphans) Option {
	return optionFunc(func(opts *options) { opts.orphans = o })
}

// WithClock reads the time of the incidents that mark a caller procedure's
// calls (outbound.Config.IncidentWindow) from now. Default time.Now.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(o *options) { o.now = now })
}
