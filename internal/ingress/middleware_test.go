package ingress

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

type handlerFunc func(context.Context, *transport.Request, transport.ResponseWriter) error

func (f handlerFunc) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter) error {
	return f(ctx, req, resw)
}

var errBoom = yarpcerrors.UnavailableErrorf("boom")

func failed(service string, rcs bool) calls.Entry {
	return calls.Entry{
		Edge:     ownership.Edge{CallerProcedure: "proc", Service: service, Procedure: "call"},
		Code:     yarpcerrors.CodeUnavailable,
		Class:    wire.ClassFailure,
		RCS:      rcs,
		Attempts: 1,
	}
}

func succeeded(service string) calls.Entry {
	return calls.Entry{Edge: ownership.Edge{CallerProcedure: "proc", Service: service, Procedure: "call"}, Attempts: 1}
}

// handlerLogging appends entries to the request's egress log, as the egress
// middleware would, then returns err.
func handlerLogging(err error, entries ...calls.Entry) handlerFunc {
	return func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		log := reqlog.FromContext(ctx)
		for _, e := range entries {
			log.Egress.Append(e)
		}
		return err
	}
}

type env struct {
	mw    *Middleware
	scope tally.TestScope
}

func newEnv(t *testing.T, cfg inbound.Config, opts ...Option) env {
	scope := tally.NewTestScope("", nil)
	mw, err := New(cfg, append([]Option{WithSinks(obs.Sinks{Scope: scope})}, opts...)...)
	require.NoError(t, err)
	return env{mw: mw, scope: scope}
}

func (e env) counter(name string) int64 {
	c, ok := e.scope.Snapshot().Counters()[name+"+"]
	if !ok {
		return 0
	}
	return c.Value()
}

func request(transportName string) *transport.Request {
	return &transport.Request{Caller: "a", Service: "b", Procedure: "proc", Transport: transportName, Headers: transport.NewHeaders()}
}

func TestHandleDecides(t *testing.T) {
	memory, err := memory.NewStatic([]depmem.Declaration{{Service: "soft", Kind: new(ownership.KindFailOpen)}, {Service: "hard", Kind: new(ownership.KindFailClose)}}, nil)
	require.NoError(t, err)
	tests := []struct {
		name        string
		give        handlerFunc
		wantErr     bool
		wantClaim   string
		wantCounter string
	}{
		{"success sends no claim", handlerLogging(nil, failed("hard", true)), false, "", ""},
		{"own failure is claimed", handlerLogging(errBoom, succeeded("hard")), true, "claimed", "inbound.claimed"},
		{"correlated failure retried below is unclaimed", handlerLogging(errBoom, failed("hard", true)), true, "unclaimed", "inbound.unclaimed"},
		{"unknown edge counts as correlated", handlerLogging(errBoom, failed("other", true)), true, "unclaimed", "inbound.unclaimed"},
		{"correlated failure nobody retried stays claimed", handlerLogging(errBoom, failed("hard", false)), true, "claimed", "inbound.at_least_once"},
		{"fail-open failure is coincidental", handlerLogging(errBoom, failed("soft", true)), true, "claimed", "inbound.coincidental"},
		{"one unretried correlated failure keeps it claimed", handlerLogging(errBoom, failed("hard", true), failed("other", false)), true, "claimed", "inbound.at_least_once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, inbound.Config{}, WithLearner(memory))
			resw := &transporttest.FakeResponseWriter{}
			err := e.mw.Handle(context.Background(), request("http"), resw, tt.give)
			assert.Equal(t, tt.wantErr, err != nil)
			got, _ := resw.Headers.Get("errown-claim")
			assert.Equal(t, tt.wantClaim, got)
			assert.False(t, resw.IsApplicationError, "only tchannel is marked")
			assert.Equal(t, 0, e.mw.logs.Len(), "log removed")
			if tt.wantCounter != "" {
				assert.Equal(t, int64(1), e.counter(tt.wantCounter))
			}
		})
	}
}

