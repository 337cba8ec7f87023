package retrier

import (
	"bytes"
	"context"
	"io"

	"github.com/errown/errown/internal/tracing"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
	"go.uber.org/zap"
)

// _defaultMinRemaining is the margin of a call with no policy.
var _defaultMinRemaining = retry.DefaultPolicyConfig().MinRemaining

// Attempts is errown's innermost outbound step, next to the transport: it
// sees every physical attempt, replays by middleware below errown's retry
// middleware included, counts them, folds their storm telemetry, and holds
// a foreign replay to errown's rules: one replaying an unclaimed error or
// refused by policy, budget, pushback or deadline (only claim, pushback,
// code and deadline without a policy) is not sent, gets the previous
// response and error, and counts in retry.denied ("foreign-...").
//
// A call without errown's state passes through uncounted. Hedges follow
// package retry's "Hedges" rules; a late attempt writes nothing, gives
// back its slot and counts in retry.late_attempts; another procedure is a
// fallback, a call of its own. The state is the call's alone.
type Attempts struct {
	m *Middleware
	// answersHeld says the caller takes the returned transport.Response,
	// body and all (yarpc's outbound middleware), so a held hedge answers
	// with the success of the attempt under way; an adapter's held attempt
	// gets the refusal.
	answersHeld bool
}

var _ middleware.UnaryOutbound = (*Attempts)(nil)

// Attempts returns the innermost step that goes with m, for yarpc's
// outbound middleware.
func (m *Middleware) Attempts() *Attempts { return m.attempts }

// AdapterAttempts returns the innermost step for errown's adapters
// (grpcgo, nethttp), whose attempts answer from what they kept: a held
// hedge there answers with the refusal.
func (m *Middleware) AdapterAttempts() *Attempts { return m.adapterAttempts }

// foreignReason is why a replay errown did not make was refused.
type foreignReason uint8

const (
	foreignUnclaimed foreignReason = iota
	foreignAttempts
	foreignBudget
	foreignDeadline
	foreignPushback
	foreignCode
	foreignNotIdempotent
	foreignOverload
	_foreignReasons
)

// String returns the reason's metric tag.
func (r foreignReason) String() string {
	switch r {
	case foreignUnclaimed:
		return "foreign-unclaimed"
	case foreignAttempts:
		return "foreign-attempts"
	case foreignBudget:
		return "foreign-budget"
	case foreignDeadline:
		return "foreign-deadline"
	case foreignPushback:
		return "foreign-pushback"
	case foreignCode:
		return "foreign-code"
	case foreignOverload:
		return "foreign-overload"
	default:
		return "foreign-not-idempotent"
	}
}

// refusal returns the Refusal the reason stands for in the call's retry
// criteria (RefusedNone where the claim or attempts already say so).
func (r foreignReason) refusal() wire.Refusal {
	switch r {
	case foreignBudget:
		return wire.RefusedBudget
	case foreignDeadline:
		return wire.RefusedDeadline
	case foreignPushback:
		return wire.RefusedPushback
	case foreignCode:
		return wire.RefusedCode
	case foreignNotIdempotent:
		return wire.RefusedNotIdempotent
	case foreignOverload:
		return wire.RefusedOverload
	default:
		return wire.RefusedNone
	}
}

// foreignMetrics are one callee's counters of replays errown did not make.
type foreignMetrics struct {
	sent   tally.Counter // replays let through
	denied [_foreignReasons]tally.Counter
	late   tally.Counter // attempts that started or ended after their call returned
}

func newForeignMetrics(scope tally.Scope, service string) *foreignMetrics {
	s := scope.SubScope(_subScope).Tagged(map[string]string{_tagCallee: service})
	f := &foreignMetrics{sent: s.Counter(_metricForeign), late: s.Counter(_metricLate)}
	for r := range _foreignReasons {
		f.denied[r] = s.Tagged(map[string]string{_tagReason: r.String()}).Counter(_metricDenied)
	}
	return f
}

