package egress

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	pool          sync.Pool                // of *call
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
	cfg = defaults.Apply(cfg)
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
	m.pool.New = m.newCall
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
// context node, rather than leave step to a chain of its own. Its
// Middleware is m.
func (m *Middleware) Direct(step reqlog.Step) *Direct {
	return &Direct{m: m, step: step}
}

// Direct is the egress middleware with the innermost attempt step right
// below it (Middleware.Direct).
type Direct struct {
	m    *Middleware
	step reqlog.Step
}

var _ middleware.UnaryOutbound = (*Direct)(nil)

// Call implements middleware.UnaryOutbound.
func (d *Direct) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	return d.m.call(ctx, req, out, d.step)
}

// Middleware returns the egress middleware d runs.
func (d *Direct) Middleware() *Middleware { return d.m }

// call is Call, with the innermost attempt step to send through when it is
// not in the chain below (step not nil).
func (m *Middleware) call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, step reqlog.Step) (*transport.Response, error) {
	m.calls.Inc(1)
	log := reqlog.FromContext(ctx)
	if log == nil {
		m.untracked.Inc(1)
		return m.untrackedCall(ctx, req, out, step)
	}
	log.CallStarted()
	// c is the pooled call the request takes, if it takes one. One
	// deferred function releases it and ends the call: with a defer in
	// each branch the compiler could not open-code them (defers times
	// returns above 15), and each call paid for a defer record.
	var c *call
	defer func() {
		if c != nil {
			m.release(c)
		}
		log.CallEnded()
	}()
	edge := ownership.Edge{CallerProcedure: log.Procedure, Service: req.Service, Procedure: req.Procedure}
	if prev, ok := log.Egress.Last(edge); ok && prev.Claim == ownership.ClaimUnclaimed {
		if res, err, refused := m.repeat(log, prev); refused {
			return res, err
		}
	}
	// The steady state sends the request as it is; a request in an
	// incident (its edge's, or the one above it marked) is
	// marked, so that its callee sends its figures and is no root.
	var (
		res   *transport.Response
		state *reqlog.CallState
		err   error
	)
	switch {
	case log.Marked() || m.incidents.hot(edge):
		c = m.mark(req)
		res, state, err = m.send(ctx, c, out, step)
	case step != nil && m.retry != nil:
		// The steady state on the direct path: the first attempt goes
		// with no pooled call, and the call takes one only when it did
		// not simply succeed.
		log.SetUnmarkedCall()
		var f retrier.First
		r, sent, done, e := m.retry.SendFirst(ctx, req, out, &f)
		if done {
			if !log.Egress.Append(calls.Entry{Edge: edge, Attempts: 1}) {
				m.late.Inc(1)
			}
			return r, e
		}
		c = m.bare(req)
		if sent {
			c.sink.Out, c.sink.Direct = out, true
			res, err = m.retry.Continue(ctx, c.out, &c.sink, &f)
			state = &c.sink.State
		} else {
			res, state, err = m.send(ctx, c, out, step)
		}
	default:
		c = m.bare(req)
		log.SetUnmarkedCall()
		res, state, err = m.send(ctx, c, out, step)
	}

	e := calls.Entry{
		Edge:     edge,
		Attempts: state.Sent(),
	}
	if state.Classified {
		e.Code, e.Class = state.Code, state.Class
	} else {
		e.Code, e.Class = wire.AttemptResult(ctx, res, err, m.hdr.Code)
	}
	if e.Class != ownership.ClassOK {
		// The handler cancelled the call itself (not a deadline): it
		// gave up on it, so its failure cannot explain the handler's.
		e.Abandoned = errors.Is(ctx.Err(), context.Canceled)
		refused := state.Refused
		var noRetry bool
		if state.Classified { // the retry middleware read them
			e.Claim, noRetry = state.Claim, state.NoRetry
		} else {
			e.Claim, noRetry = wire.ResponseClaim(res, m.hdr.Claim, m.hdr.NoRetry)
		}
		// Pushback counts whether or not a policy would have retried: the
		// callee asked, so nobody above retries.
		if noRetry && refused == wire.RefusedNone {
			refused = wire.RefusedPushback
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
		case e.Class == ownership.ClassFailure:
			m.failures[e.Claim].Inc(1)
		default:
			m.answers.Inc(1)
		}
	}
	storm := &state.Storm
	if storm.Attempts() == 0 { // no retry middleware folded the attempts
		storm.Attempt(wire.AttemptStorm(res, e.Class, m.hdr.Storm, wire.Cancelled(ctx, err)))
	}
	if incident(&e, state, storm) {
		m.incidents.record(edge)
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
	return res, err
}

// repeat counts and logs (once per edge) a call the handler makes again
// after prev, the same edge's unclaimed failure earlier in the request: a
// retry loop in the handler, which replays a subtree that was already
// retried below. With RefuseRepeats it refuses the call (refused set):
// the handler gets prev's code at once, unclaimed, and the request's log
// an unclaimed failure, as if the call had been sent and failed so.
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
// serving an untracked request is marked like any other, so that its
// callee is not a root. One made with a fresh context (or by a background
// job) is an orphan when it had anything to report, a failure, a retry, a
// storm below: the requests in flight meanwhile, one of which may have
// made it, report unknown figures.
func (m *Middleware) untrackedCall(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, step reqlog.Step) (*transport.Response, error) {
	if reqlog.Untracked(ctx) {
		c := m.mark(req)
		defer m.release(c)
		res, _, err := m.send(ctx, c, out, step)
		return res, err
	}
	if m.orphans == nil {
		res, _, err := m.orphan(ctx, req, out, step)
		return res, err
	}
	if m.orphans.Watched() || m.incidents.any() {
		// In an incident, the orphan may be a call of a request whose
		// figures are read: its callee is to answer with its subtree's,
		// which it sends only to a marked call.
		c := m.mark(req)
		defer m.release(c)
		req = c.out
	}
	res, state, err := m.orphan(ctx, req, out, step)
	_, class := wire.AttemptResult(ctx, res, err, m.hdr.Code)
	storm := wire.AttemptStorm(res, class, m.hdr.Storm, wire.Cancelled(ctx, err))
	if class == ownership.ClassFailure || state.Attempts > 1 || !storm.Trivial() {
		m.orphans.Failed()
	}
	return res, err
}

// orphan sends a call tied to no request on, through the inner
// middleware, and returns what came back with the call's state.
func (m *Middleware) orphan(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, step reqlog.Step) (*transport.Response, *reqlog.CallState, error) {
	cctx, state := reqlog.NewCallContext(ctx)
	if step != nil {
		out = &reqlog.Hop{Step: step, Out: out, State: state}
	}
	res, err := m.next(cctx, req, out)
	return res, state, err
}

// send sends c's request on, through the retry middleware when it is
// errown's, and returns the state of the call it reported.
func (m *Middleware) send(ctx context.Context, c *call, out transport.UnaryOutbound, step reqlog.Step) (*transport.Response, *reqlog.CallState, error) {
	if m.retry != nil {
		// The retry middleware records its state in the Sink it gets as
		// its outbound. Nothing holds the Sink once Call returns: the
		// response body, still read later, does not go through it.
		c.sink.Out, c.sink.Direct = out, step != nil
		res, err := m.retry.Call(ctx, c.out, &c.sink)
		return res, &c.sink.State, err
	}
	cctx, state := reqlog.NewCallContext(ctx)
	if step != nil {
		out = &reqlog.Hop{Step: step, Out: out, State: state}
	}
	res, err := m.next(cctx, c.out, out)
	// A retry middleware further in classified what it returned, which
	// the middleware in between may have changed (a fallback turning an
	// error into a success): classify what came back here instead.
	state.Classified = false
	return res, state, err
}

// call is what the egress middleware keeps for one outbound call: the
// request sent on (out: the caller's own, or req, its copy with errown's
// attempt header), the headers that carry the mark, and the Sink through
// which the retry middleware reports. Pooled, so that a call costs no
// allocation.
type call struct {
	out     *transport.Request
	req     transport.Request
	headers transport.Headers
	sink    reqlog.Sink
}

// newCall is the New of a Middleware's pool of calls, its own since the
// calls keep its attempt header between uses.
func (m *Middleware) newCall() any {
	return &call{headers: transport.NewHeadersWithCapacity(4).With(m.hdr.Attempt, _firstAttempt)}
}

// mark returns a call whose request is a copy of req with req's headers
// and the attempt header "1": a first attempt in an incident tells the
// callee that an errown caller reads its telemetry (retries overwrite the
// header with their number). The copy lives until release; the
// middleware below must not keep its headers past Call, as yarpc's own
// transports do not.
//
// The headers are copied with Headers.With into the call's own Headers,
// whose maps the pool keeps: req's maps are read, never written
// (transport.Headers.Items says they must not be changed). With lower-cases
// each key; a key the caller wrote in mixed case costs one allocation
// here and one in release (Headers.Del lower-cases it too), a lower-case
// key none.
func (m *Middleware) mark(req *transport.Request) *call {
	c := m.pool.Get().(*call)
	c.out = &c.req
	copyRequest(&c.req, req)
	c.req.Headers = c.headers // even if a middleware below replaced them last time
	if req.Headers.Len() == 0 {
		return c // release left exactly the attempt header in c's maps
	}
	h, copied := c.headers, 0
	for k, v := range req.Headers.OriginalItems() {
		if !strings.EqualFold(k, m.hdr.Attempt) {
			h, copied = h.With(k, v), copied+1
		}
	}
	if h.Len() != copied+1 {
		// Original keys that differ only in case share one canonical
		// entry; keep the value req has for it.
		for ck, cv := range req.Headers.Items() {
			if got, _ := h.Get(ck); got != cv && ck != m.hdr.Attempt {
				h = h.With(ck, cv)
			}
		}
	}
	c.headers = h.With(m.hdr.Attempt, _firstAttempt)
	c.req.Headers = c.headers
	return c
}

const _firstAttempt = "1"

// bare returns a call that sends req itself, unmarked: the steady state.
func (m *Middleware) bare(req *transport.Request) *call {
	c := m.pool.Get().(*call)
	c.out = req
	return c
}

// incident reports whether the call e, of state, whose storm folded its
// attempts, met an incident: it failed, was retried or refused a retry,
// or its figures are worth a root's record (a retry spent or suppressed
// below, or unknown). A call the handler abandoned is none, nor an
// answer, nor a success whose subtree only served more requests.
func incident(e *calls.Entry, state *reqlog.CallState, storm *wire.StormCall) bool {
	if e.Abandoned {
		// Cancelled by the handler (a hedge, a fan-out's loser): its
		// figures are unknown, and nothing about the callee is known.
		return false
	}
	if e.Class == ownership.ClassFailure {
		return true
	}
	return e.Attempts > 1 || state.Refused != wire.RefusedNone || storm.Stormy()
}

// copyRequest copies every field of req but its headers into dst, a pooled
// call's request, writing only the strings that differ from what dst
// holds: a pooled call mostly meets the strings of the call before (the
// same caller, service, encoding, procedure), and while the garbage
// collector marks, each pointer written costs a write barrier (a whole
// Request copied took about a tenth of errown's cost per call). Package
// outbound's TestCopyRequestCopiesEveryField fails when yarpc adds a
// field to transport.Request.
func copyRequest(dst, req *transport.Request) {
	setString(&dst.Caller, req.Caller)
	setString(&dst.Service, req.Service)
	setString(&dst.Transport, req.Transport)
	setString(&dst.Encoding, req.Encoding)
	setString(&dst.Procedure, req.Procedure)
	setString(&dst.ShardKey, req.ShardKey)
	setString(&dst.RoutingKey, req.RoutingKey)
	setString(&dst.RoutingDelegate, req.RoutingDelegate)
	setString(&dst.CallerProcedure, req.CallerProcedure)
	dst.Body = req.Body
	dst.BodySize = req.BodySize
}

// setString sets *dst to s unless it holds an equal string already. A
// string comparison looks at the bytes only when the lengths match and the
// addresses differ: on the same strings as the call before it costs about
// 2.5ns a field more than comparing the addresses through unsafe
// (BenchmarkSetString, AMD EPYC, 2 shared vCPUs: 14.5 against 24 ns/op
// for 4 fields, medians of 6), some 20ns on a request that costs errown
// microseconds, which does not pay for unsafe.
func setString[S ~string](dst *S, s S) {
	if *dst != s {
		*dst = s
	}
}

// release empties c and returns it to the pool, its maps holding exactly
// the attempt header "1", which mark counts on. Every other key, those a
// middleware below added with With included, goes one by one through
// Headers.Del: a request usually has few, and new maps cost more.
func (m *Middleware) release(c *call) {
	h := c.headers
	if h.Len() != 1 || len(h.OriginalItems()) != 1 || h.Items()[m.hdr.Attempt] != _firstAttempt { // read, not written
		for k := range h.OriginalItems() {
			h.Del(k)
		}
		if h.Len() != 0 { // canonical keys with no original of their own
			for k := range h.Items() {
				h.Del(k)
			}
		}
		c.headers = h.With(m.hdr.Attempt, _firstAttempt)
	}
	// The request's strings stay until the next mark overwrites them; its
	// body, which may be large, goes now.
	c.req.Body, c.out = nil, nil
	c.sink.Out, c.sink.State, c.sink.Direct, c.sink.Hop = nil, reqlog.CallState{}, false, reqlog.Hop{}
	m.pool.Put(c)
}

// next sends the call on: through the inner middleware, if any, else to
// out.
func (m *Middleware) next(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	if m.inner != nil {
		return m.inner.Call(ctx, req, out)
	}
	return out.Call(ctx, req)
}
