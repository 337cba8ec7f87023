package ingress

import (
	"sync/atomic"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/uber-go/tally/v4"
)

// unclaimCause is why a request's correlated failed calls satisfied their
// retry criteria; the strongest wins: retried below, retried here,
// refused here, not retryable.
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

// reason returns c's unclaim Reason, and the refusal of a
// ReasonRefusedHere; "retried below" when no cause was seen.
func (c unclaimCause) reason() (string, wire.Refusal) {
	switch {
	case c.below:
		return ReasonRetriedBelow, wire.RefusedNone
	case c.here:
		return ReasonRetriedHere, wire.RefusedNone
	case c.refused != wire.RefusedNone:
		return ReasonRefusedHere, c.refused
	case c.notRetryable:
		return ReasonNotRetryable, wire.RefusedNone
	}
	return ReasonRetriedBelow, wire.RefusedNone
}

// deniedReasons returns inbound.failed_after_denied's tags by deniedIndex:
// one per wire.Refusal, then per wire.Decline; index 0 is "".
func deniedReasons() []string {
	out := make([]string, 1+len(wire.Refusals())+len(wire.Declines()))
	for _, r := range wire.Refusals() {
		out[deniedIndex(r, wire.DeclineNone)] = r.String()
	}
	for _, d := range wire.Declines() {
		out[deniedIndex(wire.RefusedNone, d)] = d.String()
	}
	return out
}

// denied is inbound.failed_after_denied: its counters, indexed by
// deniedIndex, and the same counts since start for Losses.
type denied struct {
	reasons  []string // deniedReasons
	counters []tally.Counter
	totals   []atomic.Int64
}

func newDenied(scope tally.Scope) *denied {
	d := &denied{reasons: deniedReasons()}
	d.counters = make([]tally.Counter, len(d.reasons))
	d.totals = make([]atomic.Int64, len(d.reasons))
	for i, r := range d.reasons[1:] {
		d.counters[i+1] = scope.Tagged(map[string]string{"reason": r}).Counter("failed_after_denied")
	}
	return d
}

// inc counts one request for the reason at index i, not 0.
func (d *denied) inc(i int) {
	d.counters[i].Inc(1)
	d.totals[i].Add(1)
}

// lost returns the counts since start, the reasons with a request only.
func (d *denied) lost() []inbound.Lost {
	var out []inbound.Lost
	for i := 1; i < len(d.reasons); i++ {
		if n := d.totals[i].Load(); n > 0 {
			out = append(out, inbound.Lost{Reason: d.reasons[i], Requests: n})
		}
	}
	return out
}

// deniedIndex returns the index of why this hop declined a retry: the
// refusal r if any (even on the last attempt), else the decline d, else 0.
func deniedIndex(r wire.Refusal, d wire.Decline) int {
	switch {
	case r != wire.RefusedNone:
		return int(r)
	case d != wire.DeclineNone:
		return len(wire.Refusals()) + int(d)
	}
	return 0
}

// countDenied counts a request that failed after this hop declined to
// retry one of its calls, once per reason.
func (m *Middleware) countDenied(entries []calls.Entry) {
	var seen uint32
	for _, e := range entries {
		if !e.Failed() {
			continue
		}
		i := deniedIndex(e.Refused, e.Declined)
		if i == 0 || i >= len(m.denied.reasons) {
			continue
		}
		if bit := uint32(1) << i; seen&bit == 0 {
			seen |= bit
			m.denied.inc(i)
		}
	}
}

// Reasons of an inbound.Decision (its Reason field).
const (
	ReasonOwnFailure   = "own failure"
	ReasonCoincidental = "coincidental"
	ReasonAtLeastOnce  = "at-least-once"
	ReasonRetriedBelow = "retried below"
	// ReasonRetriedHere: unclaimed, this service retried the failed call
	// itself.
	ReasonRetriedHere = "retried here"
	// ReasonRefusedHere: unclaimed, this service declined to retry the
	// failed call (budget, deadline, pushback, policy); nobody above
	// should either.
	ReasonRefusedHere = "retry refused here"
	// ReasonNotRetryable: unclaimed, the failure is not retryable by
	// nature.
	ReasonNotRetryable = "not retryable"
)
