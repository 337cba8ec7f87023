package retrier

import (
	"context"
	"sync"
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/release"
	"github.com/errown/errown/internal/reqlog"
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

var _ middleware.UnaryOutbound = (*Middleware)(nil)

// Middleware is the unary outbound retry middleware. It is safe for
// concurrent use.
type Middleware struct {
	hdr          ownership.Headers // the header names, defaults applied
	maxBodyBytes int
	callees      map[string]*callee // read-only after New
	clock        *budgetClock       // the budgets'
	observe      bool               // the default mode is ModeObserve
	attempts     *Attempts          // the innermost step, made with m
	// AdapterAttempts' step
	adapterAttempts *Attempts
	sinks           sync.Pool // of *Sink, for calls on the direct path (Run)

	scope            tally.Scope
	budgetLeft       map[string]tally.Gauge // by callee with a policy: UpdateGauges
	foreignByService sync.Map               // callee without a policy → *foreignMetrics
	warned           sync.Map               // "service::procedure" whose foreign retry was logged

	logger *zap.Logger
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	rand   func() float64
}

// New returns a Middleware for cfg, or an error listing every invalid field
// of cfg.
func New(cfg retry.Config, opts ...Option) (*Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = defaults.Fill(cfg, retry.DefaultConfig(), retry.DefaultPolicyConfig())
	o := defaultOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	tick := coarseTick(budgetWidth(cfg.Budget.Window))
	if len(cfg.Policies) == 0 || cfg.Budget.Disabled {
		tick = 0 // no budget reads the clock
	}
	clock := newBudgetClock(o.clock, tick, o.ticker)
	m := &Middleware{
		hdr:          cfg.Headers,
		maxBodyBytes: cfg.MaxBodyBytes,
		callees:      compileCallees(cfg, o.Scope, clock),
		clock:        clock,
		observe:      cfg.Mode == retry.ModeObserve,
		scope:        o.Scope,
		logger:       o.Logger,
		now:          o.now,
		sleep:        o.sleep,
		rand:         o.rand,
	}
	m.sinks.New = func() any { return new(Sink) }
	m.attempts = &Attempts{m: m, answersHeld: true}
	m.adapterAttempts = &Attempts{m: m}
	for _, c := range m.callees {
		c.instances = newInstances(o.now)
	}
	plainBudgets(m.callees, o.plainBudget)
	m.budgetLeft = budgetGauges(o.Scope, m.callees)
	return m, nil
}

// Start starts a goroutine reading the clock every tenth of a budget
// bucket (10ms to 100ms) for the budgets, which read its last reading
// until Stop (without Start, the clock itself). It does nothing when
// running or with no budget (no policy, disabled, window under 1s). It is
// safe concurrently with Call, and returns nil.
func (m *Middleware) Start() error {
	m.clock.Start()
	return nil
}

// Stop stops Start's goroutine, if it runs, and waits for it. It is safe
// to call concurrently with Call and more than once, and returns nil.
func (m *Middleware) Stop() error {
	m.clock.Stop()
	return nil
}

// Call implements middleware.UnaryOutbound. It sends req through out, again
// when the policy, the callee's claim, the deadline and the budget allow,
// and returns the last attempt's response and error as out returned them;
// with a per-attempt timeout, the body's Close also releases that
// attempt's context. Under errown it tells the egress middleware around it
// its attempts and why it declined a retry.
func (m *Middleware) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	if sink, ok := out.(*Sink); ok {
		return m.callSink(ctx, req, sink)
	}
	state := CallStateFromContext(ctx)
	if state == nil {
		state = new(CallState) // used alone: nobody but Attempts reads it
		ctx = WithCallState(ctx, state)
	}
	return m.call(ctx, req, out, state)
}

