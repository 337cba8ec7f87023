package otelsdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/tracing"
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
		tracing.Attempt(ctx, 2)
		tracing.Claim(ctx, ownership.ClaimUnclaimed, "retried below")
		tracing.Storm(ctx, wire.KnownFigures(wire.Storm{Served: 5, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 2}))
	}) {
		assert.Equal(t, map[string]any{
			tracing.TagAttempt:        int64(2),
			tracing.TagClaim:          "unclaimed",
			tracing.TagClaimReason:    "retried below",
			tracing.TagStormServed:    int64(5),
			tracing.TagStormBlind:     int64(9),
			tracing.TagStormPrevented: int64(4),
			tracing.TagStormRetries:   int64(1),
			tracing.TagStormRadius:    int64(1),
			tracing.TagStormBlindRad:  int64(2),
		}, r.tags, name)
		assert.Empty(t, r.events, name)
	}
}

// TestInboundUnknownStorm: unknown figures say so, and nothing else. (A
// first attempt is not tagged: the inbound middleware calls Attempt for
// retries only.)
func TestInboundUnknownStorm(t *testing.T) {
	for name, r := range traced(t, trace.SpanKindServer, func(ctx context.Context) {
		tracing.Storm(ctx, wire.Figures{})
	}) {
		assert.Equal(t, map[string]any{tracing.TagStormKnown: false}, r.tags, name)
	}
}

