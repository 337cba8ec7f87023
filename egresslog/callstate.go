package egresslog

import (
	"context"

	"github.com/errown/errown/ownership"
)

// CallState is how the retry middleware tells the egress middleware around
// it what it did for one logical outbound call. errown's retry middleware
// returns it (retry.Middleware.CallCounted); for any other inner
// middleware the egress middleware puts a fresh CallState in the call's
// context, for a retry middleware further in to fill in. Without a retry
// middleware it stays zero: one attempt, nothing refused.
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

// NewCallContext returns a child of ctx that carries a fresh CallState, and
// that CallState. It allocates once where WithCallState(ctx,
// &CallState{}) allocates twice: the state lives in the context node.
func NewCallContext(ctx context.Context) (context.Context, *CallState) {
	c := &callContext{Context: ctx}
	return c, &c.state
}

// callContext is a context node carrying a CallState. It answers Value for
// callStateKey and passes everything else (deadline, cancellation, other
// values) to its parent.
type callContext struct {
	context.Context
	state CallState
}

func (c *callContext) Value(key any) any {
	if _, ok := key.(callStateKey); ok {
		return &c.state
	}
	return c.Context.Value(key)
}

// CallStateFromContext returns the CallState in ctx, or nil.
func CallStateFromContext(ctx context.Context) *CallState {
	s, _ := ctx.Value(callStateKey{}).(*CallState)
	return s
}
