package e2e_test

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/errowntest"
	"github.com/opentracing/opentracing-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otbridge "go.opentelemetry.io/otel/bridge/opentracing"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/yarpc/yarpcerrors"
)

// A request through errown's trace, as docs/tracing.md
// promises it: A→B→C→D, D failing every call, every service traced by
// the OpenTelemetry SDK (the yarpc services through the OpenTracing
// bridge), spans recorded in memory. Per request exactly one
// errown.retry event, on C's span; errown.retry_refused, reason
// unclaimed, on B's and A's; errown.claim on every server span as the
// decision tables say, and the root's storm figures on A's.
//
// That is a request in an incident. Each test first sends the incident's
// onset, a request none of the callers has seen fail: its calls go
// without errown's attempt mark, so B and C, serving unmarked requests,
// take them for roots and tag their server spans with their own
// subtree's storm figures too (failures carry them exactly). The request
// after it is marked all the way down, and traced as above.

// traces records the spans of every service of a test: each service
// traces with its own OpenTelemetry tracer, named after it, all of one
// provider and one in-memory recorder.
type traces struct {
	t   *testing.T
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
	// since, when set, keeps only the spans started at or after it: those
	// of the requests sent since.
	since time.Time
}

// from returns ts keeping only the spans started at or after since.
func (ts *traces) from(since time.Time) *traces {
	c := *ts
	c.since = since
	return &c
}

// ended returns the ended spans ts keeps.
func (ts *traces) ended() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range ts.rec.Ended() {
		if !s.StartTime().Before(ts.since) {
			out = append(out, s)
		}
	}
	return out
}

func newTraces(t *testing.T) *traces {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &traces{t: t, rec: rec, tp: tp}
}

// bridge returns the OpenTracing tracer of service, for yarpc: the
// OpenTelemetry bridge over the service's tracer, propagating W3C trace
// context.
func (ts *traces) bridge(service string) opentracing.Tracer {
	b, _ := otbridge.NewTracerPair(ts.tp.Tracer(service))
	b.SetTextMapPropagator(propagation.TraceContext{})
	b.SetWarningHandler(func(msg string) { ts.t.Logf("bridge of %s: %s", service, msg) })
	return b
}

// tracer returns the OpenTelemetry tracer of service.
func (ts *traces) tracer(service string) trace.Tracer { return ts.tp.Tracer(service) }

// spans returns the ended spans of service of kind.
func (ts *traces) spans(service string, kind trace.SpanKind) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range ts.ended() {
		if s.InstrumentationScope().Name == service && s.SpanKind() == kind {
			out = append(out, s)
		}
	}
	return out
}

// await waits, up to 10s, until each service of want has ended as many
// server spans as want says, or more. A transport may end a server span
// after its response went out (tchannel-go ends it once the response's
// last frame is flushed), so a caller can hold the reply before the
// spans of the services below it have ended. It fails nothing itself:
// the assertions after it do, naming what is missing.
func (ts *traces) await(want map[string]int) {
	ts.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if ts.serverSpansEnded(want) {
			return
		}
	}
	ts.t.Logf("server spans ended after 10s, want at least %v: not all", want)
}

func (ts *traces) serverSpansEnded(want map[string]int) bool {
	for service, n := range want {
		if len(ts.spans(service, trace.SpanKindServer)) < n {
			return false
		}
	}
	return true
}

// errownEvents returns the errown events of every recorded span, as
// "service kind event reason callee", sorted.
func (ts *traces) errownEvents() []string {
	var out []string
	for _, s := range ts.ended() {
		for _, e := range s.Events() {
			if !strings.HasPrefix(e.Name, "errown.") {
				continue
			}
			f := eventFields(e)
			line := s.InstrumentationScope().Name + " " + s.SpanKind().String() + " " + e.Name
			if r := f["errown.reason"]; r != "" {
				line += " " + r
			}
			out = append(out, line+" "+f["errown.callee"])
		}
	}
	sort.Strings(out)
	return out
}

func eventFields(e sdktrace.Event) map[string]string {
	f := make(map[string]string, len(e.Attributes))
	for _, kv := range e.Attributes {
		f[string(kv.Key)] = kv.Value.String()
	}
	return f
}

// tags returns the errown tags of s, and http.request.resend_count, as
// strings.
func tags(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		if k := string(kv.Key); strings.HasPrefix(k, "errown.") || k == "http.request.resend_count" {
			out[k] = kv.Value.String()
		}
	}
	return out
}

