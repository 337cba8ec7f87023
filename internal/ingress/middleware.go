package ingress

import (
	"context"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/admission"
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/tracing"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// _tchannel is the yarpc transport name of TChannel.
const _tchannel = "tchannel"

// _stackFailures is how many failures decide weighs without allocating.
const _stackFailures = 8

// Middleware is errown's unary inbound middleware.
type Middleware struct {
	inFlightGauge     tally.Gauge // ingress.in_flight
	logs              *reqlog.Map
	learner           memory.Learner
	now               func() time.Time
	mint              func() uint64 // a new root key
	unknownCorrelated bool
	hdr               ownership.Headers // the header names, defaults applied
	// recent is allocated on its own: every failed request writes its
	// cursor, which must not share a cache block with what every request
	// reads.
	recent *decisions
	// Header sets built once and only read: every transport's AddHeaders
	// copies them into its own response.
	claimed          transport.Headers
	unclaimed        transport.Headers
	claimedNoRetry   transport.Headers
	unclaimedNoRetry transport.Headers
	sheds            map[string]transport.Headers // by admission reason: claimedNoRetry and the shed marker
	unknownStorm     transport.Headers
	quietStorms      []transport.Headers // by requests served; see quietStormHeaders
	storms           *storms
	orphans          *calls.Orphans
	edge             *edge                    // nil: no edge declared
	admission        *admission.Controller    // nil: admission disabled
	shedCount        map[string]tally.Counter // by reason

	claimedCount      tally.Counter
	unclaimedCount    tally.Counter
	coincidentalCount tally.Counter
	atLeastOnceCount  tally.Counter
	untrackedCount    tally.Counter
	retriedCount      tally.Counter
	replacedCount     tally.Counter
	overflowCount     tally.Counter
	denied            *denied // inbound.failed_after_denied: failed requests whose call this hop declined to retry
}

var _ middleware.UnaryInbound = (*Middleware)(nil)

// New builds the inbound middleware.
func New(cfg inbound.Config, opts ...Option) (*Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = defaults.Fill(cfg, inbound.DefaultConfig())
	o := options{Sinks: obs.Defaults(), learner: unknown{}, now: time.Now, admissionNow: time.Now, mint: mintRoot}
	for _, opt := range opts {
		opt.apply(&o)
	}
	logs, err := reqlog.NewMap(reqlog.Config(cfg.Ingress))
	if err != nil {
		return nil, err
	}
	logs.MintRoots(o.mint)
	headers := func(c ownership.Claim, noRetry bool) transport.Headers {
		v, _ := wire.FormatClaim(c)
		h := transport.NewHeaders().With(cfg.Headers.Claim, v)
		if noRetry {
			h = h.With(cfg.Headers.NoRetry, wire.NoRetryValue)
		}
		return h
	}
	orphans := o.orphans
	if orphans == nil {
		orphans = new(calls.Orphans) // nobody counts: never changes
	}
	scope := o.Scope.SubScope("inbound")
	ctl, shedCount := newAdmission(cfg.Admission, scope, o.admissionNow)
	if ctl != nil {
		// A request waiting for its outbound calls parks its slot, and
		// those admission measures time the calls on its clock.
		logs.WatchCalls(ctl, o.admissionNow)
	}
	return &Middleware{
		admission:         ctl,
		shedCount:         shedCount,
		inFlightGauge:     o.Scope.SubScope("ingress").Gauge("in_flight"),
		logs:              logs,
		learner:           o.learner,
		now:               o.now,
		mint:              o.mint,
		recent:            new(decisions),
		unknownCorrelated: cfg.UnknownEdges == inbound.UnknownCorrelated,
		hdr:               cfg.Headers,
		storms:            newStorms(o.Scope, cfg.MaxRootProcedures, o.stormHook),
		orphans:           orphans,
		edge:              newEdge(cfg.Edge),
		unknownStorm:      transport.NewHeaders().With(cfg.Headers.Storm, wire.StormUnknownValue),
		quietStorms:       quietStormHeaders(cfg.Headers.Storm),
		claimed:           headers(ownership.ClaimClaimed, false),
		unclaimed:         headers(ownership.ClaimUnclaimed, false),
		claimedNoRetry:    headers(ownership.ClaimClaimed, true),
		unclaimedNoRetry:  headers(ownership.ClaimUnclaimed, true),
		sheds:             shedHeaders(headers(ownership.ClaimClaimed, true), cfg.Headers.Shed),
		claimedCount:      scope.Counter("claimed"),
		unclaimedCount:    scope.Counter("unclaimed"),
		coincidentalCount: scope.Counter("coincidental"),
		atLeastOnceCount:  scope.Counter("at_least_once"),
		untrackedCount:    scope.Counter("untracked"),
		retriedCount:      scope.Counter("retried"),
		replacedCount:     scope.Counter("replaced_headers"),
		overflowCount:     scope.Counter("egress_overflow"),
		denied:            newDenied(scope),
	}, nil
}

// UpdateGauges sets ingress.in_flight, off the request path.
func (m *Middleware) UpdateGauges() {
	m.inFlightGauge.Update(float64(m.InFlight()))
}

// InFlight returns how many requests the middleware tracks in flight: at
// most the ingress configuration's MaxInFlight.
func (m *Middleware) InFlight() int { return m.logs.Len() }

// Handle implements middleware.UnaryInbound. It reads as the data flow of
// DESIGN.md: track the request, serve it, close its egress log, classify
// its result, decide and respond, record a root's storm and have the
// dependency memory observe the failed calls.
func (m *Middleware) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	edge, n, marked := m.arrived(ctx, req)
	root, key := m.root(req, edge)
	var adm admitted // ended last, after finish
	if m.admission != nil {
		t, reason, ok := m.admit(ctx, priority(n, marked), key)
		if !ok {
			return m.shed(ctx, req, resw, reason, edge)
		}
		adm.ticket = t
		defer m.done(&adm)
	}
	r := m.track(ctx, req.Procedure, marked, root)
	if r == nil {
		return m.serveUntracked(ctx, req, resw, h, edge)
	}
	log := &r.Log
	if m.admission != nil {
		adm.log = log
		if adm.ticket.Measured() {
			// Its answer moves the limit: judged on its own time, less
			// what its outbound calls kept it waiting.
			log.TimeCalls()
		}
	}
	if marked {
		m.orphans.Watch() // until finish
	}
	orphans := m.orphans.Mark()
	rw := &r.w
	rw.ResponseWriter, rw.m = resw, m
	// Deferred so the log is closed and goes also when the handler
	// panics: yarpc recovers the panic further out, exactly as without
	// errown, and a call the handler left running is then counted late.
	closed := false
	var sum calls.Summary
	defer m.finish(log, &closed, &sum)

	err := h.Handle(&r.Node, req, rw)
	if err == nil && !marked && !rw.appError && m.quiet(log, orphans) {
		// The steady state's success: no call failed, retried or met a
		// storm, and nobody reads its figures. Nothing to decide, send or
		// record.
		closed = true
		return nil
	}

	sum, closed = m.close(log), true
	out := m.classify(ctx, err, rw, log)
	storm := m.stormFigures(sum.Storm, log, orphans)
	var now time.Time // read once, when a failure or a storm is recorded
	var ph uint64     // procedureHash(req.Procedure), with now
	if out.class != wire.ClassOK {
		// One reading of the clock and one hash of the procedure, for the
		// decision and the storm.
		now, ph = m.now(), procedureHash(req.Procedure)
		claim, reason := m.decide(now, req.Procedure, ph, out.code, out.class, sum.Failures, sum.Counts)
		if !edge {
			m.respond(req, resw, out, claim, log.NoRetry(), storm)
		}
		tracing.Claim(ctx, claim, reason)
	} else if !edge && !storm.Trivial() && (marked || storm.Stormy()) {
		// A success says how much it took only when that was more than
		// this one request (a leaf's success pays nothing), and only to a
		// caller that reads it (its request was marked: it is in an
		// incident) or when it met a storm, which puts the caller in one.
		// The steady state sends no errown header.
		resw.AddHeaders(m.stormHeaders(storm))
	}
	if !marked && storm.Stormy() {
		m.recordStorm(now, ph, req.Procedure, storm, out.class == wire.ClassFailure, log.UnmarkedCall())
		tracing.Storm(ctx, storm)
	}
	if out.class == wire.ClassOK {
		m.observe(sum.Failures) // decide learned the others' failures
	}
	return err
}

