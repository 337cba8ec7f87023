package wire

import (
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// CallOutcome is what the retry layer knows of one logical outbound call
// that ended in error.
type CallOutcome struct {
	// Attempts made, the first one included.
	Attempts int
	// Callee is the claim on the last error response.
	Callee ownership.Claim
	// Refused says why a retry was not attempted, if this hop decided so.
	Refused Refusal
	// Code of the final error.
	Code yarpcerrors.Code
}

// RetryCriteriaSatisfied implements docs/DESIGN.md's RCS rule: a retry was
// attempted, the error was unclaimed (a retry was spent below), this hop
// refused a retry, or the error is not retryable by nature. It is false
// only when nobody has had the chance to retry a retryable error yet.
func RetryCriteriaSatisfied(o CallOutcome) bool {
	return o.Attempts > 1 ||
		o.Callee == ownership.ClaimUnclaimed ||
		o.Refused != RefusedNone ||
		!RetryableByNature(o.Code)
}