// claimTags are the tags of a server span whose error errown claimed or
// unclaimed for reason.
func claimTags(claim, reason string) map[string]string {
	return map[string]string{"errown.claim": claim, "errown.claim.reason": reason}
}

// with returns m and extra merged.
func with(m map[string]string, extra map[string]string) map[string]string {
	out := make(map[string]string, len(m)+len(extra))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// _rootStorm is A's storm figures: served A 1, B 1, C 1, D 2; blind
// (every hop retrying once) 1 + 2 + 4 + 8.
var _rootStorm = map[string]string{
	"errown.storm.served": "5", "errown.storm.blind": "15", "errown.storm.prevented": "10",
	"errown.storm.retries": "1", "errown.storm.radius": "1", "errown.storm.blind_radius": "3",
}

// At the incident's onset B and C serve unmarked requests, roots of their
// own subtrees: _onsetStormB is B's figures (B 1, C 1, D 2; blind
// 1 + 2 + 4), _onsetStormC C's (C 1, D 2, one retry, nothing prevented).
var (
	_onsetStormB = map[string]string{
		"errown.storm.served": "4", "errown.storm.blind": "7", "errown.storm.prevented": "3",
		"errown.storm.retries": "1", "errown.storm.radius": "1", "errown.storm.blind_radius": "2",
	}
	_onsetStormC = map[string]string{
		"errown.storm.served": "3", "errown.storm.blind": "3", "errown.storm.prevented": "0",
		"errown.storm.retries": "1", "errown.storm.radius": "1", "errown.storm.blind_radius": "1",
	}
)

// assertServerTags checks the tags of service's server spans, one per
// request it served, in any order.
func (ts *traces) assertServerTags(service string, want ...map[string]string) {
	ts.t.Helper()
	spans := ts.spans(service, trace.SpanKindServer)
	got := make([]map[string]string, len(spans))
	for i, s := range spans {
		got[i] = tags(s)
	}
	sortTags(got)
	sortTags(want)
	if !assert.Len(ts.t, got, len(want), "%s: server spans: %v", service, got) {
		return
	}
	for i := range want {
		// mapsEqual first: a nil map wanted is an empty one.
		if !mapsEqual(got[i], want[i]) {
			assert.Equal(ts.t, want[i], got[i], "%s server span tags", service)
		}
	}
}

func sortTags(ts []map[string]string) {
	sort.Slice(ts, func(i, j int) bool { return ts[i]["errown.attempt"] < ts[j]["errown.attempt"] })
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// assertNoRefusalErrors checks that no span carries an error status
// but the server spans of failed requests: a refusal never sets one.
func (ts *traces) assertNoRefusalErrors(failedClients ...string) {
	ts.t.Helper()
	for _, s := range ts.ended() {
		if s.SpanKind() == trace.SpanKindServer {
			continue
		}
		for _, e := range s.Events() {
			if e.Name == "errown.retry_refused" && !slices.Contains(failedClients, s.InstrumentationScope().Name) {
				assert.NotEqual(ts.t, codes.Error, s.Status().Code, "%s's span with a refusal has an error status", s.InstrumentationScope().Name)
			}
		}
	}
}

// _serverSpans is how many server spans each service ends per request
// of the A→B→C→D chain, D failing: D serves C's attempt and its retry.
var _serverSpans = map[string]int{_a: 1, _b: 1, _c: 1, _d: 2}

func TestTraceOfAFailedRequest(t *testing.T) {
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ts := newTraces(t)
			mesh := errowntest.NewMesh(t)
			start := func(name string, h errowntest.Handler, callees ...string) {
				mesh.Start(errowntest.ServiceConfig{
					Name: name, Transport: tr, Errown: withRetries(callees...), Callees: callees, Handler: h,
					Tracer: ts.bridge(name),
				})
			}
			start(_d, fail(_d))
			start(_c, errowntest.Forward, _d)
			start(_b, errowntest.Forward, _c)
			start(_a, errowntest.Forward, _b)

			want := []string{
				_a + " server errown.retry_refused unclaimed " + _b,
				_b + " server errown.retry_refused unclaimed " + _c,
				_c + " server errown.retry " + _d,
			}
			own := claimTags(_claimed, "own failure")
			below := claimTags(_unclaimed, "retried below")
			here := claimTags(_unclaimed, "retried here") // C, which retried D itself

			// The onset: B and C are roots too, and say so on their spans.
			reply := mesh.Call(callCtx(t), _a, nil)
			require.Equal(t, yarpcerrors.CodeUnavailable, reply.Code(), "onset: reply's code (claim %q)", reply.Claim)
			require.Equal(t, _unclaimed, reply.Claim, "onset: reply's claim (code %v)", reply.Code())
			ts.await(_serverSpans)
			assert.Equal(t, want, ts.errownEvents(), "onset: errown's events")
			ts.assertServerTags(_d, own, with(own, map[string]string{"errown.attempt": "2"}))
			ts.assertServerTags(_c, with(here, _onsetStormC))
			ts.assertServerTags(_b, with(below, _onsetStormB))
			ts.assertServerTags(_a, with(below, _rootStorm))
			assertRetryEvent(t, ts.spans(_c, trace.SpanKindServer), _d)
			ts.assertNoRefusalErrors()
			assertOneTrace(t, ts)

			// In the incident: marked all the way down, A the only root.
			ts = ts.from(time.Now())
			reply = mesh.Call(callCtx(t), _a, nil)
			require.Equal(t, yarpcerrors.CodeUnavailable, reply.Code(), "reply's code (claim %q)", reply.Claim)
			require.Equal(t, _unclaimed, reply.Claim, "reply's claim (code %v)", reply.Code())
			ts.await(_serverSpans)
			assert.Equal(t, want, ts.errownEvents(), "errown's events")
			ts.assertServerTags(_d, own, with(own, map[string]string{"errown.attempt": "2"}))
			ts.assertServerTags(_c, here)
			ts.assertServerTags(_b, below)
			ts.assertServerTags(_a, with(below, _rootStorm))
			assertRetryEvent(t, ts.spans(_c, trace.SpanKindServer), _d)
			ts.assertNoRefusalErrors()
			assertOneTrace(t, ts)
		})
	}
}

