package tracing

import (
	"context"

	"github.com/opentracing/opentracing-go"
	otlog "github.com/opentracing/opentracing-go/log"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// span is the span a hook writes to: an OpenTracing span (yarpc's, the
// OpenTelemetry bridge's among them) or else an OpenTelemetry span.
type span struct {
	ot   opentracing.Span
	otel trace.Span
}

// spanFrom returns the span of ctx that records, if any: its OpenTracing
// span unless that is the no-op tracer's, else its OpenTelemetry span if
// it is recording. It does not allocate.
func spanFrom(ctx context.Context) (span, bool) {
	if s := opentracing.SpanFromContext(ctx); s != nil {
		if _, noop := s.Tracer().(opentracing.NoopTracer); !noop {
			return span{ot: s}, true
		}
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		return span{otel: s}, true
	}
	return span{}, false
}

// setTags sets the tags kvs on s: attributes of an OpenTelemetry span,
// what the bridge makes of an OpenTracing tag too.
func (s span) setTags(kvs ...attribute.KeyValue) {
	if s.otel != nil {
		s.otel.SetAttributes(kvs...)
		return
	}
	for _, kv := range kvs {
		s.ot.SetTag(string(kv.Key), kv.Value.AsInterface())
	}
}

// event logs the event name with the fields kvs on s: an OpenTelemetry
// event, or OpenTracing fields led by event=name (which the bridge turns
// into an event of that name).
func (s span) event(name string, kvs ...attribute.KeyValue) {
	if s.otel != nil {
		s.otel.AddEvent(name, trace.WithAttributes(kvs...))
		return
	}
	fields := make([]otlog.Field, 0, len(kvs)+1)
	fields = append(fields, otlog.String("event", name))
	for _, kv := range kvs {
		fields = append(fields, logField(kv))
	}
	s.ot.LogFields(fields...)
}

// logField is kv as an OpenTracing log field, for the value types errown
// logs.
func logField(kv attribute.KeyValue) otlog.Field {
	k := string(kv.Key)
	switch kv.Value.Type() {
	case attribute.BOOL:
		return otlog.Bool(k, kv.Value.AsBool())
	case attribute.INT64:
		return otlog.Int64(k, kv.Value.AsInt64())
	default:
		return otlog.String(k, kv.Value.String())
	}
}

// clientKind is what the OpenTelemetry SDK's spans tell of their kind.
type clientKind interface {
	SpanKind() trace.SpanKind
}

// client reports whether s is an OpenTelemetry client span around the one
// outbound call errown resends (otelhttp's transport, grpc-go's call
// span), not the caller's own span, which other calls share.
func (s span) client() bool {
	k, ok := s.otel.(clientKind)
	return ok && k.SpanKind() == trace.SpanKindClient
}