// arrived reads whether req is an edge request (a root whose response
// carries none of errown's headers), else its attempt number and whether
// its caller marked it (countAttempt). Only a retry is tagged on the span.
func (m *Middleware) arrived(ctx context.Context, req *transport.Request) (edge bool, n int, marked bool) {
	if edge = m.edge.has(req); edge {
		return true, 0, false
	}
	if n, marked = m.countAttempt(req); n > 1 {
		tracing.Attempt(ctx, n)
	}
	return false, n, marked
}

// admit asks admission control to admit a request, counting and tagging
// the reason of a shed (in observe mode, of what enforce would shed).
func (m *Middleware) admit(ctx context.Context, p admission.Priority, key uint64) (admission.Ticket, string, bool) {
	t, reason, ok := m.admission.AdmitRoot(ctx, p, key)
	if reason != "" {
		m.shedCount[reason].Inc(1)
		tracing.Shed(ctx, reason, ok)
	}
	return t, reason, ok
}

// outcome is how a tracked request's handler ended: its error, its code
// and class (wire.Result), and the code of an application error the
// encoding reported, if any.
type outcome struct {
	err     error
	appCode *yarpcerrors.Code
	code    yarpcerrors.Code
	class   wire.Class
}

// countAttempt counts a request that says it is a retry, and returns its
// attempt number (0 when unmarked) and whether it carries errown's
// attempt mark (its caller runs errown and is in an incident). The
// header name is validated lower case: the map is indexed directly.
func (m *Middleware) countAttempt(req *transport.Request) (int, bool) {
	n, marked := wire.ParseAttempt(req.Headers.Items()[m.hdr.Attempt])
	if n > 1 {
		m.retriedCount.Inc(1)
	}
	return n, marked
}

