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
// runs it, and the only place it is written: the retry loop records each
// of errown's attempts, and the innermost attempt step (Attempts) each
// physical attempt that leaves the process and its answer. The egress
// middleware around the retry middleware reads its Result once the call
// has returned (Seal); without a retry middleware it stays zero: one
// attempt, nothing refused.
//
// Below middleware errown does not own (the state in each attempt's
// context), such middleware may send attempts at once (a hedge) or return
// before they end (a timeout that abandons its attempt): the state is read
// and written under mu, and Seal ends it when the call returns: an
// attempt that ends later writes nothing (ended). Such a state is the
// call's alone, never reused.
type CallState struct {
	mu    sync.Mutex
	ended bool
	// direct is set when nothing stands between errown's retry middleware
	// and the innermost step (Middleware.Run): no attempt can be a replay.
	direct bool
	reqlog.Result

	// ErrownAttempt is the number of the attempt errown's retry middleware
	// is sending (1 for the first): the innermost attempt step tells
	// errown's attempts from the ones a middleware below it replays.
	ErrownAttempt int
	// Sends is what the innermost attempt step saw of the call.
	Sends Sends
}

// Seal ends the call: it has returned, and an attempt still under way
// is late, writing nothing from here on. It returns the call's Result,
// its attempts at least those that left the process, as the innermost
// step counted them (a hedge or replay may have sent more than the
// retry loop counted), and at least one. Seal is idempotent.
func (s *CallState) Seal() reqlog.Result {
	s.lock()
	defer s.unlock()
	s.ended, s.Attempts, s.Sends.idle = true, max(s.Attempts, s.Sends.Count, 1), woken(s.Sends.idle, true)
	return s.Result
}

// lock locks the state, unless the call is on the direct path, where
// only its own goroutine reaches it: errown's retry middleware sends the
// attempts itself, one at a time, and nothing below it keeps one or the
// state. A failing call retried once takes the lock 8 times: skipping
// it there took errown's extra in bench/peers' Peers/failing from 2.28
// to 2.22 µs (by CPU time 2.26 to 2.13), medians of 6 alternated runs.
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

// The methods below are the call's writers besides Seal, each one event
// of the call, under mu. errown's retry loop starts an attempt (attempt)
// and records what came back of it, as it took it, with what it decided
// (decided); the innermost step reports each physical attempt that
// reaches it (depart) and the end of each (answer, through landed):
// answered, sent nowhere, or, held back, no longer waiting.

// attempt starts errown's attempt n of the call, 1 for the first, and
// returns the physical attempts sent before it.
func (s *CallState) attempt(n int) (before int) {
	s.ErrownAttempt = n
	return s.Sends.Count
}

// answered records what an attempt of the call came back with, for
// decided and answer: its storm figures (f, when not nil)
// folded, and its classification (o, when not nil: its code and class,
// and, when it did not succeed, its claim, its pushback and whether it
// was an instance's shed).
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

// decided records what was taken and decided of the call at errown's
// attempt n (the attempt errown is on from here), whose attempts go
// through route (nil: none): by the retry loop once the attempt came
// back (decide), or once its retry of an instance's shed was sent
// nowhere (sendElsewhere: the call ends with the shed, refused by its
// pushback); by the innermost step of each physical attempt that
// reaches it (depart: a shed, a replay's refusal). It records the
// attempt's classification (o) and storm figures (f), when not nil
// (answered); the call's attempts so far, every physical one counted,
// whoever sent it (errown's own n did leave, or may still: one a
// middleware below abandoned reaches the step late, so never fewer); why
// the call is sent no more (d.declined, d.refused, when not none); the
// attempts only a hop blind to claims makes (d.blind); and, in observe
// mode, that errown's world stops here (d.stop).
func (s *CallState) decided(n int, route *calls.Route, o *Outcome, f *wire.Figures, d *decision) {
	s.answered(o, f)
	s.ErrownAttempt, s.Attempts, s.Route, s.Declined, s.Refused =
		n, max(s.Sends.Count, n), route, cmp.Or(d.declined, s.Declined), cmp.Or(d.refused, s.Refused)
	s.Storm.Decided(d.stop, d.blind)
}

