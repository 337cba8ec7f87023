package depmem

import (
	"cmp"
	"fmt"
	"time"

	"github.com/errown/errown/internal/defaults"
	"go.uber.org/multierr"
	"math"
)

// maxBuckets is the most buckets a window may have.
const maxBuckets = 1000

// Config configures the learned memory. In every field that has a
// default, the zero value means the default: the zero Config learns with
// the defaults below.
type Config struct {
	// Disabled turns learning off: only static declarations count.
	Disabled bool `yaml:"disabled,omitempty"`
	// Window is how far back the memory looks. An edge not observed for
	// a whole window has nothing left in it and may be evicted (see
	// MaxEdges). Default 10m.
	Window time.Duration `yaml:"window,omitempty"`
	// Buckets is how many time slices the window is kept in; old slices
	// are forgotten one at a time; at most 1000. Default 10.
	Buckets int `yaml:"buckets,omitempty"`
	// MinSamples is the least callee failures an edge needs in the window
	// before it is classified. Default 20.
	MinSamples int `yaml:"minSamples,omitempty"`
	// CloseThreshold: P(caller fails | callee fails) at or above it makes
	// an edge fail-close. Default 0.8 (0 means the default).
	CloseThreshold float64 `yaml:"closeThreshold,omitempty"`
	// OpenThreshold: that ratio at or below it makes an edge fail-open.
	// Default 0.2 (0 means the default). For an edge to be fail-open only
	// when the caller never failed with the callee, set a tiny threshold
	// such as 1e-9: the ratio is a count over a count, so a threshold t
	// acts as exactly 0 while the window holds fewer than 1/t callee
	// failures (1e-9: a billion).
	OpenThreshold float64 `yaml:"openThreshold,omitempty" zerofix:"for fail-open only when the caller never failed with the callee write a tiny threshold such as 1e-9"`
	// Hysteresis keeps a classified edge in its kind until its ratio has
	// moved this far back past the threshold it crossed. Default 0.05 (0
	// means the default: set NoHysteresis for none).
	Hysteresis float64 `yaml:"hysteresis,omitempty" zerofix:"for none write noHysteresis: true" zerounless:"noHysteresis"`
	// NoHysteresis removes the hysteresis: an edge changes kind as soon
	// as its ratio crosses a threshold. It cannot be set with a
	// Hysteresis. Default false.
	NoHysteresis bool `yaml:"noHysteresis,omitempty"`
	// MaxEdges bounds the edges the memory tracks at once. When a new
	// edge needs a place and all are taken, the edges not observed for a
	// full Window are evicted to make room; only when none is idle is the
	// new edge's observation dropped, and counted. The metric series
	// emitted are one pair per distinct edge ever tracked, evicted ones
	// included: bounded by the edges the service has, not by MaxEdges.
	// Default 1000.
	MaxEdges int `yaml:"maxEdges,omitempty"`
	// Snapshot keeps the memory across restarts.
	Snapshot SnapshotConfig `yaml:"snapshot,omitempty"`
	// Fleet reads the whole fleet's counts from a Prometheus-compatible
	// API.
	Fleet FleetConfig `yaml:"fleet,omitempty"`
}

// SnapshotConfig configures the snapshot file.
type SnapshotConfig struct {
	// Path of the snapshot file; empty means no snapshot.
	Path string `yaml:"path,omitempty"`
	// Interval between snapshots; one is also written at stop. Default 1m.
	Interval time.Duration `yaml:"interval,omitempty"`
}

// DefaultConfig returns the configuration a zero Config means: learning
// on, no snapshot, no fleet source. The fleet queries' default depends on
// Window and Selector, so it is not in it: see FleetQueries.
func DefaultConfig() Config {
	return Config{
		Window:         10 * time.Minute,
		Buckets:        10,
		MinSamples:     20,
		CloseThreshold: 0.8,
		OpenThreshold:  0.2,
		Hysteresis:     0.05,
		MaxEdges:       1000,
		Snapshot:       SnapshotConfig{Interval: time.Minute},
		Fleet:          FleetConfig{Interval: 30 * time.Second, Timeout: 5 * time.Second},
	}
}

// withDefaults returns c with every zero field set to DefaultConfig's:
// the configuration the memory runs with. With NoHysteresis, the
// hysteresis is kept as given.
func (c Config) withDefaults() Config { return defaults.Fill(c, DefaultConfig()) }

// FleetQueries returns the fleet queries the memory sends: those of
// c.Fleet, or for each one left empty the default query over c's window
// (its default when zero) and selector.
func (c Config) FleetQueries() (failures, joint string) {
	window := c.withDefaults().Window
	query := func(metric string) string {
		return fmt.Sprintf("sum by (%s, %s, %s) (increase(%s{%s}[%ds]))",
			defaults.LabelCallerProcedure, defaults.LabelCalleeService, defaults.LabelCalleeProcedure,
			metric, c.Fleet.Selector, int64(math.Ceil(window.Seconds())))
	}
	return cmp.Or(c.Fleet.FailuresQuery, query("errown_depmem_callee_failures")),
		cmp.Or(c.Fleet.JointQuery, query("errown_depmem_joint_failures"))
}

// Validate reports every invalid value of c, after defaults, each naming
// its key relative to c, e.g. "window: must be positive, got -1s"; a
// caller that nests Config under a key of its own (errown's "memory") puts
// that key in front.
func (c Config) Validate() error {
	fleet := c.Fleet // as given: its checks tell unset queries from set ones
	c = c.withDefaults()
	var err error
	add := func(format string, args ...interface{}) {
		err = multierr.Append(err, fmt.Errorf(format, args...))
	}
	if c.Window < 0 {
		add("window: must be positive, got %v", c.Window)
	}
	if c.Buckets < 1 || c.Buckets > maxBuckets {
		add("buckets: must be between 1 and %d, got %d", maxBuckets, c.Buckets)
	} else if c.Window > 0 && c.Window/time.Duration(c.Buckets) < time.Millisecond {
		add("buckets: window %v in %d buckets is under 1ms a bucket", c.Window, c.Buckets)
	}
	if c.MinSamples < 1 {
		add("minSamples: must be at least 1, got %d", c.MinSamples)
	}
	open, closeAt, h := c.OpenThreshold, c.CloseThreshold, c.Hysteresis
	// Written so that NaN fails every check.
	thresholdsOK := false // both thresholds valid, the open one below
	switch {
	case !(closeAt > 0 && closeAt <= 1):
		add("closeThreshold: must be in (0, 1], got %v", closeAt)
		if !(open > 0 && open < 1) {
			add("openThreshold: must be in (0, 1), got %v", open)
		}
	case !(open > 0 && open < 1):
		add("openThreshold: must be in (0, 1), got %v", open)
	case !(open < closeAt):
		add("openThreshold: must be below closeThreshold %v, got %v", closeAt, open)
	default:
		thresholdsOK = true
	}
	switch {
	case c.NoHysteresis && h != 0:
		add("noHysteresis: must be false when hysteresis is set, got hysteresis %v", h)
	case !(h >= 0 && h < 1): // 0 only with NoHysteresis
		add("hysteresis: must be in (0, 1), got %v", h)
	case thresholdsOK && !(open+h < closeAt-h):
		add("hysteresis: %v closes the gap between openThreshold %v and closeThreshold %v", h, open, closeAt)
	}
	if c.MaxEdges < 1 {
		add("maxEdges: must be at least 1, got %d", c.MaxEdges)
	}
	if c.Snapshot.Interval < 0 {
		add("snapshot.interval: must be positive, got %v", c.Snapshot.Interval)
	}
	return multierr.Append(err, fleet.validate())
}
