package inbound

import (
	"fmt"

	"github.com/errown/errown/internal/configkey"
	"github.com/errown/errown/internal/defaults"

	"github.com/errown/errown/internal/reqlog"
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
	// Headers names the application headers (see ownership.Headers). In
	// errown.Config they are the root's, under its keys claimHeader,
	// attemptHeader, ...: errown sets them here from there.
	ownership.Headers `yaml:"-"`
	// MaxRootProcedures bounds the root procedures with storm metric
	// series of their own; the others share the tag "_other". Default 100.
	MaxRootProcedures int `yaml:"maxRootProcedures,omitempty"`
	// UnknownEdges says how a failure on an edge of unknown kind counts:
	// "correlated" (default) or "coincidental".
	UnknownEdges string `yaml:"unknownEdges,omitempty"`
	// Ingress bounds the requests tracked in flight.
	Ingress IngressConfig `yaml:"ingress,omitempty"`
	// Edge declares the requests that come from outside the mesh.
	Edge EdgeConfig `yaml:"edge,omitempty"`
	// Admission limits the requests the service works on at once.
	Admission AdmissionConfig `yaml:"admission,omitempty"`
}

// AdmissionMode says whether the service sheds load: enforce, observe
// or disabled. Its values are not retry.Mode's: admission has disabled.
type AdmissionMode string

// Values of AdmissionConfig.Mode.
const (
	// AdmissionDisabled serves every request as it comes. (Not "off":
	// YAML reads an unquoted off as false.)
	AdmissionDisabled AdmissionMode = "disabled"
	// AdmissionObserve serves every request as it comes, and counts what
	// enforce would shed (inbound.shed with mode observe).
	AdmissionObserve AdmissionMode = "observe"
	// AdmissionEnforce sheds. The default.
	AdmissionEnforce AdmissionMode = "enforce"
)

// Validate reports whether m is an admission mode errown knows ("" is
// the default, enforce), as the key mode.
func (m AdmissionMode) Validate() error {
	switch m {
	case "", AdmissionDisabled, AdmissionObserve, AdmissionEnforce:
		return nil
	default:
		return fmt.Errorf("mode: must be %q, %q or %q, got %q", AdmissionDisabled, AdmissionObserve, AdmissionEnforce, string(m))
	}
}

// AdmissionConfig configures the service's own load shedding: an
// adaptive limit on the requests it works on at once, learned from each
// answer against the time its caller gave it (it settles at what the
// service can finish in time), with a short queue in front, the newest
// served first. Under pressure, retries (attempt 2 or later) and
// requests of callers in an incident are shed before first attempts; a
// request whose remaining time is shorter than the service time is
// refused before it takes a worker while another is served; a queued
// request whose caller went is dropped. A shed request fails
// resource-exhausted, claimed, with pushback, marked as a shed (the shed
// header, naming the reason): nobody above its caller retries it, and
// its caller retries it at most once, on another instance (package
// retrypeer), never on this one; the callers' overload limits do not
// count it (they count timeouts). The defaults need no tuning.
type AdmissionConfig struct {
	// Mode is "enforce" (the default), "observe" or "disabled".
	Mode AdmissionMode `yaml:"mode,omitempty"`
	// MaxQueue bounds the requests waiting for a worker once the limit is
	// reached; retries and requests of callers in an incident may take
	// only half of it. Default 32.
	MaxQueue int `yaml:"maxQueue,omitempty"`
	// MinLimit is the least the limit falls to. Default 2.
	MinLimit int `yaml:"minLimit,omitempty"`
	// MaxLimit is the most the limit grows to. Default 1000.
	MaxLimit int `yaml:"maxLimit,omitempty"`
}

// withDefaults returns c with every zero field set to DefaultConfig's
// Admission.
func (c AdmissionConfig) withDefaults() AdmissionConfig {
	return defaults.Fill(c, DefaultConfig().Admission)
}

// validate reports every invalid field of c after defaults are applied,
// each under "admission".
func (c AdmissionConfig) validate() error {
	c = c.withDefaults()
	err := configkey.Under("admission", c.Mode.Validate())
	for _, f := range []struct {
		key string
		v   int
	}{{"maxQueue", c.MaxQueue}, {"minLimit", c.MinLimit}, {"maxLimit", c.MaxLimit}} {
		if f.v < 1 {
			err = multierr.Append(err, fmt.Errorf("admission.%s: must be >= 1, got %d", f.key, f.v))
		}
	}
	if c.MinLimit >= 1 && c.MaxLimit < c.MinLimit {
		err = multierr.Append(err, fmt.Errorf("admission.maxLimit: must be >= minLimit (%d), got %d", c.MinLimit, c.MaxLimit))
	}
	return err
}

