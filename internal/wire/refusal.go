package wire

// Refusal is why this hop did not retry a retryable error: a deliberate
// decision of the hop nearest the failure, which a retry further up would
// bypass by replaying the whole subtree.
type Refusal uint8

const (
	// RefusedNone: no retry was refused.
	RefusedNone Refusal = iota
	// RefusedBudget: the callee's retry budget had no room.
	RefusedBudget
	// RefusedDeadline: too little of the deadline remained for another
	// whole attempt.
	RefusedDeadline
	// RefusedPushback: the callee asked not to be retried.
	RefusedPushback
	// RefusedNotIdempotent: the edge's policy says the procedure is not
	// safe to send again.
	RefusedNotIdempotent
	// RefusedCode: the error's code is not among the policy's retryable
	// codes.
	RefusedCode
	// RefusedBodyTooLarge: the request body is over the replay cap.
	RefusedBodyTooLarge
	// RefusedOverload: the callee is overloaded (recent attempts timed
	// out or were resource-exhausted): nothing more is added to its queue.
	RefusedOverload

	_refusals // number of Refusal values
)

// Refusals returns every reason a retry can be refused, RefusedNone
// excluded, in order.
func Refusals() []Refusal {
	out := make([]Refusal, 0, _refusals-1)
	for r := RefusedNone + 1; r < _refusals; r++ {
		out = append(out, r)
	}
	return out
}

// String returns the reason's metric tag.
func (r Refusal) String() string {
	switch r {
	case RefusedBudget:
		return "budget"
	case RefusedDeadline:
		return "deadline"
	case RefusedPushback:
		return "pushback"
	case RefusedNotIdempotent:
		return "not-idempotent"
	case RefusedCode:
		return "code"
	case RefusedBodyTooLarge:
		return "body-too-large"
	case RefusedOverload:
		return "overload"
	default:
		return "none"
	}
}