// Run is Call for the egress middleware around m, with the call's Result
// in result (zero in the steady state). direct: only m's innermost step
// stands before the transport (Sink), so the first attempt goes without
// state (sendFirst) and others take a pooled state; otherwise the state
// goes below in attempt contexts and is the call's alone, never reused.
func (m *Middleware) Run(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, direct bool, result *reqlog.Result) (*transport.Response, error) {
	if !direct {
		sink := &Sink{Out: out}
		res, err := m.callSink(ctx, req, sink)
		*result = sink.State.Result
		return res, err
	}
	var f First
	res, done, err := m.sendFirst(ctx, req, out, &f)
	if done {
		return res, err
	}
	sink := m.sinks.Get().(*Sink)
	defer m.putSink(sink)
	res, err = m.continueFirst(req, out, sink, &f)
	*result = sink.State.Result
	return res, err
}

// putSink empties sink, from a returned call on the direct path, and puts
// it back in m's pool.
func (m *Middleware) putSink(sink *Sink) {
	*sink = Sink{}
	m.sinks.Put(sink)
}

// callSink is Call with sink for out.
func (m *Middleware) callSink(ctx context.Context, req *transport.Request, sink *Sink) (*transport.Response, error) {
	if sink.State.direct { // send sends each attempt through m's innermost step
		return m.call(ctx, req, sink.Out, &sink.State)
	}
	// Attempts finds the state in each attempt's context.
	return m.call(sink.WithState(ctx), req, sink.Out, &sink.State)
}

// call is errown's retry loop for one call, the steady state its early
// return. The call's state is ended once, when it returns.
func (m *Middleware) call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, state *CallState) (*transport.Response, error) {
	r := attemptRun{out: out, state: state}
	m.start(&r, ctx, req)
	return m.resume(&r, m.sendAttempt(&r, 1))
}

// start readies a fresh r for req's call: callee, policy, the call counted
// in budget and metrics, and, if the policy may retry, forRetries.
func (m *Middleware) start(r *attemptRun, ctx context.Context, req *transport.Request) {
	if r.c = m.callees[req.Service]; r.c != nil {
		r.c.budget.deposit()
		r.c.metrics.calls.Inc(1)
		r.p = r.c.policy(req.Procedure)
	}
	if !r.retries() {
		r.ctx, r.req, r.body.inPlace = ctx, req, true // never replayed
		return
	}
	m.forRetries(r, ctx, req)
}

// resume runs the attempt loop from a, r's first attempt, and ends the
// call's state however it ends, panics included (sealed).
func (m *Middleware) resume(r *attemptRun, a sentAttempt) (*transport.Response, error) {
	defer m.sealed(r)
	return m.attemptLoop(r, a)
}

// forRetries readies r for retries under its policy: the body kept for
// replay (not buffered for a non-idempotent procedure, whose retryable
// failure is refused for that), the request as the caller gave it, which
// retries are built from even when middleware below changes the first,
// and the call's context with its Route (routed).
func (m *Middleware) forRetries(r *attemptRun, ctx context.Context, req *transport.Request) {
	r.req = req
	if r.p.idempotent {
		r.body = bufferBody(req.Body, m.maxBodyBytes)
	} else {
		r.body.inPlace = true
	}
	r.orig = *req
	r.routed(ctx)
}

// attemptRun is what errown's attempt loop keeps of one call, in the
// frame of the function that starts it (call, continueFirst).
type attemptRun struct {
	ctx   context.Context         // the call's, carrying route
	route *calls.Route            // or nil (routed)
	req   *transport.Request      // the first attempt
	orig  transport.Request       // the request as the caller gave it, which retries are built from
	out   transport.UnaryOutbound // where the attempts go (send)
	c     *callee
	p     *policy
	state *CallState
	body  replay // req's body, kept for replay
	// elsewhere is set once the call retried an instance's shed on
	// another instance (retryElsewhere); that happens at most once.
	elsewhere bool
}

