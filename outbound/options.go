package outbound

import "github.com/uber-go/tally/v4"

// Option configures a Middleware.
type Option interface {
	apply(*options)
}

type options struct {
	scope tally.Scope
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithScope sends metrics to s. Default tally.NoopScope.
func WithScope(s tally.Scope) Option {
	return optionFunc(func(o *options) {
		if s != nil {
			o.scope = s
		}
	})
}
