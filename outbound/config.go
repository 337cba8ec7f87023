package outbound

import "github.com/errown/errown/ownership"

// Config configures the egress middleware.
type Config struct {
	// Headers names the application headers, under their own keys
	// (claimHeader, attemptHeader, ...): see ownership.Headers.
	ownership.Headers `yaml:",inline"`
	// RefuseRepeats refuses a call a handler makes again to the same
	// callee and procedure after that call failed unclaimed earlier in the
	// same request: it fails at once, unclaimed, with the earlier error's
	// code. Such repeats are counted and logged either way. Default false.
	RefuseRepeats bool `yaml:"refuseRepeats,omitempty"`
}

// WithDefaults returns c with every zero field set to its default: the
// configuration the middleware runs with.
func (c Config) WithDefaults() Config {
	c.Headers = c.Headers.WithDefaults()
	return c
}

// Validate reports every invalid field of c after defaults are applied.
func (c Config) Validate() error {
	return c.Headers.Validate()
}
