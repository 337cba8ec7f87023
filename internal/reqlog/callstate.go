package reqlog

import (
	"context"
	"sync"

	"github.com/errown/errown/internal/calls"
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
//
// A CallState reachable by middleware errown does not own (one in a
// context handed below, Sends.Direct unset) is the call's alone, never
// reused, and its fields are read and written under Enter (its mutex is
// made by WithCallState or NewCallContext, which hand it below): such
// middleware may send attempts at once (a hedge) or return before they
// end (a timeout that abandons its attempt). End seals it when the call
// returns: an attempt that ends later writes nothing (Ended). On the
// direct path (Sends.Direct) only errown reaches the state, one attempt
// at a time, and Enter does nothing.
type CallState struct {
	mu    *sync.Mutex // a pointer: a copy of a state (a test's value) shares it
	ended bool

	// Attempts made, the first one included. Zero means nobody counted,
	// which the egress middleware reads as one.
	Attempts int
	// Refused says why a retry was not attempted, if this hop decided so.
	Refused wire.Refusal
	// Declined says why no more attempts were sent of a failed call that
	// no refusal explains: the callee's unclaim while the policy had
	// attempts left, or the policy's attempt limit.
	Declined wire.Decline
	// Storm folds the Storms of the call's attempts, when the retry
	// middleware made them; the egress middleware folds a single attempt.
	Storm wire.StormCall
	// Code and Class are the last attempt's, as wire.CallResult
	// gives them, when Classified: the retry middleware classified it,
	// and the egress middleware need not again.
	Code       yarpcerrors.Code
	Class      wire.Class
	Classified bool
	// Claim and NoRetry are what the last attempt's response said, its
	// claim and its pushback, when Classified and Class is not
	// wire.ClassOK: read once, for the retry and egress middleware
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
	Route *calls.Route
}

// Enter locks the state for an attempt's bookkeeping, unless Sends.Direct.
// (Not Lock: a CallState is a value tests copy, which vet would refuse.)
func (s *CallState) Enter() {
	if s.Sends.Direct {
		return
	}
	if s.mu == nil {
		// A state handed below by neither WithCallState nor
		// NewCallContext: only its own goroutine has it yet.
		s.mu = new(sync.Mutex)
	}
	s.mu.Lock()
}

// Leave unlocks what Enter locked.
func (s *CallState) Leave() {
	if !s.Sends.Direct {
		s.mu.Unlock()
	}
}

// End seals the state, under Enter: the call has returned, and an attempt
// still under way is late (Ended). End is idempotent.
func (s *CallState) End() {
	s.ended = true
	s.Wake()
}

// Ended reports, under Enter, whether the call has returned (End): an
// attempt that finds it so is late, and writes nothing.
func (s *CallState) Ended() bool { return s.ended }

// Seal locks the state, ends it (End) and unlocks it.
func (s *CallState) Seal() {
	s.Enter()
	s.End()
	s.Leave()
}

// Sequential returns, under Enter, the attempts the innermost step
// counted that were not hedges: errown's own, and replays sent after an
// attempt of the call had ended. They are what a policy's maxAttempts
// limits.
func (s *CallState) Sequential() int { return s.Sends.Count - s.Sends.Hedges }

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

// Idle returns, under Enter, a channel closed once no physical attempt of
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

// Wake closes, under Enter, the channel Idle returned, when nothing is
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
	Class    wire.Class
	Claim    ownership.Claim
	NoRetry  bool
}

type callStateKey struct{}

// WithCallState returns a child of ctx that carries s, in one allocation
// of a pointer and a context, and one of s's mutex unless s has one: s
// is handed below, to attempts that may run at once (Enter).
func WithCallState(ctx context.Context, s *CallState) context.Context {
	if s.mu == nil {
		s.mu = new(sync.Mutex)
	}
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
	c.state.mu = &c.mu
	return &c.node, &c.state
}

// callContext is a stateContext allocated with the CallState it points
// at: NewCallContext's one allocation.
type callContext struct {
	node  stateContext
	state CallState
	mu    sync.Mutex
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
// for good. Nothing outside errown can make one.
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
	mu     sync.Mutex // State's, once handed below (WithState)
}

// WithState returns a child of ctx that carries s's State, as
// WithCallState does, the State's mutex s's own.
func (s *Sink) WithState(ctx context.Context) context.Context {
	if s.State.mu == nil {
		s.State.mu = &s.mu
	}
	return WithCallState(ctx, &s.State)
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
