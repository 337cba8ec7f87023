package reqlog

import (
	"context"

	"github.com/errown/errown/internal/wire"
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
	Refused wire.Refusal
	// Storm folds the Storms of the call's attempts, when the retry
	// middleware made them; the egress middleware folds a single attempt.
	Storm wire.StormCall
	// Code and Class are the last attempt's, as wire.CallResult
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
	// ErrownAttempt is the number of the attempt errown's retry middleware
	// is sending (1 for the first): the innermost attempt step tells
	// errown's attempts from the ones a middleware below it replays.
	ErrownAttempt int
	// Sends is what the innermost attempt step saw of the call.
	Sends Sends
	// Route is the peers the call's attempts went to, when the retry
	// middleware put one in their context (a call it may retry) and a
	// peer chooser that records them chose (package retrypeer); else nil.
	Route *Route
}

// Sent returns the attempts that left the process for the call, as the
// innermost attempt step counted them, or else Attempts: at least one.
func (s *CallState) Sent() int {
	return max(s.Attempts, s.Sends.Count, 1)
}

// Sends is what the innermost attempt step (retrier.Attempts) records of one
// logical call: every physical attempt that left the process, those a
// middleware between errown's retry and the transport replayed included,
// and the last one that did not succeed, which a refused replay returns.
type Sends struct {
	// Count is the physical attempts sent.
	Count int
	// Seen is the ErrownAttempt the last physical attempt belonged to.
	Seen int
	// Foreign is how many of Count errown did not make.
	Foreign int
	// Last is the last physical attempt's outcome when it did not
	// succeed, else nil.
	Last *Outcome
	// Direct is set when nothing stands between errown's retry middleware
	// and the innermost step (Sink.Direct): no attempt can be a replay.
	Direct bool
	// Shed is set when the last attempt was not sent: the callee's limit
	// on attempts in flight was reached (wire.RefusedOverload).
	Shed bool
	// Busy is 1 while a physical attempt is under way (read and written
	// with sync/atomic): a second one sent meanwhile is a concurrent
	// replay (a hedge).
	Busy int32
}

// Outcome is what one physical attempt returned, kept so that a refused
// replay can return it unchanged: the response (its body read into Body),
// the error, and how errown classified them.
type Outcome struct {
	Response *transport.Response // or nil; its Body is not read
	Body     []byte
	Err      error
	Code     yarpcerrors.Code
	Class    ownership.Class
	Claim    ownership.Claim
	NoRetry  bool
}

type callStateKey struct{}

// WithCallState returns a child of ctx that carries s, in one allocation
// of a pointer and a context.
func WithCallState(ctx context.Context, s *CallState) context.Context {
	return &stateContext{Context: ctx, state: s}
}

// stateContext is a context node carrying a *CallState.
type stateContext struct {
	context.Context
	state *CallState
}

func (c *stateContext) Value(key any) any {
	if _, ok := key.(callStateKey); ok {
		return c.state
	}
	return c.Context.Value(key)
}

// NewCallContext returns a child of ctx that carries a fresh CallState, and
// that CallState, in one allocation.
func NewCallContext(ctx context.Context) (context.Context, *CallState) {
	c := &callContext{}
	c.node = stateContext{Context: ctx, state: &c.state}
	return &c.node, &c.state
}

// callContext is a stateContext allocated with the CallState it points
// at: NewCallContext's one allocation.
type callContext struct {
	node  stateContext
	state CallState
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
//
// Direct says that nothing stands between errown's retry middleware and
// the transport but errown's innermost attempt step, which the egress
// middleware's chain leaves out: the retry middleware then sends each
// attempt through Hop, which hands the step the call's State directly,
// with no context node.
type Sink struct {
	Out    transport.UnaryOutbound
	State  CallState
	Direct bool
	Hop    Hop
}

// Step is an innermost attempt step, sending req to out for the call whose
// state is state (retrier.Attempts).
type Step interface {
	Send(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, state *CallState) (*transport.Response, error)
}

// Hop is a transport.UnaryOutbound that sends through Step to Out, for the
// call of State.
type Hop struct {
	Step  Step
	Out   transport.UnaryOutbound
	State *CallState
}

var _ transport.UnaryOutbound = (*Hop)(nil)

// Call sends req through Step.
func (h *Hop) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	return h.Step.Send(ctx, req, h.Out, h.State)
}

// Transports returns Out's.
func (h *Hop) Transports() []transport.Transport { return h.Out.Transports() }

// Start starts Out.
func (h *Hop) Start() error { return h.Out.Start() }

// Stop stops Out.
func (h *Hop) Stop() error { return h.Out.Stop() }

// IsRunning reports whether Out is.
func (h *Hop) IsRunning() bool { return h.Out.IsRunning() }

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