func TestHandleUnknownCoincidental(t *testing.T) {
	e := newEnv(t, inbound.Config{UnknownEdges: inbound.UnknownCoincidental})
	resw := &transporttest.FakeResponseWriter{}
	require.Error(t, e.mw.Handle(context.Background(), request("http"), resw, handlerLogging(errBoom, failed("other", true))))
	got, _ := resw.Headers.Get("errown-claim")
	assert.Equal(t, "claimed", got)
	assert.Equal(t, int64(1), e.counter("inbound.coincidental"))
}

func TestHandleReturnsHandlerErrorUnchanged(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	want := errors.New("plain")
	err := e.mw.Handle(context.Background(), request("grpc"), &transporttest.FakeResponseWriter{}, handlerLogging(want))
	assert.Same(t, want, err)
}

func TestHandleTChannelMarksApplicationError(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	resw := &transporttest.FakeResponseWriter{}
	require.Error(t, e.mw.Handle(context.Background(), request("tchannel"), resw, handlerLogging(errBoom)))
	assert.True(t, resw.IsApplicationError)
	got, _ := resw.Headers.Get("errown-claim")
	assert.Equal(t, "claimed", got)

	resw = &transporttest.FakeResponseWriter{}
	require.NoError(t, e.mw.Handle(context.Background(), request("tchannel"), resw, handlerLogging(nil)))
	assert.False(t, resw.IsApplicationError, "success untouched")
}

func TestHandlePanicRemovesLog(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	var seen *reqlog.Log
	h := handlerFunc(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		seen = reqlog.FromContext(ctx)
		panic("handler bug")
	})
	assert.PanicsWithValue(t, "handler bug", func() {
		_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, h)
	})
	require.NotNil(t, seen)
	assert.Equal(t, 0, e.mw.InFlight())
	assert.False(t, seen.Egress.Append(failed("hard", true)), "a call left running by a panicking handler is late")
}

func TestHandleUntrackedOverBound(t *testing.T) {
	e := newEnv(t, inbound.Config{Ingress: inbound.IngressConfig{MaxInFlight: 1}})
	held := e.mw.logs.Open("other")
	defer e.mw.logs.Remove(held)

	resw := &transporttest.FakeResponseWriter{}
	calls := 0
	h := handlerFunc(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		calls++
		assert.Nil(t, reqlog.FromContext(ctx))
		return errBoom
	})
	assert.Equal(t, errBoom, e.mw.Handle(context.Background(), request("http"), resw, h))
	assert.Equal(t, 1, calls)
	_, ok := resw.Headers.Get("errown-claim")
	assert.False(t, ok, "untracked errors carry no claim: the caller treats them as missing")
	assert.Equal(t, int64(1), e.counter("inbound.untracked"))
}

func TestDoNotRetry(t *testing.T) {
	assert.False(t, inbound.DoNotRetry(context.Background()))
	e := newEnv(t, inbound.Config{Headers: ownership.Headers{NoRetry: "x-stop"}})
	resw := &transporttest.FakeResponseWriter{}
	h := handlerFunc(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		assert.True(t, inbound.DoNotRetry(ctx))
		return errBoom
	})
	require.Error(t, e.mw.Handle(context.Background(), request("http"), resw, h))
	got, _ := resw.Headers.Get("x-stop")
	assert.Equal(t, "true", got)
	claim, _ := resw.Headers.Get("errown-claim")
	assert.Equal(t, "claimed", claim)
}

func TestHandleIgnoresCallerClaimAndCountsRetries(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	req := request("http")
	req.Headers = transport.NewHeaders().With("errown-claim", "unclaimed").With("errown-attempt", "2")
	resw := &transporttest.FakeResponseWriter{}
	require.Error(t, e.mw.Handle(context.Background(), req, resw, handlerLogging(errBoom)))
	got, _ := resw.Headers.Get("errown-claim")
	assert.Equal(t, "claimed", got, "a claim on the request means nothing")
	assert.Equal(t, int64(1), e.counter("inbound.retried"))

	for _, v := range []string{"1", "-3", "x", "999999"} {
		req.Headers = transport.NewHeaders().With("errown-attempt", v)
		require.NoError(t, e.mw.Handle(context.Background(), req, &transporttest.FakeResponseWriter{}, handlerLogging(nil)))
	}
	assert.Equal(t, int64(1), e.counter("inbound.retried"), "first attempts and garbage are not retries")
}

