package errown

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/errown/errown/internal/configkey"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/memory"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"go.uber.org/multierr"
	"gopkg.in/yaml.v2"
)

// _configKey is the top-level YAML key errown reads its Config from.
const _configKey = "errown"

// Config is errown's configuration, read from YAML under the key "errown".
// Every field is optional; only list items have required fields: a retry
// policy's service and idempotent, a dependency declaration's service and
// kind. DefaultConfig returns what errown runs with when given nothing;
// in Go, a field left zero means its default there.
//
// Each section is its package's configuration: the inbound and outbound
// middleware's keys at the top level (inline), the retry policies and
// budget under "retry", the dependency memory under "memory". The header
// names and the mode are the root's: errown gives them to every section.
//
// In YAML, a value written is taken as written or refused, never replaced:
// a key written with a zero (0, 0s, "" or []) where DefaultConfig holds
// something else, such as "minPerSecond: 0", fails with what it would have
// meant and how to write what was meant; leave the key out for the
// default. Where the default is the zero (attemptTimeout: 0s, a snapshot
// path "") it is taken as written.
type Config struct {
	// Headers names the application headers errown reads and writes,
	// under the keys claimHeader, attemptHeader, noRetryHeader, codeHeader,
	// stormHeader, rootHeader and shedHeader (ownership.DefaultHeaders
	// gives their defaults).
	ownership.Headers `yaml:",inline"`
	// Mode is "enforce" (the default): errown suppresses the retries of
	// unclaimed errors; or "observe": errown computes and sends claims and
	// storm telemetry but retries as if it were not there, so its metrics
	// say what enforce mode would prevent. A retry policy's own mode
	// overrides it for its calls.
	Mode retry.Mode `yaml:"mode,omitempty"`
	// Wiring says what happens when the application starts and errown's
	// middleware reached no dispatcher (ErrNotWired), or a retry policy
	// or dependency declaration names a service the dispatcher does not
	// call (ErrUnknownService): "require" (default) fails start with the
	// fix, "warn" logs it and starts. "strict" is require, and fails start
	// too when errown has no metrics scope (ErrNoMetrics). It does not
	// soften invalid values.
	Wiring string `yaml:"wiring,omitempty"`
	// InboundConfig configures the inbound middleware, at the top level:
	// maxRootProcedures, unknownEdges, ingress, edge and admission
	// (inbound.Config).
	InboundConfig `yaml:",inline"`
	// OutboundConfig configures the egress middleware, at the top level:
	// refuseRepeats and incidentWindow (outbound.Config).
	OutboundConfig `yaml:",inline"`
	// Retry holds the retry policies and budget (retry.Config). With no
	// policy, errown never retries.
	Retry RetryConfig `yaml:"retry,omitempty"`
	// Dependencies declares edge kinds, overriding anything learned.
	// Each names a service the dispatcher calls, or is Recorded.
	Dependencies []depmem.Declaration `yaml:"dependencies,omitempty"`
	// Memory configures the learned dependency memory (depmem.Config).
	Memory depmem.Config `yaml:"memory,omitempty"`
}

// InboundConfig is the inbound section of Config, inline at its top level.
type InboundConfig = inbound.Config

// OutboundConfig is the outbound section of Config, inline at its top
// level.
type OutboundConfig = outbound.Config

// RetryConfig is the "retry" section of Config. Its Headers and Mode are
// the root's: errown sets them from Config's.
type RetryConfig = retry.Config

// DefaultConfig returns the configuration errown runs with when given
// nothing: every section's DefaultConfig, and no retry policy. A YAML
// errown section is read over it. The sections' header names and mode
// are the root's, so they are left zero there.
func DefaultConfig() Config {
	return Config{
		Headers:        ownership.DefaultHeaders(),
		Mode:           retry.DefaultConfig().Mode,
		Wiring:         WiringRequire,
		InboundConfig:  defaults.Section(InboundConfig{}, inbound.DefaultConfig()),
		OutboundConfig: defaults.Section(OutboundConfig{}, outbound.DefaultConfig()),
		Retry:          defaults.Section(RetryConfig{}, retry.DefaultConfig()),
		Memory:         depmem.DefaultConfig(),
	}
}

// withDefaults returns c with every field left zero set to
// DefaultConfig's, each retry policy's to retry.DefaultPolicyConfig's.
// The sections' header names and mode are left as given: sections gives
// each section the root's where its middleware is built.
func (c Config) withDefaults() Config {
	return defaults.Fill(c, DefaultConfig(), retry.DefaultPolicyConfig())
}

// sections returns the configurations of the inbound, outbound and retry
// middleware: c's sections, given c's header names and mode.
func (c Config) sections() (inbound.Config, outbound.Config, retry.Config) {
	in, out, re := c.InboundConfig, c.OutboundConfig, c.Retry
	in.Headers, out.Headers, re.Headers, re.Mode = c.Headers, c.Headers, c.Headers, c.Mode
	return in, out, re
}

// Validate reports every invalid value in c, each naming its key.
func (c Config) Validate() error {
	_, depErr := memory.NewStatic(c.Dependencies, nil)
	return multierr.Combine(
		c.Headers.Validate(),
		c.InboundConfig.Validate(),
		c.OutboundConfig.Validate(),
		configkey.Under("retry", c.Retry.Validate()),
		depErr,
		configkey.Under("memory", c.Memory.Validate()),
		validWiring(c.Wiring),
		c.Mode.Validate(),
	)
}

// Values of Config.Wiring.
const (
	WiringRequire = "require"
	WiringWarn    = "warn"
	WiringStrict  = "strict"
)

func validWiring(w string) error {
	if w == "" || w == WiringRequire || w == WiringWarn || w == WiringStrict {
		return nil
	}
	return fmt.Errorf("wiring: must be %q, %q or %q, got %q", WiringRequire, WiringWarn, WiringStrict, w)
}

// ConfigFromYAML reads a Config from a YAML document holding the errown
// section itself (not the whole application config), over DefaultConfig:
// the result holds the value errown runs with for every key, written or
// not. Unknown keys are errors, as are values of the wrong type and zeros
// written out where they would mean a default (see Config); the result is
// validated.
func ConfigFromYAML(b []byte) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(b)) > 0 {
		if err := yaml.UnmarshalStrict(b, (*configDoc)(&c)); err != nil {
			return Config{}, fmt.Errorf("errown: config: %w", err)
		}
	}
	c = c.withDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("errown: config: %w", err)
	}
	return c, nil
}

// configDoc is a Config read from YAML: yaml parses the document once,
// and UnmarshalYAML reads the parsed document twice, first as plain
// values for checkYAML, then, if it finds nothing wrong, strictly into
// the Config.
type configDoc Config

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *configDoc) UnmarshalYAML(unmarshal func(interface{}) error) error {
	var raw interface{}
	if err := unmarshal(&raw); err != nil {
		if _, dup := err.(*yaml.TypeError); !dup {
			return err
		}
		// Read as plain values, the only type error is a key written
		// twice in one mapping (the first is kept); the strict read
		// into the Config below reports each again, under its field.
	}
	if err := checkYAML("", raw, reflect.TypeFor[Config](), yamlDefaults()); err != nil {
		return err
	}
	return unmarshal((*Config)(d))
}
