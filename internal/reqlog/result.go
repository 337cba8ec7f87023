package reqlog

import (
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// Result is what errown's retry middleware reports of one logical
// outbound call to the egress middleware, read once the call returned
// (internal/retrier owns and alone writes the state).
type Result struct {
	// Attempts made, the first included; at least one once sealed. Zero
	// is the unrecorded steady state (retrier.Middleware.Run): one
	// successful attempt, nothing else to report.
	Attempts int
	// Refused says why a retry was not attempted, if this hop decided so.
	Refused wire.Refusal
	// Declined says why no more attempts of a failed call were sent when
	// no refusal explains it: an unclaim with attempts left, or the
	// attempt limit.
	Declined wire.Decline
	// Storm folds the attempts' Storms when the retry middleware made
	// them; egress folds a single attempt.
	Storm wire.StormCall
	// Code and Class are the last attempt's (wire.CallResult), already
	// classified for the egress middleware.
	Code  yarpcerrors.Code
	Class wire.Class
	// Claim and NoRetry are the last response's claim and pushback when
	// Class is not wire.ClassOK, read once for both middlewares.
	Claim   ownership.Claim
	NoRetry bool
	// Shed: the callee instance's admission shed the last attempt
	// (wire.ResponseShed); its claim and pushback stop every retry above,
	// though errown's retry may retry it once on another instance.
	Shed bool
	// Route is the peers the attempts went to, when the call may be
	// retried and a recording chooser (package retrypeer) chose; else nil.
	Route *calls.Route
}

// Sent returns the attempts that left the process: at least one.
func (r *Result) Sent() int { return max(r.Attempts, 1) }
