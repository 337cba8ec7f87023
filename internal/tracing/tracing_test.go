package tracing

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/opentracing/opentracing-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otbridge "go.opentelemetry.io/otel/bridge/opentracing"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// recorded is one ended span as the tests read it: its attributes and
// its events, each as name and attributes.
type recorded struct {
	tags   map[string]any
	events []event
}

type event struct {
	name   string
	fields map[string]any
}

func read(s sdktrace.ReadOnlySpan) recorded {
	r := recorded{tags: map[string]any{}}
	for _, kv := range s.Attributes() {
		r.tags[string(kv.Key)] = kv.Value.AsInterface()
	}
	for _, e := range s.Events() {
		f := map[string]any{}
		for _, kv := range e.Attributes {
			if kv.Key != "event" { // the bridge keeps OpenTracing's name field
				f[string(kv.Key)] = kv.Value.AsInterface()
			}
		}
		r.events = append(r.events, event{name: e.Name, fields: f})
	}
	return r
}

// tracers are the two ways a span reaches a hook: an OpenTelemetry span
// in the context (grpcgo, nethttp), and an OpenTracing span of the
// OpenTelemetry bridge (yarpc's tracer), each with the kind of span it
// opens.
var tracers = []struct {
	name  string
	start func(tp *sdktrace.TracerProvider, kind trace.SpanKind) (context.Context, func())
}{
	{"otel", func(tp *sdktrace.TracerProvider, kind trace.SpanKind) (context.Context, func()) {
		ctx, s := tp.Tracer("t").Start(context.Background(), "op", trace.WithSpanKind(kind))
		return ctx, func() { s.End() }
	}},
	{"bridge", func(tp *sdktrace.TracerProvider, kind trace.SpanKind) (context.Context, func()) {
		bridge, _ := otbridge.NewTracerPair(tp.Tracer("t"))
		s := bridge.StartSpan("op")
		return opentracing.ContextWithSpan(context.Background(), s), s.Finish
	}},
}

// traced runs f with a context holding a span of each tracer and returns
// what the span recorded.
func traced(t *testing.T, kind trace.SpanKind, f func(ctx context.Context)) map[string]recorded {
	out := map[string]recorded{}
	for _, tr := range tracers {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		ctx, end := tr.start(tp, kind)
		f(ctx)
		end()
		spans := rec.Ended()
		require.Len(t, spans, 1, tr.name)
		// No decision is an error: a refusal never sets error=true.
		assert.Equal(t, codes.Unset, spans[0].Status().Code, tr.name)
		out[tr.name] = read(spans[0])
	}
	return out
}

func TestInboundTags(t *testing.T) {
	for name, r := range traced(t, trace.SpanKindServer, func(ctx context.Context) {
		Attempt(ctx, 2)
		Claim(ctx, ownership.ClaimUnclaimed, "retried below")
		Storm(ctx, wire.KnownFigures(ownership.Storm{Served: 5, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 2}))
	}) {
		assert.Equal(t, map[string]any{
			TagAttempt:        int64(2),
			TagClaim:          "unclaimed",
			TagClaimReason:    "retried below",
			TagStormServed:    int64(5),
			TagStormBlind:     int64(9),
			TagStormPrevented: int64(4),
			TagStormRetries:   int64(1),
			TagStormRadius:    int64(1),
			TagStormBlindRad:  int64(2),
		}, r.tags, name)
		assert.Empty(t, r.events, name)
	}
}

// TestInboundUnknownStorm: unknown figures say so, and nothing else. (A
// first attempt is not tagged: the inbound middleware calls Attempt for
// retries only.)
func TestInboundUnknownStorm(t *testing.T) {
	for name, r := range traced(t, trace.SpanKindServer, func(ctx context.Context) {
		Storm(ctx, wire.Figures{})
	}) {
		assert.Equal(t, map[string]any{TagStormKnown: false}, r.tags, name)
	}
}

