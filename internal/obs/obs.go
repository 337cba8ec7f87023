// Package obs holds what each of errown's parts reports to, a logger and a
// metrics scope, with their defaults: the one place for the two options
// every part's constructor takes.
package obs

import (
	"github.com/uber-go/tally/v4"
	"go.uber.org/zap"
)

// Sinks are a part's logger and metrics scope.
type Sinks struct {
	Logger *zap.Logger
	Scope  tally.Scope
}

// Defaults are a logger and a scope that drop everything: zap.NewNop() and
// tally.NoopScope.
func Defaults() Sinks {
	return Sinks{Logger: zap.NewNop(), Scope: tally.NoopScope}
}

// SetLogger logs to l; nil leaves the logger as it is.
func (s *Sinks) SetLogger(l *zap.Logger) {
	if l != nil {
		s.Logger = l
	}
}

// SetScope sends metrics to sc; nil leaves the scope as it is.
func (s *Sinks) SetScope(sc tally.Scope) {
	if sc != nil {
		s.Scope = sc
	}
}

// Set takes from's logger and scope, each that is not nil.
func (s *Sinks) Set(from Sinks) {
	s.SetLogger(from.Logger)
	s.SetScope(from.Scope)
}
