package memory

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/configkey"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func vector(series ...string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(series, ",") + `]}}`
}

func sample(caller, service, procedure, value string) string {
	return `{"metric":{"caller_procedure":"` + caller + `","callee_service":"` + service + `","callee_procedure":"` + procedure + `"},"value":[1700000000.1,"` + value + `"]}`
}

func TestParseQueryResponse(t *testing.T) {
	got, err := ParseQueryResponse([]byte(vector(
		sample("checkout", "payments", "charge", "12.6"),
		sample("none", "cache", "none", "3"),
		`{"metric":{"job":"x"},"value":[1,"5"]}`,
	)))
	require.NoError(t, err)
	assert.Equal(t, map[ownership.Edge]float64{
		edgeA:              12.6,
		{Service: "cache"}: 3,
	}, got)

	tests := []struct {
		name string
		give string
		want string
	}{
		{"empty", "", "unexpected end of JSON input"},
		{"html", "<html>", "invalid character"},
		{"error status", `{"status":"error","error":"bad query"}`, `status "error": bad query`},
		{"matrix", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, `result type "matrix"`},
		{"short value", vector(`{"metric":{"callee_service":"a"},"value":[1]}`), "value has 1 elements"},
		{"numeric value", vector(`{"metric":{"callee_service":"a"},"value":[1,5]}`), "result 0: value"},
		{"nan", vector(sample("a", "b", "c", "NaN")), `value "NaN"`},
		{"negative", vector(sample("a", "b", "c", "-1")), `value "-1"`},
		{"inf", vector(sample("a", "b", "c", "+Inf")), `value "+Inf"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQueryResponse([]byte(tt.give))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrBadQueryResponse)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func FuzzParseQueryResponse(f *testing.F) {
	f.Add([]byte(vector(sample("checkout", "payments", "charge", "12"))))
	f.Add([]byte(`{"status":"error"}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseQueryResponse(b)
		if err != nil {
			return
		}
		for e, v := range got {
			require.NotEmpty(t, e.Service, "accepted edge %v with value %v", e, v)
			require.True(t, v >= 0, "accepted edge %v with value %v", e, v) // written out: NaN must fail it
		}
	})
}

// promAPI answers the two default queries like a Prometheus server would,
// or with whatever broken is set to.
type promAPI struct {
	failures, joint string
	broken          atomic.Value // string; "" = healthy
}

func (p *promAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if b, _ := p.broken.Load().(string); b != "" {
		if b == "500" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(b))
		return
	}
	q := r.URL.Query().Get("query")
	switch {
	case r.URL.Path != "/api/v1/query":
		http.NotFound(w, r)
	case strings.Contains(q, "errown_depmem_joint_failures"):
		_, _ = w.Write([]byte(p.joint))
	default:
		_, _ = w.Write([]byte(p.failures))
	}
}