// track puts a new request in the ingress log map, with ctx as the parent
// of its context, or returns nil when the map has no room.
func (m *Middleware) track(ctx context.Context, procedure string, marked bool, root uint64) *tracked {
	if m.logs.Full() {
		return nil
	}
	r := &tracked{Node: reqlog.Node{Context: ctx, Log: reqlog.Log{Procedure: procedure}}}
	if marked {
		r.Log.SetMarked()
	}
	if root != 0 {
		r.Log.SetRoot(root)
	}
	if !m.logs.Insert(&r.Log) {
		return nil
	}
	return r
}

// serveUntracked serves a request the ingress log map had no room for,
// an edge request when edge is set.
func (m *Middleware) serveUntracked(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler, edge bool) error {
	m.untrackedCount.Inc(1)
	// Untracked, its figures are unknown: say so, on a success too (but
	// not outside the mesh), and have its calls tell their callees that
	// they are not roots.
	err := h.Handle(reqlog.WithUntracked(ctx), req, m.ownHeaders(resw))
	if !edge {
		resw.AddHeaders(m.unknownStorm)
	}
	return err
}

// close closes the request's egress log and counts the failures past its
// bound (calls.MaxFailures). The failures stay in the log until finish
// releases them.
func (m *Middleware) close(log *reqlog.Log) calls.Summary {
	sum := log.Egress.CloseSummary()
	if sum.Counts.Overflow > 0 {
		m.overflowCount.Inc(int64(sum.Counts.Overflow))
	}
	return sum
}

// quiet closes the request's egress log and reports true when no call
// failed or reported a storm and its figures are known (figuresKnown).
// When it reports false the log may be closed: close still returns its
// Summary.
func (m *Middleware) quiet(log *reqlog.Log, orphans uint64) bool {
	return log.Egress.CloseQuiet() && m.figuresKnown(orphans)
}

// figuresKnown reports whether the request's storm figures are those its
// egress log summed: no orphan call (made with a fresh context, so maybe
// this request's) failed or retried since the orphans' mark orphans was
// taken as the request began.
func (m *Middleware) figuresKnown(orphans uint64) bool {
	return !m.orphans.Since(orphans)
}

// classify returns how the handler ended (wire.HandlerResult), an answer
// when it marked the request as its caller's fault.
func (m *Middleware) classify(ctx context.Context, err error, rw *writer, log *reqlog.Log) outcome {
	out := outcome{err: err}
	if rw.appMeta != nil {
		out.appCode = rw.appMeta.Code
	}
	out.code, out.class = wire.HandlerResult(ctx, err, rw.appError, out.appCode)
	if out.class == wire.ClassFailure && log.CallerFault() {
		out.class = wire.ClassAnswer
	}
	return out
}

