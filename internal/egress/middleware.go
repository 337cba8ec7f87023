package egress

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
	"go.uber.org/zap"
)

// Middleware is errown's unary egress middleware.
type Middleware struct {
	hdr           ownership.Headers        // the header names, defaults applied
	inner         middleware.UnaryOutbound // or nil
	retry         *retrier.Middleware      // inner, when it is exactly errown's retry middleware
	orphans       *calls.Orphans           // or nil
	incidents     *incidents               // when each caller procedure last met an incident
	refuseRepeats bool
	logger        *zap.Logger
	warned        sync.Map // ownership.Edge whose repeat was logged

	calls     tally.Counter
	failures  [3]tally.Counter // by ownership.Claim
	answers   tally.Counter
	untracked tally.Counter
	late      tally.Counter
	abandoned tally.Counter
	repeated  tally.Counter
}

var _ middleware.UnaryOutbound = (*Middleware)(nil)

// New builds the egress middleware.
func New(cfg outbound.Config, opts ...Option) (*Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = defaults.Fill(cfg, outbound.DefaultConfig())
	o := options{Sinks: obs.Defaults(), now: time.Now}
	for _, opt := range opts {
		opt.apply(&o)
	}
	scope := o.Scope.SubScope("egress")
	m := &Middleware{
		hdr:           cfg.Headers,
		inner:         o.inner,
		orphans:       o.orphans,
		incidents:     newIncidents(cfg.IncidentWindow, o.now),
		calls:         scope.Counter("calls"),
		answers:       scope.Counter("answers"),
		untracked:     scope.Counter("untracked"),
		late:          scope.Counter("late"),
		abandoned:     scope.Counter("abandoned"),
		repeated:      scope.Counter("repeated_after_unclaimed"),
		refuseRepeats: cfg.RefuseRepeats,
		logger:        o.Logger,
	}
	m.retry, _ = o.inner.(*retrier.Middleware)
	for _, c := range []ownership.Claim{ownership.ClaimMissing, ownership.ClaimClaimed, ownership.ClaimUnclaimed} {
		m.failures[c] = scope.Tagged(map[string]string{"claim": c.String()}).Counter("failures")
	}
	return m, nil
}

// Call implements middleware.UnaryOutbound.
func (m *Middleware) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	return m.call(ctx, req, out, nil)
}

// Direct returns the egress middleware for a chain with no other outbound
// middleware below it: it sends each attempt through step, errown's
// innermost attempt step, itself, handing it the call's state with no
// context node. Its Middleware is m.
func (m *Middleware) Direct(step retrier.Step) *Direct {
	return &Direct{m: m, step: step}
}

// Direct is the egress middleware with the innermost attempt step right
// below it (Middleware.Direct).
type Direct struct {
	m    *Middleware
	step retrier.Step
}

var _ middleware.UnaryOutbound = (*Direct)(nil)

// Call implements middleware.UnaryOutbound.
func (d *Direct) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	return d.m.call(ctx, req, out, d.step)
}

// Middleware returns the egress middleware d runs.
func (d *Direct) Middleware() *Middleware { return d.m }

// call is Call; step, when not nil, is the innermost attempt step to send
// through, absent from the chain below.
func (m *Middleware) call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, step retrier.Step) (*transport.Response, error) {
	m.calls.Inc(1)
	log := reqlog.FromContext(ctx)
	if log == nil {
		m.untracked.Inc(1)
		return m.untrackedCall(ctx, req, out, step)
	}
	log.CallStarted()
	defer log.CallEnded()
	edge := ownership.Edge{CallerProcedure: log.Procedure, Service: req.Service, Procedure: req.Procedure}
	if prev, ok := log.Egress.Last(edge); ok && prev.Claim == ownership.ClaimUnclaimed {
		if res, err, refused := m.repeat(log, prev); refused {
			return res, err
		}
	}
	// The steady state sends the request as it is; one in an incident (its
	// edge's, or marked from above) is marked, so its callee sends its
	// figures and is no root.
	var edgeTime *atomic.Int64 // the edge's incident time, when hotAt looked it up
	hot := log.Marked()
	if !hot {
		hot, edgeTime = m.incidents.hotAt(edge)
	}
	if hot {
		req = m.mark(req, log.Root())
	} else {
		log.SetUnmarkedCall()
	}
	var result reqlog.Result
	res, err := m.send(ctx, req, out, step, &result)
	m.logCall(ctx, log, edge, edgeTime, res, err, &result)
	return res, err
}