func TestDecided(t *testing.T) {
	req := &transport.Request{Service: "svc-d", Procedure: "echo"}
	failed := func(claim ownership.Claim, refused wire.Refusal) *reqlog.Result {
		return &reqlog.Result{Attempts: 1, Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: claim, Refused: refused}
	}
	// routed is failed, its attempt's peer recorded by a retrypeer chooser.
	routed := func(claim ownership.Claim, refused wire.Refusal) *reqlog.Result {
		s := failed(claim, refused)
		_, s.Route = reqlog.NewRouteContext(context.Background())
		s.Route.Record("127.0.0.1:7001")
		return s
	}
	unrouted := func(claim ownership.Claim, refused wire.Refusal) *reqlog.Result {
		s := failed(claim, refused)
		_, s.Route = reqlog.NewRouteContext(context.Background()) // no chooser recorded a peer
		return s
	}
	tests := []struct {
		name    string
		give    *reqlog.Result
		before  wire.Refusal
		retried bool
		observe bool
		kind    trace.SpanKind
		want    []event
		wantTag map[string]any
	}{
		{
			name: "retry", give: failed(ownership.ClaimClaimed, wire.RefusedNone), retried: true, kind: trace.SpanKindServer,
			want: []event{{tracing.EventRetry, map[string]any{
				tracing.FieldAttempt: int64(2), tracing.FieldBackoff: "3ms", tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo", tracing.FieldClaim: "claimed",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "retry with its failed attempt's peer", give: routed(ownership.ClaimClaimed, wire.RefusedNone), retried: true, kind: trace.SpanKindServer,
			want: []event{{tracing.EventRetry, map[string]any{
				tracing.FieldAttempt: int64(2), tracing.FieldBackoff: "3ms", tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo", tracing.FieldClaim: "claimed",
				tracing.FieldPeer: "127.0.0.1:7001",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "retry with a route no chooser recorded", give: unrouted(ownership.ClaimClaimed, wire.RefusedNone), retried: true, kind: trace.SpanKindServer,
			want: []event{{tracing.EventRetry, map[string]any{
				tracing.FieldAttempt: int64(2), tracing.FieldBackoff: "3ms", tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo", tracing.FieldClaim: "claimed",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "budget with the failed attempt's peer", give: routed(ownership.ClaimClaimed, wire.RefusedBudget), kind: trace.SpanKindServer,
			want: []event{{tracing.EventRefused, map[string]any{
				tracing.FieldReason: "budget", tracing.FieldAttempt: int64(1), tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo", tracing.FieldClaim: "claimed",
				tracing.FieldPeer: "127.0.0.1:7001",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "retry on a client span", give: failed(ownership.ClaimMissing, wire.RefusedNone), retried: true, kind: trace.SpanKindClient,
			want: []event{{tracing.EventRetry, map[string]any{
				tracing.FieldAttempt: int64(2), tracing.FieldBackoff: "3ms", tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo", tracing.FieldClaim: "missing",
			}}},
			wantTag: map[string]any{tracing.TagResendCount: int64(1)},
		},
		{
			name: "unclaimed", give: failed(ownership.ClaimUnclaimed, wire.RefusedNone), kind: trace.SpanKindServer,
			want: []event{{tracing.EventRefused, map[string]any{
				tracing.FieldReason: "unclaimed", tracing.FieldAttempt: int64(1), tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo", tracing.FieldClaim: "unclaimed",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "budget", give: failed(ownership.ClaimClaimed, wire.RefusedBudget), kind: trace.SpanKindServer,
			want: []event{{tracing.EventRefused, map[string]any{
				tracing.FieldReason: "budget", tracing.FieldAttempt: int64(1), tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo", tracing.FieldClaim: "claimed",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "observed unclaimed retry", give: failed(ownership.ClaimUnclaimed, wire.RefusedNone), retried: true, observe: true, kind: trace.SpanKindServer,
			want: []event{{tracing.EventRefused, map[string]any{
				tracing.FieldReason: "unclaimed", tracing.FieldAttempt: int64(1), tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo", tracing.FieldClaim: "unclaimed", tracing.FieldMode: "observe",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "observed retry", give: failed(ownership.ClaimClaimed, wire.RefusedNone), retried: true, observe: true, kind: trace.SpanKindServer,
			want: []event{{tracing.EventRetry, map[string]any{
				tracing.FieldAttempt: int64(2), tracing.FieldBackoff: "3ms", tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo", tracing.FieldClaim: "claimed", tracing.FieldMode: "observe",
			}}},
			wantTag: map[string]any{},
		},
		{
			name: "refused before, attempts spent", give: failed(ownership.ClaimClaimed, wire.RefusedBudget), before: wire.RefusedBudget, kind: trace.SpanKindServer,
			wantTag: map[string]any{},
		},
		{
			name: "not retryable by nature", kind: trace.SpanKindServer,
			give:    &reqlog.Result{Attempts: 1, Code: yarpcerrors.CodeInvalidArgument, Class: wire.ClassFailure, Refused: wire.RefusedCode},
			wantTag: map[string]any{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, r := range traced(t, tt.kind, func(ctx context.Context) {
				tracing.Decided(ctx, req, tt.give, tt.before, 3*time.Millisecond, tt.retried, tt.observe)
			}) {
				if name == "bridge" && tt.wantTag[tracing.TagResendCount] != nil {
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
		tracing.Foreign(ctx, req, 2, ownership.ClaimUnclaimed, "foreign-unclaimed")
	}) {
		assert.Equal(t, []event{{tracing.EventRefused, map[string]any{
			tracing.FieldReason: "foreign", tracing.FieldAttempt: int64(2), tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo",
			tracing.FieldClaim: "unclaimed", tracing.FieldForeign: "foreign-unclaimed",
		}}}, r.events, name)
	}
	for name, r := range traced(t, trace.SpanKindServer, func(ctx context.Context) {
		ctx, route := reqlog.NewRouteContext(ctx)
		route.Record("127.0.0.1:7001")
		route.Record("127.0.0.1:7002")
		tracing.Foreign(ctx, req, 2, ownership.ClaimUnclaimed, "foreign-unclaimed")
	}) {
		assert.Equal(t, []event{{tracing.EventRefused, map[string]any{
			tracing.FieldReason: "foreign", tracing.FieldAttempt: int64(2), tracing.FieldCallee: "svc-d", tracing.FieldProcedure: "echo",
			tracing.FieldClaim: "unclaimed", tracing.FieldForeign: "foreign-unclaimed", tracing.FieldPeer: "127.0.0.1:7002",
		}}}, r.events, name)
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
	state := &reqlog.Result{Attempts: 1, Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimClaimed}
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
				tracing.Attempt(bb.ctx, 2)
			}
		})
		b.Run("Claim/"+bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tracing.Claim(bb.ctx, ownership.ClaimUnclaimed, "retried below")
			}
		})
		b.Run("Decided/"+bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tracing.Decided(bb.ctx, req, state, wire.RefusedNone, time.Millisecond, true, false)
			}
		})
	}
}