func TestHandleLateAppendDropped(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	var log *reqlog.Log
	h := handlerFunc(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		log = reqlog.FromContext(ctx)
		return nil
	})
	require.NoError(t, e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, h))
	assert.False(t, log.Egress.Append(failed("hard", true)), "the log is closed once the handler returned")
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		give    inbound.Config
		wantErr []string
	}{
		{inbound.Config{}, nil},
		{inbound.Config{Headers: ownership.Headers{Claim: "x-claim"}, UnknownEdges: inbound.UnknownCoincidental}, nil},
		{inbound.Config{Headers: ownership.Headers{Claim: "X Claim"}}, []string{`claimHeader: must be lower-case letters, digits and '-', got "X Claim"`}},
		{inbound.Config{Headers: ownership.Headers{Attempt: "A"}, UnknownEdges: "maybe"}, []string{`unknownEdges: must be "correlated" or "coincidental", got "maybe"`, "attemptHeader"}},
	}
	for _, tt := range tests {
		_, err := New(tt.give)
		if len(tt.wantErr) == 0 {
			assert.NoError(t, err)
			continue
		}
		for _, want := range tt.wantErr {
			assert.ErrorContains(t, err, want)
		}
	}
}

type observation struct {
	edge         ownership.Edge
	callerFailed bool
}

type recordingObserver struct{ seen []observation }

func (r *recordingObserver) Observe(e ownership.Edge, callerFailed bool) {
	r.seen = append(r.seen, observation{e, callerFailed})
}

// learner is a memory.Learner of a Classifier and an Observer: it asks
// one for the kind of an edge, then tells the other of its failure.
type learner struct {
	memory.Classifier
	memory.Observer
}

func (l learner) Learn(e ownership.Edge, callerFailed bool) ownership.EdgeKind {
	kind := l.Kind(e)
	l.Observe(e, callerFailed)
	return kind
}

// observing returns a Learner that knows no edge and tells obs of every
// failure.
func observing(obs memory.Observer) memory.Learner {
	return learner{Classifier: memory.Unknown{}, Observer: obs}
}

func TestHandleFeedsObserver(t *testing.T) {
	obs := &recordingObserver{}
	feedTwoRequests(t, newEnv(t, inbound.Config{}, WithLearner(observing(obs))))
	assert.Equal(t, _fed, obs.seen, "only callee failures, with the caller's outcome")
}

// feedTwoRequests has e's middleware serve a failed request with two
// failed calls and a successful one with one (_fed), and returns the
// failed request's claim.
func feedTwoRequests(t *testing.T, e env) string {
	t.Helper()
	resw := &transporttest.FakeResponseWriter{}
	require.Error(t, e.mw.Handle(context.Background(), request("http"), resw,
		handlerLogging(errBoom, failed("hard", true), succeeded("ok"), failed("soft", false))))
	claim, _ := resw.Headers.Get("errown-claim")
	require.NoError(t, e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{},
		handlerLogging(nil, failed("soft", true))))
	return claim
}

// _fed are feedTwoRequests' callee failures, with their caller's outcome.
var _fed = []observation{
	{failed("hard", true).Edge, true},
	{failed("soft", false).Edge, true},
	{failed("soft", true).Edge, false},
}

// recordingLearner is a memory.Learner that records how it was asked:
// every edge is fail-open.
type recordingLearner struct {
	recordingObserver
	kinds, learned int
}

func (r *recordingLearner) Kind(ownership.Edge) ownership.EdgeKind {
	r.kinds++
	return ownership.KindFailOpen
}

func (r *recordingLearner) Learn(e ownership.Edge, callerFailed bool) ownership.EdgeKind {
	r.learned++
	r.Observe(e, callerFailed)
	return ownership.KindFailOpen
}

// A Learner decides and observes a failed request's failures in one step
// each, and a successful request's are observed as any observer's are:
// every failure observed once, with the caller's outcome.
func TestHandleFeedsLearner(t *testing.T) {
	l := &recordingLearner{}
	claim := feedTwoRequests(t, newEnv(t, inbound.Config{}, WithLearner(l)))
	assert.Equal(t, "claimed", claim, "fail-open failures are coincidental: the failure is this service's")
	assert.Equal(t, _fed, l.seen, "only callee failures, each once, with the caller's outcome")
	assert.Equal(t, 2, l.learned, "the failed request's two; a success decides nothing")
	assert.Zero(t, l.kinds, "never asked apart")
}