// EdgeConfig declares the requests that come from outside the mesh, by
// the transport.Request fields yarpc gives inbound middleware: a request
// whose transport, procedure or caller is listed is an edge request.
// errown neither reads its headers from an edge request (an attempt
// header an outside client sends is ignored: the request is a root) nor
// writes them on its response (no claim, no-retry, code or storm header,
// nor those a handler forwarded). The request is otherwise served as any
// root: its storm is recorded, its calls are logged. Default: nothing
// listed, no request is an edge request.
type EdgeConfig struct {
	// Transports are yarpc transport names ("http", "grpc", "tchannel":
	// transport.Request.Transport) whose every request is an edge
	// request: for a service whose inbound for outside clients is the
	// only one on its transport. Default: none.
	Transports []string `yaml:"transports,omitempty"`
	// Procedures are procedure names (transport.Request.Procedure, such
	// as "Orders::get") served to outside clients. Default: none.
	Procedures []string `yaml:"procedures,omitempty"`
	// Callers are caller service names (transport.Request.Caller, HTTP's
	// Rpc-Caller header) of outside clients, such as a gateway. A caller
	// names itself: an outside client that sends an internal caller's
	// name is not an edge request, so declare an edge by transport or
	// procedure where the mesh's callers cannot be trusted. Default: none.
	Callers []string `yaml:"callers,omitempty"`
}

// validate reports every empty name in c.
func (c EdgeConfig) validate() error {
	var err error
	for _, l := range []struct {
		key   string
		names []string
	}{{"transports", c.Transports}, {"procedures", c.Procedures}, {"callers", c.Callers}} {
		for i, n := range l.names {
			if n == "" {
				err = multierr.Append(err, fmt.Errorf("edge.%s[%d]: must not be empty", l.key, i))
			}
		}
	}
	return err
}

// IngressConfig bounds errown's ingress log, its record of each inbound
// request in flight: the inbound middleware opens one when a request
// arrives, the egress middleware appends one entry per outbound call, and
// the inbound middleware decides the request's claim from it when the
// handler returns. The logs are counted in Shards shards, each with its
// share of MaxInFlight; past MaxInFlight a request is served untracked
// (inbound.untracked): errown steps aside rather than queue or refuse it.
type IngressConfig struct {
	// Shards is the number of independently counted shards, a power of
	// two between 1 and 1024. Default 64.
	Shards int `yaml:"shards,omitempty"`
	// MaxInFlight bounds the logs held at once; requests past it are
	// served untracked. Default 100000.
	MaxInFlight int `yaml:"maxInFlight,omitempty"`
}

// DefaultConfig returns the configuration a zero Config means: no edge
// declared, admission enforcing.
func DefaultConfig() Config {
	return Config{
		Headers:           ownership.DefaultHeaders(),
		MaxRootProcedures: 100,
		UnknownEdges:      UnknownCorrelated,
		Ingress:           IngressConfig(reqlog.DefaultConfig()),
		Admission: AdmissionConfig{
			Mode:     AdmissionEnforce,
			MaxQueue: 32,
			MinLimit: 2,
			MaxLimit: 1000,
		},
	}
}

// withDefaults returns c with every zero field set to DefaultConfig's:
// the configuration the middleware runs with.
func (c Config) withDefaults() Config { return defaults.Fill(c, DefaultConfig()) }

// Validate reports every invalid field of c after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	err := c.Headers.Validate()
	err = multierr.Append(err, configkey.Under("ingress", reqlog.Config(c.Ingress).Validate()))
	err = multierr.Append(err, c.Edge.validate())
	err = multierr.Append(err, c.Admission.validate())
	if c.MaxRootProcedures < 0 {
		err = multierr.Append(err, fmt.Errorf("maxRootProcedures: must be >= 0, got %d", c.MaxRootProcedures))
	}
	if c.UnknownEdges != UnknownCorrelated && c.UnknownEdges != UnknownCoincidental {
		err = multierr.Append(err, fmt.Errorf("unknownEdges: must be %q or %q, got %q", UnknownCorrelated, UnknownCoincidental, c.UnknownEdges))
	}
	return err
}
