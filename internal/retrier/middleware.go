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
	// the innermost step of errown's adapters (AdapterAttempts)
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

// Start starts a goroutine that reads the clock every tenth of a budget
// bucket (100ms for the default 10s window; between 10ms and 100ms) for
// the retry budgets, which count every call: between Start and Stop a call
// reads the time the goroutine last read rather than the clock. Without
// Start the middleware works alike, reading the clock on every call. Start
// does nothing when the middleware already runs, or has no budget to count
// in (no policy, the budget disabled, or a window under 1s, read exactly).
// It is safe to call concurrently with Call, and returns nil.
func (m *Middleware) Start() error {
	m.clock.Start()
	return nil
}

// Stop stops the goroutine Start started, if it runs, and waits for it to
// return; calls read the clock again. It is safe to call concurrently with
// Call, and more than once, and returns nil.
func (m *Middleware) Stop() error {
	m.clock.Stop()
	return nil
}

// Call implements middleware.UnaryOutbound. It sends req through out, again
// when the matching policy, the callee's claim, the deadline and the budget
// allow. It returns the last attempt's response and error as out returned
// them, except that the response body, when a per-attempt timeout applies,
// also releases that attempt's context on Close. Under errown, it tells
// the egress middleware around it what it did: its attempts and the
// reason it declined a retry, if it did.
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

// Run is Call for the egress middleware around m: it sends req's call to
// out and returns the last response and error, the call's Result in
// result, left zero in the steady state: a call that ended at its first
// attempt, a success with no storm figures, nothing to report but that
// one attempt. direct says that nothing stands between m and the
// transport but m's innermost attempt step, which the egress
// middleware's chain leaves out (Sink). There the call's first attempt
// goes with no state (sendFirst), and the steady state returns at once;
// any other call takes a state from m's pool: on the direct path nothing
// but errown reaches it. Elsewhere the state is handed below, in each
// attempt's context, to middleware that may keep it past the call: it is
// the call's alone, never reused.
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

// putSink empties sink, taken from m's pool for a call on the direct
// path that has returned, and puts it back.
func (m *Middleware) putSink(sink *Sink) {
	*sink = Sink{}
	m.sinks.Put(sink)
}

// callSink is Call with sink for out.
func (m *Middleware) callSink(ctx context.Context, req *transport.Request, sink *Sink) (*transport.Response, error) {
	if sink.State.direct { // send sends each attempt through m's innermost step
		return m.call(ctx, req, sink.Out, &sink.State)
	}
	// The innermost step (Attempts) finds the call's state in the
	// context of each attempt, below the middleware in between.
	return m.call(sink.WithState(ctx), req, sink.Out, &sink.State)
}

// call is the one loop of a call errown's retry middleware makes, the
// steady state its early return: it sends the first attempt, and retries
// it as the policy (if any), the callee's claims, the deadline and the
// budget allow. The call's state is ended once, when it returns.
func (m *Middleware) call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, state *CallState) (*transport.Response, error) {
	r := attemptRun{out: out, state: state}
	m.start(&r, ctx, req)
	return m.resume(&r, m.sendAttempt(&r, 1))
}

// start readies r, a fresh one, for req's call, ctx the call's: its
// callee and policy, the call counted in the callee's budget and
// metrics, and, under a policy that may retry it, its body and Route
// (forRetries).
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

// resume goes on with r's call, whose first attempt came back as a, in
// the attempt loop, and ends the call's state however the call ends, a
// panic below included (sealed).
func (m *Middleware) resume(r *attemptRun, a sentAttempt) (*transport.Response, error) {
	defer m.sealed(r)
	return m.attemptLoop(r, a)
}

// forRetries readies r for the retries of req's call under its policy,
// ctx the call's: the body kept for replay (a procedure that is not
// idempotent is never replayed: its body is not buffered, and a
// retryable failure is refused for that reason), the request as the
// caller gave it, which retries are built from even when the first
// attempt is req itself and middleware below changes it, and the call's
// context with its Route (routed).
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

// attemptRun is what errown's attempt loop keeps of one call, from its
// first attempt until it returns, in the frame of the function that
// starts it (call, continueFirst).
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
	// another instance (retryElsewhere): it does so once.
	elsewhere bool
}

// sentAttempt is one of errown's attempts of a call, as it came back
// (sendAttempt, or sendFirst for the first).
type sentAttempt struct {
	res    *transport.Response
	err    error
	ctx    context.Context    // the attempt's
	cancel context.CancelFunc // its attempt timeout's, or nil
	before int                // the call's physical attempts sent before it
}

// retries reports whether r's call has a policy that may retry it.
func (r *attemptRun) retries() bool { return r.p != nil && r.p.maxAttempts > 1 }