// Call implements middleware.UnaryOutbound.
func (a *Attempts) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	state := CallStateFromContext(ctx)
	if state == nil {
		return out.Call(ctx, req)
	}
	return a.Send(ctx, req, out, state)
}

var _ Step = (*Attempts)(nil)

// Send sends one physical attempt of state's call to out. Below
// middleware errown does not own, attempts may overlap (hedges), outlive
// their call (late) or be another procedure (fallback): bookkeeping is
// done under the state's lock. On the direct path (CallState.direct)
// errown's retry middleware sends its attempts one at a time: the lock is
// never contended, and there are no hedges, replays or kept outcomes.
func (a *Attempts) Send(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, state *CallState) (*transport.Response, error) {
	state.lock()
	if state.ended {
		state.unlock()
		return a.m.lateStart(req)
	}
	if !sameCall(&state.Sends, req) {
		// Another procedure (a fallback): a call of its own.
		state.unlock()
		return a.fallback(ctx, req, out)
	}
	v := verdict{req: req, epoch: -1}
	if !state.direct { // else errown's own attempt: nothing to judge
		a.m.judge(ctx, req, state, &v)
	}
	var (
		c   *callee
		adm admission
	)
	if !v.answered && !v.hold {
		c = a.m.callees[v.req.Service]
		var admitted bool
		if adm, admitted = a.m.admit(c, v.req); !admitted {
			v.shed, v.decided.refused = a.m.shed(v.req, c), wire.RefusedOverload
		}
	}
	idle, sent := state.depart(req, &v), state.Sends.Count
	state.unlock()
	switch {
	case v.answered:
		return v.res, v.err
	case v.hold:
		return a.holdBack(ctx, req, state, v, idle, sent)
	case v.shed != nil && idle == nil:
		return nil, v.shed.Err
	case v.shed != nil:
		return a.m.held(ctx, state, idle, a.answersHeld, nil, v.shed.Err)
	}
	return a.sendAdmitted(ctx, v.req, out, c, adm, state)
}

// fallback sends req, another procedure through the same middleware, as a
// call of its own.
func (a *Attempts) fallback(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	res, _, err := Around(ctx, req, out, a, nil)
	return res, err
}

// verdict is what errown's rules make of a physical attempt before it is
// sent (judge, Send), and what the state records of it (depart).
type verdict struct {
	req      *transport.Request // the attempt to send, stamped when errown did not make it
	hedge    bool               // sent while another attempt is under way
	epoch    int64              // the budget bucket a hedge sent drew on, -1 for none
	hold     bool               // refused (refused) while another attempt is under way
	refused  foreignReason
	answered bool // refused, answering at once with res and err
	res      *transport.Response
	err      error
	shed     *Outcome // the callee's limit on attempts in flight shed it, failing so
	// decided is what errown decided of the call by the attempt
	// (CallState.decided).
	decided decision
}

// sent reports whether the attempt leaves the process.
func (v *verdict) sent() bool { return !v.answered && !v.hold && v.shed == nil }

// seen reports whether the attempt is errown's current one: sent, shed,
// or errown's own retry held at the attempt limit (not a held hedge or an
// answered replay).
func (v *verdict) seen() bool { return v.sent() || v.shed != nil || v.hold && !v.hedge }

// judge decides, under state's lock, on a physical attempt: a hedge, a
// replay, errown's own retry that a hedge overtook, or else errown's own
// attempt, sent as it is.
func (m *Middleware) judge(ctx context.Context, req *transport.Request, state *CallState, v *verdict) {
	s := &state.Sends
	switch {
	case s.InFlight > 0 && state.ErrownAttempt == s.Seen:
		// A hedge: no outcome to judge it by yet. It counts against a
		// limit of its own and the hedges' share of the budget, so it
		// takes nothing a failure's retry needs; the deadline holds.
		v.hedge = true
		var epoch int64
		if v.refused, epoch, v.hold = m.hedgeRefusal(ctx, req, state); v.hold {
			break
		}
		v.req, v.epoch = m.foreignSent(req, s), epoch
	case s.Count > 0 && state.ErrownAttempt == s.Seen:
		m.replay(ctx, req, state, v)
	case s.Count > 0 && m.overTheLimit(req, state.Sequential()):
		// errown's own retry, but a hedge sent meanwhile took its place
		// at the limit: it is not sent and answers with the last
		// failure (retry.starved_by_hedges).
		v.refused, v.hold = foreignAttempts, true
		if c := m.callees[req.Service]; c != nil {
			c.metrics.starved[starvedAttempts].Inc(1)
		}
	}
}

