package retry

import (
	"fmt"
	"math"
	"time"

	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/multierr"
	"go.uber.org/yarpc/yarpcerrors"
)

// Limits checked by Validate.
const (
	// maxMaxAttempts is the largest maxAttempts a policy may set.
	maxMaxAttempts = 10
	// maxBudgetRatio is the largest budget ratio.
	maxBudgetRatio = 1000
)

// defaultRetryableCodes are retried when a policy lists none: the code
// table's (wire.DefaultRetryableCodes), by name.
func defaultRetryableCodes() []string {
	codes := wire.DefaultRetryableCodes()
	names := make([]string, len(codes))
	for i, c := range codes {
		names[i] = c.String()
	}
	return names
}

// Mode says whether errown acts on its decisions.
type Mode string

const (
	// ModeEnforce suppresses the retries of unclaimed errors. The default.
	ModeEnforce Mode = "enforce"
	// ModeObserve retries as if errown were not there (per the policy,
	// blind to claims; neither the budget nor the overload limit holds a
	// retry back) while computing and sending claims and storm telemetry:
	// the figures say what enforce mode would prevent, and the would_...
	// counters what it would refuse.
	ModeObserve Mode = "observe"
)

// Validate reports whether m is a mode errown knows, as the key mode.
func (m Mode) Validate() error { return m.validate("mode") }

func (m Mode) validate(path string) error {
	switch m {
	case "", ModeEnforce, ModeObserve:
		return nil
	default:
		return fmt.Errorf("%s: must be %q or %q, got %q", path, ModeEnforce, ModeObserve, string(m))
	}
}

// Config configures the retry middleware. In every field of Config,
// BudgetConfig, OverloadConfig and PolicyConfig that has a default, the
// zero value means the default.
type Config struct {
	// Mode is enforce (the default) or observe, for every callee whose
	// policy does not set its own. In errown.Config it is the root's
	// mode: errown sets it here from there.
	Mode Mode `yaml:"-"`
	// Headers names the application headers (see ownership.Headers). In
	// errown.Config they are the root's, under its keys claimHeader,
	// attemptHeader, ...: errown sets them here from there.
	ownership.Headers `yaml:"-"`
	// MaxBodyBytes is the largest request body buffered for replay. A call
	// with a larger body is sent once and never retried. Default 1 MiB
	// (0 means the default).
	MaxBodyBytes int `yaml:"maxBodyBytes,omitempty"`
	// Budget limits retries per callee service.
	Budget BudgetConfig `yaml:"budget,omitempty"`
	// Overload limits the attempts in flight per callee service, once the
	// callee shows overload.
	Overload OverloadConfig `yaml:"overload,omitempty"`
	// Policies say which calls may be retried and how. A call that matches
	// no policy is never retried.
	Policies []PolicyConfig `yaml:"policies,omitempty"`
}

// BudgetConfig configures the retry budget kept for each callee service.
// Over the sliding Window, the retries that did not succeed may reach
// Ratio × requests + MinPerSecond × Window (in seconds), or only
// Ratio × requests with NoFloor: a retry that succeeds is refunded.
type BudgetConfig struct {
	// Ratio is the retries allowed as a fraction of original requests to
	// the callee, at most 1000. Default 0.1 (0 means the default: set a tiny ratio such
	// as 0.0001 for a budget that is nearly all floor).
	Ratio float64 `yaml:"ratio,omitempty" zerofix:"for a budget that is nearly all floor write a tiny ratio such as 0.0001"`
	// MinPerSecond is the retries allowed per second whatever the ratio
	// (Finagle's minRetriesPerSec). Default 10 (0 means the default: set
	// NoFloor for no floor).
	MinPerSecond float64 `yaml:"minPerSecond,omitempty" zerofix:"to disable the floor write noFloor: true" zerounless:"noFloor"`
	// NoFloor removes the floor: only Ratio allows retries, so a callee
	// that gets few requests gets few retries. It cannot be set with a
	// MinPerSecond. Default false.
	NoFloor bool `yaml:"noFloor,omitempty"`
	// Window is the sliding window the counts are kept over. Default 10s.
	Window time.Duration `yaml:"window,omitempty"`
	// Disabled turns the budget off: every wanted retry is allowed (naive
	// retries). Default false.
	Disabled bool `yaml:"disabled,omitempty"`
}