// attemptLoop retries r's call, whose first attempt came back as a, as
// its policy, the callee's claims, the deadline and the callee's budget
// allow. Its caller seals the call's state when it returns (sealed).
func (m *Middleware) attemptLoop(r *attemptRun, a sentAttempt) (*transport.Response, error) {
	var note retryNote // the latest retry's withdrawal, and what observe mode let go
	for n := 1; ; n++ {
		// An attempt below may still be under way (a hedge, an abandoned
		// attempt): the state is read and written under its lock, and
		// ended when the call returns.
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

// sendElsewhere sends errown's attempt n+1 of r's call, the retry of
// attempt n, which an instance's admission shed, to another instance of
// the callee: its Route strict (calls.Route.SetStrict), the peer
// chooser (package retrypeer) sends it to an instance none of the
// call's attempts went to, or nowhere. It returns the attempt and
// whether it was sent. It was sent nowhere when no peer was chosen (the
// Route is still strict) and the innermost step recorded no attempt of
// it: the chooser offered no other instance (calls.ErrNoOtherPeer), or
// nothing below reached the transport. The caller's own limit on
// attempts in flight holding it back, or a chooser that failed
// otherwise, is an outcome of its own, as for any retry. Sent nowhere,
// the attempt is discarded, not counted in retry.attempts, its budget
// withdrawal given back, and the call's state records that the shed's
// pushback refused the retry, as it would have without the try; the
// call answers with the shed.
func (m *Middleware) sendElsewhere(r *attemptRun, n int, note *retryNote) (sentAttempt, bool) {
	// The call as it was decided, for the decision's trace event, which
	// waits until the retry went or did not.
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
		// Attempt n+1 was sent nowhere: the call ends with attempt n's
		// shed, its pushback refusing the retry as it would have without
		// the try.
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

// decide classifies, under the state's lock, errown's attempt n of r's
// call that came back as a, and decides what follows: nothing for a call
// no policy can retry (nothing to refuse, and RCS stays false for a
// retryable error, so the caller retries: at-least-once); for an attempt
// that did not fail, the call served; else whether to retry it, and
// after how long (retryAfter); the attempt as it was taken and what was
// decided are recorded in the state at once (decided).
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
		// An attempt its caller gave up on (a hedger above cancelled
		// this hop's call, its loser) did not work, was abandoned, and
		// may have reached the callee: its withdrawal stands.
		note.abandoned()
		d.served, d.route = true, r.route
	case got.Class != wire.ClassFailure:
		// The retry's withdrawal and the hedges' are refunded: the call
		// ends here, and served gives its hedges' draws back, once.
		note.succeeded(r.c)
		d.served, d.route, d.draws = true, r.route, state.Sends.HedgeDraws
	default:
		// The policy's attempts bound the call's attempts other than its
		// hedges, which count apart (Attempts.Send).
		d = m.retryAfter(r, &got, max(state.Sequential(), n), note)
	}
	state.decided(n, r.route, o, f, &d)
	// A shed attempt was refused already; the retry of an instance's
	// shed is traced once it is known to have gone (sendElsewhere).
	if got.Class == wire.ClassFailure && r.retries() && !state.Sends.Shed && !d.elsewhere {
		tracing.Decided(r.ctx, r.req, &state.Result, refused, d.wait, d.retry, r.p.observe)
	}
	return d
}

// sealed ends r's call however it ended (a panic below included), before
// its state is read: an attempt still under way (a hedge, an abandoned
// attempt) writes nothing from here on. It counts the retries the call's
// storm says errown prevented.
func (m *Middleware) sealed(r *attemptRun) {
	res := r.state.Seal()
	if n := res.Storm.Prevented(); n > 0 && r.retries() {
		r.c.metrics.prevented.Inc(int64(n))
	}
}

// sendAttempt sends errown's attempt n of r's call (send), and counts
// it in retry.attempts when it is a retry.
func (m *Middleware) sendAttempt(r *attemptRun, n int) sentAttempt {
	a := m.send(r, n)
	if n > 1 {
		r.c.metrics.attempts.Inc(1)
	}
	return a
}

// send sends errown's attempt n of r's call, under its policy's attempt
// timeout, built from the request as the caller gave it when it is a
// retry or the body had to be read.
func (m *Middleware) send(r *attemptRun, n int) sentAttempt {
	a := sentAttempt{ctx: r.ctx}
	if r.p != nil && r.p.attemptTimeout > 0 {
		a.ctx, a.cancel = withAttemptTimeout(r.ctx, r.p.attemptTimeout) // also bounded by ctx's own deadline
	}
	// Attempts are numbered as they leave the process: a middleware below
	// that replayed an attempt (counted by Attempts) took a number too.
	r.state.lock()
	a.before = r.state.attempt(n)
	r.state.unlock()
	req := m.attemptRequest(r, n, a.before)
	if r.state.direct {
		// Nothing stands between here and the transport: the innermost
		// step gets the call's state from here.
		a.res, a.err = m.attempts.Send(a.ctx, req, r.out, r.state)
		return a
	}
	a.res, a.err = r.out.Call(a.ctx, req)
	return a
}

// attemptRequest returns errown's attempt n of r's call, before which
// the call sent before physical attempts: the first attempt as the
// caller gave it, unless its body had to be read; a retry built from the
// request as the caller gave it, numbered as the attempts left the
// process (a middleware below that replayed one took a number too).
func (m *Middleware) attemptRequest(r *attemptRun, n, before int) *transport.Request {
	switch {
	case n > 1: // counted in retry.attempts by sendAttempt, unless sent nowhere (sendElsewhere)
		return r.body.request(&r.orig, n, m.hdr.Attempt, wire.FormatAttempt(max(before, n-1)+1))
	case !r.body.inPlace:
		return r.body.request(&r.orig, n, m.hdr.Attempt, "")
	}
	return r.req
}

// classify reads, under the state's lock, errown's attempt of r's call
// that came back as a as the retry loop takes it, into got: as the
// innermost step classified it on the direct path, else (a middleware in
// between may have changed what came back, or no step saw it) as it came
// back here. It returns what the call's state is to record of it
// (decided): that classification (o, got), nil where the step's stands,
// and its storm figures (f, read into storm), folded here when no step
// saw it.
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

// served ends the call to c that d says was served: the withdrawals of
// its hedges given back to c's budget (as a retry that works, a hedge of
// a call that works is no storm), and the peers of the call's earlier
// attempts known to have failed it (package retrypeer passes them over;
// Instances lists them).
func served(c *callee, d *decision) {
	for _, epoch := range d.draws {
		c.budget.refundHedge(epoch)
	}
	if d.route != nil {
		d.route.Served(c.instances.failed)
	}
}

// decision is what errown's retry loop decided after an attempt of a
// call came back (decide): after a failure (retryAfter), what the call's
// state records (decided); after a success, what served does.
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
	// elsewhere: the retry is of an instance's shed, to another
	// instance only (retryElsewhere, sendElsewhere).
	elsewhere bool
}

