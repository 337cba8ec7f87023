package ownership

import "go.uber.org/yarpc/yarpcerrors"

// RetryableByNature reports whether an error with code c could succeed if
// the same request were sent again. Errors about the request itself
// (invalid argument, not found, already exists, permission, unauthenticated,
// failed precondition, out of range, unimplemented, data loss) and
// cancellation by the caller are not; CodeOK is not an error and is not
// retryable either.
func RetryableByNature(c yarpcerrors.Code) bool {
	switch c {
	case yarpcerrors.CodeUnknown,
		yarpcerrors.CodeDeadlineExceeded,
		yarpcerrors.CodeResourceExhausted,
		yarpcerrors.CodeAborted,
		yarpcerrors.CodeInternal,
		yarpcerrors.CodeUnavailable:
		return true
	default:
		return false
	}
}

// Refusal is why a retry that was wanted was not attempted.
type Refusal uint8

const (
	// RefusedNone: no retry was refused.
	RefusedNone Refusal = iota
	// RefusedBudget: the callee's retry budget had no room.
	RefusedBudget
	// RefusedDeadline: too little of the deadline remained.
	RefusedDeadline
	// RefusedPushback: the callee asked not to be retried.
	RefusedPushback
)

// String returns "none", "budget", "deadline" or "pushback".
func (r Refusal) String() string {
	switch r {
	case RefusedBudget:
		return "budget"
	case RefusedDeadline:
		return "deadline"
	case RefusedPushback:
		return "pushback"
	default:
		return "none"
	}
}

// CallOutcome is what the retry layer knows of one logical outbound call
// that ended in error.
type CallOutcome struct {
	// Attempts made, the first one included.
	Attempts int
	// Callee is the claim on the last error response.
	Callee Claim
	// Refused says why a wanted retry was not attempted, if one was.
	Refused Refusal
	// Code of the final error.
	Code yarpcerrors.Code
}

// RetryCriteriaSatisfied implements DESIGN.md's RCS rule. It is true when a
// retry was attempted, the callee's error was unclaimed (a retry was already
// spent below), a wanted retry was refused by budget, deadline or pushback,
// or the error is not retryable by nature. It is false when the error was
// retryable in kind but nobody has retried it yet.
func RetryCriteriaSatisfied(o CallOutcome) bool {
	return o.Attempts > 1 ||
		o.Callee == ClaimUnclaimed ||
		o.Refused != RefusedNone ||
		!RetryableByNature(o.Code)
}
