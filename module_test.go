package errown_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	yhttp "go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcerrors"
	"go.uber.org/zap"
)

// service is an fx application as a user would write it: it provides a
// yarpc.Config and builds its dispatcher from it.
func service(t *testing.T, yamlConfig string, extra ...fx.Option) (*fxtest.App, *yarpc.Dispatcher, *yhttp.Inbound) {
	var (
		d  *yarpc.Dispatcher
		in *yhttp.Inbound
	)
	opts := []fx.Option{
		fx.NopLogger,
		fx.Provide(func() (config.Provider, error) {
			return config.NewYAML(config.Source(strings.NewReader(yamlConfig)))
		}),
		fx.Provide(func() *zap.Logger { return zap.NewNop() }),
		fx.Provide(func() yarpc.Config {
			in = yhttp.NewTransport().NewInbound("127.0.0.1:0")
			return yarpc.Config{Name: "svc", Inbounds: yarpc.Inbounds{in}}
		}),
		fx.Provide(func(cfg yarpc.Config, lc fx.Lifecycle) *yarpc.Dispatcher {
			d := yarpc.NewDispatcher(cfg)
			lc.Append(fx.StartStopHook(d.Start, d.Stop))
			return d
		}),
		errown.Module,
		fx.Populate(&d),
	}
	app := fxtest.New(t, append(opts, extra...)...)
	return app, d, in
}

func TestModuleStartsAndStops(t *testing.T) {
	app, d, in := service(t, "errown:\n  retry:\n    budget:\n      ratio: 0.2\n")
	d.Register(raw.Procedure("fail", func(context.Context, []byte) ([]byte, error) {
		return nil, yarpcerrors.UnavailableErrorf("broken here")
	}))
	app.RequireStart()
	defer app.RequireStop()

	// A real call over HTTP shows the middleware on the dispatcher: the
	// error response carries the claim.
	headers, err := callOver(t, in, "fail")
	require.Error(t, err)
	assert.Equal(t, yarpcerrors.CodeUnavailable, yarpcerrors.FromError(err).Code())
	assert.Equal(t, "claimed", headers["errown-claim"])
}

// failingService starts a plain yarpc service called name over HTTP whose
// procedure always fails with unavailable, stopped at the end of the test,
// and returns its inbound.
func failingService(t *testing.T, name, procedure string) *yhttp.Inbound {
	t.Helper()
	in := yhttp.NewTransport().NewInbound("127.0.0.1:0")
	d := yarpc.NewDispatcher(yarpc.Config{Name: name, Inbounds: yarpc.Inbounds{in}})
	d.Register(raw.Procedure(procedure, func(context.Context, []byte) ([]byte, error) {
		return nil, yarpcerrors.UnavailableErrorf("%s down", name)
	}))
	require.NoError(t, d.Start())
	t.Cleanup(func() { assert.NoError(t, d.Stop()) })
	return in
}

// callOver calls procedure on the service behind in from a plain yarpc
// client over HTTP, and returns the response headers and the error.
func callOver(t *testing.T, in *yhttp.Inbound, procedure string) (map[string]string, error) {
	t.Helper()
	client := yarpc.NewDispatcher(yarpc.Config{Name: "caller", Outbounds: yarpc.Outbounds{"svc": {
		Unary: yhttp.NewTransport().NewSingleOutbound("http://" + in.Addr().String()),
	}}})
	require.NoError(t, client.Start())
	defer func() { assert.NoError(t, client.Stop()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var headers map[string]string
	_, err := raw.New(client.ClientConfig("svc")).Call(ctx, procedure, nil, yarpc.ResponseHeaders(&headers))
	return headers, err
}

func TestModuleUsesScope(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	app, d, in := service(t, "", fx.Supply(fx.Annotate(scope, fx.As(new(tally.Scope)))))
	d.Register(raw.Procedure("fail", func(context.Context, []byte) ([]byte, error) {
		return nil, yarpcerrors.InternalErrorf("x")
	}))
	app.RequireStart()
	defer app.RequireStop()

	_, err := callOver(t, in, "fail")
	require.Error(t, err)
	assert.Equal(t, int64(1), scope.Snapshot().Counters()["errown.inbound.claimed+"].Value())
}

func TestModuleBadConfigFailsStart(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"errown:\n  ingress:\n    shards: 3\n", []string{"ingress.shards", "got 3"}},
		{"errown:\n  claimHedaer: x\n", []string{"claimHedaer"}},
		{"errown:\n  retry:\n    policies:\n      - service: a\n        idempotent: true\n        maxAttempts: -2\n", []string{"retry.policies[0].maxAttempts", "-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			app := fx.New(
				fx.NopLogger,
				fx.Provide(func() (config.Provider, error) {
					return config.NewYAML(config.Source(strings.NewReader(tt.give)), config.Permissive())
				}),
				fx.Provide(func() yarpc.Config { return yarpc.Config{Name: "svc"} }),
				errown.Module,
				fx.Invoke(func(yarpc.Config) {}),
			)
			err := app.Err()
			require.Error(t, err)
			for _, want := range tt.want {
				assert.ErrorContains(t, err, want)
			}
		})
	}
}

