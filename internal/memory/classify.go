package memory

import (
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/ownership"
)

// Classifier says what kind an edge is. Implementations are concurrency
// safe and cheap: Kind runs once per failed call of a failed request.
type Classifier interface {
	Kind(ownership.Edge) ownership.EdgeKind
}

// Learner is a Classifier that learns from the failures it is asked about
// (Memory, and Static over a Memory).
type Learner interface {
	Classifier
	Observer
	// Learn returns e's kind as Kind would, then counts one failed call
	// as Observe would, in one step.
	Learn(e ownership.Edge, callerFailed bool) ownership.EdgeKind
}

// Unknown is a Classifier that knows nothing: every edge is unknown.
type Unknown struct{}

var _ Classifier = Unknown{}

// Kind returns ownership.KindUnknown.
func (Unknown) Kind(ownership.Edge) ownership.EdgeKind { return ownership.KindUnknown }

// Ratio is P(caller failed | callee failed): joint over callee failures,
// 0 when there are none.
func Ratio(calleeFailures, jointFailures int64) float64 {
	if calleeFailures <= 0 {
		return 0
	}
	return float64(jointFailures) / float64(calleeFailures)
}

// Classify returns an edge's kind from its counts and previous kind prev.
// Under MinSamples callee failures it is unknown; else a ratio at or above
// Close is fail-close, at or below Open fail-open, between unknown. With
// hysteresis, a fail-close edge stays so down to Close - Hysteresis and a
// fail-open one up to Open + Hysteresis, so an edge near a threshold does
// not flip per request.
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
	// Hysteresis keeps a classified edge in its kind until the ratio
	// moved this far past the threshold it crossed.
	Hysteresis float64
	// MinSamples is the callee failures in the window needed to
	// classify at all.
	MinSamples int64
}

// ThresholdsOf returns cfg's thresholds, defaults applied.
func ThresholdsOf(cfg depmem.Config) Thresholds {
	cfg = defaults.Fill(cfg, depmem.DefaultConfig())
	return Thresholds{
		Close:      cfg.CloseThreshold,
		Open:       cfg.OpenThreshold,
		Hysteresis: cfg.Hysteresis,
		MinSamples: int64(cfg.MinSamples),
	}
}