func TestFleetSourceAndOutage(t *testing.T) {
	api := &promAPI{
		failures: vector(sample("checkout", "payments", "charge", "40")),
		joint:    vector(sample("checkout", "payments", "charge", "38")),
	}
	api.broken.Store("")
	srv := httptest.NewServer(api)
	defer srv.Close()

	core, logs := observer.New(zap.InfoLevel)
	scope := tally.NewTestScope("", nil)
	m, err := NewMemory(depmem.Config{MinSamples: 20, Fleet: depmem.FleetConfig{URL: srv.URL, Timeout: time.Second, Selector: `service="checkout"`}},
		WithSinks(obs.Sinks{Logger: zap.New(core)}), WithSinks(obs.Sinks{Scope: scope}))
	require.NoError(t, err)
	ctx := context.Background()

	m.fleet.refresh(ctx)
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeA), "learned from the fleet alone")
	v := m.Edges()
	require.Len(t, v, 1)
	assert.Equal(t, depmem.SourceFleet, v[0].Source)
	assert.Equal(t, int64(40), v[0].CalleeFailures)
	assert.Equal(t, v[0].Kind, m.Kind(edgeA), "Kind is the view's kind")

	// Local memory with more evidence wins over the fleet.
	observe(m, edgeA, 50, 0)
	assert.Equal(t, ownership.KindFailOpen, m.Kind(edgeA))
	assert.Equal(t, depmem.SourceLocal, m.Edges()[0].Source)
	assert.Equal(t, m.Edges()[0].Kind, m.Kind(edgeA), "Kind is the view's kind")

	// An outage: garbage, then errors. Logged once, counted each time,
	// and classification carries on from local memory.
	for _, broken := range []string{"<html>garbage", "500", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"callee_service":"x"},"value":[1,"-5"]}]}}`} {
		api.broken.Store(broken)
		m.fleet.refresh(ctx)
		assert.Equal(t, ownership.KindFailOpen, m.Kind(edgeA))
	}
	warnings := logs.FilterMessageSnippet("fleet memory unavailable").All()
	assert.Len(t, warnings, 1, "one warning per outage")
	assert.Equal(t, int64(3), scope.Snapshot().Counters()["depmem.fleet_errors+"].Value())

	api.broken.Store("")
	m.fleet.refresh(ctx)
	assert.Len(t, logs.FilterMessageSnippet("fleet memory available again").All(), 1)
	assert.Equal(t, int64(5), scope.Snapshot().Counters()["depmem.fleet_queries+"].Value())
}

func TestFleetUnreachableDoesNotBlockStop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // hangs until the client gives up
	}))
	defer srv.Close()
	m, err := NewMemory(depmem.Config{Fleet: depmem.FleetConfig{URL: srv.URL, Interval: 10 * time.Millisecond, Timeout: time.Minute, Selector: `job="x"`}})
	require.NoError(t, err)
	require.NoError(t, m.Start())
	testtime.Sleep(20 * time.Millisecond)
	start := time.Now()
	require.NoError(t, m.Stop())
	assert.Less(t, time.Since(start), 5*time.Second, "stop cancels a hanging query")
	srv.CloseClientConnections()
}

func TestDefaultFleetQueries(t *testing.T) {
	failures, joint := depmem.Config{Window: 10 * time.Minute, Fleet: depmem.FleetConfig{Selector: `service="checkout"`}}.FleetQueries()
	assert.Equal(t, `sum by (caller_procedure, callee_service, callee_procedure) (increase(errown_depmem_callee_failures{service="checkout"}[600s]))`, failures)
	assert.Equal(t, `sum by (caller_procedure, callee_service, callee_procedure) (increase(errown_depmem_joint_failures{service="checkout"}[600s]))`, joint)
	failures, _ = depmem.Config{Fleet: depmem.FleetConfig{FailuresQuery: "q"}}.FleetQueries()
	assert.Equal(t, "q", failures, "a query given is sent as given")
}

func TestFleetOnlyEdgesTakeNoLocalPlace(t *testing.T) {
	api := &promAPI{
		failures: vector(sample("a", "x1", "p", "40"), sample("a", "x2", "p", "40"), sample("a", "x3", "p", "40")),
		joint:    vector(sample("a", "x1", "p", "40")),
	}
	api.broken.Store("")
	srv := httptest.NewServer(api)
	defer srv.Close()
	m, err := NewMemory(depmem.Config{MaxEdges: 2, MinSamples: 5, Fleet: depmem.FleetConfig{URL: srv.URL, Selector: `job="x"`}})
	require.NoError(t, err)
	m.fleet.refresh(context.Background())
	require.Len(t, m.Edges(), 3, "the fleet's edges are shown")
	m.Kind(ownership.Edge{CallerProcedure: "a", Service: "x1", Procedure: "p"})
	observe(m, edgeA, 10, 10)
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeA), "this service's own edge still learned: viewing the fleet's edges took no place")
}

func TestRedact(t *testing.T) {
	assert.Equal(t, "http://user:xxxxx@prom:9090", configkey.RedactURL("http://user:secret@prom:9090"))
	assert.Equal(t, "http://prom:9090", configkey.RedactURL("http://prom:9090"))
}
