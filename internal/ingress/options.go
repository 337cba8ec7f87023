package ingress

import (
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/internal/obs"
)

// Option configures a Middleware.
type Option interface {
	apply(*options)
}

type options struct {
	obs.Sinks
	learner   memory.Learner
	stormHook func(inbound.Storm)
	orphans   *calls.Orphans
	now       func() time.Time
	// admissionNow is the clock of admission and of its timed requests'
	// outbound calls (reqlog.Map.TimeCalls).
	admissionNow func() time.Time
	// mint returns a new root key, never 0.
	mint func() uint64
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithSinks logs to s.Logger and sends metrics to s.Scope, each that is
// not nil. Default: obs.Defaults().
func WithSinks(s obs.Sinks) Option { return optionFunc(func(o *options) { o.Set(s) }) }

// WithLearner asks l for the kind of each failed edge of a failed request,
// telling it of the failure (memory.Learner.Learn), and has it observe a
// successful request's failed calls. errown passes memory.Static. Default:
// every edge unknown, nothing learned.
func WithLearner(l memory.Learner) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.learner = l
		}
	})
}

// WithStormHook calls f with every root request that met a storm below,
// on the request's goroutine: f must be quick and concurrency-safe.
// Default: nobody.
func WithStormHook(f func(inbound.Storm)) Option {
	return optionFunc(func(o *options) { o.stormHook = f })
}

// WithOrphans reads from o the failed calls egress could not tie to a
// request (egress.WithOrphans): a request in flight then has unknown
// storm figures. Default: none seen.
func WithOrphans(o *calls.Orphans) Option {
	return optionFunc(func(opts *options) { opts.orphans = o })
}

// WithClock reads the time of each decision and root storm from now, once
// per failed or stormy request (errown passes memory.Memory.Now).
// Default time.Now.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(o *options) {
		if now != nil {
			o.now = now
		}
	})
}