// holdBack ends an attempt errown's rules refused (v): not sent, counted
// in retry.denied, it waits (held) for an attempt under way to answer with;
// idle is closed when none is.
func (a *Attempts) holdBack(ctx context.Context, req *transport.Request, state *CallState, v verdict, idle <-chan struct{}, sent int) (*transport.Response, error) {
	a.m.foreign(req.Service).denied[v.refused].Inc(1)
	tracing.Foreign(ctx, req, sent, ownership.ClaimMissing, v.refused.String())
	if v.hedge {
		a.m.warnHedge(req, v.refused)
	} else {
		a.m.warnForeign(req, v.refused)
	}
	return a.m.held(ctx, state, idle, a.answersHeld, nil, yarpcerrors.AbortedErrorf(
		"errown: attempt of %s::%s not sent (%s)", req.Service, req.Procedure, v.refused))
}

// admit takes for req a slot of c's limit on attempts in flight (c nil: no
// limit) and reports whether the attempt may go; at the limit only in
// observe mode (retry.would_overload).
func (m *Middleware) admit(c *callee, req *transport.Request) (admission, bool) {
	if c == nil {
		return admission{}, true
	}
	adm, ok := c.overload.admit(req.Procedure)
	if ok {
		return adm, true
	}
	if !m.observes(c, req.Procedure) {
		return adm, false
	}
	c.metrics.wouldOverload.Inc(1)
	return c.overload.unheld(req.Procedure), true
}

// sendAdmitted sends req, an attempt under way holding adm, and records
// how it ended (attempted).
func (a *Attempts) sendAdmitted(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, c *callee, adm admission, state *CallState) (*transport.Response, error) {
	ended := false
	defer func() {
		if !ended { // out panicked: the attempt is no longer under way
			a.m.landed(state, false, nil, nil, &landing{})
		}
	}()
	res, err := callHeld(ctx, req, out, c, adm)
	ended = true
	code, class := wire.AttemptResult(ctx, res, err, a.m.hdr.Code)
	return a.m.attempted(req, c, adm, attemptEnding(ctx, err, code), res, err, code, class, state)
}

// hedgeRefusal returns, under state's lock, why errown's rules refuse a
// hedge and whether they do: the hedge limit (maxAttempts less one per
// call), the deadline, the hedges' share of the budget (withdrawn last;
// epoch is its bucket, -1 for none). Observe mode refuses nothing.
func (m *Middleware) hedgeRefusal(ctx context.Context, req *transport.Request, state *CallState) (_ foreignReason, epoch int64, _ bool) {
	var p *policy
	c := m.callees[req.Service]
	if c != nil {
		p = c.policy(req.Procedure)
	}
	epoch = -1
	r, ok := m.deadlineRefusal(ctx, p)
	switch {
	case p != nil && state.Sends.Hedges >= p.maxAttempts-1:
		r, ok = foreignAttempts, true
	case ok:
	case p != nil:
		var drew bool
		if epoch, drew = c.budget.withdrawHedge(); !drew {
			r, ok, epoch = foreignBudget, true, -1
		}
	}
	if ok && m.observesPolicy(p) {
		return r, epoch, false
	}
	return r, epoch, ok
}

