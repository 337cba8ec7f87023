package inbound

import (
	"time"
)

// Decision is one claim decision the middleware made, for operators.
type Decision struct {
	// Time is when it was recorded, as the middleware's clock reads it
	// (WithClock): under errown, to within 100ms.
	Time      time.Time `json:"time"`
	Procedure string    `json:"procedure"`
	// Code is the error's yarpc code.
	Code string `json:"code"`
	// Claim is what the error response said: claimed or unclaimed.
	Claim string `json:"claim"`
	// FailedCalls is how many of the request's outbound calls failed.
	FailedCalls int `json:"failedCalls"`
	// Reason says why: claimed for "own failure", "coincidental" or
	// "at-least-once"; unclaimed for "retried below" (the callee's error
	// was unclaimed), "retried here", "retry refused here" (RefusedBy
	// says why) or "not retryable".
	Reason string `json:"reason"`
	// RefusedBy is the reason of a "retry refused here": "budget",
	// "deadline", "pushback", "overload", "code", "not-idempotent",
	// "body-too-large"; else "".
	RefusedBy string `json:"refusedBy,omitempty"`
}

// Reasons of a Decision.
const (
	ReasonOwnFailure   = "own failure"
	ReasonCoincidental = "coincidental"
	ReasonAtLeastOnce  = "at-least-once"
	ReasonRetriedBelow = "retried below"
	// ReasonRetriedHere: unclaimed, this service retried the failed call
	// itself.
	ReasonRetriedHere = "retried here"
	// ReasonRefusedHere: unclaimed, this service declined to retry the
	// failed call (its budget, the deadline, the callee's pushback, its
	// policy): nothing retried it, and nobody above should.
	ReasonRefusedHere = "retry refused here"
	// ReasonNotRetryable: unclaimed, the failure is not retryable by
	// nature.
	ReasonNotRetryable = "not retryable"
)
