package exampleapp_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/examples/internal/exampleapp"
	"github.com/opentracing/opentracing-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otbridge "go.opentelemetry.io/otel/bridge/opentracing"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/fx"
)

// _traceOfOnsetCheckout is the trace of the first failed checkout,
// inventory broken, at the incident's onset: frontend's call to orders
// went unmarked (frontend was in no incident yet), so orders, its request
// a root, tagged its span with its own subtree's storm figures too.
const _traceOfOnsetCheckout = `frontend checkout (server)
  errown.claim=unclaimed errown.claim.reason="retried below"
  errown.storm.blind=7 errown.storm.blind_radius=2 errown.storm.prevented=3 errown.storm.radius=1 errown.storm.retries=1 errown.storm.served=4
  event errown.retry_refused errown.reason=unclaimed errown.attempt=1 errown.callee=orders errown.procedure=place errown.claim=unclaimed
  frontend place (internal)
    orders place (server)
      errown.claim=unclaimed errown.claim.reason="retried here"
      errown.storm.blind=3 errown.storm.blind_radius=1 errown.storm.prevented=0 errown.storm.radius=1 errown.storm.retries=1 errown.storm.served=3
      event errown.retry errown.attempt=2 errown.backoff=… errown.callee=inventory errown.procedure=reserve errown.claim=claimed
      orders reserve (internal)
        inventory reserve (server)
          errown.claim=claimed errown.claim.reason="own failure"
      orders reserve (internal)
        inventory reserve (server)
          errown.attempt=2 errown.claim=claimed errown.claim.reason="own failure"
`

// _traceOfCheckout is the trace of a failed checkout, inventory broken,
// once the incident began (frontend's calls marked: only frontend is a
// root), as printTrace prints it: each span as service, name and kind,
// its errown tags and events below it, its children indented. The
// docs/tracing.md shows it.
const _traceOfCheckout = `frontend checkout (server)
  errown.claim=unclaimed errown.claim.reason="retried below"
  errown.storm.blind=7 errown.storm.blind_radius=2 errown.storm.prevented=3 errown.storm.radius=1 errown.storm.retries=1 errown.storm.served=4
  event errown.retry_refused errown.reason=unclaimed errown.attempt=1 errown.callee=orders errown.procedure=place errown.claim=unclaimed
  frontend place (internal)
    orders place (server)
      errown.claim=unclaimed errown.claim.reason="retried here"
      event errown.retry errown.attempt=2 errown.backoff=… errown.callee=inventory errown.procedure=reserve errown.claim=claimed
      orders reserve (internal)
        inventory reserve (server)
          errown.claim=claimed errown.claim.reason="own failure"
      orders reserve (internal)
        inventory reserve (server)
          errown.attempt=2 errown.claim=claimed errown.claim.reason="own failure"
`

// TestWalkthroughTrace follows docs/tracing.md: the three
// services traced with the OpenTelemetry SDK through the OpenTracing
// bridge (yarpc traces with OpenTracing), spans recorded in memory, one
// checkout with inventory broken, and its trace as a tree.
func TestWalkthroughTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	traced := func(service string) fx.Option {
		bridge, _ := otbridge.NewTracerPair(tp.Tracer(service))
		bridge.SetTextMapPropagator(propagation.TraceContext{})
		return fx.Supply(fx.Annotate(bridge, fx.As(new(opentracing.Tracer))))
	}
	var m mesh
	m.inventory = startService(t, "inventory", "config.yaml", exampleapp.Inventory, nil, traced("inventory"))
	m.orders = startService(t, "orders", "config.yaml", exampleapp.Orders, map[string]string{"inventory": m.inventory.url()}, traced("orders"))
	m.frontend = startService(t, "frontend", "config.yaml", exampleapp.Frontend, map[string]string{"orders": m.orders.url()}, traced("frontend"))

	m.inventory.admin(t, http.MethodPost, "/break")
	for range 2 { // the incident's onset, then a checkout in it
		_, headers, err := m.checkout(t)
		require.Error(t, err)
		require.Equal(t, "unclaimed", headers["errown-claim"])
	}

	trees := printTraces(rec.Ended())
	require.Len(t, trees, 2, "traces")
	t.Logf("the trace of the first failed checkout:\n%s", trees[0])
	assert.Equal(t, _traceOfOnsetCheckout, trees[0], "the first checkout's trace")
	t.Logf("the trace of a failed checkout:\n%s", trees[1])
	assert.Equal(t, _traceOfCheckout, trees[1], "the second checkout's trace")

	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "tracing.md"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(doc), "```\n"+_traceOfCheckout+"```\n"), "docs/tracing.md shows this trace")
}