// sentAttempt is one of errown's attempts as it came back.
type sentAttempt struct {
	res    *transport.Response
	err    error
	ctx    context.Context    // the attempt's
	cancel context.CancelFunc // its attempt timeout's, or nil
	before int                // the call's physical attempts sent before it
}

// retries reports whether r's call has a policy that may retry it.
func (r *attemptRun) retries() bool { return r.p != nil && r.p.maxAttempts > 1 }

// attemptLoop retries r's call after its first attempt a as policy,
// claims, deadline and budget allow. Its caller seals the state.
func (m *Middleware) attemptLoop(r *attemptRun, a sentAttempt) (*transport.Response, error) {
	var note retryNote // the latest retry's withdrawal, and what observe mode let go
	for n := 1; ; n++ {
		// An attempt below may still be under way (a hedge, an abandoned
		// attempt): the state is used under its lock.
		r.state.lock()
		d := m.decide(r, &a, n, &note)
		r.state.unlock()
		if d.served {
			served(r.c, &d)
		}
		if !d.retry || m.sleep(r.ctx, d.wait) != nil {
			break
		}
		if d.elsewhere {
			b, sent := m.sendElsewhere(r, n, &note)
			if !sent {
				break // the call answers with a, the shed
			}
			discard(a.res, a.cancel)
			a = b
			continue
		}
		discard(a.res, a.cancel)
		a = m.sendAttempt(r, n+1)
	}
	release.With(a.res, a.cancel)
	return a.res, a.err
}

// sendElsewhere sends attempt n+1, the retry of an instance's shed, with
// its Route strict (calls.Route.SetStrict), so the peer chooser (package
// retrypeer) sends it to a new instance or nowhere. It reports whether it
// was sent: not if the Route stayed strict with no attempt recorded. Sent
// nowhere, it is discarded, uncounted, its withdrawal refunded, and the
// shed's pushback recorded as the refusal: the call answers with the shed.
func (m *Middleware) sendElsewhere(r *attemptRun, n int, note *retryNote) (sentAttempt, bool) {
	// As decided, for the trace event sent once the retry went or not.
	r.state.lock()
	decided := r.state.Result
	r.state.unlock()
	r.route.SetStrict(true)
	b := m.send(r, n+1)
	strict := r.route.Strict()
	r.route.SetStrict(false)
	refused := decided.Refused
	r.state.lock()
	nowhere := strict && !r.state.Sends.Shed && r.state.Sends.Count == b.before
	if nowhere {
		// Sent nowhere: the shed's pushback refuses the retry.
		r.state.decided(n, r.route, nil, nil, &decision{refused: wire.RefusedPushback})
		decided = r.state.Result
	}
	r.state.unlock()
	if !nowhere {
		tracing.Decided(r.ctx, r.req, &decided, refused, 0, true, r.p.observe)
		r.c.metrics.attempts.Inc(1)
		return b, true
	}
	tracing.Decided(r.ctx, r.req, &decided, refused, 0, false, r.p.observe)
	discard(b.res, b.cancel)
	note.unsent(r.c)
	m.refuse(r.req, r.c, decision{refused: wire.RefusedPushback}, n)
	return sentAttempt{}, false
}

