package outbound

import (
	"fmt"
	"time"

	"github.com/errown/errown/ownership"
	"go.uber.org/multierr"
)

// Config configures the egress middleware.
type Config struct {
	// Headers names the application headers (see ownership.Headers). In
	// errown.Config they are the root's, under its keys claimHeader,
	// attemptHeader, ...: errown sets them here from there.
	ownership.Headers `yaml:"-"`
	// RefuseRepeats refuses a call a handler makes again to the same
	// callee and procedure after that call failed unclaimed earlier in the
	// same request: it fails at once, unclaimed, with the earlier error's
	// code. Such repeats are counted and logged either way. Default false.
	RefuseRepeats bool `yaml:"refuseRepeats,omitempty"`
	// IncidentWindow is how long after an incident (a call that failed,
	// was retried or refused a retry, or met a storm below) the calls on
	// the same edge (the same inbound procedure's calls to the same callee
	// procedure) carry errown's attempt header, so that their callees send
	// their storm figures. Outside an incident
	// a call carries no errown header, and its success response none.
	// errown reads it on its coarse clock (to within 100ms). Default 10s.
	IncidentWindow time.Duration `yaml:"incidentWindow,omitempty"`
}

// DefaultConfig returns the configuration a zero Config means.
func DefaultConfig() Config {
	return Config{
		Headers:        ownership.DefaultHeaders(),
		IncidentWindow: 10 * time.Second,
	}
}

// Validate reports every invalid field of c after defaults are applied.
func (c Config) Validate() error {
	err := c.Headers.Validate()
	if c.IncidentWindow < 0 {
		err = multierr.Append(err, fmt.Errorf("incidentWindow: must be positive, got %v", c.IncidentWindow))
	}
	return err
}