// stormFigures returns the request's storm figures f, as the egress log
// summed them, plus one request for each call the handler abandoned (a
// hedge's loser, fire-and-forget); or unknown when !figuresKnown.
func (m *Middleware) stormFigures(f wire.Figures, log *reqlog.Log, orphans uint64) wire.Figures {
	if !f.Known || !m.figuresKnown(orphans) {
		return wire.Figures{}
	}
	if n := uint64(log.CallsInFlight()); n > 0 && f.Storm.Blind <= wire.MaxStormServed-n {
		// Calls the handler abandoned, one request each.
		f.Storm.Served += n
		f.Storm.Blind += n
	}
	return f
}

// respond puts errown's headers on the response of a request that did
// not succeed: the claim, the no-retry pushback, the storm, and the code
// where the transport drops it.
func (m *Middleware) respond(req *transport.Request, resw transport.ResponseWriter, out outcome, claim ownership.Claim, noRetry bool, storm wire.Figures) {
	resw.AddHeaders(m.headers(claim, noRetry))
	resw.AddHeaders(m.stormHeaders(storm))
	if out.err == nil && out.appCode != nil {
		// An application error's code does not cross every
		// transport (gRPC drops it): errown carries it itself.
		resw.AddHeaders(transport.NewHeaders().With(m.hdr.Code, wire.FormatCode(out.code)))
	}
	if out.err != nil && req.Transport == _tchannel {
		// TChannel keeps response headers only on application errors.
		resw.SetApplicationError()
	}
}

// recordStorm records a root request's storm at now (read here when zero),
// the procedure hashing to ph, at an incident's onset when one of its
// calls went unmarked.
func (m *Middleware) recordStorm(now time.Time, ph uint64, procedure string, storm wire.Figures, failed, onset bool) {
	if now.IsZero() {
		now, ph = m.now(), procedureHash(procedure)
	}
	st := newStorm(now, procedure, storm, failed)
	st.Onset = onset
	m.storms.record(st, ph)
}

// observe tells the learner of the failed calls of a request that
// succeeded. Failures past the egress log's bound were not kept.
func (m *Middleware) observe(entries []calls.Entry) {
	for _, e := range entries {
		if e.Failed() {
			m.learner.Observe(e.Edge, false)
		}
	}
}

// unknown is the Learner of a Middleware given none: every edge unknown,
// nothing learned.
type unknown struct{ memory.Unknown }

var _ memory.Learner = unknown{}

func (unknown) Observe(ownership.Edge, bool) {}

func (unknown) Learn(ownership.Edge, bool) ownership.EdgeKind { return ownership.KindUnknown }

// Storms returns the latest root requests that met a storm below, newest
// first; as in Decisions, a repeat at the same reading of the clock is
// counted (and given to the storm hook) but not listed again.
func (m *Middleware) Storms() []inbound.Storm {
	return m.storms.list()
}

// Losses returns inbound.failed_after_denied, storm.prevented and
// storm.requests since the middleware started.
func (m *Middleware) Losses() inbound.Losses {
	return inbound.Losses{
		Lost:          m.denied.lost(),
		Prevented:     m.storms.prevented.Load(),
		StormRequests: m.storms.requests.Load(),
	}
}

// ownHeaders returns w, or a writer that drops errown's own headers from
// what the handler adds, when w is not errown's already.
func (m *Middleware) ownHeaders(w transport.ResponseWriter) transport.ResponseWriter {
	return &writer{ResponseWriter: w, m: m}
}

// withoutOwnHeaders returns h without errown's own response headers, or h
// itself, uncopied, when it has none (the common case).
func (m *Middleware) withoutOwnHeaders(h transport.Headers) transport.Headers {
	items := h.Items()
	_, claim := items[m.hdr.Claim]
	_, noRetry := items[m.hdr.NoRetry]
	_, code := items[m.hdr.Code]
	_, storm := items[m.hdr.Storm]
	_, shed := items[m.hdr.Shed]
	if !claim && !noRetry && !code && !storm && !shed {
		return h
	}
	m.replacedCount.Inc(1)
	out := transport.NewHeadersWithCapacity(len(items))
	for k, v := range h.OriginalItems() {
		if !m.ownHeader(transport.CanonicalizeHeaderKey(k)) {
			out = out.With(k, v)
		}
	}
	return out
}