// printTraces prints the traces of spans, each as printTrace does, in
// the order they started.
func printTraces(spans []sdktrace.ReadOnlySpan) []string {
	byTrace := map[string][]sdktrace.ReadOnlySpan{}
	start := map[string]time.Time{}
	var ids []string
	for _, s := range spans {
		id := s.SpanContext().TraceID().String()
		if _, ok := byTrace[id]; !ok {
			ids = append(ids, id)
		}
		byTrace[id] = append(byTrace[id], s)
		if t, ok := start[id]; !ok || s.StartTime().Before(t) {
			start[id] = s.StartTime()
		}
	}
	sort.Slice(ids, func(i, j int) bool { return start[ids[i]].Before(start[ids[j]]) })
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = printTrace(byTrace[id])
	}
	return out
}

// printTrace prints spans, those of one trace, as a tree: children in
// the order they started.
func printTrace(spans []sdktrace.ReadOnlySpan) string {
	children := map[string][]sdktrace.ReadOnlySpan{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID().String()] = true
	}
	for _, s := range spans {
		parent := s.Parent().SpanID().String()
		if !s.Parent().IsValid() || !ids[parent] {
			parent = ""
		}
		children[parent] = append(children[parent], s)
	}
	for _, c := range children {
		sort.Slice(c, func(i, j int) bool { return c[i].StartTime().Before(c[j].StartTime()) })
	}
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range children[parent] {
			indent := strings.Repeat("  ", depth)
			fmt.Fprintf(&b, "%s%s %s (%s)\n", indent, s.InstrumentationScope().Name, s.Name(), s.SpanKind())
			printTags(&b, indent+"  ", s)
			for _, e := range s.Events() {
				if !strings.HasPrefix(e.Name, "errown.") {
					continue
				}
				fmt.Fprintf(&b, "%s  event %s", indent, e.Name)
				for _, kv := range e.Attributes {
					switch k := string(kv.Key); {
					case k == "event": // the bridge's copy of OpenTracing's name field
					case k == "errown.backoff": // jittered
						fmt.Fprintf(&b, " %s=…", k)
					default:
						fmt.Fprintf(&b, " %s=%s", k, value(kv.Value.String()))
					}
				}
				b.WriteString("\n")
			}
			walk(s.SpanContext().SpanID().String(), depth+1)
		}
	}
	walk("", 0)
	return b.String()
}

// printTags prints the errown tags of s, sorted, the storm figures on a
// line of their own.
func printTags(b *strings.Builder, indent string, s sdktrace.ReadOnlySpan) {
	attrs := s.Attributes()
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
	var claim, storm []string
	for _, kv := range attrs {
		k := string(kv.Key)
		switch {
		case strings.HasPrefix(k, "errown.storm."):
			storm = append(storm, k+"="+value(kv.Value.String()))
		case strings.HasPrefix(k, "errown."):
			claim = append(claim, k+"="+value(kv.Value.String()))
		}
	}
	for _, line := range [][]string{claim, storm} {
		if len(line) > 0 {
			fmt.Fprintf(b, "%s%s\n", indent, strings.Join(line, " "))
		}
	}
}

// value quotes v when it has a space.
func value(v string) string {
	if strings.Contains(v, " ") {
		return fmt.Sprintf("%q", v)
	}
	return v
}
