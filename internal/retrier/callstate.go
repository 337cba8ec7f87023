package retrier

import (
	"context"
	"sync"

	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// CallState is one logical outbound call as errown's retry middleware
// runs it, and the only place it is written: the retry loop records each
// of errown's attempts, and the innermost attempt step (Attempts) each
// physical attempt that leaves the process and its answer. The egress
// middleware around the retry middleware reads its Result once the call
// has returned (End); without a retry middleware it stays zero: one
// attempt, nothing refused.
//
// Below middleware errown does not own (the state in each attempt's
// context), such middleware may send attempts at once (a hedge) or return
// before they end (a timeout that abandons its attempt): the state is read
// and written under mu, and End seals it when the call returns: an
// attempt that ends later writes nothing (ended). Such a state is the
// call's alone, never reused.
type CallState struct {
	mu    sync.Mutex
	ended bool
	reqlog.Result

	// ErrownAttempt is the number of the attempt errown's retry middleware
	// is sending (1 for the first): the innermost attempt step tells
	// errown's attempts from the ones a middleware below it replays.
	ErrownAttempt int
	// Sends is what the innermost attempt step saw of the call.
	Sends Sends
}

// End seals the state, under mu: the call has returned, and an attempt
// still under way is late (ended). The attempts it reports are those
// that left the process, as the innermost step counted them, when a
// hedge or replay sent more than the retry loop counted. End is
// idempotent.
func (s *CallState) End() {
	s.Attempts = max(s.Attempts, s.Sends.Count)
	s.ended = true
	s.Wake()
}

// Seal locks the state, ends it (End) and unlocks it, and returns its
// Result, which nothing writes any more.
func (s *CallState) Seal() reqlog.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.End()
	return s.Result
}

// Sequential returns, under mu, the attempts the innermost step
// counted that were not hedges: errown's own, and replays sent after an
// attempt of the call had ended. They are what a policy's maxAttempts
// limits.
func (s *CallState) Sequential() int { return s.Sends.Count - s.Sends.Hedges }

// Sends is what the innermost attempt step (Attempts) records of one
// logical call: every physical attempt that left the process, those a
// middleware between errown's retry and the transport replayed included,
// and the last one that did not succeed, which a refused replay returns.
type Sends struct {
	// Count is the physical attempts sent.
	Count int
	// Seen is the ErrownAttempt the last physical attempt belonged to.
	Seen int
	// Service and Procedure are the call's, as the first physical attempt
	// named them: an attempt naming another (a fallback through the same
	// middleware) is a call of its own, not a replay of this one.
	Service, Procedure string
	// Foreign is how many of Count errown did not make.
	Foreign int
	// Hedges is how many of Foreign were hedges: sent while another
	// attempt of the call was under way, with no failure to justify
	// them. They count apart from the attempts a failure's retry needs
	// (Count less Hedges).
	Hedges int
	// HedgeDraws are the budget buckets (epochs) the call's hedges
	// withdrew from, given back when the call succeeds.
	HedgeDraws []int64
	// Last is the last physical attempt's outcome when it did not
	// succeed, else nil; an attempt its caller cancelled (a hedge's
	// loser) is no outcome and leaves it as it was.
	Last *Outcome
	// Direct is set when nothing stands between errown's retry middleware
	// and the innermost step (Sink.Direct): no attempt can be a replay.
	Direct bool
	// Shed is set when the last attempt was not sent: the callee's limit
	// on attempts in flight was reached (wire.RefusedOverload).
	Shed bool
	// InFlight is the physical attempts under way: one sent while it is
	// not zero is a concurrent replay (a hedge).
	InFlight int
	// Held is the attempts errown refused that wait for the attempts
	// under way to answer with their outcome (a hedge held back).
	Held int
	// Won is the last physical attempt's outcome when it succeeded while
	// an attempt was Held, its body kept for each held one to answer
	// with; else nil.
	Won *Outcome
	// idle, when not nil, is closed when InFlight falls to zero or the
	// call ends: a concurrent replay errown refused waits on it (Idle).
	idle chan struct{}
}

// Idle returns, under mu, a channel closed once no physical attempt of
// the call is under way (Sends.InFlight zero) or the call has ended.
func (s *CallState) Idle() <-chan struct{} {
	if s.Sends.InFlight == 0 || s.ended {
		return _closed
	}
	if s.Sends.idle == nil {
		s.Sends.idle = make(chan struct{})
	}
	return s.Sends.idle
}

// Wake closes, under mu, the channel Idle returned, when nothing is
// under way any more or the call has ended.
func (s *CallState) Wake() {
	if s.Sends.idle != nil && (s.Sends.InFlight == 0 || s.ended) {
		close(s.Sends.idle)
		s.Sends.idle = nil
	}
}

var _closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

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

// WithCallState returns a child of ctx that carries s, in one allocation:
// s is handed below, to attempts that may run at once.
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
// attempts to Out and records what it did in State. The egress middleware
// pools Sinks only on the direct path, where nothing but errown reaches
// State; a Sink whose State is handed below (WithState) is the call's
// for good.
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

// WithState returns a child of ctx that carries s's State (WithCallState).
func (s *Sink) WithState(ctx context.Context) context.Context {
	return WithCallState(ctx, &s.State)
}

// Step is an innermost attempt step, sending req to out for the call whose
// state is state (Attempts).
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
