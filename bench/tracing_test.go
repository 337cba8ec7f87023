package bench

import (
	"context"
	"testing"

	"github.com/errown/errown"
	"github.com/opentracing/opentracing-go"
	otbridge "go.opentelemetry.io/otel/bridge/opentracing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// BenchmarkTracing is UnaryOverhead's request (success) and Outage's
// (outage, one request at a time), bare and with errown, in the three
// contexts a yarpc request meets: no span at all (the other benchmarks'
// context.Background()), OpenTracing's no-op span (yarpc's server span
// without a tracer: errown's hooks must cost nothing there), and a span
// of the OpenTelemetry SDK through the OpenTracing bridge, started and
// ended around each request (recording, exported nowhere), on which
// errown sets its tags: errown−bare there is what errown's tracing costs.
func BenchmarkTracing(b *testing.B) {
	success := benchConfig(_callee)
	var outage errown.Config // no retry policy for the callee, as Outage
	bridge, _ := otbridge.NewTracerPair(sdktrace.NewTracerProvider().Tracer("bench"))
	for _, path := range []struct {
		name   string
		cfg    *errown.Config
		callee transport.UnaryOutbound
		check  func(error) bool
	}{
		{"success", &success, memOutbound{}, func(err error) bool { return err == nil }},
		{"outage", &outage, downOutbound{}, yarpcerrors.IsUnavailable},
	} {
		for _, chain := range []struct {
			name string
			cfg  *errown.Config
		}{{"bare", nil}, {"errown", path.cfg}} {
			for _, tr := range []struct {
				name   string
				tracer opentracing.Tracer // nil: no span in the context
			}{{"none", nil}, {"noop", opentracing.NoopTracer{}}, {"otel", bridge}} {
				b.Run(path.name+"/"+chain.name+"/"+tr.name, func(b *testing.B) {
					h := unaryChain(b, chain.cfg, path.callee)
					req := inboundRequest()
					b.ReportAllocs()
					cpu := startCPU(b)
					for b.Loop() {
						ctx, span := context.Background(), opentracing.Span(nil)
						if tr.tracer != nil {
							span = tr.tracer.StartSpan(_procedure)
							ctx = opentracing.ContextWithSpan(ctx, span)
						}
						if err := h.Handle(ctx, req, nopResponseWriter{}); !path.check(err) {
							b.Fatalf("got %v", err)
						}
						if span != nil {
							span.Finish()
						}
					}
					cpu.stop()
				})
			}
		}
	}
}