// assertRetryEvent checks the fields of the one errown.retry event on
// spans.
func assertRetryEvent(t *testing.T, spans []sdktrace.ReadOnlySpan, callee string) {
	t.Helper()
	for _, s := range spans {
		for _, e := range s.Events() {
			if e.Name != "errown.retry" {
				continue
			}
			f := eventFields(e)
			delete(f, "event") // the bridge's copy of OpenTracing's name field
			assert.NotEmpty(t, f["errown.backoff"], "errown.retry without a backoff: %v", f)
			delete(f, "errown.backoff")
			want := map[string]string{"errown.attempt": "2", "errown.callee": callee, "errown.claim": _claimed}
			assert.NotEmpty(t, f["errown.procedure"], "errown.retry without a procedure: %v", f)
			delete(f, "errown.procedure")
			assert.Equal(t, want, f, "errown.retry fields")
			return
		}
	}
	assert.Fail(t, "no errown.retry event")
}

// assertOneTrace checks that every span of the request is in one trace:
// the bridge propagates the trace context over each transport.
func assertOneTrace(t *testing.T, ts *traces) {
	t.Helper()
	ids := map[trace.TraceID]int{}
	for _, s := range ts.ended() {
		ids[s.SpanContext().TraceID()]++
	}
	assert.Len(t, ids, 1, "the request's spans are in traces, want 1: %v", ids)
}

// TestTraceNothingWithoutTracer runs the chain with OpenTracing's no-op
// tracer, yarpc's default: errown's hooks find no span that records, and
// the decisions are those of a traced chain (the hooks' own test,
// internal/tracing's TestNothingWithoutTracer, holds them to no
// allocation; bench's Tracing benchmark measures a request).
func TestTraceNothingWithoutTracer(t *testing.T) {
	mesh := errowntest.NewMesh(t)
	for _, cfg := range []errowntest.ServiceConfig{
		{Name: _c, Errown: withRetries(), Handler: fail(_c)},
		{Name: _b, Errown: withRetries(_c), Callees: []string{_c}, Handler: errowntest.Forward},
	} {
		cfg.Transport, cfg.Tracer = errowntest.HTTP, opentracing.NoopTracer{}
		mesh.Start(cfg)
	}
	reply := mesh.Call(callCtx(t), _b, nil)
	assertResult(t, result{
		Code: _unavail, Claim: _unclaimed, Served: map[string]int64{_b: 1, _c: 2},
		Attempts: []string{attempt(_b, _c, 1, _claimed), attempt(_b, _c, 2, _claimed), attempt(_outside, _b, 1, _unclaimed)},
	}, observe(mesh, reply, _b, _c))
}

