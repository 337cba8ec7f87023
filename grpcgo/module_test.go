package grpcgo_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/grpcgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/fx/fxtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// _paymentsYAML is an application's configuration, errown's section as a
// yarpc service would have it: payments may be retried once.
const _paymentsYAML = `
errown:
  retry:
    budget: {disabled: true}
    policies:
      - {service: payments, maxAttempts: 2, initialBackoff: 1ms, maxBackoff: 1ms, idempotent: true}
`

// yamlConfig provides the application's config.Provider from text.
func yamlConfig(text string) fx.Option {
	return fx.Provide(func() (config.Provider, error) {
		return config.NewYAML(config.Source(strings.NewReader(text)))
	})
}

// fxServer is a grpc-go server an fx application builds and serves on
// 127.0.0.1 from start to stop.
type fxServer struct {
	srv  *grpc.Server
	addr string
}

// serveOnStart makes srv serve on 127.0.0.1 when lc starts and stop when
// it stops.
func serveOnStart(lc fx.Lifecycle, srv *grpc.Server) *fxServer {
	s := &fxServer{srv: srv}
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			s.addr = l.Addr().String()
			go func() {
				defer close(done)
				_ = srv.Serve(l) // returns when stopped
			}()
			return nil
		},
		OnStop: func(context.Context) error {
			srv.Stop()
			<-done
			return nil
		},
	})
	return s
}

// checkoutApp is a grpc-go application as its team writes it with fx: a
// server built from grpcgo.ServerOptions whose handler calls payments on
// a ClientConn dialled with the grpcgo.Dialer, and its configuration
// (errown's section), with metrics on scope.
func checkoutApp(t *testing.T, yamlText string, scope tally.Scope, payments *node) (*fxtest.App, *fxServer, *node) {
	checkout := &node{name: "checkout"}
	var s *fxServer
	app := fxtest.New(t,
		fx.NopLogger,
		yamlConfig(yamlText),
		fx.Supply(fx.Annotate(scope, fx.As(new(tally.Scope)))),
		errown.Core,
		grpcgo.Module,
		fx.Provide(func(d grpcgo.Dialer, lc fx.Lifecycle) (healthpb.HealthClient, error) {
			cc, err := grpc.NewClient("passthrough:///"+payments.addr, append(d.DialOptions(grpcgo.WithService("payments")),
				grpc.WithTransportCredentials(insecure.NewCredentials()))...)
			if err != nil {
				return nil, err
			}
			lc.Append(fx.StopHook(cc.Close))
			return healthpb.NewHealthClient(cc), nil
		}),
		fx.Provide(func(opts grpcgo.ServerOptions, client healthpb.HealthClient, lc fx.Lifecycle) *fxServer {
			srv := grpc.NewServer(opts...)
			healthpb.RegisterHealthServer(srv, &healthServer{n: checkout, callee: client})
			return serveOnStart(lc, srv)
		}),
		fx.Populate(&s),
	)
	return app, s, checkout
}

func TestModuleServesAndCallsWithErrown(t *testing.T) {
	payments := startGRPC(t, nodeConfig{name: "payments", work: failWith(codes.Unavailable)}) // no errown
	scope := tally.NewTestScope("", nil)
	app, s, checkout := checkoutApp(t, _paymentsYAML, scope, payments)
	app.RequireStart() // no errown.ErrNotWired: the server and the ClientConn took errown's middleware
	defer app.RequireStop()

	r := callRoot(t, &node{name: "checkout", addr: s.addr})

	assert.Equal(t, codes.Unavailable, r.code, "root code (trailer %v)", r.trailer)
	assert.Equal(t, _unclaimed, r.get(_claimHeader), "root claim (trailer %v)", r.trailer)
	assert.Equal(t, map[string]int64{"checkout": 1, "payments": 2}, served(checkout, payments), "served: errown retried payments once, per the YAML's policy")
	// The names a yarpc service's errown reports under (docs/metrics.md).
	counters := scope.Snapshot().Counters()
	for name, want := range map[string]int64{
		"errown.retry.calls+callee=payments":                           1,
		"errown.retry.attempts+callee=payments":                        1,
		"errown.egress.calls+":                                         1,
		"errown.inbound.unclaimed+":                                    1,
		"errown.storm.requests+procedure=grpc.health.v1.Health::Check": 1,
	} {
		c, ok := counters[name]
		if !assert.True(t, ok, "no counter %s on the application's scope", name) {
			continue
		}
		assert.Equal(t, want, c.Value(), name)
	}
}

