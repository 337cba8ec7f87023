package reqlog

import (
	"context"

	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// CallState is how the retry middleware tells the egress middleware around
// it what it did for one logical outbound call. When the egress
// middleware wraps errown's retry middleware itself, it hands it a Sink;
// for any other inner middleware it puts a fresh CallState in the call's
// context, for a retry middleware further in to fill in. Without a retry
// middleware it stays zero: one attempt, nothing refused.
type CallState struct {
	// Attempts made, the first one included. Zero means nobody counted,
	// which the egress middleware reads as one.
	Attempts int
	// Refused says why a retry was not attempted, if this hop decided so.
	Refused ownership.Refusal
	// Storm folds the Storms of the call's attempts, when the retry
	// middleware made them; the egress middleware folds a single attempt.
	Storm ownership.StormCall
	// Code and Class are the last attempt's, as ownership.CallResult
	// gives them, when Classified: the retry middleware classified it,
	// and the egress middleware need not again.
	Code       yarpcerrors.Code
	Class      ownership.Class
	Classified bool
	// Claim and NoRetry are what the last attempt's response said, its
	// claim and its pushback, when Classified and Class is not
	// ownership.ClassOK: read once, for the retry and egress middleware
	// both.
	Claim   ownership.Claim
	NoRetry bool
}

type callStateKey struct{}

// WithCallState returns a child of ctx that carries s.
func WithCallState(ctx context.Context, s *CallState) context.Context {
	return context.WithValue(ctx, callStateKey{}, s)
}

// NewCallContext returns a child of ctx that carries a fresh CallState, and
// that CallState, in one allocation.
func NewCallContext(ctx context.Context) (context.Context, *CallState) {
	c := &callContext{Context: ctx}
	return c, &c.state
}

// callContext is a context node carrying a CallState.
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

// Sink is the outbound the egress middleware hands errown's retry
// middleware in place of the real one, Out: the retry middleware sends its
// attempts to Out and records what it did in State, with no context node
// and no allocation (the egress middleware pools Sinks). Nothing outside
// errown can make one.
type Sink struct {
	Out   transport.UnaryOutbound
	State CallState
}

var _ transport.UnaryOutbound = (*Sink)(nil)

// Call sends req to Out.
func (s *Sink) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	return s.Out.Call(ctx, req)
}

// Transports returns Out's.
func (s *Sink) Transports() []transport.Transport { return s.Out.Transports() }

// Start starts Out.
func (s *Sink) Start() error { return s.Out.Start() }

// Stop stops Out.
func (s *Sink) Stop() error { return s.Out.Stop() }

// IsRunning reports whether Out is.
func (s *Sink) IsRunning() bool { return s.Out.IsRunning() }
