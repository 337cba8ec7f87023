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

// Attempts is errown's innermost outbound step: it sits below every other
// outbound middleware, next to the transport, and sees every physical
// attempt that leaves the process, including those a middleware between
// errown's retry middleware and the transport replays (an application's
// own retry middleware, a client library that loops). It counts them in
// the call's attempts, folds their storm telemetry, and holds a replay
// errown did not make to errown's rules: one that would replay an
// unclaimed error, or that the edge's policy, budget, the callee's
// pushback or the deadline refuses, does not leave the process; the
// replaying middleware gets the previous attempt's response and error
// back, unchanged. Each refusal is counted in retry.denied with a reason
// "foreign-...".
//
// On an edge with no retry policy errown makes no retries of its own and
// so sets no attempt limit or budget for others: a replay there is held
// to the claim, the pushback, the code and the deadline only.
//
// Attempts knows a call by the state errown's retry (or egress)
// middleware puts in the call's context; a call without it (a chain
// without errown's outer middleware) passes through uncounted. A
// middleware in between may send attempts at once (a hedge: each is held
// to the rules for hedges, under the state's lock: apart from the
// policy's attempts, within half of the budget; package retry's
// "Hedges"), return before they end (an attempt that ends after its call
// returned is late: it writes nothing, gives back its overload slot and
// counts in retry.late_attempts), or send another procedure through the
// same chain (a fallback: a call of its own). The state is the call's
// alone, never reused.
type Attempts struct {
	m *Middleware
	// answersHeld says that what its caller takes from it is the
	// transport.Response it returns, body and all (yarpc's outbound
	// middleware), so that a hedge held back answers with the success
	// of the attempt under way (held); an adapter's attempts answer from
	// what their own send kept, and a held one gets the refusal.
	answersHeld bool
}

var _ middleware.UnaryOutbound = (*Attempts)(nil)

// Attempts returns the innermost step that goes with m, for yarpc's
// outbound middleware.
func (m *Middleware) Attempts() *Attempts { return m.attempts }

// AdapterAttempts returns the innermost step that goes with m for
// errown's adapters (grpcgo, nethttp), whose attempts answer from what
// they kept, not from the transport.Response the step returns: a hedge
// held back there answers with the refusal when the attempt under way
// succeeds.
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
// criteria: the hop decided not to retry (RefusedNone where the claim or
// the attempts already say so).
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

// foreignMetrics are the counters of replays errown did not make on one
// callee.
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

