// Package tracing puts errown's decisions on the request's trace: the
// claim of an error response, the attempt number of a retry and a root's
// storm figures on the server span, and one event per retry decision on
// the span of the caller making the call (docs/tracing.md).
//
// The inbound middleware tags the span the transport opened (yarpc's
// OpenTracing server span, or the OpenTelemetry span of grpc-go's or
// otelhttp's instrumentation), and the retry middleware and the innermost
// attempt step log each decision on the span of the outbound call's
// context, above the transport's per-attempt client spans.
//
// Every hook returns at once, having allocated nothing, when the context
// holds no span, or only OpenTracing's no-op span (yarpc's without a
// tracer), or an OpenTelemetry span that does not record.
package tracing