// sameCall reports whether req is of the call whose attempts s records:
// the first attempt names the call's service and procedure (depart); an
// attempt naming others is a call of its own.
func sameCall(s *Sends, req *transport.Request) bool {
	return s.Service == "" && s.Procedure == "" ||
		req.Service == s.Service && req.Procedure == s.Procedure
}

// depart records a physical attempt req of the call that reached the
// innermost step, as errown's rules judged it (v): the call named by its
// first attempt; a hedge's draw on the budget; what was decided of a
// replay (decided); errown's current attempt seen; one that leaves the
// process, under way until its answer; or one the callee's limit on
// attempts in flight shed, the call's failure, and its last outcome, by
// which a replay after it is judged (and, refused, returns it), except on
// the direct path, where nothing replays it. An attempt held back, or
// shed while another is under way, is counted held until it no longer
// waits (answer): depart returns the channel it waits on, closed once no
// attempt of the call is under way or the call has ended, and nil for one
// not held.
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

// kept is what the innermost step keeps of a physical attempt's answer
// for a replay or a held attempt to answer with: the last outcome that
// did not succeed, and a success while an attempt was held.
type kept struct{ last, won *Outcome }

// landing is how a physical attempt of the call that departed (depart)
// ended, as the innermost step reports it to answer. Held back (held),
// it no longer waits, and takes the outcomes kept for it to answer with
// (last, won: kept). Else it was under way until now: sent nowhere
// (unsent: calls.ErrNoOtherPeer), or answered, with its storm figures
// (f) and classification (o), when not nil, and what the step keeps of
// it (k), when not nil; a panic below reports none.
type landing struct {
	held, unsent bool
	o            *Outcome
	f            *wire.Figures
	k            *kept
	last, won    *Outcome // for a held one, set by answer
}

// answer records that a physical attempt of the call that departed
// (depart) has ended, as e says, and reports whether the call had ended
// first: the attempt is late. One held back no longer counts held, and
// takes the outcomes kept for it (e.last, e.won). One under way until now
// is no longer, and wakes the attempts held until none is (depart); one
// sent nowhere is not counted as sent. Unless the call has ended (then it
// records nothing else), an answer records the attempt's storm figures
// and classification (answered) and what the step keeps of it.
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
	// Hedges is how many of Count were hedges: sent while another
	// attempt of the call was under way, with no failure to justify
	// them. They count apart from the attempts a failure's retry needs
	// (Count less Hedges).
	Hedges int
	// HedgeDraws are the budget buckets (epochs) the call's hedges
	// withdrew from, given back when the call succeeds (served): the
	// retry loop then ends, and reads them once.
	HedgeDraws []int64
	// Last is the last physical attempt's outcome when it did not
	// succeed, else nil; an attempt its caller cancelled (a hedge's
	// loser) is no outcome and leaves it as it was.
	Last *Outcome
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
	// call ends: an attempt held while another was under way waits on it
	// (depart).
	idle chan struct{}
}

// woken closes idle, the channel held attempts wait on (depart), when
// they are to wake (done: no attempt is under way any more, or the call
// has ended), and returns what stays of it: nil once closed.
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
	// Shed says the callee instance's admission shed the attempt
	// (wire.ResponseShed): claimed, with pushback, and marked.
	Shed bool
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

// Around sends req's call to out through next, middleware errown does
// not own (nil: none), with a fresh state in its context for errown's
// retry middleware or innermost step further in to fill in, and returns
// what came back and the call's Result, sealed: an attempt below that
// ends later writes nothing, after a panic too. A step not nil is the
// innermost step out leaves out: every attempt goes through it.
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
// middleware in place of the real one, Out: the retry middleware sends its
// attempts to Out and records what it did in State. The egress middleware
// pools Sinks only on the direct path, where nothing but errown reaches
// State; a Sink whose State is handed below (WithState) is the call's
// for good.
//
// On the direct path (Middleware.Run) nothing stands between errown's
// retry middleware and the transport but errown's innermost attempt
// step, which the egress middleware's chain leaves out: the retry
// middleware then sends each attempt through the step itself, handing
// it the call's State directly, with no context node.
type Sink struct {
	Out   transport.UnaryOutbound
	State CallState
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
// call of State (Around).
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
