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
	// recent is its own allocation: every failed request writes its
	// cursor, which must not share a cache line with hot reads.
	recent *decisions
	// Header sets built once and only read (AddHeaders copies them).
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
		// A request waiting for its outbound calls parks its slot.
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

// InFlight returns how many requests are tracked in flight (at most
// MaxInFlight).
func (m *Middleware) InFlight() int { return m.logs.Len() }

// Handle implements middleware.UnaryInbound, following DESIGN.md's data
// flow: track, serve, close the egress log, classify, decide and respond,
// record a root's storm, and let the memory observe failed calls.
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
			// the time its outbound calls took.
			log.TimeCalls()
		}
	}
	if marked {
		m.orphans.Watch() // until finish
	}
	orphans := m.orphans.Mark()
	rw := &r.w
	rw.ResponseWriter, rw.m = resw, m
	// Deferred so the log goes even if the handler panics (yarpc
	// recovers further out); a call left running is then counted late.
	closed := false
	var sum calls.Summary
	defer m.finish(log, &closed, &sum)

	err := h.Handle(&r.Node, req, rw)
	if err == nil && !marked && !rw.appError && m.quiet(log, orphans) {
		// The steady state's success: nothing failed, retried or met a
		// storm, and nobody reads its figures. Nothing to do.
		closed = true
		return nil
	}

	sum, closed = m.close(log), true
	out := m.classify(ctx, err, rw, log)
	storm := m.stormFigures(sum.Storm, log, orphans)
	var now time.Time // read once, when a failure or a storm is recorded
	var ph uint64     // procedureHash(req.Procedure), with now
	if out.class != wire.ClassOK {
		// One clock reading and procedure hash, for decision and storm.
		now, ph = m.now(), procedureHash(req.Procedure)
		claim, reason := m.decide(now, req.Procedure, ph, out.code, out.class, sum.Failures, sum.Counts)
		if !edge {
			m.respond(req, resw, out, claim, log.NoRetry(), storm)
		}
		tracing.Claim(ctx, claim, reason)
	} else if !edge && !storm.Trivial() && (marked || storm.Stormy()) {
		// A success reports its figures only when it took more than
		// itself, and only to a caller that reads them (marked: in an
		// incident) or when it met a storm. The steady state sends no
		// errown header.
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

// arrived reports whether req is an edge request (a root whose response
// carries no errown headers), else its attempt number and whether it is
// marked. Only a retry is tagged on the span.
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
// a shed's reason (in observe mode, what enforce would shed).
func (m *Middleware) admit(ctx context.Context, p admission.Priority, key uint64) (admission.Ticket, string, bool) {
	t, reason, ok := m.admission.AdmitRoot(ctx, p, key)
	if reason != "" {
		m.shedCount[reason].Inc(1)
		tracing.Shed(ctx, reason, ok)
	}
	return t, reason, ok
}

// outcome is how a tracked request's handler ended (wire.Result), with
// the encoding's application error code, if any.
type outcome struct {
	err     error
	appCode *yarpcerrors.Code
	code    yarpcerrors.Code
	class   wire.Class
}

// countAttempt counts a retry and returns the attempt number (0 when
// unmarked) and whether it carries errown's mark (caller in an incident).
// The header name is validated lower case, so the map is indexed directly.
func (m *Middleware) countAttempt(req *transport.Request) (int, bool) {
	n, marked := wire.ParseAttempt(req.Headers.Items()[m.hdr.Attempt])
	if n > 1 {
		m.retriedCount.Inc(1)
	}
	return n, marked
}

// track puts a new request in the log map, under ctx, or returns nil when
// the map is full.
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

// serveUntracked serves a request the log map had no room for.
func (m *Middleware) serveUntracked(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler, edge bool) error {
	m.untrackedCount.Inc(1)
	// Its figures are unknown: say so (except at the edge), and its
	// calls tell their callees they are not roots.
	err := h.Handle(reqlog.WithUntracked(ctx), req, m.ownHeaders(resw))
	if !edge {
		resw.AddHeaders(m.unknownStorm)
	}
	return err
}

// close closes the egress log and counts failures past its bound
// (calls.MaxFailures); they stay in the log until finish.
func (m *Middleware) close(log *reqlog.Log) calls.Summary {
	sum := log.Egress.CloseSummary()
	if sum.Counts.Overflow > 0 {
		m.overflowCount.Inc(int64(sum.Counts.Overflow))
	}
	return sum
}

// quiet closes the egress log and reports whether no call failed or
// reported a storm and the figures are known. When false, close still
// returns the Summary.
func (m *Middleware) quiet(log *reqlog.Log, orphans uint64) bool {
	return log.Egress.CloseQuiet() && m.figuresKnown(orphans)
}

// figuresKnown reports whether no orphan call (fresh context, maybe this
// request's) failed or retried since the mark taken as the request began.
func (m *Middleware) figuresKnown(orphans uint64) bool {
	return !m.orphans.Since(orphans)
}

// classify returns how the handler ended (wire.HandlerResult); an answer
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

// stormFigures returns the egress log's figures f plus one request per
// call the handler abandoned (a hedge's loser, fire-and-forget), or
// unknown when !figuresKnown.
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

// respond puts errown's headers on a non-success response: claim,
// pushback, storm, and the code where the transport drops it.
func (m *Middleware) respond(req *transport.Request, resw transport.ResponseWriter, out outcome, claim ownership.Claim, noRetry bool, storm wire.Figures) {
	resw.AddHeaders(m.headers(claim, noRetry))
	resw.AddHeaders(m.stormHeaders(storm))
	if out.err == nil && out.appCode != nil {
		// gRPC drops an application error's code: errown carries it.
		resw.AddHeaders(transport.NewHeaders().With(m.hdr.Code, wire.FormatCode(out.code)))
	}
	if out.err != nil && req.Transport == _tchannel {
		// TChannel keeps response headers only on application errors.
		resw.SetApplicationError()
	}
}

// recordStorm records a root's storm at now (read here when zero; ph
// hashes procedure), at an incident's onset when a call went unmarked.
func (m *Middleware) recordStorm(now time.Time, ph uint64, procedure string, storm wire.Figures, failed, onset bool) {
	if now.IsZero() {
		now, ph = m.now(), procedureHash(procedure)
	}
	st := newStorm(now, procedure, storm, failed)
	st.Onset = onset
	m.storms.record(st, ph)
}

// observe tells the learner of a succeeded request's failed calls (those
// past the log's bound were not kept).
func (m *Middleware) observe(entries []calls.Entry) {
	for _, e := range entries {
		if e.Failed() {
			m.learner.Observe(e.Edge, false)
		}
	}
}

// unknown is the default Learner: every edge unknown, nothing learned.
type unknown struct{ memory.Unknown }

var _ memory.Learner = unknown{}

func (unknown) Observe(ownership.Edge, bool) {}

func (unknown) Learn(ownership.Edge, bool) ownership.EdgeKind { return ownership.KindUnknown }

// Storms returns the latest roots that met a storm below, newest first; a
// repeat at the same clock reading is counted and hooked but not listed.
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

// ownHeaders returns a writer that drops errown's own headers from what
// the handler adds.
func (m *Middleware) ownHeaders(w transport.ResponseWriter) transport.ResponseWriter {
	return &writer{ResponseWriter: w, m: m}
}

// withoutOwnHeaders returns h without errown's response headers, or h
// itself when it has none (the common case).
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

// ownHeader reports whether canonical k is one of errown's response headers.
func (m *Middleware) ownHeader(k string) bool {
	return k == m.hdr.Claim || k == m.hdr.NoRetry || k == m.hdr.Code || k == m.hdr.Storm || k == m.hdr.Shed
}

// finish closes the egress log unless Handle did (then sum holds it),
// gives its chunk back and removes the log from the map.
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

// decide claims or unclaims a request's error from its egress log's
// failed calls (entries, counts), counts the decision and keeps it for
// Decisions at now (ph: procedureHash). It returns the claim and reason.
func (m *Middleware) decide(now time.Time, procedure string, ph uint64, code yarpcerrors.Code, class wire.Class, entries []calls.Entry, counts calls.Counts) (ownership.Claim, string) {
	var buf [_stackFailures]Failure
	failures := buf[:0]
	var why unclaimCause // of the correlated failures: the reason of an unclaim
	for _, e := range entries {
		if !e.Failed() {
			continue
		}
		// Only this service's own failure counts as the caller failing:
		// an answer says nothing about dependencies, so callers cannot
		// push edges either way with requests that deserve one.
		kind := m.learner.Learn(e.Edge, class == wire.ClassFailure)
		failures = append(failures, Failure{Kind: kind, RCS: e.RCS})
		if Correlated(kind, m.unknownCorrelated) {
			why = why.with(e)
		}
	}
	if counts.OverflowUnsatisfied > 0 {
		// An unretried failure past the bound may be correlated: count
		// it as one so the error stays claimed (at-least-once). RCS-true
		// ones could only push towards unclaimed and are left out.
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

// codeName names an error's code for operators ("application-error" for
// an application error without a code).
func codeName(code yarpcerrors.Code, class wire.Class) string {
	if code == yarpcerrors.CodeOK && class == wire.ClassAnswer {
		return "application-error"
	}
	return code.String()
}

// Decisions returns the latest claim decisions, newest first; a repeat at
// the same clock reading (WithClock) is counted but not listed.
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
