package inbound

import (
	"cmp"
	"fmt"

	"github.com/errown/errown/internal/configkey"
	"github.com/errown/errown/internal/defaults"

	"github.com/errown/errown/ingresslog"
	"github.com/errown/errown/ownership"
	"go.uber.org/multierr"
)

// Values of Config.UnknownEdges.
const (
	// UnknownCorrelated: a failure on an edge of unknown kind may explain
	// the caller's error (the default, as in docs/DESIGN.md).
	UnknownCorrelated = "correlated"
	// UnknownCoincidental: only failures on fail-close edges unclaim.
	UnknownCoincidental = "coincidental"
)

// Config configures the inbound middleware.
type Config struct {
	// Headers names the application headers, under their own keys
	// (claimHeader, attemptHeader, ...): see ownership.Headers.
	ownership.Headers `yaml:",inline"`
	// MaxRootProcedures bounds the root procedures with storm metric
	// series of their own; the others share the tag "_other". Default 100.
	MaxRootProcedures int `yaml:"maxRootProcedures,omitempty"`
	// UnknownEdges says how a failure on an edge of unknown kind counts:
	// "correlated" (default) or "coincidental".
	UnknownEdges string `yaml:"unknownEdges,omitempty"`
	// Ingress bounds the requests tracked in flight.
	Ingress ingresslog.Config `yaml:"ingress,omitempty"`
}

func init() { defaults.Register(Config.withDefaults) }

// withDefaults returns c with every zero field set to its default: the
// configuration the middleware runs with.
func (c Config) withDefaults() Config {
	c.Headers = defaults.Apply(c.Headers)
	c.MaxRootProcedures = cmp.Or(c.MaxRootProcedures, defaults.MaxRootProcedures)
	c.UnknownEdges = cmp.Or(c.UnknownEdges, UnknownCorrelated)
	return c
}

// Validate reports every invalid field of c after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	err := c.Headers.Validate()
	err = multierr.Append(err, configkey.Under("ingress", c.Ingress.Validate()))
	if c.MaxRootProcedures < 0 {
		err = multierr.Append(err, fmt.Errorf("maxRootProcedures: must be >= 0, got %d", c.MaxRootProcedures))
	}
	if c.UnknownEdges != UnknownCorrelated && c.UnknownEdges != UnknownCoincidental {
		err = multierr.Append(err, fmt.Errorf("unknownEdges: must be %q or %q, got %q", UnknownCorrelated, UnknownCoincidental, c.UnknownEdges))
	}
	return err
}