// The last Learner given decides and observes.
func TestLastLearnerDecides(t *testing.T) {
	first, last := &recordingLearner{}, &recordingLearner{}
	e := newEnv(t, inbound.Config{}, WithLearner(first), WithLearner(last))
	require.Error(t, e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{},
		handlerLogging(errBoom, failed("hard", true))))
	assert.Zero(t, first.learned)
	assert.Empty(t, first.seen)
	assert.Equal(t, 1, last.learned)
	assert.Equal(t, []observation{{failed("hard", true).Edge, true}}, last.seen)
}

// repeat returns n copies of e.
func repeat(n int, e calls.Entry) []calls.Entry {
	out := make([]calls.Entry, n)
	for i := range out {
		out[i] = e
	}
	return out
}

// TestHandleEgressOverflow: a request whose calls fail past the egress
// log's bound has the overflow counted, and is never unclaimed on the
// strength of failures the log could not keep.
func TestHandleEgressOverflow(t *testing.T) {
	memory, err := memory.NewStatic([]depmem.Declaration{{Service: "hard", Kind: new(ownership.KindFailClose)}}, nil)
	require.NoError(t, err)
	tests := []struct {
		name         string
		give         []calls.Entry
		wantClaim    string
		wantOverflow int64
		wantObserved int
	}{
		{
			name:         "many successes and three failures: nothing overflows",
			give:         append(repeat(10_000, succeeded("ok")), repeat(3, failed("hard", true))...),
			wantClaim:    "unclaimed",
			wantObserved: 3,
		},
		{
			name:         "every failure retried below: unclaimed, overflow counted",
			give:         repeat(calls.MaxFailures+5, failed("hard", true)),
			wantClaim:    "unclaimed",
			wantOverflow: 5,
			wantObserved: calls.MaxFailures,
		},
		{
			name:         "an overflowed failure nobody retried keeps it claimed",
			give:         append(repeat(calls.MaxFailures, failed("hard", true)), failed("hard", false)),
			wantClaim:    "claimed",
			wantOverflow: 1,
			wantObserved: calls.MaxFailures,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &recordingObserver{}
			e := newEnv(t, inbound.Config{}, WithLearner(learner{Classifier: memory, Observer: obs}))
			resw := &transporttest.FakeResponseWriter{}
			require.Error(t, e.mw.Handle(context.Background(), request("http"), resw, handlerLogging(errBoom, tt.give...)))
			got, _ := resw.Headers.Get("errown-claim")
			assert.Equal(t, tt.wantClaim, got)
			assert.Equal(t, tt.wantOverflow, e.counter("inbound.egress_overflow"))
			assert.Len(t, obs.seen, tt.wantObserved, "only the failures kept are observed")
		})
	}
}

