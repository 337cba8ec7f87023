package retrier

import (
	"cmp"
	"context"
	"sync"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// CallState is one logical outbound call as errown's retry middleware
// runs it, and the only place it is written: the retry loop records
// errown's attempts, the innermost step (Attempts) each physical attempt
// and its answer. The egress middleware reads its Result once the call
// returned (Seal); without a retry middleware it stays zero.
//
// Below middleware errown does not own, attempts may overlap or outlive
// the call: the state is used under mu, and after Seal a late attempt
// writes nothing. Such a state is the call's alone, never reused.
type CallState struct {
	mu    sync.Mutex
	ended bool
	// direct: nothing stands between errown's retry middleware and the
	// innermost step (Middleware.Run), so no attempt is a replay.
	direct bool
	reqlog.Result

	// ErrownAttempt is the number of errown's current attempt (1 for the
	// first), which tells errown's attempts from replays below.
	ErrownAttempt int
	// Sends is what the innermost attempt step saw of the call.
	Sends Sends
}

// Seal ends the call: an attempt still under way is late and writes
// nothing. It returns the Result, its Attempts at least the physical
// attempts counted (hedges and replays included) and at least one. Seal
// is idempotent.
func (s *CallState) Seal() reqlog.Result {
	s.lock()
	defer s.unlock()
	s.ended, s.Attempts, s.Sends.idle = true, max(s.Attempts, s.Sends.Count, 1), woken(s.Sends.idle, true)
	return s.Result
}

// lock locks the state, except on the direct path, where only the call's
// own goroutine reaches it (a measurable saving on failing calls).
func (s *CallState) lock() {
	if !s.direct {
		s.mu.Lock()
	}
}

// unlock unlocks what lock locked.
func (s *CallState) unlock() {
	if !s.direct {
		s.mu.Unlock()
	}
}

// The call's writers besides Seal, each one event under mu: the retry
// loop starts an attempt (attempt) and records its outcome and decision
// (decided); the innermost step reports each physical attempt (depart)
// and its end (answer, via landed).

// attempt starts errown's attempt n and returns the physical attempts
// sent before it.
func (s *CallState) attempt(n int) (before int) {
	s.ErrownAttempt = n
	return s.Sends.Count
}

// answered records an attempt's storm figures (f) and classification (o:
// code and class, and for a non-success its claim, pushback and shed),
// each when not nil.
func (s *CallState) answered(o *Outcome, f *wire.Figures) {
	if f != nil {
		s.Storm.Attempt(*f)
	}
	if o == nil {
		return
	}
	claim, noRetry, shed := s.Claim, s.NoRetry, s.Shed
	if o.Class != wire.ClassOK {
		claim, noRetry, shed = o.Claim, o.NoRetry, o.Shed
	}
	s.Code, s.Class, s.Claim, s.NoRetry, s.Shed = o.Code, o.Class, claim, noRetry, shed
}

// decided records the call at errown's attempt n, routed by route (nil:
// none): from the retry loop (decide; sendElsewhere when an elsewhere
// retry went nowhere) or the innermost step (depart: a shed, a replay's
// refusal). It records o and f (answered); the attempts so far, never
// fewer than n (a late attempt may not be counted yet); why the call is
// sent no more (d.declined, d.refused); the blind hop's extra attempts
// (d.blind); and observe mode's stop (d.stop).
func (s *CallState) decided(n int, route *calls.Route, o *Outcome, f *wire.Figures, d *decision) {
	s.answered(o, f)
	s.ErrownAttempt, s.Attempts, s.Route, s.Declined, s.Refused =
		n, max(s.Sends.Count, n), route, cmp.Or(d.declined, s.Declined), cmp.Or(d.refused, s.Refused)
	s.Storm.Decided(d.stop, d.blind)
}

// sameCall reports whether req is of s's call, named by its first
// attempt; other names are a call of their own.
func sameCall(s *Sends, req *transport.Request) bool {
	return s.Service == "" && s.Procedure == "" ||
		req.Service == s.Service && req.Procedure == s.Procedure
}

// depart records a physical attempt req as judged (v): the call's name
// from its first attempt, a hedge's budget draw, what was decided
// (decided), errown's current attempt seen, one sent (under way until
// its answer), or one shed by the callee's in-flight limit (the call's
// failure and, off the direct path, its last outcome). A held attempt,
// or one shed while another is under way, counts held until answer;
// depart returns the channel it waits on, closed once no attempt is
// under way or the call ended, or nil when not held.
func (s *CallState) depart(req *transport.Request, v *verdict) (idle <-chan struct{}) {
	t := &s.Sends
	service, procedure := t.Service, t.Procedure
	if service == "" && procedure == "" {
		service, procedure = req.Service, req.Procedure
	}
	hedges, draws, seen, last, n, held := t.Hedges, t.HedgeDraws, t.Seen, t.Last, 0, 0
	if v.hold || v.shed != nil && t.InFlight > 0 {
		held = 1
	}
	if v.hedge && !v.hold {
		hedges++
		if v.epoch >= 0 {
			draws = append(draws, v.epoch)
		}
	}
	if v.seen() {
		seen = s.ErrownAttempt
	}
	if v.sent() {
		n = 1
	}
	var shed *wire.Figures
	if v.shed != nil {
		f := wire.KnownFigures(wire.Storm{}) // nothing was served
		shed = &f
		if !s.direct {
			last = v.shed
		}
	}
	wait := t.idle // made by the first attempt held while another is under way
	if held == 1 && t.InFlight > 0 && wait == nil {
		wait = make(chan struct{})
	}
	s.Sends = Sends{
		Count: t.Count + n, Seen: seen, Service: service, Procedure: procedure,
		Hedges: hedges, HedgeDraws: draws, Last: last, Shed: v.shed != nil || t.Shed && !v.sent(),
		InFlight: t.InFlight + n, Held: t.Held + held, Won: t.Won, idle: wait,
	}
	s.decided(s.ErrownAttempt, s.Route, v.shed, shed, &v.decided)
	switch {
	case held == 0:
		return nil
	case s.Sends.InFlight == 0 || s.ended:
		return _closed
	}
	return s.Sends.idle
}

// kept is what the innermost step keeps for replays and held attempts:
// the last non-success, and a success while an attempt was held.
type kept struct{ last, won *Outcome }

// landing is how a departed attempt ended, reported to answer: held (it
// no longer waits and takes last and won), unsent (calls.ErrNoOtherPeer),
// or answered with o, f and k, each when not nil (none after a panic).
type landing struct {
	held, unsent bool
	o            *Outcome
	f            *wire.Figures
	k            *kept
	last, won    *Outcome // for a held one, set by answer
}

// answer records that a departed attempt ended as e says, and reports
// whether the call had ended first (late). A held one stops counting
// held and takes the kept outcomes; one under way no longer is, waking
// held attempts once none is; an unsent one is uncounted. Unless the
// call ended, it records o, f (answered) and k.
func (s *CallState) answer(e *landing) (late bool) {
	t := &s.Sends
	held, inFlight, count, last, won := t.Held, t.InFlight, t.Count, t.Last, t.Won
	switch {
	case e.held:
		held--
		e.last, e.won = last, won
	case s.ended:
		inFlight--
	default:
		inFlight--
		if e.unsent {
			count--
		}
		if e.k != nil {
			last, won = e.k.last, e.k.won
		}
	}
	t.Held, t.InFlight, t.Count, t.Last, t.Won, t.idle = held, inFlight, count, last, won, woken(t.idle, inFlight == 0 || s.ended)
	if !e.held && !s.ended {
		s.answered(e.o, e.f)
	}
	return s.ended
}

// Sequential returns, under mu, the physical attempts that were not
// hedges: what a policy's maxAttempts limits.
func (s *CallState) Sequential() int { return s.Sends.Count - s.Sends.Hedges }

// Sends is what the innermost step (Attempts) records of one logical
// call's physical attempts, replays below errown included.
type Sends struct {
	// Count is the physical attempts sent.
	Count int
	// Seen is the ErrownAttempt the last physical attempt belonged to.
	Seen int
	// Service and Procedure name the call, as its first attempt did:
	// another name is a fallback, a call of its own.
	Service, Procedure string
	// Hedges is how many of Count were sent while another attempt was
	// under way; they count apart from retries of failures.
	Hedges int
	// HedgeDraws are the budget epochs the hedges withdrew from,
	// refunded once when the call succeeds (served).
	HedgeDraws []int64
	// Last is the last non-success outcome, else nil; a cancelled
	// attempt (a hedge's loser) leaves it unchanged.
	Last *Outcome
	// Shed: the last attempt was not sent, the callee's in-flight limit
	// reached (wire.RefusedOverload).
	Shed bool
	// InFlight is the attempts under way; one sent while it is not
	// zero is a hedge.
	InFlight int
	// Held is the refused attempts waiting for one under way to
	// answer with.
	Held int
	// Won is a success that came while an attempt was Held, its body
	// kept for them; else nil.
	Won *Outcome
	// idle, when not nil, is closed when InFlight falls to zero or the
	// call ends; held attempts wait on it.
	idle chan struct{}
}

// woken closes idle when done (nothing under way, or the call ended) and
// returns what stays of it: nil once closed.
func woken(idle chan struct{}, done bool) chan struct{} {
	if idle != nil && done {
		close(idle)
		return nil
	}
	return idle
}

var _closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Outcome is what one physical attempt returned, kept so a refused replay
// can return it unchanged.
type Outcome struct {
	Response *transport.Response // or nil; its Body is not read
	Body     []byte
	Err      error
	Code     yarpcerrors.Code
	Class    wire.Class
	Claim    ownership.Claim
	NoRetry  bool
	// Shed: the callee instance's admission shed it (wire.ResponseShed).
	Shed bool
}

type callStateKey struct{}

// WithCallState returns a child of ctx that carries s, in one allocation.
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

// NewCallContext returns a child of ctx carrying a fresh CallState, and
// that CallState, in one allocation.
func NewCallContext(ctx context.Context) (context.Context, *CallState) {
	c := &callContext{}
	c.node = stateContext{Context: ctx, state: &c.state}
	return &c.node, &c.state
}

// callContext is a stateContext allocated with its CallState.
type callContext struct {
	node  stateContext
	state CallState
}

// Around sends req's call to out through next (middleware errown does not
// own; nil: none) with a fresh state in its context, and returns what came
// back and the sealed Result, after a panic too. A non-nil step is put
// before out, so every attempt goes through it.
func Around(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, step Step, next middleware.UnaryOutbound) (_ *transport.Response, result reqlog.Result, _ error) {
	cctx, state := NewCallContext(ctx)
	if step != nil {
		out = &Hop{Step: step, Out: out, State: state}
	}
	defer func() { result = state.Seal() }()
	if next == nil {
		res, err := out.Call(cctx, req)
		return res, result, err
	}
	res, err := next.Call(cctx, req, out)
	return res, result, err
}

// CallStateFromContext returns the CallState in ctx, or nil.
func CallStateFromContext(ctx context.Context) *CallState {
	s, _ := ctx.Value(callStateKey{}).(*CallState)
	return s
}

// Sink is the outbound the egress middleware hands errown's retry
// middleware in place of the real one, Out; the call is recorded in
// State. Sinks are pooled only on the direct path (Middleware.Run), where
// the retry middleware hands State to the innermost step itself, with no
// context node; a Sink whose State went below (WithState) is the call's
// for good.
type Sink struct {
	Out   transport.UnaryOutbound
	State CallState
}

// WithState returns a child of ctx that carries s's State (WithCallState).
func (s *Sink) WithState(ctx context.Context) context.Context {
	return WithCallState(ctx, &s.State)
}

// Step is an innermost attempt step (Attempts).
type Step interface {
	Send(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, state *CallState) (*transport.Response, error)
}

// Hop is a transport.UnaryOutbound sending through Step to Out, for
// State's call (Around).
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
