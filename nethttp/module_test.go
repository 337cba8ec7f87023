package nethttp_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/nethttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// _inventoryYAML is an application's configuration, errown's section as a
// yarpc service would have it: inventory may be retried once.
const _inventoryYAML = `
errown:
  retry:
    budget: {disabled: true}
    policies:
      - {service: inventory, maxAttempts: 2, initialBackoff: 1ms, maxBackoff: 1ms, idempotent: true}
`

// yamlConfig provides the application's config.Provider from text.
func yamlConfig(text string) fx.Option {
	return fx.Provide(func() (config.Provider, error) {
		return config.NewYAML(config.Source(strings.NewReader(text)))
	})
}

// fxServer is an HTTP server an fx application serves on 127.0.0.1 from
// start to stop.
type fxServer struct {
	url string
}

// serveOnStart makes h serve on 127.0.0.1 when lc starts, and shut down
// when it stops.
func serveOnStart(lc fx.Lifecycle, h http.Handler) *fxServer {
	s := &fxServer{}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			s.url = "http://" + l.Addr().String()
			go func() {
				defer close(done)
				_ = srv.Serve(l) // returns when shut down
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			err := srv.Shutdown(ctx)
			<-done
			return err
		},
	})
	return s
}

func TestModuleServesAndCallsWithErrown(t *testing.T) {
	inventory := startNode(t, nodeConfig{name: "inventory", fail: http.StatusServiceUnavailable}) // no errown
	scope := tally.NewTestScope("", nil)
	checkout := &node{name: "checkout", scope: scope}
	var s *fxServer
	app := fxtest.New(t,
		fx.NopLogger,
		yamlConfig(_inventoryYAML),
		fx.Supply(fx.Annotate(scope, fx.As(new(tally.Scope)))),
		errown.Core,
		nethttp.Module,
		fx.Provide(func(m nethttp.Middleware) *http.Client {
			return &http.Client{Transport: m.Transport(newBase(t),
				nethttp.WithService(func(*http.Request) string { return "inventory" }))}
		}),
		fx.Provide(func(m nethttp.Middleware, client *http.Client, lc fx.Lifecycle) *fxServer {
			mux := http.NewServeMux()
			mux.HandleFunc(_pattern, func(w http.ResponseWriter, r *http.Request) {
				checkout.served.Add(1)
				checkout.serve(w, r, client, inventory, 0)
			})
			return serveOnStart(lc, m.Handler(mux))
		}),
		fx.Populate(&s),
	)
	app.RequireStart() // no errown.ErrNotWired: the handler and the client took errown's middleware
	defer app.RequireStop()

	r := get(t, s.url)

	assert.Equal(t, http.StatusServiceUnavailable, r.status, "root status")
	assert.Equal(t, "unclaimed", r.header.Get(_claim), "root %s", _claim)
	assert.Equal(t, map[string]int64{"checkout": 1, "inventory": 2}, served(checkout, inventory), "served: errown retried inventory once, per the YAML's policy")
	// The names a yarpc service's errown reports under (docs/metrics.md).
	for name, want := range map[string]int64{
		"retry.calls":    1,
		"retry.attempts": 1,
	} {
		assert.Equal(t, want, checkout.counter(name, map[string]string{"callee": "inventory"}), "errown.%s{callee=inventory}", name)
	}
	for name, want := range map[string]int64{
		"egress.calls":      1,
		"inbound.unclaimed": 1,
	} {
		assert.Equal(t, want, checkout.counter(name, nil), "errown.%s", name)
	}
	assert.Equal(t, int64(1), checkout.counter("storm.requests", map[string]string{"procedure": _pattern}), "errown.storm.requests{procedure=%q}", _pattern)
}

func TestModuleNotWired(t *testing.T) {
	tests := []struct {
		name string
		give []fx.Option
	}{
		{
			name: "nothing takes the Middleware",
			give: []fx.Option{errown.Core, nethttp.Module},
		},
		{
			name: "the Middleware is taken, but neither Handler nor Transport called",
			give: []fx.Option{errown.Core, nethttp.Module, fx.Invoke(func(nethttp.Middleware) {})},
		},
		{
			name: "the constructor calling Handler is never called",
			give: []fx.Option{
				errown.Core,
				nethttp.Module,
				fx.Provide(func(m nethttp.Middleware) http.Handler { return m.Handler(http.NotFoundHandler()) }),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := startErr(t, tt.give...)
			require.ErrorIs(t, err, errown.ErrNotWired, "start")
			assert.Contains(t, err.Error(), "nethttp.Module", "the error does not name the fix with nethttp.Module")
		})
	}
}