func TestModuleWithoutConfigProvider(t *testing.T) {
	var cfg yarpc.Config
	app := fxtest.New(t,
		fx.NopLogger,
		fx.Provide(func() yarpc.Config { return yarpc.Config{Name: "svc"} }),
		errown.Module,
		fx.Populate(&cfg),
	)
	app.RequireStart().RequireStop()
	assert.NotNil(t, cfg.InboundMiddleware.Unary)
	assert.NotNil(t, cfg.OutboundMiddleware.Unary)
}

// order records the order middleware runs in.
type order struct{ seen *[]string }

func (o order) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	*o.seen = append(*o.seen, "user-inbound")
	return h.Handle(ctx, req, resw)
}

var _ middleware.UnaryInbound = order{}

func TestApplyKeepsExistingMiddleware(t *testing.T) {
	mw, err := errown.New(errown.Config{})
	require.NoError(t, err)
	var seen []string
	cfg := mw.Apply(yarpc.Config{Name: "svc", InboundMiddleware: yarpc.InboundMiddleware{Unary: order{&seen}}})
	require.NotNil(t, cfg.InboundMiddleware.Unary)

	// errown runs first (outermost), then the application's middleware.
	h := transportHandler(func(ctx context.Context) error {
		seen = append(seen, "handler")
		return nil
	})
	wrapped := middleware.ApplyUnaryInbound(h, cfg.InboundMiddleware.Unary)
	require.NoError(t, wrapped.Handle(context.Background(), &transport.Request{Procedure: "p"}, nil))
	assert.Equal(t, []string{"user-inbound", "handler"}, seen)
	assert.Equal(t, 0, mw.Introspect().InFlight)
}

type transportHandler func(context.Context) error

func (h transportHandler) Handle(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
	return h(ctx)
}

func TestModuleRunsMemoryLifecycle(t *testing.T) {
	// A plain dependency that always fails.
	depIn := failingService(t, "dep", "get")

	path := filepath.Join(t.TempDir(), "memory.json")
	yamlConfig := "errown:\n  memory:\n    minSamples: 3\n    snapshot:\n      path: " + path + "\n"
	start := func() (*fxtest.App, *errown.Middleware, *yhttp.Inbound) {
		var (
			mw *errown.Middleware
			in = yhttp.NewTransport().NewInbound("127.0.0.1:0")
		)
		app := fxtest.New(t,
			fx.NopLogger,
			fx.Provide(func() (config.Provider, error) {
				return config.NewYAML(config.Source(strings.NewReader(yamlConfig)))
			}),
			fx.Provide(func() yarpc.Config {
				return yarpc.Config{
					Name:      "svc",
					Inbounds:  yarpc.Inbounds{in},
					Outbounds: yarpc.Outbounds{"dep": {Unary: yhttp.NewTransport().NewSingleOutbound("http://" + depIn.Addr().String())}},
				}
			}),
			fx.Provide(func(cfg yarpc.Config, lc fx.Lifecycle) *yarpc.Dispatcher {
				d := yarpc.NewDispatcher(cfg)
				d.Register(raw.Procedure("api", func(ctx context.Context, body []byte) ([]byte, error) {
					return raw.New(d.ClientConfig("dep")).Call(ctx, "get", body)
				}))
				lc.Append(fx.StartStopHook(d.Start, d.Stop))
				return d
			}),
			errown.Module,
			fx.Populate(&mw),
			fx.Invoke(func(*yarpc.Dispatcher) {}),
		)
		app.RequireStart()
		return app, mw, in
	}

	app, mw, in := start()
	for i := 0; i < 3; i++ {
		headers, err := callOver(t, in, "api")
		require.Error(t, err)
		assert.Equal(t, "claimed", headers["errown-claim"], "no retry policy: RCS false keeps it claimed")
	}
	edge := ownership.Edge{CallerProcedure: "api", Service: "dep", Procedure: "get"}
	want := []depmem.EdgeView{{Edge: edge, Kind: ownership.KindFailClose, Ratio: 1, CalleeFailures: 3, JointFailures: 3, Source: depmem.SourceLocal}}
	assert.Equal(t, want, mw.Introspect().Dependencies)
	app.RequireStop()

	b, err := os.ReadFile(path)
	require.NoError(t, err, "the memory wrote its snapshot at stop")
	_, err = memory.ParseSnapshot(b)
	require.NoError(t, err)

	// A restarted service remembers.
	app, mw, _ = start()
	assert.Equal(t, want, mw.Introspect().Dependencies)
	app.RequireStop()
}
