package egresslog

import (
	"context"

	"github.com/errown/errown/ownership"
)

// CallState is how the retry middleware tells the egress middleware around
// it what it did for one logical outbound call. The egress middleware puts a
// fresh CallState in the call's context; the retry middleware fills it in.
// Without a retry middleware it stays zero: one attempt, nothing refused.
type CallState struct {
	// Attempts made, the first one included. Zero means nobody counted,
	// which the egress middleware reads as one.
	Attempts int
	// Refused says why a wanted retry was not attempted.
	Refused ownership.Refusal
}

type callStateKey struct{}

// WithCallState returns a child of ctx that carries s.
func WithCallState(ctx context.Context, s *CallState) context.Context {
	return context.WithValue(ctx, callStateKey{}, s)
}

// CallStateFromContext returns the CallState in ctx, or nil.
func CallStateFromContext(ctx context.Context) *CallState {
	s, _ := ctx.Value(callStateKey{}).(*CallState)
	return s
}
