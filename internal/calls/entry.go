package calls

import (
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// Entry is one logical outbound call: all of its attempts together.
type Entry struct {
	Edge ownership.Edge
	// Code is yarpcerrors.CodeOK for a call that succeeded, and for an
	// application error without a code.
	Code yarpcerrors.Code
	// Class says whether the call ended in the callee's failure, its
	// answer (an error that blames the request, or an application error
	// without a code) or OK.
	Class wire.Class
	// Claim is the callee's claim on the final error response.
	Claim ownership.Claim
	// RCS reports whether the retry criteria were satisfied (only meaningful
	// when Code is not CodeOK).
	RCS bool
	// Attempts made, the first one included.
	Attempts int
	// Refused says why this hop declined a retry of the call, if it did:
	// with Attempts, Claim and Code, why RCS holds (the claim decision's
	// reason).
	Refused wire.Refusal
	// Declined says why this hop sent no more attempts of a failed call
	// that no refusal explains (the callee's unclaim with attempts left,
	// the policy's attempt limit): with Refused, what the request's
	// failure cost at this hop (inbound.failed_after_denied).
	Declined wire.Decline
	// Abandoned calls ended because the caller cancelled them (a sibling
	// of a fan-out that failed first, a hedge that lost): their error is
	// the caller's doing and explains nothing.
	Abandoned bool
	// Route is the peers (instances) the call's attempts went to, on a
	// call that did not succeed whose peers a peer chooser recorded
	// (package retrypeer); else nil.
	Route *Route
}

// Failed reports whether the call ended in the callee's failure (a server
// fault, wire.ClassFailure), and the caller did not abandon it. An
// answer such as not-found never failed.
func (e Entry) Failed() bool {
	return e.Class == wire.ClassFailure && !e.Abandoned
}
