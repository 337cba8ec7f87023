// Package tracing puts errown's decisions on the request's trace: the
// claim of an error response, the attempt number of a retry and a root's
// storm figures on the server span, and one event per retry decision on
// the span of the caller making the call (docs/tracing.md).
//
// It sits beside the inbound and retry middleware in DESIGN.md's data
// flow: the inbound middleware tags the span the transport opened before
// it ran (yarpc's server span, or the OpenTelemetry span grpc-go's
// stats/opentelemetry or otelhttp put in the context), and the retry
// middleware and the innermost attempt step log each decision on the span
// of the outbound call's context, above the per-attempt client spans the
// transport opens below errown. yarpc traces with OpenTracing; the
// OpenTelemetry span in the context serves where no OpenTracing span is
// (grpcgo, nethttp).
//
// Every hook returns at once, having allocated nothing, when the context
// holds no span, or only OpenTracing's no-op span (yarpc's without a
// tracer), or an OpenTelemetry span that does not record.
package tracing