// unjudgedRefusal returns, under state's lock, why errown's rules refuse
// an attempt with no outcome to judge it by (after a success or only
// cancelled attempts), and whether they do: attempt limit, deadline,
// budget (withdrawn last). Observe mode refuses nothing.
func (m *Middleware) unjudgedRefusal(ctx context.Context, req *transport.Request, state *CallState) (foreignReason, bool) {
	var p *policy
	c := m.callees[req.Service]
	if c != nil {
		p = c.policy(req.Procedure)
	}
	r, ok := m.deadlineRefusal(ctx, p)
	switch {
	case p != nil && state.Sequential() >= p.maxAttempts:
		r, ok = foreignAttempts, true
	case ok:
	case p != nil && !c.budget.tryWithdraw():
		r, ok = foreignBudget, true
	}
	if ok && m.observesPolicy(p) {
		return r, false
	}
	return r, ok
}

// deadlineRefusal reports whether ctx is done or leaves less than p's
// minimum remaining (p nil: the default).
func (m *Middleware) deadlineRefusal(ctx context.Context, p *policy) (foreignReason, bool) {
	minRemaining := _defaultMinRemaining
	if p != nil {
		minRemaining = p.minRemaining
	}
	if ctx.Err() != nil {
		return foreignDeadline, true
	}
	if deadline, has := ctx.Deadline(); has && deadline.Sub(m.now()) < minRemaining {
		return foreignDeadline, true
	}
	return 0, false
}

// overTheLimit reports whether req's call, after sent attempts, is at its
// policy's attempt limit outside observe mode. No policy, no limit.
func (m *Middleware) overTheLimit(req *transport.Request, sent int) bool {
	c := m.callees[req.Service]
	if c == nil {
		return false
	}
	p := c.policy(req.Procedure)
	return p != nil && sent >= p.maxAttempts && !m.observesPolicy(p)
}

// held ends an attempt depart counted held: it waits for idle (nothing
// under way, or the call ended) or ctx, then answers like a refused
// replay with the last outcome kept, or the success kept for it (so a
// hedger never takes the refusal first), else res and err.
func (m *Middleware) held(ctx context.Context, state *CallState, idle <-chan struct{}, success bool, res *transport.Response, err error) (*transport.Response, error) {
	var gaveUp bool
	select {
	case <-idle:
	case <-ctx.Done():
		gaveUp = true
	}
	e := landing{held: true}
	m.landed(state, false, nil, nil, &e)
	switch {
	case gaveUp:
	case e.last != nil:
		return replayed(e.last), e.last.Err
	case e.won != nil && success:
		return replayed(e.won), e.won.Err
	}
	return res, err
}

// landed records in state the end of a physical attempt (e), the only
// place the innermost step does, and returns the response to hand on and
// whether the attempt is late. A success (ok) while others are held first
// keeps res in e's won for them, its body read with state unlocked.
func (m *Middleware) landed(state *CallState, ok bool, res *transport.Response, err error, e *landing) (*transport.Response, bool) {
	var won *Outcome
	for {
		state.lock()
		if !ok || won != nil || state.Sends.Held == 0 || state.ended {
			break
		}
		state.unlock()
		w := &Outcome{Err: err, Class: wire.ClassOK}
		var kept bool
		if res, kept = keep(w, res, m.maxBodyBytes); !kept {
			ok = false // too large to answer with twice: those held get the refusal
			continue
		}
		won = w
	}
	if e.k != nil {
		e.k.won = won
	}
	late := state.answer(e)
	state.unlock()
	return res, late
}

// lateStart refuses an attempt sent after its call returned
// (retry.late_attempts).
func (m *Middleware) lateStart(req *transport.Request) (*transport.Response, error) {
	m.foreign(req.Service).late.Inc(1)
	return nil, yarpcerrors.CancelledErrorf("errown: attempt of %s::%s not sent: its call has returned", req.Service, req.Procedure)
}

// callHeld sends req holding adm, a slot of c's overload limit (c nil:
// none), and gives the slot back if out panics: yarpc recovers panics and
// serves on, and a kept slot would be lost for good.
func callHeld(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, c *callee, adm admission) (*transport.Response, error) {
	if c == nil {
		return out.Call(ctx, req)
	}
	ended := false
	defer func() {
		if !ended {
			c.overload.abandon(adm)
		}
	}()
	res, err := out.Call(ctx, req)
	ended = true
	return res, err
}

