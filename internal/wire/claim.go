package wire

import (
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// ParseNoRetry reads a no-retry header value: only the exact NoRetryValue
// asks not to retry; anything else is as if the header were absent.
func ParseNoRetry(v string) bool { return v == NoRetryValue }

// ResponseClaim returns the claim and the pushback of a callee's response
// (nil: none), read from its headers claimHeader and noRetryHeader, both
// canonical (lower case): the map is indexed rather than have
// Headers.Get lower-case them.
func ResponseClaim(res *transport.Response, claimHeader, noRetryHeader string) (ownership.Claim, bool) {
	if res == nil {
		return ownership.ClaimMissing, false
	}
	items := res.Headers.Items()
	return ParseClaim(items[claimHeader]), ParseNoRetry(items[noRetryHeader])
}

// ResponseShed reports whether res, an error response with code, its
// claim and its pushback (ResponseClaim), is a shed by the callee
// instance's admission: resource-exhausted, claimed, with pushback, and
// marked by shedHeader (canonical) with any non-empty value (the reason;
// reasons a newer callee adds count too). The marker alone says nothing:
// without the claim and the pushback that come with it, a caller that
// does not read it would retry the answer.
func ResponseShed(res *transport.Response, code yarpcerrors.Code, claim ownership.Claim, noRetry bool, shedHeader string) bool {
	if res == nil || code != yarpcerrors.CodeResourceExhausted || claim != ownership.ClaimClaimed || !noRetry {
		return false
	}
	return res.Headers.Items()[shedHeader] != ""
}

// ParseClaim reads a claim header value. Only the exact values "claimed" and
// "unclaimed" count; anything else (empty, other case, padded, binary, too
// long) is ClaimMissing, exactly as if the header were absent.
// The claim header's values, as Claim.String gives them.
var (
	_claimed   = ownership.ClaimClaimed.String()
	_unclaimed = ownership.ClaimUnclaimed.String()
)

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
