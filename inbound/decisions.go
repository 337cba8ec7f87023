package inbound

import (
	"sync"
	"time"
)

// _recentDecisions is how many claim decisions a Middleware remembers for
// operators.
const _recentDecisions = 64

// Decision is one claim decision the middleware made, for operators.
type Decision struct {
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

// decisions is a ring of the latest decisions. Only error responses write
// to it, never the success path.
type decisions struct {
	mu   sync.Mutex
	ring [_recentDecisions]Decision
	next int
	n    int
}

func (d *decisions) add(dec Decision) {
	d.mu.Lock()
	d.ring[d.next] = dec
	d.next = (d.next + 1) % len(d.ring)
	d.n = min(d.n+1, len(d.ring))
	d.mu.Unlock()
}

// list returns the decisions held, newest first.
func (d *decisions) list() []Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Decision, 0, d.n)
	for i := 1; i <= d.n; i++ {
		out = append(out, d.ring[(d.next-i+len(d.ring))%len(d.ring)])
	}
	return out
}