// decide classifies, under the state's lock, errown's attempt n (a) and
// decides what follows: nothing when no policy can retry (RCS stays
// false for a retryable error, so the caller retries: at-least-once);
// the call served when the attempt did not fail; else retryAfter. The
// attempt and the decision are recorded in the state (decided).
func (m *Middleware) decide(r *attemptRun, a *sentAttempt, n int, note *retryNote) (d decision) {
	state := r.state
	var (
		got   Outcome
		storm wire.Figures
	)
	o, f := m.classify(r, a, &got, &storm)
	refused := state.Refused
	switch {
	case !r.retries():
	case got.Class != wire.ClassFailure && wire.Cancelled(a.ctx, a.err):
		// Its caller gave up on it (a hedge's loser): it may have
		// reached the callee, so its withdrawal stands.
		note.abandoned()
		d.served, d.route = true, r.route
	case got.Class != wire.ClassFailure:
		// The call ends here: refund the retry's withdrawal; served
		// refunds the hedges' draws, once.
		note.succeeded(r.c)
		d.served, d.route, d.draws = true, r.route, state.Sends.HedgeDraws
	default:
		// maxAttempts bounds attempts other than hedges (Attempts.Send).
		d = m.retryAfter(r, &got, max(state.Sequential(), n), note)
	}
	state.decided(n, r.route, o, f, &d)
	// A shed attempt was refused already; an elsewhere retry is
	// traced once it went (sendElsewhere).
	if got.Class == wire.ClassFailure && r.retries() && !state.Sends.Shed && !d.elsewhere {
		tracing.Decided(r.ctx, r.req, &state.Result, refused, d.wait, d.retry, r.p.observe)
	}
	return d
}

// sealed ends r's call however it ended, panics included: an attempt
// still under way writes nothing from here on. It counts the retries
// the call's storm says errown prevented.
func (m *Middleware) sealed(r *attemptRun) {
	res := r.state.Seal()
	if n := res.Storm.Prevented(); n > 0 && r.retries() {
		r.c.metrics.prevented.Inc(int64(n))
	}
}

// sendAttempt sends errown's attempt n, counting retries in
// retry.attempts.
func (m *Middleware) sendAttempt(r *attemptRun, n int) sentAttempt {
	a := m.send(r, n)
	if n > 1 {
		r.c.metrics.attempts.Inc(1)
	}
	return a
}

// send sends errown's attempt n under the policy's attempt timeout.
func (m *Middleware) send(r *attemptRun, n int) sentAttempt {
	a := sentAttempt{ctx: r.ctx}
	if r.p != nil && r.p.attemptTimeout > 0 {
		a.ctx, a.cancel = withAttemptTimeout(r.ctx, r.p.attemptTimeout) // also bounded by ctx's own deadline
	}
	// Attempts are numbered as they leave the process: a replay
	// below took a number too.
	r.state.lock()
	a.before = r.state.attempt(n)
	r.state.unlock()
	req := m.attemptRequest(r, n, a.before)
	if r.state.direct {
		// The innermost step gets the state from here.
		a.res, a.err = m.attempts.Send(a.ctx, req, r.out, r.state)
		return a
	}
	a.res, a.err = r.out.Call(a.ctx, req)
	return a
}

// attemptRequest returns errown's attempt n, after before physical
// attempts: the caller's request for the first unless its body was read;
// otherwise built from the caller's request and numbered as attempts
// left the process.
func (m *Middleware) attemptRequest(r *attemptRun, n, before int) *transport.Request {
	switch {
	case n > 1: // counted in retry.attempts by sendAttempt, unless sent nowhere (sendElsewhere)
		return r.body.request(&r.orig, n, m.hdr.Attempt, wire.FormatAttempt(max(before, n-1)+1))
	case !r.body.inPlace:
		return r.body.request(&r.orig, n, m.hdr.Attempt, "")
	}
	return r.req
}

// classify reads, under the state's lock, attempt a into got: the
// innermost step's classification on the direct path, else as it came
// back here. It returns what decided records: o (nil where the step's
// stands) and f, storm figures folded here when no step saw the attempt.
func (m *Middleware) classify(r *attemptRun, a *sentAttempt, got *Outcome, storm *wire.Figures) (o *Outcome, f *wire.Figures) {
	state := r.state
	seen := state.Sends.Count > a.before || state.Sends.Shed // by the innermost step
	if state.direct && seen {
		*got = Outcome{Code: state.Code, Class: state.Class, Claim: state.Claim, NoRetry: state.NoRetry, Shed: state.Shed}
	} else {
		*got = Outcome{Err: a.err}
		got.Code, got.Class = wire.AttemptResult(a.ctx, a.res, a.err, m.hdr.Code)
		if got.Class != wire.ClassOK {
			said := m.answerOf(a.res, got.Code)
			got.Claim, got.NoRetry, got.Shed = said.claim, said.noRetry, said.shed
		}
		o = got
	}
	if !seen && r.retries() { // else left to the egress middleware to fold
		*storm = wire.AttemptStorm(a.res, got.Class, m.hdr.Storm, wire.Cancelled(a.ctx, a.err))
		f = storm
	}
	return o, f
}

