package outbound

import "github.com/errown/errown/ownership"

// Config configures the egress middleware.
type Config struct {
	// ClaimHeader is the response header carrying the callee's claim.
	// Default "errown-claim".
	ClaimHeader string `yaml:"claimHeader,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.ClaimHeader == "" {
		c.ClaimHeader = ownership.DefaultClaimHeader
	}
	return c
}

// Validate reports every invalid field of c after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	return ownership.ValidateHeaderName("claimHeader", c.ClaimHeader)
}