func TestDecided(t *testing.T) {
	req := &transport.Request{Service: "svc-d", Procedure: "echo"}
	failed := func(claim ownership.Claim, refused wire.Refusal) *reqlog.CallState {
		return &reqlog.CallState{Attempts: 1, Code: yarpcerrors.CodeUnavailable, Class: ownership.ClassFailure, Claim: claim, Refused: refused}
	}
	// routed is failed, its attempt's peer recorded by a retrypeer chooser.
	routed := func(claim ownership.Claim, refused wire.Refusal) *reqlog.CallState {
		s := failed(claim, refused)
		_, s.Route = reqlog.NewRouteContext(context.Background())
		s.Route.Record("127.0.0.1:7001")
		return s
	}
	unrouted := func(claim ownership.Claim, refused wire.Refusal) *reqlog.CallState {
		s := failed(claim, refused)
		_, s.Route = reqlog.NewRouteContext(context.Background()) // no chooser recorded a peer
		return s
	}
	tests := []struct {
		name    string
		give    *reqlog.CallState
		before  wire.Refusal
		retried bool
		observe bool
		kind    trace.SpanKind
		want    []event
		wantTag map[string]any
	}{
		{
			name: "retry", give: failed(ownership.ClaimClaimed, wire.RefusedNone), retried: true, kind: trace.SpanKindServer,
			want: []event{{EventRetry, map[string]any{
				FieldAttempt: int64(2), FieldBackoff: "3ms", FieldCallee: "svc-d", FieldProcedure: "echo", FieldClaim: "claimed",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "retry with its failed attempt's peer", give: routed(ownership.ClaimClaimed, wire.RefusedNone), retried: true, kind: trace.SpanKindServer,
			want: []event{{EventRetry, map[string]any{
				FieldAttempt: int64(2), FieldBackoff: "3ms", FieldCallee: "svc-d", FieldProcedure: "echo", FieldClaim: "claimed",
				FieldPeer: "127.0.0.1:7001",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "retry with a route no chooser recorded", give: unrouted(ownership.ClaimClaimed, wire.RefusedNone), retried: true, kind: trace.SpanKindServer,
			want: []event{{EventRetry, map[string]any{
				FieldAttempt: int64(2), FieldBackoff: "3ms", FieldCallee: "svc-d", FieldProcedure: "echo", FieldClaim: "claimed",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "budget with the failed attempt's peer", give: routed(ownership.ClaimClaimed, wire.RefusedBudget), kind: trace.SpanKindServer,
			want: []event{{EventRefused, map[string]any{
				FieldReason: "budget", FieldAttempt: int64(1), FieldCallee: "svc-d", FieldProcedure: "echo", FieldClaim: "claimed",
				FieldPeer: "127.0.0.1:7001",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "retry on a client span", give: failed(ownership.ClaimMissing, wire.RefusedNone), retried: true, kind: trace.SpanKindClient,
			want: []event{{EventRetry, map[string]any{
				FieldAttempt: int64(2), FieldBackoff: "3ms", FieldCallee: "svc-d", FieldProcedure: "echo", FieldClaim: "missing",
			}}},
			wantTag: map[string]any{TagResendCount: int64(1)},
		},
		{
			name: "unclaimed", give: failed(ownership.ClaimUnclaimed, wire.RefusedNone), kind: trace.SpanKindServer,
			want: []event{{EventRefused, map[string]any{
				FieldReason: "unclaimed", FieldAttempt: int64(1), FieldCallee: "svc-d", FieldProcedure: "echo", FieldClaim: "unclaimed",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "budget", give: failed(ownership.ClaimClaimed, wire.RefusedBudget), kind: trace.SpanKindServer,
			want: []event{{EventRefused, map[string]any{
				FieldReason: "budget", FieldAttempt: int64(1), FieldCallee: "svc-d", FieldProcedure: "echo", FieldClaim: "claimed",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "observed unclaimed retry", give: failed(ownership.ClaimUnclaimed, wire.RefusedNone), retried: true, observe: true, kind: trace.SpanKindServer,
			want: []event{{EventRefused, map[string]any{
				FieldReason: "unclaimed", FieldAttempt: int64(1), FieldCallee: "svc-d", FieldProcedure: "echo", FieldClaim: "unclaimed", FieldMode: "observe",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "observed retry", give: failed(ownership.ClaimClaimed, wire.RefusedNone), retried: true, observe: true, kind: trace.SpanKindServer,
			want: []event{{EventRetry, map[string]any{
				FieldAttempt: int64(2), FieldBackoff: "3ms", FieldCallee: "svc-d", FieldProcedure: "echo", FieldClaim: "claimed", FieldMode: "observe",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "refused before, attempts spent", give: failed(ownership.ClaimClaimed, wire.RefusedBudget), before: wire.RefusedBudget, kind: trace.SpanKindServer,
			wantTag: map[string]any{},
		},
		{
			name: "not retryable by nature", kind: trace.SpanKindServer,
			give:    &reqlog.CallState{Attempts: 1, Code: yarpcerrors.CodeInvalidArgument, Class: ownership.ClassFailure, Refused: wire.RefusedCode},
			wantTag: map[string]any{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, r := range traced(t, tt.kind, func(ctx context.Context) {
				Decided(ctx, req, tt.give, tt.before, 3*time.Millisecond, tt.retried, tt.observe)
			}) {
				if name == "bridge" && tt.wantTag[TagResendCount] != nil {
					// An OpenTracing span is the caller's, shared: no resend count.
					assert.Empty(t, r.tags, name)
				} else {
					assert.Equal(t, tt.wantTag, r.tags, name)
				}
				assert.Equal(t, tt.want, r.events, name)
			}
		})
	}
}

func TestForeign(t *testing.T) {
	req := &transport.Request{Service: "svc-d", Procedure: "echo"}
	for name, r := range traced(t, trace.SpanKindServer, func(ctx context.Context) {
		Foreign(ctx, req, 2, ownership.ClaimUnclaimed, "foreign-unclaimed")
	}) {
		assert.Equal(t, []event{{EventRefused, map[string]any{
			FieldReason: "foreign", FieldAttempt: int64(2), FieldCallee: "svc-d", FieldProcedure: "echo",
			FieldClaim: "unclaimed", FieldForeign: "foreign-unclaimed",
		}}}, r.events, name)
	}
	for name, r := range traced(t, trace.SpanKindServer, func(ctx context.Context) {
		ctx, route := reqlog.NewRouteContext(ctx)
		route.Record("127.0.0.1:7001")
		route.Record("127.0.0.1:7002")
		Foreign(ctx, req, 2, ownership.ClaimUnclaimed, "foreign-unclaimed")
	}) {
		assert.Equal(t, []event{{EventRefused, map[string]any{
			FieldReason: "foreign", FieldAttempt: int64(2), FieldCallee: "svc-d", FieldProcedure: "echo",
			FieldClaim: "unclaimed", FieldForeign: "foreign-unclaimed", FieldPeer: "127.0.0.1:7002",
		}}}, r.events, name)
	}
}

// TestNothingWithoutTracer holds every hook to no allocation, and no
// effect, when nobody traces: no span in the context, OpenTracing's
// no-op span (yarpc's without a tracer), or an OpenTelemetry span that
// does not record.
func TestNothingWithoutTracer(t *testing.T) {
	_, nonRecording := noop.NewTracerProvider().Tracer("t").Start(context.Background(), "op")
	ctxs := map[string]context.Context{
		"no span":             context.Background(),
		"opentracing no-op":   opentracing.ContextWithSpan(context.Background(), opentracing.NoopTracer{}.StartSpan("op")),
		"otel non-recording":  trace.ContextWithSpan(context.Background(), nonRecording),
		"otel no-op provider": trace.ContextWithSpan(context.Background(), trace.SpanFromContext(context.Background())),
	}
	req := &transport.Request{Service: "svc-d", Procedure: "echo", Headers: transport.NewHeaders().With("errown-attempt", "2")}
	state := &reqlog.CallState{Attempts: 1, Code: yarpcerrors.CodeUnavailable, Class: ownership.ClassFailure, Claim: ownership.ClaimUnclaimed}
	storm := wire.KnownFigures(ownership.Storm{Served: 2, Blind: 3, Retries: 1, Radius: 1})
	for name, ctx := range ctxs {
		allocs := testing.AllocsPerRun(100, func() {
			Attempt(ctx, 2)
			Claim(ctx, ownership.ClaimUnclaimed, "retried below")
			Storm(ctx, storm)
			Decided(ctx, req, state, wire.RefusedNone, time.Millisecond, true, false)
			Decided(ctx, req, state, wire.RefusedNone, 0, false, false)
			Foreign(ctx, req, 2, ownership.ClaimUnclaimed, "foreign-unclaimed")
		})
		assert.Zero(t, allocs, name)
	}
}

// BenchmarkHooks measures the hooks a request meets: Attempt on every
// request, Claim on an error response, Decided after a failed attempt,
// with no span, OpenTracing's no-op span (yarpc's without a tracer) and a
// recording OpenTelemetry span (tags and events kept, up to the SDK's
// limits).
func BenchmarkHooks(b *testing.B) {
	_, recording := sdktrace.NewTracerProvider().Tracer("t").Start(context.Background(), "op")
	defer recording.End()
	req := &transport.Request{Service: "svc-d", Procedure: "echo", Headers: transport.NewHeaders().With("errown-attempt", "1")}
	state := &reqlog.CallState{Attempts: 1, Code: yarpcerrors.CodeUnavailable, Class: ownership.ClassFailure, Claim: ownership.ClaimClaimed}
	for _, bb := range []struct {
		name string
		ctx  context.Context
	}{
		{"none", context.Background()},
		{"noop", opentracing.ContextWithSpan(context.Background(), opentracing.NoopTracer{}.StartSpan("op"))},
		{"otel", trace.ContextWithSpan(context.Background(), recording)},
	} {
		b.Run("Attempt/"+bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Attempt(bb.ctx, 2)
			}
		})
		b.Run("Claim/"+bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Claim(bb.ctx, ownership.ClaimUnclaimed, "retried below")
			}
		})
		b.Run("Decided/"+bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Decided(bb.ctx, req, state, wire.RefusedNone, time.Millisecond, true, false)
			}
		})
	}
}
