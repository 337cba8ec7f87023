package wire

import (
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// ParseNoRetry reads a no-retry header value: only the exact NoRetryValue
// asks not to retry; anything else is as if the header were absent.
func ParseNoRetry(v string) bool { return v == NoRetryValue }

// ResponseClaim returns the claim and pushback of a callee's response
// (nil: none) from its canonical (lower-case) headers, indexing the map
// directly rather than have Headers.Get lower-case them.
func ResponseClaim(res *transport.Response, claimHeader, noRetryHeader string) (ownership.Claim, bool) {
	if res == nil {
		return ownership.ClaimMissing, false
	}
	items := res.Headers.Items()
	return ParseClaim(items[claimHeader]), ParseNoRetry(items[noRetryHeader])
}

// ResponseShed reports whether res, an error response with code, claim
// and pushback (ResponseClaim), is an instance admission's shed:
// resource-exhausted, claimed, with pushback, and shedHeader (canonical)
// set to any non-empty reason. The marker alone says nothing: without the
// claim and pushback, a caller not reading it would retry.
func ResponseShed(res *transport.Response, code yarpcerrors.Code, claim ownership.Claim, noRetry bool, shedHeader string) bool {
	if res == nil || code != yarpcerrors.CodeResourceExhausted || claim != ownership.ClaimClaimed || !noRetry {
		return false
	}
	return res.Headers.Items()[shedHeader] != ""
}

// The claim header's values, as Claim.String gives them.
var (
	_claimed   = ownership.ClaimClaimed.String()
	_unclaimed = ownership.ClaimUnclaimed.String()
)

// ParseClaim reads a claim header value. Only the exact values "claimed"
// and "unclaimed" count; anything else is ClaimMissing, as if absent.
func ParseClaim(v string) ownership.Claim {
	switch v {
	case _claimed:
		return ownership.ClaimClaimed
	case _unclaimed:
		return ownership.ClaimUnclaimed
	default:
		return ownership.ClaimMissing
	}
}

// FormatClaim returns the header value to send for c, and false for
// ClaimMissing, which is never sent.
func FormatClaim(c ownership.Claim) (string, bool) {
	switch c {
	case ownership.ClaimClaimed:
		return _claimed, true
	case ownership.ClaimUnclaimed:
		return _unclaimed, true
	default:
		return "", false
	}
}

// NoRetryValue is the value of the no-retry header: the callee asks its
// caller not to retry (pushback).
const NoRetryValue = "true"