func TestDecisionsKept(t *testing.T) {
	memory, err := memory.NewStatic([]depmem.Declaration{{Service: "soft", Kind: new(ownership.KindFailOpen)}}, nil)
	require.NoError(t, err)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	reads := 0
	e := newEnv(t, inbound.Config{}, WithLearner(memory), WithClock(func() time.Time { reads++; return at }))
	_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerLogging(nil))
	assert.Zero(t, reads, "a quiet success reads no clock")
	for _, h := range []handlerFunc{
		handlerLogging(errBoom),
		handlerLogging(nil, failed("hard", true)), // success: no decision
		handlerLogging(errBoom, failed("soft", true)),
		handlerLogging(yarpcerrors.InternalErrorf("x"), failed("hard", false)),
		handlerLogging(errBoom, failed("hard", true)),
	} {
		before := reads
		_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, h)
		assert.LessOrEqual(t, reads-before, 1, "one reading per request")
	}
	assert.Equal(t, []inbound.Decision{
		{Time: at, Procedure: "proc", Code: "unavailable", Claim: "unclaimed", FailedCalls: 1, Reason: ReasonRetriedBelow},
		{Time: at, Procedure: "proc", Code: "internal", Claim: "claimed", FailedCalls: 1, Reason: ReasonAtLeastOnce},
		{Time: at, Procedure: "proc", Code: "unavailable", Claim: "claimed", FailedCalls: 1, Reason: ReasonCoincidental},
		{Time: at, Procedure: "proc", Code: "unavailable", Claim: "claimed", FailedCalls: 0, Reason: ReasonOwnFailure},
	}, e.mw.Decisions())

	// An outage under a coarse clock: the repeats of one decision at one
	// reading are kept once.
	for i := 0; i < 2*_recentDecisions; i++ {
		_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerLogging(errBoom))
	}
	got := e.mw.Decisions()
	require.Len(t, got, 5, "the four before and the first of the repeats")
	assert.Equal(t, inbound.Decision{Time: at, Procedure: "proc", Code: "unavailable", Claim: "claimed", Reason: ReasonOwnFailure}, got[0])

	// The same decision at later readings is kept each time, and the
	// ring keeps the latest only.
	for i := 0; i < 2*_recentDecisions; i++ {
		at = at.Add(time.Millisecond)
		_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerLogging(errBoom))
	}
	got = e.mw.Decisions()
	assert.Len(t, got, _recentDecisions, "the ring keeps the latest only")
	assert.Equal(t, at, got[0].Time, "newest first")
	assert.Equal(t, at.Add(-(_recentDecisions-1)*time.Millisecond), got[_recentDecisions-1].Time)
}

// appErrorHandler logs entries, then answers as yarpc's Thrift encoding
// answers with an exception: the response marked as an application error,
// with the exception's code (nil: none in the IDL), and no error returned.
func appErrorHandler(code *yarpcerrors.Code, entries ...calls.Entry) handlerFunc {
	return func(ctx context.Context, req *transport.Request, resw transport.ResponseWriter) error {
		if err := handlerLogging(nil, entries...)(ctx, req, resw); err != nil {
			return err
		}
		resw.SetApplicationError()
		resw.(transport.ApplicationErrorMetaSetter).SetApplicationErrorMeta(&transport.ApplicationErrorMeta{Name: "Exception", Code: code})
		_, err := resw.Write([]byte("exception"))
		return err
	}
}

func TestHandleApplicationErrors(t *testing.T) {
	unavailable, notFound := yarpcerrors.CodeUnavailable, yarpcerrors.CodeNotFound
	tests := []struct {
		name             string
		give             handlerFunc
		wantClaim        string
		wantCallerFailed bool
		wantCode         string
	}{
		{
			name:             "exception with a server-fault code: claimed and a failure",
			give:             appErrorHandler(&unavailable),
			wantClaim:        "claimed",
			wantCallerFailed: true,
			wantCode:         "unavailable",
		},
		{
			name:             "exception with a server-fault code after a retried failure below: unclaimed",
			give:             appErrorHandler(&unavailable, failed("hard", true)),
			wantClaim:        "unclaimed",
			wantCallerFailed: true,
			wantCode:         "unavailable",
		},
		{
			name:      "exception with a client-fault code: an answer",
			give:      appErrorHandler(&notFound, failed("hard", true)),
			wantClaim: "unclaimed",
			wantCode:  "not-found",
		},
		{
			name:      "exception without a code: an answer",
			give:      appErrorHandler(nil, failed("hard", true)),
			wantClaim: "unclaimed",
			wantCode:  "application-error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &recordingObserver{}
			e := newEnv(t, inbound.Config{}, WithLearner(observing(obs)))
			resw := &transporttest.FakeResponseWriter{}
			require.NoError(t, e.mw.Handle(context.Background(), request("http"), resw, tt.give))
			got, _ := resw.Headers.Get("errown-claim")
			assert.Equal(t, tt.wantClaim, got)
			assert.True(t, resw.IsApplicationError, "marking passed on")
			require.NotNil(t, resw.ApplicationErrorMeta, "meta passed on")
			assert.Equal(t, "Exception", resw.ApplicationErrorMeta.Name)
			assert.Equal(t, "exception", resw.Body.String())
			for _, o := range obs.seen {
				assert.Equal(t, tt.wantCallerFailed, o.callerFailed, "depmem learns the caller's outcome by its class")
			}
			require.Len(t, e.mw.Decisions(), 1)
			assert.Equal(t, tt.wantCode, e.mw.Decisions()[0].Code)
			code, _ := resw.Headers.Get("errown-code")
			if tt.wantCode == "application-error" {
				assert.Empty(t, code, "no code to carry")
			} else {
				assert.Equal(t, tt.wantCode, code, "the code travels where the transport drops it")
			}
		})
	}
}

