package ownership

// Default application header names. yarpc lowercases header names, so these
// are lower case too. Each is configurable.
const (
	// DefaultClaimHeader carries a Claim on error responses.
	DefaultClaimHeader = "errown-claim"
	// DefaultAttemptHeader carries the attempt number on retried requests.
	DefaultAttemptHeader = "errown-attempt"
	// DefaultNoRetryHeader on an error response asks the caller not to retry.
	DefaultNoRetryHeader = "errown-no-retry"
	// DefaultCodeHeader carries the code of an application error (a Thrift
	// exception's rpc.code) on its response, for transports that drop it
	// (gRPC).
	DefaultCodeHeader = "errown-code"
)

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
