package calls

import (
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// Entry is one logical outbound call: all of its attempts together.
type Entry struct {
	Edge ownership.Edge
	// Code is CodeOK for a success and for an application error without
	// a code.
	Code yarpcerrors.Code
	// Class: the callee's failure, its answer (an error blaming the
	// request, or a code-less application error), or OK.
	Class wire.Class
	// Claim is the callee's claim on the final error response.
	Claim ownership.Claim
	// RCS reports whether the retry criteria were satisfied (meaningful
	// only when Code is not CodeOK).
	RCS bool
	// Attempts made, the first one included.
	Attempts int
	// Refused says why this hop declined a retry, if it did; with
	// Attempts, Claim and Code, why RCS holds.
	Refused wire.Refusal
	// Declined says why this hop sent no more attempts when no refusal
	// explains it (an unclaim with attempts left, the attempt limit);
	// with Refused, feeds inbound.failed_after_denied.
	Declined wire.Decline
	// Abandoned: the caller cancelled the call (a fan-out sibling failed
	// first, a hedge lost); its error explains nothing.
	Abandoned bool
	// Route is the peers a failed call's attempts went to, if a peer
	// chooser recorded them (package retrypeer); else nil.
	Route *Route
}

// Failed reports whether the call ended in the callee's failure
// (wire.ClassFailure) and was not abandoned; an answer never failed.
func (e Entry) Failed() bool {
	return e.Class == wire.ClassFailure && !e.Abandoned
}
