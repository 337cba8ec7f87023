package wire

// Decline is why this hop sent no more attempts of a failed call when no
// Refusal explains it: the error was unclaimed with attempts left (errown
// suppressed the policy's retry), or the attempts were spent. Neither is
// a refusal, but a request failing after either is one this hop did not
// save, counted in inbound.failed_after_denied beside the refusals.
type Decline uint8

const (
	// DeclineNone: nothing declined, or a Refusal says why.
	DeclineNone Decline = iota
	// DeclineUnclaimed: the error was unclaimed and the policy would
	// have retried it: errown suppressed the retry.
	DeclineUnclaimed
	// DeclineAttemptLimit: the call failed on its policy's last attempt.
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