// ownHeader reports whether the canonical header name k is errown's own
// on responses.
func (m *Middleware) ownHeader(k string) bool {
	return k == m.hdr.Claim || k == m.hdr.NoRetry || k == m.hdr.Code || k == m.hdr.Storm || k == m.hdr.Shed
}

// finish closes the request's egress log unless Handle did (then sum
// holds what it took), gives its chunk back and removes the log from the
// map.
func (m *Middleware) finish(log *reqlog.Log, closed *bool, sum *calls.Summary) {
	if log.Marked() {
		m.orphans.Unwatch()
	}
	if *closed {
		sum.Release()
	} else {
		log.Egress.Close(nil)
		log.Egress.Release()
	}
	m.logs.Remove(log)
}

// decide claims or unclaims the error a request ended in, from the failed
// calls its egress log kept (entries, counts), counts the decision and
// keeps it for Decisions at now (ph: the procedure's procedureHash). It
// returns the claim and its reason.
func (m *Middleware) decide(now time.Time, procedure string, ph uint64, code yarpcerrors.Code, class wire.Class, entries []calls.Entry, counts calls.Counts) (ownership.Claim, string) {
	var buf [_stackFailures]Failure
	failures := buf[:0]
	var why unclaimCause // of the correlated failures: the reason of an unclaim
	for _, e := range entries {
		if !e.Failed() {
			continue
		}
		// Only a failure of this service's own counts as the caller
		// failing: an answer (not found, a bad argument, an application
		// error without a code...) says nothing about its dependencies,
		// so callers cannot push edges either way by sending requests
		// that deserve one.
		kind := m.learner.Learn(e.Edge, class == wire.ClassFailure)
		failures = append(failures, Failure{Kind: kind, RCS: e.RCS})
		if Correlated(kind, m.unknownCorrelated) {
			why = why.with(e)
		}
	}
	if counts.OverflowUnsatisfied > 0 {
		// A failure past the bound that nobody retried yet may be on a
		// correlated edge: count it as one, so the error stays claimed
		// (at-least-once). Those with RCS true are left out: they could
		// only push towards unclaimed, on failures not seen.
		failures = append(failures, Failure{Kind: ownership.KindFailClose, RCS: false})
	}
	if class == wire.ClassFailure {
		m.countDenied(entries)
	}
	claim := Decide(failures, m.unknownCorrelated)
	reason, refused := ReasonRetriedBelow, wire.RefusedNone
	if claim == ownership.ClaimUnclaimed {
		m.unclaimedCount.Inc(1)
		reason, refused = why.reason()
	} else {
		m.claimedCount.Inc(1)
		correlated := false
		for _, f := range failures {
			correlated = correlated || Correlated(f.Kind, m.unknownCorrelated)
		}
		switch {
		case correlated:
			m.atLeastOnceCount.Inc(1)
			reason = ReasonAtLeastOnce
		case len(failures) > 0:
			m.coincidentalCount.Inc(1)
			reason = ReasonCoincidental
		default:
			reason = ReasonOwnFailure
		}
	}
	m.recent.add(record{
		time:        now,
		procedure:   procedure,
		reason:      reason,
		failedCalls: len(entries) + counts.Overflow,
		refused:     refused,
		code:        code,
		class:       class,
		claim:       claim,
		peers:       decisionPeers(entries),
	}, ph)
	return claim, reason
}

// codeName names the code of an error for operators: an application error
// without a code is "application-error".
func codeName(code yarpcerrors.Code, class wire.Class) string {
	if code == yarpcerrors.CodeOK && class == wire.ClassAnswer {
		return "application-error"
	}
	return code.String()
}

// Decisions returns the latest claim decisions, newest first; a repeat of
// the newest at the same reading of the clock (WithClock) is counted but
// not listed again.
func (m *Middleware) Decisions() []inbound.Decision {
	return m.recent.list()
}

func (m *Middleware) headers(c ownership.Claim, noRetry bool) transport.Headers {
	switch {
	case c == ownership.ClaimUnclaimed && noRetry:
		return m.unclaimedNoRetry
	case c == ownership.ClaimUnclaimed:
		return m.unclaimed
	case noRetry:
		return m.claimedNoRetry
	default:
		return m.claimed
	}
}
