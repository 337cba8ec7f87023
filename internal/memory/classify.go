package memory

import (
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/ownership"
)

// Classifier says what kind an edge is. Implementations are safe for
// concurrent use and cheap: the inbound middleware calls Kind once per
// failed outbound call of a failed request.
type Classifier interface {
	Kind(ownership.Edge) ownership.EdgeKind
}

// Learner is a Classifier that also learns from the failures it is asked
// about: Memory, and Static over a Memory.
type Learner interface {
	Classifier
	Observer
	// Learn returns the kind of e as Kind would, then counts one failed
	// call on e as Observe would, in one step.
	Learn(e ownership.Edge, callerFailed bool) ownership.EdgeKind
}

// Unknown is a Classifier that knows nothing: every edge is unknown.
type Unknown struct{}

var _ Classifier = Unknown{}

// Kind returns ownership.KindUnknown.
func (Unknown) Kind(ownership.Edge) ownership.EdgeKind { return ownership.KindUnknown }

// Ratio is P(caller failed | callee failed) as counted: joint failures over
// callee failures. It is 0 when there are no callee failures.
func Ratio(calleeFailures, jointFailures int64) float64 {
	if calleeFailures <= 0 {
		return 0
	}
	return float64(jointFailures) / float64(calleeFailures)
}

// Classify returns the kind of an edge with the given counts, given the
// kind it had before (prev). An edge with fewer than MinSamples callee
// failures is unknown. Otherwise a ratio at or above Close is fail-close
// and at or below Open fail-open, and in between unknown; an edge that was
// already fail-close stays so while the ratio is at least
// Close - Hysteresis, and one that was fail-open stays so while the ratio
// is at most Open + Hysteresis, so that an edge near a threshold does not
// flip with every request.
func Classify(prev ownership.EdgeKind, calleeFailures, jointFailures int64, t Thresholds) ownership.EdgeKind {
	if calleeFailures < t.MinSamples || calleeFailures <= 0 {
		return ownership.KindUnknown
	}
	r := Ratio(calleeFailures, jointFailures)
	switch {
	case prev == ownership.KindFailClose && r >= t.Close-t.Hysteresis:
		return ownership.KindFailClose
	case prev == ownership.KindFailOpen && r <= t.Open+t.Hysteresis:
		return ownership.KindFailOpen
	case r >= t.Close:
		return ownership.KindFailClose
	case r <= t.Open:
		return ownership.KindFailOpen
	default:
		return ownership.KindUnknown
	}
}

// Thresholds decide an edge's kind from its counts. See Classify.
type Thresholds struct {
	// Close: a ratio at or above it is fail-close.
	Close float64
	// Open: a ratio at or below it is fail-open.
	Open float64
	// Hysteresis keeps a classified edge in its kind until the ratio has
	// moved this far past the threshold it crossed.
	Hysteresis float64
	// MinSamples is the least number of callee failures in the window
	// before an edge is classified at all.
	MinSamples int64
}

// ThresholdsOf returns the thresholds cfg classifies edges with, defaults
// applied, for Classify.
func ThresholdsOf(cfg depmem.Config) Thresholds {
	cfg = defaults.Fill(cfg, depmem.DefaultConfig())
	return Thresholds{
		Close:      cfg.CloseThreshold,
		Open:       cfg.OpenThreshold,
		Hysteresis: cfg.Hysteresis,
		MinSamples: int64(cfg.MinSamples),
	}
}
