package retry

import (
	"fmt"

	"go.uber.org/multierr"
)

// OverloadConfig configures the limit errown keeps, for each callee
// service with a retry policy, on the attempts in flight to it. It holds
// only while the callee is overloaded: while at least Threshold of its
// recent attempts (a decaying share over about the last 64, halving with
// every second without attempts) timed out on the callee's own behalf. A
// refusal (an admission shed, a rate limiter) is no overload evidence:
// its claim and pushback stop the retries above. Meanwhile an attempt
// that timed out cuts the limit to half the attempts in flight, at most
// once per round of attempts, down to MinInFlight; every other attempt
// that ends raises it, by 1/limit while the share is not nil, by one once
// it is, up to MaxInFlight. An attempt over the limit fails at once with
// resource-exhausted, its retry criteria satisfied
// (retry.denied{reason=overload}), and errown retries no attempt that
// timed out or was refused resource-exhausted while the share holds.
//
// It keeps a callee whose capacity dropped from being buried under work
// its callers have given up on: its queue stays near what it can serve,
// and once it recovers the limit grows back within a few rounds.
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
