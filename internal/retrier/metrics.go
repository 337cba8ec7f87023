package retrier

import (
	"github.com/errown/errown/internal/wire"
	"github.com/uber-go/tally/v4"
)

// Metric names and tags; doc.go describes each counter.
const (
	_subScope         = "retry"
	_metricCalls      = "calls"
	_metricAttempts   = "attempts"
	_metricSuppressed = "suppressed"
	_metricWould      = "would_suppress"
	_metricWouldOver  = "would_overload"
	_metricWouldBudg  = "would_budget"
	_metricWouldSucc  = "would_suppress_succeeded"
	_metricPrevented  = "prevented"
	_metricDenied     = "denied"
	_metricForeign    = "foreign_attempts"
	_metricLate       = "late_attempts"
	_metricStarved    = "starved_by_hedges"

	_tagCallee = "callee"
	_tagReason = "reason"
)

// metrics are the counters of one callee service, allocated up front so the
// request path only increments.
type metrics struct {
	calls      tally.Counter
	attempts   tally.Counter
	suppressed tally.Counter
	would      tally.Counter // observe mode: suppressions errown did not make
	// observe mode: attempts the overload limit would have held back and
	// retries it would have refused
	wouldOverload tally.Counter
	// observe mode: retries the budget would have refused
	wouldBudget tally.Counter
	// observe mode: calls that succeeded on a retry enforce mode would
	// have held back (unclaimed, overload or budget): what enforce loses
	wouldSucceeded tally.Counter
	prevented      tally.Counter   // requests this hop's suppressions prevented
	denied         []tally.Counter // by Refusal; RefusedNone unused
	// retries of failures refused because hedges took what they needed,
	// by starvedReason
	starved [_starvedReasons]tally.Counter
}

// starvedReason is what hedges took from a retry of a failure.
type starvedReason uint8

const (
	// starvedBudget: the budget refused the retry, and would not have
	// without the hedges' withdrawals in its window.
	starvedBudget starvedReason = iota
	// starvedAttempts: errown's retry found the attempts spent by a
	// hedge that reached the innermost step after its attempt ended.
	starvedAttempts
	_starvedReasons
)

// String returns the reason's metric tag.
func (r starvedReason) String() string {
	if r == starvedBudget {
		return "budget"
	}
	return "attempts"
}

func newMetrics(scope tally.Scope, service string) *metrics {
	s := scope.SubScope(_subScope).Tagged(map[string]string{_tagCallee: service})
	m := &metrics{
		calls:          s.Counter(_metricCalls),
		attempts:       s.Counter(_metricAttempts),
		suppressed:     s.Counter(_metricSuppressed),
		would:          s.Counter(_metricWould),
		wouldOverload:  s.Counter(_metricWouldOver),
		wouldBudget:    s.Counter(_metricWouldBudg),
		wouldSucceeded: s.Counter(_metricWouldSucc),
		prevented:      s.Counter(_metricPrevented),
		denied:         make([]tally.Counter, len(wire.Refusals())+1),
	}
	for _, r := range wire.Refusals() {
		m.denied[r] = s.Tagged(map[string]string{_tagReason: r.String()}).Counter(_metricDenied)
	}
	for r := range _starvedReasons {
		m.starved[r] = s.Tagged(map[string]string{_tagReason: r.String()}).Counter(_metricStarved)
	}
	return m
}
