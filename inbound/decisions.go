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
	// Peers are the instances the attempts of the request's failed calls
	// went to, where a peer chooser recorded them (package retrypeer): one
	// entry per such call, at most four of them, each with at most its
	// attempts' peers. Empty without retrypeer.
	Peers []CallPeers `json:"peers,omitempty"`
}

// CallPeers is the peers (instances) one failed call's attempts went to,
// oldest first, as peer.Identifier names them ("127.0.0.1:8080"): the
// latest three of a call that made more attempts.
type CallPeers struct {
	Service   string   `json:"service"`
	Procedure string   `json:"procedure"`
	Peers     []string `json:"peers"`
}
