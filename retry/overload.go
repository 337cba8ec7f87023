package retry

import (
	"fmt"

	"go.uber.org/multierr"
)

// OverloadConfig configures the limit errown keeps, for each callee
// service with a retry policy, on the attempts in flight to it. It holds
// only while the callee is overloaded: while at least Threshold of its
// recent attempts (an exponentially weighted share over about the last
// 64, which also halves with every second without attempts) ended
// overloaded, that is timed out on the callee's own behalf (not
// unclaimed). A refusal is not overload evidence: an instance's
// admission shed (resource-exhausted, claimed, with pushback) or a
// callee's own rate limiter holds what the callee can finish, and a
// limit cut for its quick answers would fight it; a shed's claim and
// pushback stop the retries above. Meanwhile an attempt that timed out
// cuts the limit to half
// the attempts then in flight, at most once per round of attempts (one
// started after the last cut), down to MinInFlight; every attempt that
// ends otherwise raises it again, by 1/limit while the share is not nil
// (additive increase), by one once it is, up to MaxInFlight. An attempt
// over the limit while it holds is not sent: it fails at once with
// resource-exhausted, and the call's retry criteria are satisfied
// (retry.denied{reason=overload}), so nobody above retries it; nor does
// errown retry an attempt that timed out or was refused
// resource-exhausted on the callee's behalf while the share holds.
//
// It keeps a callee whose capacity dropped from being buried under a
// queue of work its callers have given up on, which would outlast the
// drop: the callee's queue stays near what it can serve, and once it
// recovers the limit grows back within a few rounds.
type OverloadConfig struct {
	// Disabled turns the limit off: attempts are never held back. Default
	// false.
	Disabled bool `yaml:"disabled,omitempty"`
	// MaxInFlight is the limit's ceiling and start. Default 1000.
	MaxInFlight int `yaml:"maxInFlight,omitempty" zerofix:"to hold no attempt back write disabled: true"`
	// MinInFlight is the limit's floor. Default 1.
	MinInFlight int `yaml:"minInFlight,omitempty"`
	// Threshold is the share of recent attempts that ended overloaded at
	// which the limit holds and is cut, in (0, 1): the share, a decaying
	// mean, never reaches 1. Default 0.5.
	Threshold float64 `yaml:"threshold,omitempty"`
}

// validate reports every invalid field of c, which has its defaults
// applied, under the key path.
func (c OverloadConfig) validate(path string) error {
	var err error
	if c.MinInFlight < 1 {
		err = multierr.Append(err, fmt.Errorf("%s.minInFlight: must be >= 1, got %d", path, c.MinInFlight))
	}
	if c.MaxInFlight < c.MinInFlight {
		err = multierr.Append(err, fmt.Errorf("%s.maxInFlight: must be >= minInFlight (%d), got %d", path, c.MinInFlight, c.MaxInFlight))
	}
	if !(c.Threshold > 0 && c.Threshold < 1) {
		// A share that decays with every attempt not overloaded, and with
		// time, never reaches 1: a threshold of 1 would never hold.
		err = multierr.Append(err, fmt.Errorf("%s.threshold: must be in (0, 1), got %v", path, c.Threshold))
	}
	return err
}
