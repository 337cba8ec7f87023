package ingress

import (
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/uber-go/tally/v4"
)

// unclaimCause is why the correlated failed calls of a request satisfied
// their retry criteria, the reason of an unclaim: the strongest seen, in
// the order retried below (the callee's error was unclaimed), retried
// here, refused here, not retryable. A decision that says "retried below"
// when nothing retried (a retry the budget refused) sends operators
// looking for retries that never happened.
type unclaimCause struct {
	below, here, notRetryable bool
	refused                   wire.Refusal // the first refusal seen
}

// with returns c with the failed call e added.
func (c unclaimCause) with(e calls.Entry) unclaimCause {
	switch {
	case e.Claim == ownership.ClaimUnclaimed:
		c.below = true
	case e.Attempts > 1:
		c.here = true
	case e.Refused != wire.RefusedNone:
		if c.refused == wire.RefusedNone {
			c.refused = e.Refused
		}
	case !wire.RetryableByNature(e.Code):
		c.notRetryable = true
	}
	return c
}

// reason returns the Reason of an unclaim for c, and the refusal of a
// ReasonRefusedHere. With no cause seen (an unclaim is made only on
// correlated failures whose criteria hold), it says "retried below".
func (c unclaimCause) reason() (string, wire.Refusal) {
	switch {
	case c.below:
		return inbound.ReasonRetriedBelow, wire.RefusedNone
	case c.here:
		return inbound.ReasonRetriedHere, wire.RefusedNone
	case c.refused != wire.RefusedNone:
		return inbound.ReasonRefusedHere, c.refused
	case c.notRetryable:
		return inbound.ReasonNotRetryable, wire.RefusedNone
	}
	return inbound.ReasonRetriedBelow, wire.RefusedNone
}

// failedAfterDenied returns the counters of inbound.failed_after_denied,
// by wire.Refusal (RefusedNone unused): what the refusals cost.
func failedAfterDenied(scope tally.Scope) []tally.Counter {
	out := make([]tally.Counter, len(wire.Refusals())+1)
	for _, r := range wire.Refusals() {
		out[r] = scope.Tagged(map[string]string{"reason": r.String()}).Counter("failed_after_denied")
	}
	return out
}

// countDenied counts a request that failed (a server fault) after this
// hop declined to retry one of its failed calls, once per reason: the
// users' requests a refusal did not save, beside retry.denied, which
// counts the refusals.
func (m *Middleware) countDenied(entries []calls.Entry) {
	var seen uint32
	for _, e := range entries {
		if !e.Failed() || e.Refused == wire.RefusedNone || int(e.Refused) >= len(m.failedAfterDenied) {
			continue
		}
		if bit := uint32(1) << e.Refused; seen&bit == 0 {
			seen |= bit
			m.failedAfterDenied[e.Refused].Inc(1)
		}
	}
}
