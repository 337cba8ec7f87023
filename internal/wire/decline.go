package wire

// Decline is why this hop sent no more attempts of a failed call that no
// Refusal explains: the callee's error was unclaimed while this hop's
// policy had attempts left (errown suppressed the retry the policy would
// have sent), or the policy's attempts were all spent. Neither is a
// refusal (nothing is refused that the policy asked for, or ownership
// already holds), but a request that failed after either is a user's
// request this hop did not save, which inbound.failed_after_denied counts
// beside the refusals.
type Decline uint8

const (
	// DeclineNone: nothing declined, or a Refusal says why.
	DeclineNone Decline = iota
	// DeclineUnclaimed: the callee's error was unclaimed and the policy
	// would have retried it (attempts left, a retryable code, idempotent,
	// the body replayable, no pushback): errown suppressed the retry.
	DeclineUnclaimed
	// DeclineAttemptLimit: the call failed on the last attempt its policy
	// allows.
	DeclineAttemptLimit

	_declines // number of Decline values
)

// Declines returns every Decline, DeclineNone excluded, in order.
func Declines() []Decline {
	out := make([]Decline, 0, _declines-1)
	for d := DeclineNone + 1; d < _declines; d++ {
		out = append(out, d)
	}
	return out
}

// String returns the decline's metric tag: "none", "unclaimed" or
// "attempt-limit", none of them a Refusal's.
func (d Decline) String() string {
	switch d {
	case DeclineUnclaimed:
		return "unclaimed"
	case DeclineAttemptLimit:
		return "attempt-limit"
	default:
		return "none"
	}
}
