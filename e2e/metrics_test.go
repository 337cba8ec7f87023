package e2e_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tallyv3 "github.com/uber-go/tally"
	"github.com/uber-go/tally/v4"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
	"go.uber.org/zap"
)

const _checkoutPolicy = `
errown:
  wiring: strict
  retry:
    budget: {ratio: 1}
    policies:
      - {service: payments, maxAttempts: 2, initialBackoff: 1ms, maxBackoff: 1ms, idempotent: true}
`

// checkout is an fx application of the mesh as its team writes it: a
// dispatcher built from the provided yarpc.Config, with metrics (the
// options given), errown.Module, a handler calling payments.
// The application is an fx.Module beside the mesh's options, which
// provide the yarpc.Config it starts from, so that its own options can
// decorate that yarpc.Config before errown does.
func checkout(mesh *errowntest.Mesh, metrics fx.Option) fx.Option {
	return fx.Options(
		mesh.AppOptions("checkout", errowntest.HTTP, "payments"),
		fx.NopLogger,
		metrics,
		fx.Module("checkout",
			fx.Provide(func() (config.Provider, error) {
				return config.NewYAML(config.Source(strings.NewReader(_checkoutPolicy)))
			}),
			fx.Provide(newDispatcher),
			errown.Module,
			fx.Invoke(func(d *yarpc.Dispatcher) {
				payments := raw.New(d.ClientConfig("payments"))
				d.Register(raw.Procedure(errowntest.Procedure, func(ctx context.Context, body []byte) ([]byte, error) {
					return payments.Call(ctx, errowntest.Procedure, body)
				}))
			}),
		),
	)
}

// newDispatcher builds the dispatcher from the yarpc.Config errown
// decorates.
func newDispatcher(cfg yarpc.Config, lc fx.Lifecycle) *yarpc.Dispatcher {
	d := yarpc.NewDispatcher(cfg)
	lc.Append(fx.StartStopHook(d.Start, d.Stop))
	return d
}

// withYARPCMetrics has the yarpc.Config carry scope, yarpc's metrics, as
// the application's configuration would.
func withYARPCMetrics(scope tallyv3.Scope) fx.Option {
	return fx.Decorate(func(cfg yarpc.Config) yarpc.Config {
		cfg.Metrics.Tally = scope
		return cfg
	})
}

// TestMetricsEachTallyVersion: an fx application whose errown retries a
// failing callee over real dispatchers reports errown's metrics to the
// scope it has: a tally v4 Scope, or only the tally v3 Scope its yarpc
// dispatcher takes (yarpc.Config.Metrics.Tally), in the fx graph or only
// in the yarpc.Config, under wiring: strict, which fails start without
// one.
func TestMetricsEachTallyVersion(t *testing.T) {
	type counters func() map[string]int64
	tests := []struct {
		name    string
		metrics func() (fx.Option, counters)
	}{
		{
			name: "tally v4",
			metrics: func() (fx.Option, counters) {
				scope := tally.NewTestScope("", nil)
				read := func() map[string]int64 {
					out := map[string]int64{}
					for k, c := range scope.Snapshot().Counters() {
						out[k] = c.Value()
					}
					return out
				}
				return fx.Supply(fx.Annotate(scope, fx.As(new(tally.Scope)))), read
			},
		},
		{
			name: "yarpc's tally v3",
			metrics: func() (fx.Option, counters) {
				scope := tallyv3.NewTestScope("", nil)
				read := func() map[string]int64 {
					out := map[string]int64{}
					for k, c := range scope.Snapshot().Counters() {
						out[k] = c.Value()
					}
					return out
				}
				return fx.Options(fx.Supply(fx.Annotate(scope, fx.As(new(tallyv3.Scope)))), withYARPCMetrics(scope)), read
			},
		},
		{
			name: "yarpc's tally v3, in the yarpc.Config only",
			metrics: func() (fx.Option, counters) {
				scope := tallyv3.NewTestScope("", nil)
				read := func() map[string]int64 {
					out := map[string]int64{}
					for k, c := range scope.Snapshot().Counters() {
						out[k] = c.Value()
					}
					return out
				}
				return withYARPCMetrics(scope), read
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mesh := errowntest.NewMesh(t)
			payments := mesh.Start(errowntest.ServiceConfig{
				Name: "payments", Transport: errowntest.GRPC, Errown: &errown.Config{},
				Handler: errowntest.Fail(yarpcerrors.UnavailableErrorf("payments is down")),
			})
			metrics, read := tt.metrics()
			app := fxtest.New(t, checkout(mesh, metrics))
			app.RequireStart()
			reply := mesh.Call(callCtx(t), "checkout", nil)
			app.RequireStop()

			assert.Equal(t, yarpcerrors.CodeUnavailable, reply.Code())
			require.Equal(t, int64(2), payments.Served(), "checkout's errown retried payments once")
			got := read()
			assert.Equal(t, int64(1), got["errown.retry.calls+callee=payments"], "the call counted: %v", got)
			assert.Equal(t, int64(1), got["errown.retry.attempts+callee=payments"], "its retry counted: %v", got)
			assert.Equal(t, int64(1), got["errown.inbound.unclaimed+"], "checkout's error unclaimed: %v", got)
		})
	}
}

// TestMetricsScrapedByPrometheus: errown's metrics, reported to a tally
// v4 scope with tally's Prometheus reporter, are in what Prometheus
// scrapes over HTTP.
func TestMetricsScrapedByPrometheus(t *testing.T) {
	inst := newInstance(t)
	app := fxtest.New(t,
		fx.NopLogger,
		fx.Supply(zap.NewNop(), fx.Annotate(inst.scope, fx.As(new(tally.Scope)))),
		fx.Provide(func() yarpc.Config { return yarpc.Config{Name: "svc"} }, newDispatcher),
		errown.Module,
		fx.Invoke(func(*yarpc.Dispatcher) {}),
	)
	app.RequireStart()
	defer app.RequireStop()

	scrape := func() string {
		resp, err := _http.Get("http://" + inst.addr + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	// The scope reports every 50ms: wait for a report, up to 10s.
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if body = scrape(); strings.Contains(body, `errown_mode{mode="enforce"} 1`) {
			break
		}
	}
	assert.Contains(t, body, `errown_mode{mode="enforce"} 1`)
	assert.Contains(t, body, `errown_mode{mode="observe"} 0`)
}
