package reqlog

import (
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// Result is what errown's retry middleware reports of one logical outbound
// call to the egress middleware around it: the call state's part that is
// read once the call has returned (package internal/retrier owns the state
// and is its only writer).
type Result struct {
	// Attempts made, the first one included, at least one once the call's
	// state is sealed. Zero is the steady state, which the retry
	// middleware leaves unrecorded (retrier.Middleware.Run): one attempt
	// that succeeded, with nothing else to report.
	Attempts int
	// Refused says why a retry was not attempted, if this hop decided so.
	Refused wire.Refusal
	// Declined says why no more attempts were sent of a failed call that
	// no refusal explains: the callee's unclaim while the policy had
	// attempts left, or the policy's attempt limit.
	Declined wire.Decline
	// Storm folds the Storms of the call's attempts, when the retry
	// middleware made them; the egress middleware folds a single attempt.
	Storm wire.StormCall
	// Code and Class are the last attempt's, as wire.CallResult
	// gives them: errown's retry middleware classified it, and the
	// egress middleware around it need not again.
	Code  yarpcerrors.Code
	Class wire.Class
	// Claim and NoRetry are what the last attempt's response said, its
	// claim and its pushback, when Class is not wire.ClassOK: read
	// once, for the retry and egress middleware both.
	Claim   ownership.Claim
	NoRetry bool
	// Shed says the last attempt was shed by the callee instance's
	// admission (wire.ResponseShed), when Class is not wire.ClassOK: its
	// claim and pushback stop every retry above; errown's retry
	// middleware may retry it once on another instance.
	Shed bool
	// Route is the peers the call's attempts went to, when the retry
	// middleware put one in their context (a call it may retry) and a
	// peer chooser that records them chose (package retrypeer); else nil.
	Route *calls.Route
}

// Sent returns the attempts that left the process for the call: at least
// one.
func (r *Result) Sent() int { return max(r.Attempts, 1) }