// The mixed chain: A yarpc (HTTP inbound, gRPC outbound) → B grpc-go →
// C net/http → D yarpc (HTTP inbound), D failing. The grpc-go and
// net/http services trace as grpc-go's stats/opentelemetry and otelhttp
// do: a server span in the context of each request, a client span around
// each outbound call (around errown's Transport), which errown annotates.
func TestTraceMixedChain(t *testing.T) {
	ts := newTraces(t)
	tap := new(mixedTap)
	d := &mixedNode{name: _d}
	c := &mixedNode{name: _c}
	b := &mixedNode{name: _b}
	a := &mixedNode{name: _a}
	for n, callees := range map[*mixedNode][]string{a: {_b}, b: {_c}, c: {_d}, d: nil} {
		n.errown = withRetries(callees...)
	}
	startMixedYARPC(t, d, nil, true, nil, ts.bridge(d.name))
	startMixedHTTP(t, c, d, tap, ts.tracer(c.name))
	startMixedGRPC(t, b, c, tap, ts.tracer(b.name))
	startMixedYARPC(t, a, b, false, nil, ts.bridge(a.name))

	ch := &mixedChain{nodes: []*mixedNode{a}, root: &http.Client{}}
	want := []string{
		_a + " server errown.retry_refused unclaimed " + _b,
		_b + " client errown.retry_refused unclaimed " + _c,
		_c + " client errown.retry " + _d,
	}
	own := claimTags(_claimed, "own failure")
	below := claimTags(_unclaimed, "retried below")
	here := claimTags(_unclaimed, "retried here") // C, which retried D itself
	// check holds the traces of one request (view) to the chain's, B's
	// and C's server spans tagged with stormB and stormC besides, and the
	// tapped edges (B→C, C→D) to attempts.
	check := func(name string, view *traces, stormB, stormC map[string]string, attempts []string) {
		t.Helper()
		view.await(_serverSpans)
		assert.Equal(t, want, view.errownEvents(), "%s: errown's events", name)
		view.assertServerTags(_d, own, with(own, map[string]string{"errown.attempt": "2"}))
		view.assertServerTags(_c, with(here, stormC))
		view.assertServerTags(_b, with(below, stormB))
		view.assertServerTags(_a, with(below, _rootStorm))
		assertRetryEvent(t, view.spans(_c, trace.SpanKindClient), _d)
		// errown resent C's call to D once, inside the client span around
		// it; B's call to C was not resent.
		cs, bs := view.spans(_c, trace.SpanKindClient), view.spans(_b, trace.SpanKindClient)
		if assert.Len(t, cs, 1, "%s: C's client spans", name) && assert.Len(t, bs, 1, "%s: B's client spans", name) {
			assert.Equal(t, "1", tags(cs[0])["http.request.resend_count"], "%s: C's client span: http.request.resend_count", name)
			assert.NotContains(t, tags(bs[0]), "http.request.resend_count", "%s: B's client span: http.request.resend_count, want none", name)
		}
		view.assertNoRefusalErrors()
		assert.Equal(t, attempts, tap.take(), "%s: attempts on B→C and C→D", name)
	}

	// The onset: every first attempt unmarked; B and C are roots too, and
	// say so on their spans.
	r := ch.call(t)
	require.NoError(t, r.err, "onset: reply: %+v", r)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "onset: reply: %+v", r)
	check("onset", ts, _onsetStormB, _onsetStormC, []string{
		mixedAttempt(_c, _d, "-", _unavail, _claimed, "1,1,0,0,0"),
		mixedAttempt(_c, _d, "2", _unavail, _claimed, "1,1,0,0,0"),
		mixedAttempt(_b, _c, "-", _unavail, _unclaimed, "3,3,1,1,1"),
	})

	// In the incident: marked all the way down, A the only root.
	since := time.Now()
	r = ch.call(t)
	require.NoError(t, r.err, "reply: %+v", r)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "reply: %+v", r)
	check("in the incident", ts.from(since), nil, nil, []string{
		mixedAttempt(_c, _d, "1", _unavail, _claimed, "1,1,0,0,0"),
		mixedAttempt(_c, _d, "2", _unavail, _claimed, "1,1,0,0,0"),
		mixedAttempt(_b, _c, "1", _unavail, _unclaimed, "3,3,1,1,1"),
	})
}

// clientSpans opens a client span around each request, as otelhttp's
// Transport does.
type clientSpans struct {
	tracer trace.Tracer
	base   http.RoundTripper
}

func (c clientSpans) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, s := c.tracer.Start(r.Context(), r.Method, trace.WithSpanKind(trace.SpanKindClient))
	defer s.End()
	return c.base.RoundTrip(r.WithContext(ctx))
}