// attempted records in state (landed) the end of an attempt to c (nil: no
// policy) under adm: storm figures, classification, claim, admission end,
// and, off the direct path, its outcome kept for replays and held hedges.
// A late attempt only gives back its slot (retry.late_attempts).
func (m *Middleware) attempted(req *transport.Request, c *callee, adm admission, end ending, res *transport.Response, err error, code yarpcerrors.Code, class wire.Class, state *CallState) (*transport.Response, error) {
	if end == endUnsent {
		return m.unsent(c, adm, res, err, state)
	}
	storm := wire.AttemptStorm(res, class, m.hdr.Storm, end == endCancelled)
	var (
		last *Outcome
		said calleeSaid
	)
	if class != wire.ClassOK {
		said = m.answerOf(res, code)
		if !state.direct { // on the direct path nothing replays it
			o := said.outcome(err, code, class)
			var kept bool
			if res, kept = keep(o, res, m.maxBodyBytes); kept {
				last = o
			}
		}
	}
	o, k := said.outcome(err, code, class), &kept{last: last}
	if end == endCancelled && !state.direct {
		// Its caller gave up on it (a hedge's loser): no outcome of the
		// call. The last outcome kept stays, so a refused replay or held
		// hedge answers with the callee's failure, not a cancellation.
		o, k = nil, nil
	}
	res, late := m.landed(state, class == wire.ClassOK && end != endCancelled, res, err, &landing{o: o, f: &storm, k: k})
	if late {
		if c != nil {
			c.overload.abandon(adm)
		}
		m.foreign(req.Service).late.Inc(1)
		return res, err
	}
	giveBack(c, adm, end, code, said)
	return res, err
}

// unsent records that the attempt under way, holding adm, was sent
// nowhere: the peer chooser found no instance but the one that shed the
// call (calls.ErrNoOtherPeer). It gives its slot back with no outcome;
// the call's last outcome stays the shed's. The retry middleware turns
// res and err back into the shed.
func (m *Middleware) unsent(c *callee, adm admission, res *transport.Response, err error, state *CallState) (*transport.Response, error) {
	res, _ = m.landed(state, false, res, err, &landing{unsent: true})
	if c != nil {
		c.overload.abandon(adm)
	}
	return res, err
}

// observes reports whether calls to c's procedure are in observe mode.
func (m *Middleware) observes(c *callee, procedure string) bool {
	return m.observesPolicy(c.policy(procedure))
}

// observesPolicy reports whether calls under p (nil: no policy) are in
// observe mode.
func (m *Middleware) observesPolicy(p *policy) bool {
	return p != nil && p.observe || p == nil && m.observe
}

// overloaded reports whether an attempt that ended with code and claim
// says its callee is overloaded: it timed out or was shed by the callee
// itself (an unclaimed error comes from further below).
func overloaded(code yarpcerrors.Code, claim ownership.Claim) bool {
	return claim != ownership.ClaimUnclaimed &&
		(code == yarpcerrors.CodeDeadlineExceeded || code == yarpcerrors.CodeResourceExhausted)
}

// shed fails an attempt c's limit on attempts in flight holds back: not
// sent, refused for overload, so nobody above retries it either.
func (m *Middleware) shed(req *transport.Request, c *callee) *Outcome {
	c.metrics.denied[wire.RefusedOverload].Inc(1)
	err := yarpcerrors.ResourceExhaustedErrorf(
		"errown: not sent to %s: %.0f attempts in flight, its limit while it is overloaded (retry.overload)",
		req.Service, c.overload.Limit())
	// The callee's overload; read on the direct path.
	return &Outcome{Err: err, Code: yarpcerrors.CodeResourceExhausted, Class: wire.ClassFailure, Claim: ownership.ClaimMissing}
}