// PolicyConfig is the retry policy of one callee service or procedure. A
// policy for an exact procedure wins over the service-wide one; the two are
// not merged, each takes the defaults for what it leaves unset.
type PolicyConfig struct {
	// Service is the exact callee service name. Required.
	Service string `yaml:"service,omitempty"`
	// Procedure is the exact callee procedure; "" (the default) covers
	// every procedure of Service.
	Procedure string `yaml:"procedure,omitempty"`
	// Mode overrides Config.Mode for these calls. Default "": Config.Mode.
	Mode Mode `yaml:"mode,omitempty"`
	// MaxAttempts is the attempts allowed, the first one included; 1 means
	// never retry; at most 10. Default 2.
	MaxAttempts int `yaml:"maxAttempts,omitempty" zerofix:"for no retries write maxAttempts: 1"`
	// RetryableCodes are the yarpc code names (as
	// yarpcerrors.Code.UnmarshalText reads them) of errors worth a retry.
	// Default (also for an empty list) the failures the code table retries
	// by default: [unknown, deadline-exceeded, internal, unavailable]. A
	// retryable error whose code is not listed is not retried here, and
	// nobody above retries it either (RCS: refused for its code). An
	// instance's admission shed is the exception: its caller retries it
	// once on another instance (package retrypeer), whatever the list.
	RetryableCodes []string `yaml:"retryableCodes,omitempty" zerofix:"for no retries write maxAttempts: 1"`
	// InitialBackoff is the backoff ceiling before the first retry; it
	// doubles with each retry up to MaxBackoff, and the backoff is drawn
	// uniformly below the ceiling (full jitter). Default 10ms.
	InitialBackoff time.Duration `yaml:"initialBackoff,omitempty" zerofix:"for practically no backoff write 1ns"`
	// MaxBackoff caps the backoff ceiling. Default 1s.
	MaxBackoff time.Duration `yaml:"maxBackoff,omitempty"`
	// AttemptTimeout, when positive, limits each attempt to the lesser of
	// it and the time remaining. Default 0: no per-attempt limit.
	AttemptTimeout time.Duration `yaml:"attemptTimeout,omitempty"`
	// MinRemaining is the least time left before the deadline, beyond the
	// backoff, to start a retry. Default 5ms.
	MinRemaining time.Duration `yaml:"minRemaining,omitempty" zerofix:"for practically no margin write 1ns"`
	// Idempotent says whether the procedure is safe to send again.
	// Required, with no default: replaying a write is the dangerous
	// guess, so nil is a validation error (set it with new(true) or
	// new(false)). False means never retry, and nobody above retries
	// either (RCS: refused as not idempotent).
	Idempotent *bool `yaml:"idempotent,omitempty"`
}

// DefaultConfig returns the configuration a zero Config means: every
// field errown gives a default, with no policy (so no call is retried).
// A policy's defaults are DefaultPolicyConfig's.
func DefaultConfig() Config {
	return Config{
		Mode:         ModeEnforce,
		Headers:      ownership.DefaultHeaders(),
		MaxBodyBytes: 1 << 20,
		Budget: BudgetConfig{
			Ratio:        0.1,
			MinPerSecond: 10,
			Window:       10 * time.Second,
		},
		Overload: OverloadConfig{
			MaxInFlight: 1000,
			MinInFlight: 1,
			Threshold:   0.5,
		},
	}
}

// DefaultPolicyConfig returns the defaults a PolicyConfig's zero fields
// take. It names no service and leaves Idempotent unset: both are
// required.
func DefaultPolicyConfig() PolicyConfig {
	return PolicyConfig{
		MaxAttempts:    2,
		RetryableCodes: defaultRetryableCodes(),
		InitialBackoff: 10 * time.Millisecond,
		MaxBackoff:     time.Second,
		MinRemaining:   5 * time.Millisecond,
	}
}

// withDefaults returns c with every zero field set to DefaultConfig's,
// each policy's to DefaultPolicyConfig's: the configuration the
// middleware runs with. A budget with NoFloor keeps its MinPerSecond.
func (c Config) withDefaults() Config {
	return defaults.Fill(c, DefaultConfig(), DefaultPolicyConfig())
}