// served ends a served call to c: its hedges' withdrawals refunded (a
// hedge of a call that works is no storm), and the peers of its failed
// attempts recorded (package retrypeer passes them over; Instances).
func served(c *callee, d *decision) {
	for _, epoch := range d.draws {
		c.budget.refundHedge(epoch)
	}
	if d.route != nil {
		d.route.Served(c.instances.failed)
	}
}

// decision is what errown's retry loop decided after an attempt
// (decide, retryAfter), recorded by decided and used by served.
type decision struct {
	wait     time.Duration // before the retry
	retry    bool
	declined wire.Decline // why no more attempts, when no refusal says
	refused  wire.Refusal // why a wanted retry was refused
	blind    int          // the attempts only a hop blind to claims makes
	stop     bool         // observe mode: errown's world stops here
	served   bool         // the attempt did not fail
	draws    []int64      // the budget buckets the call's hedges drew on, to give back
	route    *calls.Route // the call's, or nil
	// elsewhere: retry an instance's shed on another instance only
	// (sendElsewhere).
	elsewhere bool
}

// retryAfter decides, under the state's lock, after n attempts failed,
// the last as got, whether to retry and how long to wait. When this hop
// declines a retry of an error retryable by nature it says why and counts
// it: unclaim (suppressed), pushback, codes, idempotency, body cap,
// deadline, budget. A suppression the policy would have retried, and the
// attempt limit, are d.declined.
func (m *Middleware) retryAfter(r *attemptRun, got *Outcome, n int, note *retryNote) (d decision) {
	ctx, req, c, p, state, replayable := r.ctx, r.req, r.c, r.p, r.state, r.body.replayable()
	code := got.Code
	note.withdrew = false
	if !wire.RetryableByNature(code) || state.Sends.Shed {
		return d // a shed attempt was refused already
	}
	if got.Claim == ownership.ClaimUnclaimed {
		if !p.observe {
			c.metrics.suppressed.Inc(1)
			switch {
			case n >= p.maxAttempts:
				d.declined = wire.DeclineAttemptLimit
			case m.refusal(p, code, replayable, got.NoRetry) == wire.RefusedNone:
				// A request that fails now is one errown's suppression
				// did not save.
				d.declined = wire.DeclineUnclaimed
			}
			d.blind = m.blindRetries(c, p, code, n, replayable, got.NoRetry)
			return d
		}
		if !state.Storm.ErrownStopped() {
			c.metrics.would.Inc(1)
			d.stop = true // errown stops here; the retries go on blind
		}
		note.would = true
	}
	if n >= p.maxAttempts {
		d.declined = wire.DeclineAttemptLimit
		return d
	}
	if got.Shed && m.retryElsewhere(r, note) {
		d.retry, d.elsewhere = true, true
		return d
	}
	if d.refused = m.refusal(p, code, replayable, got.NoRetry); d.refused != wire.RefusedNone {
		return m.refuse(req, c, d, n)
	}
	// Each retry of an overloaded callee would queue behind the
	// work it timed out on.
	if overloaded(code, got.Claim) && c.overload.Overloaded(req.Procedure) {
		if !p.observe {
			d.refused = wire.RefusedOverload
			return m.refuse(req, c, d, n)
		}
		c.metrics.wouldOverload.Inc(1) // observe mode: the retry goes
		note.would = true
	}
	wait := backoff(n, p.initialBackoff, p.maxBackoff, m.rand())
	// A retry starts only if a whole attempt plus minRemaining fits in
	// the deadline: this hop then answers before its caller's attempt
	// times out, and the caller reads a claim rather than a timeout.
	if deadline, ok := ctx.Deadline(); ok && deadline.Sub(m.now()) < wait+p.attemptTimeout+p.minRemaining {
		d.refused = wire.RefusedDeadline
		return m.refuse(req, c, d, n)
	}
	if ctx.Err() != nil { // cancelled by the caller: nobody is waiting
		return d
	}
	if !note.withdraw(c, p.observe) {
		d.refused = wire.RefusedBudget
		return m.refuse(req, c, d, n)
	}
	d.wait, d.retry = wait, true
	return d
}