// keep records res, an attempt that did not succeed, in last, and returns
// it to hand on, its body read into memory so a refused replay can return
// it again. A body over limit is not kept: keep reports false, and a
// replay after it is not refused.
func keep(last *Outcome, res *transport.Response, limit int) (*transport.Response, bool) {
	if res == nil {
		return nil, true
	}
	if res.Body == nil {
		kept := *res
		last.Response = &kept
		return res, true
	}
	buf, err := io.ReadAll(io.LimitReader(res.Body, int64(limit)+1))
	if err != nil || len(buf) > limit {
		// Hand on what was read, then the rest (or the read error).
		rest := io.Reader(res.Body)
		if err != nil {
			rest = errReader{err}
		}
		out := *res
		out.Body = readCloser{io.MultiReader(bytes.NewReader(buf), rest), res.Body}
		return &out, false
	}
	_ = res.Body.Close() // read to the end; the copy below stands for it
	kept := *res
	kept.Body = nil
	last.Response, last.Body = &kept, buf
	out := *res
	out.Body = io.NopCloser(bytes.NewReader(buf))
	return &out, true
}

// replayed returns o's response to be handed on again, its body read
// from the copy kept, or nil.
func replayed(o *Outcome) *transport.Response {
	if o.Response == nil {
		return nil
	}
	out := *o.Response
	if o.Body != nil {
		out.Body = io.NopCloser(bytes.NewReader(o.Body))
	}
	return &out
}

type readCloser struct {
	io.Reader
	io.Closer
}

// replay decides on an attempt errown's retry middleware did not make: it
// sets the request to send (stamped), or the previous response and error
// with refused set.
func (m *Middleware) replay(ctx context.Context, req *transport.Request, state *CallState, v *verdict) {
	s := &state.Sends
	f := m.foreign(req.Service)
	if s.Last == nil {
		// After a success, a body too large to keep, or only cancelled
		// attempts: nothing to judge by, but the attempt limit, deadline
		// and budget hold.
		if r, ok := m.unjudgedRefusal(ctx, req, state); ok {
			f.denied[r].Inc(1)
			tracing.Foreign(ctx, req, s.Count, ownership.ClaimMissing, r.String())
			m.warnForeign(req, r)
			v.err, v.answered = yarpcerrors.AbortedErrorf("errown: replay of %s::%s not sent (%s)", req.Service, req.Procedure, r), true
			return
		}
		v.req = m.foreignSent(req, s)
		return
	}
	var p *policy
	c := m.callees[req.Service]
	if c != nil {
		p = c.policy(req.Procedure)
	}
	r, ok := m.replayRefusal(ctx, p, c, req.Procedure, state.Sequential(), s.Last)
	observe := m.observesPolicy(p)
	if ok && r == foreignOverload && observe {
		c.metrics.wouldOverload.Inc(1) // observe mode: the replay goes
	}
	if ok && r == foreignUnclaimed {
		if observe {
			if !state.Storm.ErrownStopped() {
				if c != nil {
					c.metrics.would.Inc(1)
				}
				v.decided.stop = true // errown's world stops here
			}
			ok = false // the replay goes: observe mode stops no retry
		} else {
			v.decided.blind = 1 // the blind world makes it
		}
	} else if ok && observe {
		if r == foreignBudget {
			c.metrics.wouldBudget.Inc(1) // observe mode: the budget refuses nothing
		}
		ok = false
	}
	if !ok {
		v.req = m.foreignSent(req, s)
		return
	}
	if wire.RetryableByNature(s.Last.Code) {
		v.decided.refused = r.refusal()
	}
	f.denied[r].Inc(1)
	tracing.Foreign(ctx, req, s.Count, s.Last.Claim, r.String())
	m.warnForeign(req, r)
	v.res, v.err, v.answered = replayed(s.Last), s.Last.Err, true
}

