package ownership

// Claim is the ownership state of an error response.
type Claim uint8

const (
	// ClaimMissing: the callee sent no claim, or one errown cannot read.
	ClaimMissing Claim = iota
	// ClaimClaimed: the failure began at the callee; its caller may retry.
	ClaimClaimed
	// ClaimUnclaimed: the failure began further down and a retry was already
	// spent on it (or deliberately refused); nobody above retries again.
	ClaimUnclaimed
)

const (
	_claimed   = "claimed"
	_unclaimed = "unclaimed"
	_missing   = "missing"
)

// String returns the header value of c ("claimed", "unclaimed") or
// "missing".
func (c Claim) String() string {
	switch c {
	case ClaimClaimed:
		return _claimed
	case ClaimUnclaimed:
		return _unclaimed
	default:
		return _missing
	}
}