// Send sends one physical attempt of the call whose state is state to
// out, on one path for both ways the step is reached. Below middleware
// errown does not own (the state is in the attempt's context), such
// middleware may send the call's attempts at once (a hedge), return
// before they end (a timeout that abandons one), or send another call
// through the same chain (a fallback): the bookkeeping is done under the
// state's lock, and none once the call has ended (late). On the direct
// path (CallState.direct) errown's retry middleware sends the attempts
// itself, one at a time, and nothing else reaches state: its lock is
// never contended, no attempt is a hedge or a replay, and no outcome is
// kept for one to answer with.
func (a *Attempts) Send(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, state *CallState) (*transport.Response, error) {
	state.lock()
	if state.ended {
		state.unlock()
		return a.m.lateStart(req)
	}
	if !sameCall(&state.Sends, req) {
		// Another procedure through the same middleware (a fallback): a
		// call of its own, judged by nothing of this one's.
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

// fallback sends req, an attempt through the chain of a call whose
// state is another procedure's (a fallback through the same
// middleware), as a call of its own, judged by nothing of the other's.
func (a *Attempts) fallback(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	res, _, err := Around(ctx, req, out, a, nil)
	return res, err
}

// verdict is what errown's rules make of a physical attempt before it is
// sent (judge, Send), and what the call's state records of it (depart).
// An attempt neither answered nor held nor shed leaves the process
// (sent).
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
	// decided is what errown decided of the call by the attempt: a
	// refusal of the retry criteria, the attempts only a hop blind to
	// claims makes of a replay, observe mode's stop (CallState.decided).
	decided decision
}

// sent reports whether the attempt leaves the process.
func (v *verdict) sent() bool { return !v.answered && !v.hold && v.shed == nil }

// seen reports whether the attempt is errown's current one reaching the
// step: sent, shed, or errown's own retry held back at the attempt
// limit (a held hedge, or a replay answered at once, is not).
func (v *verdict) seen() bool { return v.sent() || v.shed != nil || v.hold && !v.hedge }

// judge decides, under state's lock, on a physical attempt of state's
// call: a hedge (sent while another attempt of the same errown attempt is
// under way), a replay (sent again after an attempt of the same errown
// attempt ended), errown's own retry that a hedge overtook, or else
// errown's own attempt, sent as it is.
func (m *Middleware) judge(ctx context.Context, req *transport.Request, state *CallState, v *verdict) {
	s := &state.Sends
	switch {
	case s.InFlight > 0 && state.ErrownAttempt == s.Seen:
		// Sent while another attempt of the same errown attempt is under
		// way (a hedge): there is no outcome to judge it by yet. It
		// takes nothing a failure's retry needs: it counts apart from
		// the policy's attempts, against a limit of its own, and draws
		// on the hedges' share of the budget; the deadline holds.
		v.hedge = true
		var epoch int64
		if v.refused, epoch, v.hold = m.hedgeRefusal(ctx, req, state); v.hold {
			break
		}
		v.req, v.epoch = m.foreignSent(req, s), epoch
	case s.Count > 0 && state.ErrownAttempt == s.Seen:
		m.replay(ctx, req, state, v)
	case s.Count > 0 && m.overTheLimit(req, state.Sequential()):
		// errown's own retry, decided when the call had sent fewer
		// attempts: one the middleware below sent meanwhile (a hedge
		// that reached this step only after errown's loop counted) took
		// its place. It is not sent, and answers with the call's last
		// failure; what the hedge took is counted
		// (retry.starved_by_hedges).
		v.refused, v.hold = foreignAttempts, true
		if c := m.callees[req.Service]; c != nil {
			c.metrics.starved[starvedAttempts].Inc(1)
		}
	}
}

// holdBack ends an attempt errown's rules refused (v), after sent
// physical attempts of the call: it is not sent, counts in retry.denied,
// and, held (depart), waits for an attempt under way to answer with
// (held, idle the channel closed when none is).
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

// admit takes for req a slot of c's limit on attempts in flight (c nil:
// no limit), and reports whether the attempt may go: when the limit is
// reached, only in observe mode, which holds nothing back
// (retry.would_overload).
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

// sendAdmitted sends req, an attempt of state's call counted as under way
// and holding adm, a slot of c's overload limit, and records how it ended
// (attempted).
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
// hedge (an attempt sent while another of the same errown attempt is
// under way), and whether they do: the policy's limit on hedges
// (maxAttempts less one per call, apart from its attempts), the
// deadline, the hedges' share of the budget (withdrawn when everything
// else allows it: epoch is the withdrawal's bucket, -1 for none). Observe
// mode refuses nothing.
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

// unjudgedRefusal returns, under state's lock, why errown's rules
// refuse an attempt with no outcome to judge it by (a replay after a
// success, or after attempts their caller cancelled), and whether they
// do: the policy's attempt limit, the deadline, the budget (withdrawn
// when everything else allows it). Observe mode refuses nothing.
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

// deadlineRefusal reports whether ctx leaves an attempt under p (nil:
// no policy) too little time: cancelled, or less than the policy's
// minimum remaining.
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

// overTheLimit reports whether req's call, having sent sent attempts, is
// at its policy's attempt limit, outside observe mode (which refuses
// nothing). A call without a policy has no limit.
func (m *Middleware) overTheLimit(req *transport.Request, sent int) bool {
	c := m.callees[req.Service]
	if c == nil {
		return false
	}
	p := c.policy(req.Procedure)
	return p != nil && sent >= p.maxAttempts && !m.observesPolicy(p)
}

// held ends an attempt errown refused to send while another attempt of
// the call was under way (or, with none under way, errown's own retry
// that found the call's attempts spent), which depart counted held: it
// waits until idle is closed (no attempt of the call is under way, or
// the call has ended) or ctx is done, so that the middleware that sent
// it (a hedge) takes the other attempt's answer. It then returns the
// last outcome kept, if any, as a refused replay does: the attempt's
// failure, or, with success, its success (an attempt that succeeds while
// one is held keeps its response for it, so that a hedger that takes the
// first answer never takes the refusal in its place), else res and err.
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

// landed records in state the end of a physical attempt of its call (e:
// answer), the one place the innermost step does so, and returns the
// response to hand on and whether the attempt is late. An attempt that
// came back with res and err and succeeded (ok) while others are held
// (Sends.Held) first has res kept in e's won for those to answer with,
// its body read with state unlocked.
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

// lateStart refuses an attempt sent after its call returned: nobody waits
// for its answer, and the call's state is sealed. It counts in
// retry.late_attempts.
func (m *Middleware) lateStart(req *transport.Request) (*transport.Response, error) {
	m.foreign(req.Service).late.Inc(1)
	return nil, yarpcerrors.CancelledErrorf("errown: attempt of %s::%s not sent: its call has returned", req.Service, req.Procedure)
}

// callHeld sends req through out, the attempt holding adm, a slot of c's
// overload limit (c nil: none), and gives the slot back, with no outcome,
// when out panics: yarpc recovers a handler's panic further out and
// serves on, and a slot kept would hold one of the limit's places for
// good.
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

// attempted records in state (landed) the physical attempt of state's
// call, under way until now, that returned res and err, classified as
// code and class, ended as end, sent to c (nil: no policy) under adm: its
// storm figures, its classification and claim, the end of its admission,
// and, below middleware errown does not own, its outcome, kept (its body
// read before the lock is taken) for a refused replay or a held hedge to
// answer with. An attempt that ends after its call
// returned (late) records nothing: it gives back its slot of the
// overload limit, with no outcome, and counts in retry.late_attempts. It
// returns what to hand on.
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
		// Its caller gave up on it (a hedge's loser): it says nothing of
		// the callee and is no outcome of the call. The last outcome
		// kept stays the call's: a replay refused after it, or a hedge
		// held, answers with the callee's failure, not with a
		// cancellation nobody above made. (On the direct path errown's
		// retry middleware reads the attempt's classification.)
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

// unsent records in state that the physical attempt of state's call
// under way until now, holding adm, a slot of c's overload limit (c nil:
// none), was sent nowhere: the peer chooser found no instance but the
// one that shed the call (calls.ErrNoOtherPeer). It did not leave the
// process: it gives its slot back with no outcome, and records nothing
// but that it is no longer under way and was not sent; the call's last
// outcome stays the shed's. It returns res and err, for the retry
// middleware to turn back into the shed.
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

// overloaded reports whether an attempt that ended with code and its
// callee's claim says the callee is overloaded: the attempt timed out, or
// the callee shed it, on its own behalf (an unclaimed error comes from
// further below).
func overloaded(code yarpcerrors.Code, claim ownership.Claim) bool {
	return claim != ownership.ClaimUnclaimed &&
		(code == yarpcerrors.CodeDeadlineExceeded || code == yarpcerrors.CodeResourceExhausted)
}

// shed fails an attempt that c's limit on attempts in flight holds back:
// it is not sent, and the call's retry criteria are satisfied (refused for
// overload), so that nobody above retries it either.
func (m *Middleware) shed(req *transport.Request, c *callee) *Outcome {
	c.metrics.denied[wire.RefusedOverload].Inc(1)
	err := yarpcerrors.ResourceExhaustedErrorf(
		"errown: not sent to %s: %.0f attempts in flight, its limit while it is overloaded (retry.overload)",
		req.Service, c.overload.Limit())
	// The call failed here, as the callee's overload: the retry and egress
	// middleware read this classification on the direct path.
	return &Outcome{Err: err, Code: yarpcerrors.CodeResourceExhausted, Class: wire.ClassFailure, Claim: ownership.ClaimMissing}
}

// keep records res, an attempt that did not succeed, in last, and returns
// it to be handed on, its body read into memory so that a refused replay
// can return it again. A body over limit is not kept: keep reports
// false, and a replay after it is not refused, having nothing to return
// in its place.
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

// replay decides on a physical attempt of state's call that errown's retry
// middleware did not make: something below it sends the call again. It
// returns the request to send (stamped with its attempt number), or the
// previous attempt's response and error with refused set.
func (m *Middleware) replay(ctx context.Context, req *transport.Request, state *CallState, v *verdict) {
	s := &state.Sends
	f := m.foreign(req.Service)
	if s.Last == nil {
		// After a success, a response too large to return again, or
		// only attempts their caller cancelled: nothing to judge by or
		// return, but, as for a hedge, the attempt limit, the deadline
		// and the budget hold: it is an attempt past the call's first.
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

// replayRefusal returns why errown's rules refuse to send the call again
// after the outcome in s, under the edge's policy p (nil: none) and its
// callee c, after sent attempts, and whether they do. The budget is withdrawn from last, when
// everything else allows the replay.
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
		// As errown's own retry: no replay queues behind the work an
		// overloaded callee timed out on or shed.
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

// foreignSent counts, under the state's lock, a physical attempt of the
// call whose attempts s records that errown did not make and lets go
// (retry.foreign_attempts), and returns it stamped with its number.
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

// foreign returns the counters of replays on service's calls: the
// callee's own when service has a policy, else made on first use.
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

// warnHedge logs, once per callee procedure, that errown held back a
// hedge for reason r, and what to do about it.
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

// warnForeign logs, once per callee procedure, that errown refused a
// retry it did not make, and what to do about it.
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