// logCall logs the call on edge that returned res and err, with the
// retry middleware's result, in the request's log, and records an
// incident on edge (edgeTime: its time, if hotAt looked it up) when the
// call met one.
func (m *Middleware) logCall(ctx context.Context, log *reqlog.Log, edge ownership.Edge, edgeTime *atomic.Int64, res *transport.Response, err error, result *reqlog.Result) {
	if result.Attempts == 0 {
		// The steady state (retrier.Middleware.Run): one attempt that
		// succeeded, nothing else to report.
		if !log.Egress.Append(calls.Entry{Edge: edge, Attempts: 1}) {
			m.late.Inc(1)
		}
		return
	}
	e := m.entry(ctx, edge, res, err, result)
	storm := &result.Storm
	if storm.Attempts() == 0 { // no retry middleware folded the attempts
		storm.Attempt(wire.AttemptStorm(res, e.Class, m.hdr.Storm, wire.Cancelled(ctx, err)))
	}
	if incident(&e, result.Refused, storm) {
		m.incidents.record(edge, edgeTime)
	}
	var logged bool
	if e.Failed() || !storm.Trivial() {
		logged = log.Egress.AppendStorm(e, storm.Storm())
	} else {
		logged = log.Egress.Append(e)
	}
	if !logged {
		m.late.Inc(1)
	}
}

// entry returns the log entry of the call on edge that returned res and
// err, with the retry middleware's state: its attempts, its class
// (errown's retry middleware's, when it is the inner middleware), and,
// unless it succeeded, its claim, refusal and retry criteria, counted in
// the egress metrics. Another retry middleware further in classified what
// it returned, which a middleware in between may have changed (a fallback
// turning an error into a success), so what came back here is classified
// instead.
func (m *Middleware) entry(ctx context.Context, edge ownership.Edge, res *transport.Response, err error, state *reqlog.Result) calls.Entry {
	e := calls.Entry{
		Edge:     edge,
		Attempts: state.Sent(),
	}
	classified := m.retry != nil
	if classified {
		e.Code, e.Class = state.Code, state.Class
	} else {
		e.Code, e.Class = wire.AttemptResult(ctx, res, err, m.hdr.Code)
	}
	if e.Class == wire.ClassOK {
		return e
	}
	// The handler cancelled the call itself (not a deadline): it gave up
	// on it, so its failure cannot explain the handler's.
	e.Abandoned = errors.Is(ctx.Err(), context.Canceled)
	refused := state.Refused
	var noRetry bool
	if classified { // the retry middleware read them
		e.Claim, noRetry = state.Claim, state.NoRetry
	} else {
		e.Claim, noRetry = wire.ResponseClaim(res, m.hdr.Claim, m.hdr.NoRetry)
	}
	// Pushback counts whether or not a policy would have retried: the
	// callee asked, so nobody above retries.
	if noRetry && refused == wire.RefusedNone {
		refused = wire.RefusedPushback
	}
	e.Refused, e.Declined = refused, state.Declined
	if r := state.Route; r != nil && r.Len() > 0 {
		e.Route = r // the peers, for the claim decision's record
	}
	e.RCS = wire.RetryCriteriaSatisfied(wire.CallOutcome{
		Attempts: e.Attempts,
		Callee:   e.Claim,
		Refused:  refused,
		Code:     e.Code,
	})
	switch {
	case e.Abandoned:
		m.abandoned.Inc(1)
	case e.Class == wire.ClassFailure:
		m.failures[e.Claim].Inc(1)
	default:
		m.answers.Inc(1)
	}
	return e
}

// repeat counts and logs (once per edge) a call the handler makes again
// after prev, the same edge's unclaimed failure earlier in the request: a
// handler retry loop, replaying a subtree already retried below. With
// RefuseRepeats it refuses the call (refused set): the handler gets prev's
// code at once, unclaimed, and the log an unclaimed failure, as if sent.
func (m *Middleware) repeat(log *reqlog.Log, prev calls.Entry) (_ *transport.Response, _ error, refused bool) {
	m.repeated.Inc(1)
	if _, seen := m.warned.LoadOrStore(prev.Edge, struct{}{}); !seen {
		m.logger.Warn("a handler called a procedure again after it failed unclaimed in the same request: "+
			"the failure was already retried below, and each repeat replays that whole subtree; "+
			"return the error instead of calling again (refuseRepeats: true refuses such repeats)",
			zap.String("callerProcedure", prev.Edge.CallerProcedure),
			zap.String("service", prev.Edge.Service),
			zap.String("procedure", prev.Edge.Procedure),
			zap.Bool("refused", m.refuseRepeats),
		)
	}
	if !m.refuseRepeats {
		return nil, nil, false
	}
	e := prev
	e.Attempts, e.Abandoned = 1, false
	if !log.Egress.Append(e) {
		m.late.Inc(1)
	}
	m.failures[ownership.ClaimUnclaimed].Inc(1)
	res := &transport.Response{Headers: transport.NewHeaders().With(m.hdr.Claim, ownership.ClaimUnclaimed.String())}
	return res, yarpcerrors.Newf(prev.Code, "errown: %s::%s not called again: it failed unclaimed earlier in this request (refuseRepeats)",
		prev.Edge.Service, prev.Edge.Procedure), true
}

