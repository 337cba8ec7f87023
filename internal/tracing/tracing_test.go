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
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

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
	state := &reqlog.Result{Attempts: 1, Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimUnclaimed}
	storm := wire.KnownFigures(wire.Storm{Served: 2, Blind: 3, Retries: 1, Radius: 1})
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