// The interceptors read the header names from the configuration Module
// read, with no grpcgo.WithConfig: a request carrying the renamed attempt
// header arrives as a retry.
func TestModuleReadsHeaderNamesFromTheConfig(t *testing.T) {
	payments := startGRPC(t, nodeConfig{name: "payments"})
	scope := tally.NewTestScope("", nil)
	app, s, _ := checkoutApp(t, "errown:\n  attemptHeader: x-try\n", scope, payments)
	app.RequireStart()
	defer app.RequireStop()

	cc, err := grpc.NewClient("passthrough:///"+s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-try", "2")
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err, "Check")
	c, ok := scope.Snapshot().Counters()["errown.inbound.retried+"]
	require.True(t, ok, "no counter errown.inbound.retried")
	assert.Equal(t, int64(1), c.Value(), "errown.inbound.retried: the server interceptor read x-try")
}

func TestModuleNotWired(t *testing.T) {
	tests := []struct {
		name string
		give []fx.Option
	}{
		{
			name: "nothing takes ServerOptions nor the Dialer",
			give: []fx.Option{errown.Core, grpcgo.Module},
		},
		{
			name: "the constructor taking ServerOptions is never called",
			give: []fx.Option{
				errown.Core,
				grpcgo.Module,
				fx.Provide(func(opts grpcgo.ServerOptions) *grpc.Server { return grpc.NewServer(opts...) }),
			},
		},
		{
			name: "the Dialer is taken, but DialOptions never called",
			give: []fx.Option{
				errown.Core,
				grpcgo.Module,
				fx.Invoke(func(grpcgo.Dialer) {}),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := startErr(t, tt.give...)
			require.ErrorIs(t, err, errown.ErrNotWired, "start")
			assert.Contains(t, err.Error(), "grpcgo.Module", "the error does not name the fix with grpcgo.Module")
		})
	}
}

func TestModuleWired(t *testing.T) {
	tests := []struct {
		name string
		give []fx.Option
	}{
		{
			name: "a server built from ServerOptions",
			give: []fx.Option{
				errown.Core,
				grpcgo.Module,
				fx.Invoke(func(opts grpcgo.ServerOptions) { grpc.NewServer(opts...).Stop() }),
			},
		},
		{
			name: "a client only",
			give: []fx.Option{
				errown.Core,
				grpcgo.Module,
				fx.Invoke(func(d grpcgo.Dialer) error {
					cc, err := grpc.NewClient("passthrough:///127.0.0.1:1", append(d.DialOptions(),
						grpc.WithTransportCredentials(insecure.NewCredentials()))...)
					if err != nil {
						return err
					}
					return cc.Close()
				}),
			},
		},
		{
			name: "nothing takes them, wiring: warn",
			give: []fx.Option{yamlConfig("errown:\n  wiring: warn\n"), errown.Core, grpcgo.Module},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, startErr(t, tt.give...), "start")
		})
	}
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
		{name: "nothing takes ServerOptions nor the Dialer", give: []fx.Option{grpcgo.Module}},
		{
			name: "a server built from ServerOptions",
			give: []fx.Option{grpcgo.Module, fx.Invoke(func(opts grpcgo.ServerOptions) { grpc.NewServer(opts...).Stop() })},
		},
		{
			name: "the Dialer is taken",
			give: []fx.Option{grpcgo.Module, fx.Invoke(func(grpcgo.Dialer) {})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := startErr(t, tt.give...)
			require.ErrorIs(t, err, grpcgo.ErrNoCore, "start")
			assert.Contains(t, err.Error(), "add errown.Core", "the error does not name the fix, errown.Core")
		})
	}
}

// Module names itself in fx's logs.
func TestModuleIsNamed(t *testing.T) {
	var names []string
	app := fx.New(
		fx.WithLogger(func() fxevent.Logger { return moduleNames{&names} }),
		errown.Core,
		grpcgo.Module,
		fx.Invoke(func(opts grpcgo.ServerOptions) { grpc.NewServer(opts...).Stop() }),
	)
	require.NoError(t, app.Err())
	assert.Contains(t, names, "errown.grpcgo", "fx logged the modules %v, want errown.grpcgo among them", names)
}

// moduleNames collects the module names fx logs provides in.
type moduleNames struct{ names *[]string }

func (m moduleNames) LogEvent(e fxevent.Event) {
	if p, ok := e.(*fxevent.Provided); ok && p.ModuleName != "" {
		*m.names = append(*m.names, p.ModuleName)
	}
}