// replayRefusal returns why errown's rules refuse a replay after last,
// under policy p (nil: none) and callee c after sent attempts, and whether
// they do. The budget is withdrawn last.
func (m *Middleware) replayRefusal(ctx context.Context, p *policy, c *callee, procedure string, sent int, last *Outcome) (foreignReason, bool) {
	minRemaining := _defaultMinRemaining
	if p != nil {
		minRemaining = p.minRemaining
	}
	switch {
	case last.Class != wire.ClassFailure || !wire.RetryableByNature(last.Code):
		return foreignCode, true
	case last.Claim == ownership.ClaimUnclaimed:
		return foreignUnclaimed, true
	case last.NoRetry:
		return foreignPushback, true
	case p != nil && sent >= p.maxAttempts:
		return foreignAttempts, true
	case p != nil && !p.retryableCode(last.Code):
		return foreignCode, true
	case p != nil && !p.idempotent:
		return foreignNotIdempotent, true
	case c != nil && overloaded(last.Code, last.Claim) && c.overload.Overloaded(procedure):
		// As for errown's own retry: nothing queues behind an
		// overloaded callee.
		return foreignOverload, true
	}
	if ctx.Err() != nil {
		return foreignDeadline, true
	}
	if deadline, ok := ctx.Deadline(); ok && deadline.Sub(m.now()) < minRemaining {
		return foreignDeadline, true
	}
	if p != nil {
		if _, ok, hedgesTook := c.budget.withdraw(); !ok {
			if hedgesTook && !m.observesPolicy(p) {
				c.metrics.starved[starvedBudget].Inc(1)
			}
			return foreignBudget, true
		}
	}
	return 0, false
}

// foreignSent counts, under the state's lock, a replay errown lets go
// (retry.foreign_attempts) and returns it stamped with its number.
func (m *Middleware) foreignSent(req *transport.Request, s *Sends) *transport.Request {
	m.foreign(req.Service).sent.Inc(1)
	return m.stamp(req, s.Count+1)
}

// stamp returns req with the attempt header set to n, leaving req alone.
func (m *Middleware) stamp(req *transport.Request, n int) *transport.Request {
	r := *req
	r.Headers = headersWith(req.Headers, m.hdr.Attempt, wire.FormatAttempt(n))
	return &r
}

// foreign returns the replay counters for service: its callee's, else
// made on first use.
func (m *Middleware) foreign(service string) *foreignMetrics {
	if c := m.callees[service]; c != nil {
		return c.foreign
	}
	if f, ok := m.foreignByService.Load(service); ok {
		return f.(*foreignMetrics)
	}
	f, _ := m.foreignByService.LoadOrStore(service, newForeignMetrics(m.scope, service))
	return f.(*foreignMetrics)
}

// warnHedge logs, once per callee procedure, that a hedge was held back.
func (m *Middleware) warnHedge(req *transport.Request, r foreignReason) {
	key := "hedge:" + req.Service + "::" + req.Procedure
	if _, seen := m.warned.LoadOrStore(key, struct{}{}); seen {
		return
	}
	m.logger.Warn("errown held back a hedge: it was not sent, and answers with the outcome of the attempt under way; "+
		"a call's hedges are held to the policy's maxAttempts less one and to half of the callee's retry budget, apart from what its retries of failures need: "+
		"raise maxAttempts or the budget's ratio to hedge more (retry.starved_by_hedges says when hedges took what retries needed)",
		zap.String("service", req.Service),
		zap.String("procedure", req.Procedure),
		zap.Stringer("reason", r),
	)
}

// warnForeign logs, once per callee procedure, that a foreign retry was
// refused.
func (m *Middleware) warnForeign(req *transport.Request, r foreignReason) {
	key := req.Service + "::" + req.Procedure
	if _, seen := m.warned.LoadOrStore(key, struct{}{}); seen {
		return
	}
	m.logger.Warn("errown refused a retry it did not make: a middleware, client library or loop below errown's retry middleware sends calls again; "+
		"remove that retry and set an errown retry policy for the callee instead (errown's policies are the process's retries)",
		zap.String("service", req.Service),
		zap.String("procedure", req.Procedure),
		zap.Stringer("reason", r),
	)
}
