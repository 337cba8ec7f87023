package memory

import (
	"net/http"
	"time"

	"github.com/errown/errown/internal/obs"
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

// WithSinks logs to s.Logger and sends metrics to s.Scope, each that is
// not nil. Default: obs.Defaults().
func WithSinks(s obs.Sinks) Option { return optionFunc(func(o *options) { o.Set(s) }) }
