package outbound

import (
	"github.com/errown/errown/ownership"
	"go.uber.org/multierr"
)

// Config configures the egress middleware.
type Config struct {
	// ClaimHeader is the response header carrying the callee's claim.
	// Default "errown-claim".
	ClaimHeader string `yaml:"claimHeader,omitempty"`
	// NoRetryHeader is the response header by which a callee asks not to
	// be retried (value "true"). It is read on every error response,
	// whether or not the call has a retry policy. Default
	// "errown-no-retry".
	NoRetryHeader string `yaml:"noRetryHeader,omitempty"`
	// CodeHeader is the response header carrying the code of an
	// application error, read when the transport dropped it (gRPC).
	// Default "errown-code".
	CodeHeader string `yaml:"codeHeader,omitempty"`
	// AttemptHeader is the request header carrying the attempt number,
	// sent as "1" on every first attempt: it tells the callee that an
	// errown caller reads its storm telemetry. Default "errown-attempt".
	AttemptHeader string `yaml:"attemptHeader,omitempty"`
	// StormHeader is the response header carrying the callee's storm
	// telemetry. Default "errown-storm".
	StormHeader string `yaml:"stormHeader,omitempty"`
	// RefuseRepeats refuses a call a handler makes again to the same
	// callee and procedure after that call failed unclaimed earlier in the
	// same request: it fails at once, unclaimed, with the earlier error's
	// code. Such repeats are counted and logged either way. Default false.
	RefuseRepeats bool `yaml:"refuseRepeats,omitempty"`
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
	return c
}

// Validate reports every invalid field of c after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	return multierr.Combine(
		ownership.ValidateHeaderName("claimHeader", c.ClaimHeader),
		ownership.ValidateHeaderName("noRetryHeader", c.NoRetryHeader),
		ownership.ValidateHeaderName("codeHeader", c.CodeHeader),
		ownership.ValidateHeaderName("attemptHeader", c.AttemptHeader),
		ownership.ValidateHeaderName("stormHeader", c.StormHeader),
	)
}
