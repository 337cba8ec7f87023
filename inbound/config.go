package inbound

import (
	"fmt"
	"github.com/errown/errown/internal/configkey"

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
	// ClaimHeader is the response header carrying the claim. Default
	// "errown-claim".
	ClaimHeader string `yaml:"claimHeader,omitempty"`
	// NoRetryHeader is the response header asking the caller not to retry.
	// Default "errown-no-retry".
	NoRetryHeader string `yaml:"noRetryHeader,omitempty"`
	// CodeHeader is the response header carrying the code of an application
	// error (a Thrift exception's rpc.code). Default "errown-code".
	CodeHeader string `yaml:"codeHeader,omitempty"`
	// AttemptHeader is the request header carrying the attempt number.
	// Default "errown-attempt". A request without it comes from a caller
	// without errown: a root, whose storm telemetry this service reports.
	AttemptHeader string `yaml:"attemptHeader,omitempty"`
	// StormHeader is the response header carrying storm telemetry.
	// Default "errown-storm".
	StormHeader string `yaml:"stormHeader,omitempty"`
	// MaxRootProcedures bounds the root procedures with storm metric
	// series of their own; the others share the tag "_other". Default 100.
	MaxRootProcedures int `yaml:"maxRootProcedures,omitempty"`
	// UnknownEdges says how a failure on an edge of unknown kind counts:
	// "correlated" (default) or "coincidental".
	UnknownEdges string `yaml:"unknownEdges,omitempty"`
	// Ingress bounds the requests tracked in flight.
	Ingress ingresslog.Config `yaml:"ingress,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.ClaimHeader == "" {
		c.ClaimHeader = ownership.DefaultClaimHeader
	}
	if c.NoRetryHeader == "" {
		c.NoRetryHeader = ownership.DefaultNoRetryHeader
	}
	if c.CodeHeader == "" {
		c.CodeHeader = ownership.DefaultCodeHeader
	}
	if c.AttemptHeader == "" {
		c.AttemptHeader = ownership.DefaultAttemptHeader
	}
	if c.StormHeader == "" {
		c.StormHeader = ownership.DefaultStormHeader
	}
	if c.MaxRootProcedures == 0 {
		c.MaxRootProcedures = DefaultMaxRootProcedures
	}
	if c.UnknownEdges == "" {
		c.UnknownEdges = UnknownCorrelated
	}
	return c
}

// Validate reports every invalid field of c after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	err := multierr.Combine(
		ownership.ValidateHeaderName("claimHeader", c.ClaimHeader),
		ownership.ValidateHeaderName("noRetryHeader", c.NoRetryHeader),
		ownership.ValidateHeaderName("codeHeader", c.CodeHeader),
		ownership.ValidateHeaderName("attemptHeader", c.AttemptHeader),
		ownership.ValidateHeaderName("stormHeader", c.StormHeader),
	)
	err = multierr.Append(err, configkey.Under("ingress", c.Ingress.Validate()))
	if c.MaxRootProcedures < 0 {
		err = multierr.Append(err, fmt.Errorf("maxRootProcedures: must be >= 0, got %d", c.MaxRootProcedures))
	}
	if c.UnknownEdges != UnknownCorrelated && c.UnknownEdges != UnknownCoincidental {
		err = multierr.Append(err, fmt.Errorf("unknownEdges: must be %q or %q, got %q", UnknownCorrelated, UnknownCoincidental, c.UnknownEdges))
	}
	return err
}
