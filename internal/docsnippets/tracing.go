package docsnippets

import (
	otbridge "go.opentelemetry.io/otel/bridge/opentracing"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/yarpc/transport/http"
)

// tracedTransport is docs/tracing.md's transport traced with
// OpenTelemetry through the OpenTracing bridge.
func tracedTransport(tracerProvider trace.TracerProvider) *http.Transport {
	bridge, _ := otbridge.NewTracerPair(tracerProvider.Tracer("orders"))
	bridge.SetTextMapPropagator(propagation.TraceContext{})
	t := http.NewTransport(http.Tracer(bridge)) // and grpc.Tracer, tchannel.Tracer
	return t
}

var _ = tracedTransport