// retryAfter decides, under the state's lock, after n attempts of r's
// call (as they left the process) failed, the last as got (its code, and
// its response's claim, pushback and shed), whether to send the call
// again and how long to wait first. When this hop declines a retry the
// error was retryable for by nature, it says why and counts it: the
// callee's unclaim (suppressed), its pushback, the policy's codes,
// idempotency, the body cap, the deadline, the budget. A suppression the
// policy would otherwise have retried, and the policy's attempt limit,
// are the decision's declined.
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
				// The policy would have retried it: a request that
				// fails now is one errown's suppression did not save.
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
	// The owner's caller stops spending retries on a callee that is
	// overloaded: each would queue behind the work it timed out on.
	if overloaded(code, got.Claim) && c.overload.Overloaded(req.Procedure) {
		if !p.observe {
			d.refused = wire.RefusedOverload
			return m.refuse(req, c, d, n)
		}
		c.metrics.wouldOverload.Inc(1) // observe mode: the retry goes
		note.would = true
	}
	wait := backoff(n, p.initialBackoff, p.maxBackoff, m.rand())
	// A retry starts only when a whole attempt fits in what is left of
	// the deadline, with minRemaining to spare: then this hop answers
	// before its caller's own attempt times out, and the caller reads a
	// claim rather than a timeout that says nothing.
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

// retryElsewhere reports, under the state's lock, whether r's call,
// whose last attempt an instance's admission shed (claimed, with
// pushback, marked: wire.ResponseShed), is to be retried once on
// another instance, at once: the shed says that instance is full, not
// that the callee is. Only the direct caller does so, once per call,
// and only where a peer chooser records the call's peers (package
// retrypeer: its Route has the shed attempt's peer) and will send the
// retry to another instance or nowhere (sendElsewhere). The policy
// must allow a retry but for the pushback and its codes (its
// retryableCodes leave resource-exhausted out by default, for an
// overloaded callee: this is one instance's shed): idempotent, the body
// kept, the callee not overloaded by its timeouts (retry.overload), a
// whole attempt within the deadline, then the budget, withdrawn as for
// any retry. Otherwise the pushback refuses it, as before.
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

// refusal returns why the policy p refuses to retry a failure with code
// whatever the deadline and the budget, given whether the callee pushed
// back (noRetry), or RefusedNone: the callee's pushback, the policy's
// codes, idempotency, the body cap. Both worlds refuse alike (retryAfter,
// blindRetries).
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
// have made after attempt n failed with code: per the policy, the callee's
// pushback and the budget's blind twin, each replaying attempt n.
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

// refuse counts and logs that a wanted retry was refused for d's reason,
// after attempts, and returns d.
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
