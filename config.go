package errown

import (
	"bytes"
	"fmt"
	"reflect"
	"time"

	"github.com/errown/errown/internal/configkey"
	"github.com/errown/errown/internal/memory"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/ingresslog"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"go.uber.org/multierr"
	"gopkg.in/yaml.v2"
)

// _configKey is the top-level YAML key errown reads its Config from.
const _configKey = "errown"

// Config is errown's configuration, read from YAML under the key "errown".
// Every field is optional, and its zero value means the default the comment
// on it gives; only list items have required fields: a retry policy's
// service and idempotent, a dependency declaration's service and kind.
//
// In YAML, a value written is taken as written or refused, never replaced:
// a key written out with a zero (0, 0s, "" or []) where the zero would
// mean a default, such as "minPerSecond: 0", fails with what it would have
// meant and how to write what was meant ("to disable the floor write
// noFloor: true"); leave the key out for the default. Where a zero means
// what it says (attemptTimeout: 0s is no per-attempt limit, a policy's
// procedure "" every procedure, a snapshot path "" no snapshot) it is
// taken as written.
type Config struct {
	// Headers names the application headers errown reads and writes,
	// under the keys claimHeader, attemptHeader, noRetryHeader, codeHeader
	// and stormHeader (ownership.Headers gives each one's default).
	ownership.Headers `yaml:",inline"`
	// Mode is "enforce" (the default): errown suppresses the retries of
	// unclaimed errors; or "observe": errown computes and sends claims and
	// storm telemetry but retries as if it were not there, so its metrics
	// say what enforce mode would prevent. A retry policy's own mode
	// overrides it for its calls.
	Mode retry.Mode `yaml:"mode,omitempty"`
	// MaxRootProcedures bounds the root procedures with storm metric
	// series of their own; the others share the tag "_other". Default 100.
	MaxRootProcedures int `yaml:"maxRootProcedures,omitempty"`
	// Wiring says what happens when the application starts and errown's
	// middleware reached no dispatcher (ErrNotWired), or a retry policy
	// or dependency declaration names a service the dispatcher does not
	// call (ErrUnknownService): "require" (default) fails start with the
	// fix, "warn" logs it and starts. "strict" is require, and fails start
	// too when errown has no metrics scope (ErrNoMetrics). It does not
	// soften invalid values.
	Wiring string `yaml:"wiring,omitempty"`
	// UnknownEdges says how a failure on an edge of unknown kind counts
	// when deciding a claim: "correlated" (default) or "coincidental".
	UnknownEdges string `yaml:"unknownEdges,omitempty"`
	// RefuseRepeats, when set, refuses before it leaves the process a call
	// a handler makes again to the same callee and procedure after that
	// call failed unclaimed earlier in the same request (a retry loop in
	// the handler): it fails at once with the earlier error's code,
	// unclaimed. Such repeats are counted
	// (egress.repeated_after_unclaimed) and logged whether or not this is
	// set. Default false.
	RefuseRepeats bool `yaml:"refuseRepeats,omitempty"`
	// IncidentWindow is how long after an incident (a call that failed,
	// was retried or refused a retry, or met a storm below) the calls a
	// procedure makes carry errown's attempt header, so that their
	// callees send their storm figures. In the steady state, outside any
	// incident, errown sends no header of its own. Default 10s.
	IncidentWindow time.Duration `yaml:"incidentWindow,omitempty"`
	// Ingress bounds the requests tracked in flight.
	Ingress ingresslog.Config `yaml:"ingress,omitempty"`
	// Edge declares the requests that come from outside the mesh, by
	// transport, procedure or caller: errown neither reads its headers
	// from them nor writes them on their responses (inbound.EdgeConfig).
	// Default: none.
	Edge inbound.EdgeConfig `yaml:"edge,omitempty"`
	// Admission is the service's own load shedding: an adaptive limit on
	// the requests it works on at once, with a short queue, shedding
	// retries first and what it cannot finish in time
	// (inbound.AdmissionConfig). Default: disabled.
	Admission inbound.AdmissionConfig `yaml:"admission,omitempty"`
	// Retry holds the retry policies and budget. With no policy, errown
	// never retries.
	Retry RetryConfig `yaml:"retry,omitempty"`
	// Dependencies declares edge kinds, overriding anything learned.
	// Each names a service the dispatcher calls, or is Recorded.
	Dependencies []depmem.Declaration `yaml:"dependencies,omitempty"`
	// Memory configures the learned dependency memory.
	Memory depmem.Config `yaml:"memory,omitempty"`
}

// RetryConfig is the "retry" section of Config.
type RetryConfig struct {
	// MaxBodyBytes is the largest request body buffered for replay; larger
	// requests are sent once. Default 1 MiB.
	MaxBodyBytes int `yaml:"maxBodyBytes,omitempty"`
	// Budget limits retries per callee service.
	Budget retry.BudgetConfig `yaml:"budget,omitempty"`
	// Overload limits the attempts in flight to a callee with a policy
	// once it shows overload (retry.OverloadConfig).
	Overload retry.OverloadConfig `yaml:"overload,omitempty"`
	// Policies says which outbound calls may be retried, and how.
	Policies []retry.PolicyConfig `yaml:"policies,omitempty"`
}

func (c Config) inboundConfig() inbound.Config {
	return inbound.Config{
		Headers:           c.Headers,
		MaxRootProcedures: c.MaxRootProcedures,
		UnknownEdges:      c.UnknownEdges,
		Ingress:           c.Ingress,
		Edge:              c.Edge,
		Admission:         c.Admission,
	}
}

func (c Config) outboundConfig() outbound.Config {
	return outbound.Config{
		Headers:        c.Headers,
		RefuseRepeats:  c.RefuseRepeats,
		IncidentWindow: c.IncidentWindow,
	}
}

func (c Config) retryConfig() retry.Config {
	return retry.Config{
		Headers:      c.Headers,
		Mode:         c.Mode,
		MaxBodyBytes: c.Retry.MaxBodyBytes,
		Budget:       c.Retry.Budget,
		Overload:     c.Retry.Overload,
		Policies:     c.Retry.Policies,
	}
}

// Validate reports every invalid value in c, each naming its key.
func (c Config) Validate() error {
	_, depErr := memory.NewStatic(c.Dependencies, nil)
	// The header names, the ingress section and the mode are checked once,
	// here; the inbound and retry sections are checked without them.
	in := c.inboundConfig()
	in.Headers, in.Ingress = ownership.Headers{}, ingresslog.Config{}
	re := c.retryConfig()
	re.Headers, re.Mode = ownership.Headers{}, ""
	return multierr.Combine(
		c.Headers.Validate(),
		in.Validate(),
		configkey.Under("ingress", c.Ingress.Validate()),
		configkey.Under("retry", re.Validate()),
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

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ConfigFromYAML reads a Config from a YAML document holding the errown
// section itself (not the whole application config). Unknown keys are
// errors, as are values of the wrong type and zeros written out where
// they would mean a default (see Config); the result is validated.
func ConfigFromYAML(b []byte) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(b)) > 0 {
		var raw interface{}
		if err := yaml.Unmarshal(b, &raw); err != nil {
			return Config{}, fmt.Errorf("errown: config: %w", err)
		}
		if err := multierr.Append(checkYAML("", raw, reflect.TypeOf(c)), explicitZeros(raw)); err != nil {
			return Config{}, fmt.Errorf("errown: config: %w", err)
		}
		if err := yaml.UnmarshalStrict(b, &c); err != nil {
			return Config{}, fmt.Errorf("errown: config: %w", err)
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("errown: config: %w", err)
	}
	return c, nil
}