// untrackedCall sends a call tied to no tracked request. One made while
// serving an untracked request is marked like any other, so its callee is
// no root. One made with a fresh context (or by a background job) is an
// orphan when it has anything to report (a failure, a retry, a storm
// below): the requests in flight meanwhile report unknown figures.
func (m *Middleware) untrackedCall(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, step retrier.Step) (*transport.Response, error) {
	if reqlog.Untracked(ctx) {
		var result reqlog.Result
		return m.send(ctx, m.mark(req, 0), out, step, &result)
	}
	var result reqlog.Result
	if m.orphans == nil {
		return m.below(ctx, req, out, step, &result)
	}
	if m.orphans.Watched() || m.incidents.any() {
		// In an incident the orphan may be a call of a request whose
		// figures are read: mark it so its callee answers with its
		// subtree's.
		req = m.mark(req, 0)
	}
	res, err := m.below(ctx, req, out, step, &result)
	_, class := wire.AttemptResult(ctx, res, err, m.hdr.Code)
	storm := wire.AttemptStorm(res, class, m.hdr.Storm, wire.Cancelled(ctx, err))
	if class == wire.ClassFailure || result.Attempts > 1 || !storm.Trivial() {
		m.orphans.Failed()
	}
	return res, err
}

// below sends req through the inner middleware (not errown's retry
// middleware) with a fresh call state in its context for a retry
// middleware further in to fill (retrier.Around), and returns that state's
// result, sealed, in result.
func (m *Middleware) below(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, step retrier.Step, result *reqlog.Result) (*transport.Response, error) {
	res, r, err := retrier.Around(ctx, req, out, step, m.inner)
	*result = r
	return res, err
}

// send sends req on, through the retry middleware when it is errown's,
// and returns the call's reported result in result.
func (m *Middleware) send(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, step retrier.Step, result *reqlog.Result) (*transport.Response, error) {
	if m.retry != nil {
		// The retry middleware records the call in its own state and seals
		// it on return: an attempt ending later writes nothing in it.
		return m.retry.Run(ctx, req, out, step != nil, result)
	}
	return m.below(ctx, req, out, step, result)
}

// mark returns a copy of req with the attempt header "1" (a first attempt
// in an incident: tells the callee an errown caller reads its telemetry;
// retries overwrite it) and, when root is not 0, the root header, so an
// overloaded callee admits whole root requests (admission.AdmitRoot).
// The copy and its headers are allocated per call and never changed once
// handed on: the layers below may keep them (a hedge, an abandoned
// attempt). req's maps are only read (transport.Headers.Items says they
// must not be changed).
func (m *Middleware) mark(req *transport.Request, root uint64) *transport.Request {
	out := *req
	n := req.Headers.Len() + 1 // the exact capacity
	if _, ok := req.Headers.Items()[m.hdr.Attempt]; ok {
		n--
	}
	if root != 0 {
		n++
	}
	h := transport.NewHeadersWithCapacity(n)
	if req.Headers.Len() > 0 {
		copied := 0
		for k, v := range req.Headers.OriginalItems() {
			if !strings.EqualFold(k, m.hdr.Attempt) {
				h, copied = h.With(k, v), copied+1
			}
		}
		if h.Len() != copied {
			// Original keys that differ only in case share one canonical
			// entry; keep the value req has for it.
			for ck, cv := range req.Headers.Items() {
				if got, _ := h.Get(ck); got != cv && ck != m.hdr.Attempt {
					h = h.With(ck, cv)
				}
			}
		}
	}
	out.Headers = h.With(m.hdr.Attempt, _firstAttempt)
	if root != 0 {
		out.Headers = out.Headers.With(m.hdr.Root, wire.FormatRoot(root))
	}
	return &out
}

const _firstAttempt = "1"

// incident reports whether call e (refused: its refused retry; storm: its
// folded attempts) met an incident: it failed, was retried or refused a
// retry, or its figures are worth a root's record (a retry spent or
// suppressed below, or unknown). An abandoned call is none, nor an answer,
// nor a success whose subtree only served more requests.
func incident(e *calls.Entry, refused wire.Refusal, storm *wire.StormCall) bool {
	if e.Abandoned {
		// Cancelled by the handler (a hedge, a fan-out's loser): its
		// figures are unknown, and nothing about the callee is known.
		return false
	}
	if e.Class == wire.ClassFailure {
		return true
	}
	return e.Attempts > 1 || refused != wire.RefusedNone || storm.Stormy()
}
