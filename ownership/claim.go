package ownership

import "go.uber.org/yarpc/api/transport"

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

// HeaderValue returns the value to send for c, and false for ClaimMissing,
// which is never sent.
func (c Claim) HeaderValue() (string, bool) {
	switch c {
	case ClaimClaimed:
		return _claimed, true
	case ClaimUnclaimed:
		return _unclaimed, true
	default:
		return "", false
	}
}

// NoRetryValue is the value of the no-retry header: the callee asks its
// caller not to retry (pushback).
const NoRetryValue = "true"

// ParseNoRetry reads a no-retry header value: only the exact NoRetryValue
// asks not to retry; anything else is as if the header were absent.
func ParseNoRetry(v string) bool { return v == NoRetryValue }

// ResponseClaim returns the claim and the pushback of a callee's response
// (nil: none), read from its headers claimHeader and noRetryHeader, both
// canonical (lower case): the map is indexed rather than have
// Headers.Get lower-case them.
func ResponseClaim(res *transport.Response, claimHeader, noRetryHeader string) (Claim, bool) {
	if res == nil {
		return ClaimMissing, false
	}
	items := res.Headers.Items()
	return ParseClaim(items[claimHeader]), ParseNoRetry(items[noRetryHeader])
}

// ParseClaim reads a claim header value. Only the exact values "claimed" and
// "unclaimed" count; anything else (empty, other case, padded, binary, too
// long) is ClaimMissing, exactly as if the header were absent.
func ParseClaim(v string) Claim {
	switch v {
	case _claimed:
		return ClaimClaimed
	case _unclaimed:
		return ClaimUnclaimed
	default:
		return ClaimMissing
	}
}