func TestHandleAnswersAreNotCallerFailures(t *testing.T) {
	// Every code the table calls an answer leaves the caller fine in the
	// dependency memory; every failure does not.
	for _, row := range wire.Codes() {
		if row.Class == wire.ClassOK {
			continue
		}
		obs := &recordingObserver{}
		e := newEnv(t, inbound.Config{}, WithLearner(observing(obs)))
		err := yarpcerrors.Newf(row.Code, "x")
		_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerLogging(err, failed("hard", true)))
		require.Len(t, obs.seen, 1, "%v", row.Code)
		assert.Equal(t, row.Class == wire.ClassFailure, obs.seen[0].callerFailed, "%v", row.Code)
	}
}

func TestHandleOwnsItsHeaders(t *testing.T) {
	// A handler that sets or forwards errown's headers (copying its
	// callee's response headers, say) never gets them onto the response:
	// errown's decision is the only claim there.
	forwarding := func(err error) handlerFunc {
		return func(_ context.Context, _ *transport.Request, resw transport.ResponseWriter) error {
			resw.AddHeaders(transport.NewHeaders().
				With("Errown-Claim", "unclaimed").
				With("errown-no-retry", "true").
				With("errown-shed", "retry").
				With("x-app", "kept"))
			return err
		}
	}
	tests := []struct {
		name        string
		give        handlerFunc
		wantClaim   string
		wantNoRetry string
	}{
		{name: "error: errown's claim replaces the handler's", give: forwarding(errBoom), wantClaim: "claimed"},
		{name: "success: the handler's claim is dropped", give: forwarding(nil)},
	}
	for _, tt := range tests {
		for _, tr := range []string{"http", "grpc", "tchannel"} {
			t.Run(tt.name+"/"+tr, func(t *testing.T) {
				e := newEnv(t, inbound.Config{})
				resw := &transporttest.FakeResponseWriter{}
				_ = e.mw.Handle(context.Background(), request(tr), resw, tt.give)
				claim, _ := resw.Headers.Get("errown-claim")
				noRetry, _ := resw.Headers.Get("errown-no-retry")
				_, shed := resw.Headers.Get("errown-shed")
				app, _ := resw.Headers.Get("x-app")
				assert.Equal(t, tt.wantClaim, claim)
				assert.Equal(t, tt.wantNoRetry, noRetry)
				assert.False(t, shed, "only errown's admission marks a shed")
				assert.Equal(t, "kept", app, "other headers pass")
				assert.Equal(t, int64(1), e.counter("inbound.replaced_headers"))
			})
		}
	}
}

func TestCallerFault(t *testing.T) {
	// A handler that can only answer internal marks the request as its
	// caller's fault: depmem learns the caller was fine.
	assert.False(t, inbound.CallerFault(context.Background()), "untracked")
	obs := &recordingObserver{}
	e := newEnv(t, inbound.Config{}, WithLearner(observing(obs)))
	h := handlerFunc(func(ctx context.Context, req *transport.Request, resw transport.ResponseWriter) error {
		if err := handlerLogging(nil, failed("hard", true))(ctx, req, resw); err != nil {
			return err
		}
		assert.True(t, inbound.CallerFault(ctx))
		return yarpcerrors.InternalErrorf("bad request body")
	})
	err := e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, h)
	assert.Equal(t, yarpcerrors.CodeInternal, yarpcerrors.FromError(err).Code(), "the error is the handler's")
	require.Len(t, obs.seen, 1)
	assert.False(t, obs.seen[0].callerFailed, "an answer, not a failure of this service")

	obs.seen = nil
	_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerLogging(yarpcerrors.InternalErrorf("x"), failed("hard", true)))
	require.Len(t, obs.seen, 1)
	assert.True(t, obs.seen[0].callerFailed, "without the mark, internal is a failure")
}
