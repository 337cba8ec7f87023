package inbound

import (
	"time"
)

// Storm is the storm telemetry of one root request (one whose caller runs
// no errown), for operators: what its subtree served with errown's
// decisions and what it would have served with every hop retrying blind to
// claims. In observe mode the blind figures are what happened.
type Storm struct {
	// Time is when it was recorded, as the middleware's clock reads it
	// (WithClock): under errown, to within 100ms.
	Time      time.Time `json:"time"`
	Procedure string    `json:"procedure"`
	// Known is false when a hop below runs no errown or its figures were
	// lost: the other fields are then zero.
	Known bool `json:"known"`
	// Failed reports whether the root request itself failed.
	Failed bool `json:"failed"`
	// Served and Blind count requests in the subtree, the root's own
	// included; Prevented is their difference.
	Served    uint64 `json:"served"`
	Blind     uint64 `json:"blind"`
	Prevented uint64 `json:"prevented"`
	// Retries is how many of Served were retries.
	Retries uint64 `json:"retries"`
	// Radius is the storm radius, the most hops on one call path that
	// spent a retry; BlindRadius is the blind world's.
	Radius      int `json:"radius"`
	BlindRadius int `json:"blindRadius"`
	// Onset reports a request at an incident's onset (or one under way as
	// its procedure's incident window ended): one of its calls went out
	// while this service's procedure was in no incident, so without
	// errown's attempt mark, and a successful subtree below it that
	// served more than one request counted as one. Served and Blind (so
	// Prevented) may then be low; the radii and Retries are exact.
	Onset bool `json:"onset,omitempty"`
}
