package errown

import (
	"context"
	"testing"
	"time"

	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
)

func TestGauges(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m, err := New(Config{
		Memory:       depmem.Config{MinSamples: 2},
		Dependencies: []depmem.Declaration{{Service: "cache", Kind: new(ownership.KindFailOpen)}},
		Retry: RetryConfig{
			Budget:   retry.BudgetConfig{Ratio: 0.5, NoFloor: true},
			Policies: []retry.PolicyConfig{{Service: "inventory", Idempotent: new(true)}},
		},
	}, WithScope(scope))
	require.NoError(t, err)
	require.NoError(t, m.Start())
	// One request held in flight.
	release, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = m.inbound.Handle(context.Background(), &transport.Request{Procedure: "place", Headers: transport.NewHeaders()},
			&transporttest.FakeResponseWriter{},
			transport.UnaryHandler(handlerFunc(func(context.Context, *transport.Request, transport.ResponseWriter) error {
				<-release
				return nil
			})))
	}()
	require.Eventually(t, func() bool { return m.Introspect().InFlight == 1 }, 5*time.Second, time.Millisecond)
	for i := 0; i < 3; i++ {
		m.memory.Observe(ownership.Edge{CallerProcedure: "place", Service: "inventory", Procedure: "reserve"}, true)
	}
	m.gauges.update()
	require.NoError(t, m.Stop())
	require.NoError(t, m.Stop())

	g := scope.Snapshot().Gauges()
	value := func(key string) float64 {
		v, ok := g[key]
		require.True(t, ok, "gauge %s missing; have %v", key, keys(g))
		return v.Value()
	}
	assert.Equal(t, 1.0, value("errown.ingress.in_flight+"))
	assert.Equal(t, 1.0, value("errown.depmem.edges+kind=fail-close"))
	assert.Equal(t, 1.0, value("errown.depmem.edges+kind=fail-open"), "the declared edge")
	assert.Equal(t, 0.0, value("errown.depmem.edges+kind=unknown"))
	assert.Equal(t, -1.0, value("errown.depmem.fleet_healthy+"), "no fleet source")
	assert.Equal(t, 0.0, value("errown.retry.budget_left+callee=inventory"))
	close(release)
	<-done
}

type handlerFunc func(context.Context, *transport.Request, transport.ResponseWriter) error

func (f handlerFunc) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter) error {
	return f(ctx, req, resw)
}

func keys(m map[string]tally.GaugeSnapshot) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestModeGauge: errown.mode is 1 tagged with the mode errown runs in, 0
// tagged with the other; a policy's own mode does not change it.
func TestModeGauge(t *testing.T) {
	tests := []struct {
		give        Config
		wantEnforce float64
		wantObserve float64
	}{
		{give: Config{}, wantEnforce: 1, wantObserve: 0},
		{give: Config{Mode: retry.ModeObserve}, wantEnforce: 0, wantObserve: 1},
		{
			give: Config{Mode: retry.ModeEnforce, Retry: RetryConfig{Policies: []retry.PolicyConfig{
				{Service: "users", Mode: retry.ModeObserve, Idempotent: new(true)},
			}}},
			wantEnforce: 1, wantObserve: 0,
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.give.Mode), func(t *testing.T) {
			scope := tally.NewTestScope("", nil)
			m, err := New(tt.give, WithScope(scope))
			require.NoError(t, err)
			require.NoError(t, m.Start())
			require.NoError(t, m.Stop())
			g := scope.Snapshot().Gauges()
			require.Contains(t, g, "errown.mode+mode=enforce", "have %v", keys(g))
			require.Contains(t, g, "errown.mode+mode=observe", "have %v", keys(g))
			assert.Equal(t, tt.wantEnforce, g["errown.mode+mode=enforce"].Value())
			assert.Equal(t, tt.wantObserve, g["errown.mode+mode=observe"].Value())
		})
	}
}
