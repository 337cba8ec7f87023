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
	// Reason says why: "own failure", "coincidental", "at-least-once" or
	// "retried below".
	Reason string `json:"reason"`
}

// Reasons of a Decision.
const (
	ReasonOwnFailure   = "own failure"
	ReasonCoincidental = "coincidental"
	ReasonAtLeastOnce  = "at-least-once"
	ReasonRetriedBelow = "retried below"
)
