package tracing

import (
	"context"

	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.opentelemetry.io/otel/attribute"
)

// Attempt tags the server span of a request that is a retry with its
// attempt number n.
func Attempt(ctx context.Context, n int) {
	if s, ok := spanFrom(ctx); ok {
		s.setTags(attribute.Int(TagAttempt, n))
	}
}

// Claim tags the server span of an error response with the claim errown
// decided and why (inbound's Reason... constants).
func Claim(ctx context.Context, claim ownership.Claim, reason string) {
	s, ok := spanFrom(ctx)
	if !ok {
		return
	}
	s.setTags(attribute.String(TagClaim, claim.String()), attribute.String(TagClaimReason, reason))
}

// Storm tags the server span of a root request with its storm figures f,
// or says they are unknown.
func Storm(ctx context.Context, f wire.Figures) {
	s, ok := spanFrom(ctx)
	if !ok {
		return
	}
	if !f.Known {
		s.setTags(attribute.Bool(TagStormKnown, false))
		return
	}
	st := f.Storm
	s.setTags(
		attribute.Int64(TagStormServed, int64(st.Served)),
		attribute.Int64(TagStormBlind, int64(st.Blind)),
		attribute.Int64(TagStormPrevented, int64(st.Prevented())),
		attribute.Int64(TagStormRetries, int64(st.Retries)),
		attribute.Int(TagStormRadius, int(st.Radius)),
		attribute.Int(TagStormBlindRad, int(st.BlindRadius)),
	)
}

// Shed tags the server span of a request admission shed with the reason,
// or in observe mode (shed false) one it would have shed, with the mode.
func Shed(ctx context.Context, reason string, observed bool) {
	s, ok := spanFrom(ctx)
	if !ok {
		return
	}
	s.setTags(withMode(observed, attribute.String(TagShed, reason))...)
}