func TestModuleWired(t *testing.T) {
	tests := []struct {
		name string
		give []fx.Option
	}{
		{
			name: "a handler",
			give: []fx.Option{errown.Core, nethttp.Module, fx.Invoke(func(m nethttp.Middleware) { m.Handler(http.NotFoundHandler()) })},
		},
		{
			name: "a client only",
			give: []fx.Option{errown.Core, nethttp.Module, fx.Invoke(func(m nethttp.Middleware) { m.Transport(nil) })},
		},
		{
			name: "nothing takes it, wiring: warn",
			give: []fx.Option{yamlConfig("errown:\n  wiring: warn\n"), errown.Core, nethttp.Module},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, startErr(t, tt.give...), "start")
		})
	}
}

// An application serving both net/http and grpc-go has one errown.Core
// and both packages' modules beside it, as the modules' docs say: one
// Middleware, one configuration, one scope.
func TestCoreWithBothAdapters(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	var (
		h *fxServer
		g string
	)
	app := fxtest.New(t,
		fx.NopLogger,
		yamlConfig("errown:\n  attemptHeader: x-try\n"),
		fx.Supply(fx.Annotate(scope, fx.As(new(tally.Scope)))),
		errown.Core,
		nethttp.Module,
		grpcgo.Module,
		fx.Invoke(func(m nethttp.Middleware, lc fx.Lifecycle) {
			h = serveOnStart(lc, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "down", http.StatusServiceUnavailable)
			})))
		}),
		fx.Invoke(func(opts grpcgo.ServerOptions, lc fx.Lifecycle) error {
			srv := grpc.NewServer(opts...)
			healthpb.RegisterHealthServer(srv, failingHealth{})
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			g = l.Addr().String()
			done := make(chan struct{})
			lc.Append(fx.StartStopHook(
				func() {
					go func() {
						defer close(done)
						_ = srv.Serve(l)
					}()
				},
				func() { srv.Stop(); <-done },
			))
			return nil
		}),
	)
	app.RequireStart()
	defer app.RequireStop()

	r := do(t, http.MethodGet, h.url+_path, nil, http.Header{"Rpc-Header-X-Try": {"2"}})
	assert.Equal(t, "claimed", r.header.Get(_claim), "HTTP: %s", _claim)
	cc, err := grpc.NewClient("passthrough:///"+g, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-try", "2"), 10*time.Second)
	defer cancel()
	var trailer metadata.MD
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	assert.Equal(t, codes.Unavailable, status.Code(err), "gRPC: %v, trailer %v", err, trailer)
	assert.Equal(t, []string{"claimed"}, trailer.Get("errown-claim"), "gRPC: errown-claim trailer")
	counters := scope.Snapshot().Counters()
	for name, want := range map[string]int64{"errown.inbound.claimed+": 2, "errown.inbound.retried+": 2} {
		if c, ok := counters[name]; assert.True(t, ok, "no counter %s", name) {
			assert.Equal(t, want, c.Value(), "%s: both servers on the one Middleware, with the configured header", name)
		}
	}
}

type failingHealth struct {
	healthpb.UnimplementedHealthServer
}

func (failingHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return nil, status.Error(codes.Unavailable, "down")
}

// startErr builds and starts an app of opts, stops it when it started, and
// returns the error.
func startErr(t *testing.T, opts ...fx.Option) error {
	t.Helper()
	app := fx.New(append([]fx.Option{fx.NopLogger}, opts...)...)
	if err := app.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := app.Start(ctx)
	if err == nil {
		assert.NoError(t, app.Stop(ctx), "stop")
	}
	return err
}

// Module adapts the application's Core, it brings none: an application
// that forgets Core fails to build, with the fix named, whether or not
// anything takes what Module provides.
func TestModuleWithoutCore(t *testing.T) {
	tests := []struct {
		name string
		give []fx.Option
	}{
		{name: "nothing takes the Middleware", give: []fx.Option{nethttp.Module}},
		{
			name: "a handler",
			give: []fx.Option{nethttp.Module, fx.Invoke(func(m nethttp.Middleware) { m.Handler(http.NotFoundHandler()) })},
		},
		{
			name: "beside grpcgo.Module",
			give: []fx.Option{nethttp.Module, grpcgo.Module},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := startErr(t, tt.give...)
			require.ErrorContains(t, err, "add errown.Core", "start: want an error naming the fix, errown.Core")
		})
	}
}

func TestModuleWithoutCoreIsErrNoCore(t *testing.T) {
	err := startErr(t, nethttp.Module)
	require.ErrorIs(t, err, nethttp.ErrNoCore, "start")
}

// Two adapters on one Core are one Middleware: wiring either counts.
func TestBothModulesOneCoreWiring(t *testing.T) {
	err := startErr(t, errown.Core, nethttp.Module, grpcgo.Module,
		fx.Invoke(func(m nethttp.Middleware) { m.Transport(nil) }))
	require.NoError(t, err, "start")
	err = startErr(t, errown.Core, nethttp.Module, grpcgo.Module)
	require.ErrorIs(t, err, errown.ErrNotWired, "start with neither adapter taken")
}