// Validate reports every invalid field of c, after defaults are applied, at
// once. Each error names the yaml key path relative to c and the bad value,
// e.g. "policies[1].maxAttempts: must be between 1 and 10, got 11"; a
// caller that nests Config under a key of its own adds that key in front.
func (c Config) Validate() error {
	c = c.withDefaults()
	err := multierr.Combine(
		c.Headers.Validate(),
		c.Mode.validate("mode"),
		c.Budget.validate("budget"),
		c.Overload.validate("overload"),
	)
	if c.MaxBodyBytes < 0 {
		err = multierr.Append(err, fmt.Errorf("maxBodyBytes: must be >= 0, got %d", c.MaxBodyBytes))
	}
	type key struct{ service, procedure string }
	seen := make(map[key]int, len(c.Policies))
	for i, p := range c.Policies {
		path := fmt.Sprintf("policies[%d]", i)
		err = multierr.Append(err, p.validate(path))
		k := key{p.Service, p.Procedure}
		if j, ok := seen[k]; ok {
			err = multierr.Append(err, fmt.Errorf("%s: duplicate of policies[%d] for service %q, procedure %q", path, j, p.Service, p.Procedure))
			continue
		}
		seen[k] = i
	}
	return err
}

func (b BudgetConfig) validate(path string) error {
	var err error
	if !(b.Ratio >= 0 && b.Ratio <= maxBudgetRatio) { // also rejects NaN
		err = multierr.Append(err, fmt.Errorf("%s.ratio: must be between 0 and %d, got %v", path, maxBudgetRatio, b.Ratio))
	}
	if v := b.MinPerSecond; !(v >= 0 && v <= math.MaxFloat64) { // also rejects NaN and +Inf
		err = multierr.Append(err, fmt.Errorf("%s.minPerSecond: must be >= 0 and finite, got %v", path, v))
	} else if b.NoFloor && v != 0 {
		err = multierr.Append(err, fmt.Errorf("%s.noFloor: must be false when minPerSecond is set, got minPerSecond %v", path, v))
	}
	if b.Window <= 0 {
		err = multierr.Append(err, fmt.Errorf("%s.window: must be > 0, got %v", path, b.Window))
	}
	return err
}

func (p PolicyConfig) validate(path string) error {
	var err error
	if p.Service == "" {
		err = multierr.Append(err, fmt.Errorf("%s.service: must not be empty, got %q", path, p.Service))
	}
	err = multierr.Append(err, p.Mode.validate(path+".mode"))
	if p.MaxAttempts < 1 || p.MaxAttempts > maxMaxAttempts {
		err = multierr.Append(err, fmt.Errorf("%s.maxAttempts: must be between 1 and %d, got %d", path, maxMaxAttempts, p.MaxAttempts))
	}
	for i, name := range p.RetryableCodes {
		var code yarpcerrors.Code
		if e := code.UnmarshalText([]byte(name)); e != nil {
			err = multierr.Append(err, fmt.Errorf("%s.retryableCodes[%d]: unknown yarpc code, got %q", path, i, name))
			continue
		}
		if code == yarpcerrors.CodeOK {
			err = multierr.Append(err, fmt.Errorf("%s.retryableCodes[%d]: must not be ok, got %q", path, i, name))
		}
	}
	if p.InitialBackoff < 0 {
		err = multierr.Append(err, fmt.Errorf("%s.initialBackoff: must be >= 0, got %v", path, p.InitialBackoff))
	}
	if p.MaxBackoff < 0 {
		err = multierr.Append(err, fmt.Errorf("%s.maxBackoff: must be >= 0, got %v", path, p.MaxBackoff))
	}
	if p.MaxBackoff >= 0 && p.InitialBackoff > p.MaxBackoff {
		err = multierr.Append(err, fmt.Errorf("%s.initialBackoff: must be <= maxBackoff (%v), got %v", path, p.MaxBackoff, p.InitialBackoff))
	}
	if p.AttemptTimeout < 0 {
		err = multierr.Append(err, fmt.Errorf("%s.attemptTimeout: must be >= 0, got %v", path, p.AttemptTimeout))
	}
	if p.MinRemaining < 0 {
		err = multierr.Append(err, fmt.Errorf("%s.minRemaining: must be >= 0, got %v", path, p.MinRemaining))
	}
	if p.Idempotent == nil {
		err = multierr.Append(err, fmt.Errorf("%s.idempotent: must be set: true when the procedure is safe to send again, false when it is not", path))
	}
	return err
}