// retryElsewhere reports, under the state's lock, whether to retry at
// once, on another instance, a call whose last attempt an instance's
// admission shed (wire.ResponseShed): that instance is full, not the
// callee. Only the direct caller does so, once per call, and only with a
// peer chooser that records peers (package retrypeer). The policy must
// allow it but for the pushback and its codes (resource-exhausted is left
// out by default for an overloaded callee; this is one instance):
// idempotent, body kept, callee not overloaded (retry.overload), a whole
// attempt within the deadline, then the budget, withdrawn as for any
// retry. Otherwise the pushback refuses it.
func (m *Middleware) retryElsewhere(r *attemptRun, note *retryNote) bool {
	c, p := r.c, r.p
	switch {
	case r.elsewhere || r.route == nil || r.route.Len() == 0:
		return false
	case !p.idempotent || !r.body.replayable():
		return false
	case r.ctx.Err() != nil:
		return false
	}
	if c.overload.Overloaded(r.req.Procedure) {
		if !p.observe {
			return false
		}
		c.metrics.wouldOverload.Inc(1) // enforce would have refused it here
	}
	if deadline, ok := r.ctx.Deadline(); ok && deadline.Sub(m.now()) < p.attemptTimeout+p.minRemaining {
		return false
	}
	if !note.withdraw(c, p.observe) {
		return false
	}
	r.elsewhere = true
	return true
}

// refusal returns why p refuses to retry a failure with code, deadline
// and budget aside, or RefusedNone: pushback (noRetry), codes,
// idempotency, body cap. Both worlds use it (retryAfter, blindRetries).
func (m *Middleware) refusal(p *policy, code yarpcerrors.Code, replayable, noRetry bool) wire.Refusal {
	switch {
	case noRetry:
		return wire.RefusedPushback
	case !p.retryableCode(code):
		return wire.RefusedCode
	case !p.idempotent:
		return wire.RefusedNotIdempotent
	case !replayable:
		return wire.RefusedBodyTooLarge
	}
	return wire.RefusedNone
}

// blindRetries returns how many more attempts a hop blind to claims would
// make after attempt n failed with code, by the policy, pushback and the
// budget's blind twin.
func (m *Middleware) blindRetries(c *callee, p *policy, code yarpcerrors.Code, n int, replayable, noRetry bool) int {
	if m.refusal(p, code, replayable, noRetry) != wire.RefusedNone {
		return 0
	}
	k := 0
	for n+k < p.maxAttempts && c.budget.tryWithdrawBlind(m.rand()) {
		k++
	}
	return k
}

// refuse counts and logs a refused retry after attempts, and returns d.
func (m *Middleware) refuse(req *transport.Request, c *callee, d decision, attempts int) decision {
	c.metrics.denied[d.refused].Inc(1)
	if ce := m.logger.Check(zap.DebugLevel, "retry refused"); ce != nil {
		ce.Write(
			zap.String("service", req.Service),
			zap.String("procedure", req.Procedure),
			zap.Stringer("reason", d.refused),
			zap.Int("attempts", attempts),
		)
	}
	return d
}
