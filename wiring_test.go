package errown_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/fx/fxtest"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	yhttp "go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcerrors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// dispatcherFromConfig is the usual dispatcher constructor: built from
// the provided yarpc.Config, started with the app.
func dispatcherFromConfig(cfg yarpc.Config, lc fx.Lifecycle) *yarpc.Dispatcher {
	d := yarpc.NewDispatcher(cfg)
	lc.Append(fx.StartStopHook(d.Start, d.Stop))
	return d
}

func yarpcConfig() yarpc.Config { return yarpc.Config{Name: "svc"} }

func yamlProvider(s string) func() (config.Provider, error) {
	return func() (config.Provider, error) {
		return config.NewYAML(config.Source(strings.NewReader(s)))
	}
}

// startErr builds and starts an app of opts, and returns the start error.
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
		require.NoError(t, app.Stop(ctx))
	}
	return err
}

func TestWiringSilentSituationsFailStart(t *testing.T) {
	tests := []struct {
		name string
		give []fx.Option
		want string
	}{
		{
			name: "errown.Module inside the application's own fx.Module, the dispatcher built at the root",
			give: []fx.Option{
				fx.Provide(yarpcConfig, dispatcherFromConfig),
				fx.Module("service", errown.Module),
				fx.Invoke(func(*yarpc.Dispatcher) {}),
			},
			want: `the dispatcher "svc" was not built from the yarpc.Config errown.Module decorates: place errown.Module where the dispatcher is built from yarpc.Config, not in a child fx.Module`,
		},
		{
			name: "the dispatcher is not built from the provided yarpc.Config",
			give: []fx.Option{
				fx.Provide(yarpcConfig),
				fx.Provide(func(lc fx.Lifecycle) *yarpc.Dispatcher {
					return dispatcherFromConfig(yarpc.Config{Name: "svc"}, lc)
				}),
				errown.Module,
				fx.Invoke(func(*yarpc.Dispatcher) {}),
			},
			want: `the dispatcher "svc" was not built from the yarpc.Config errown.Module decorates`,
		},
		{
			name: "errown.Module, and no dispatcher reads the yarpc.Config",
			give: []fx.Option{
				fx.Provide(yarpcConfig),
				errown.Module,
			},
			want: "nothing read the yarpc.Config errown.Module decorates: build the dispatcher from the provided yarpc.Config",
		},
		{
			name: "the decorated yarpc.Config is read, but the dispatcher is built from another",
			give: []fx.Option{
				fx.Provide(yarpcConfig),
				fx.Provide(func(cfg yarpc.Config, lc fx.Lifecycle) *yarpc.Dispatcher {
					return dispatcherFromConfig(yarpc.Config{Name: cfg.Name}, lc)
				}),
				errown.Module,
				fx.Invoke(func(*yarpc.Dispatcher) {}),
			},
			want: `the dispatcher "svc" was not built from the yarpc.Config errown decorated: pass the provided yarpc.Config to yarpc.NewDispatcher as it is`,
		},
		{
			name: "errown.Grouped with nobody consuming the groups",
			give: []fx.Option{
				fx.Provide(yarpcConfig, dispatcherFromConfig),
				errown.Grouped,
				fx.Invoke(func(*yarpc.Dispatcher) {}),
			},
			want: "nothing consumed errown.Grouped's middleware groups: chain them into the dispatcher's yarpc.Config with errown.ChainInbound",
		},
		{
			name: "errown.Grouped, its groups consumed but not chained into the dispatcher",
			give: []fx.Option{
				fx.Provide(yarpcConfig),
				errown.Grouped,
				fx.Provide(func(p groupedDispatcherParams, lc fx.Lifecycle) *yarpc.Dispatcher {
					return dispatcherFromConfig(p.Config, lc)
				}),
				fx.Invoke(func(*yarpc.Dispatcher) {}),
			},
			want: `the dispatcher "svc" took errown's middleware groups but does not run them: put errown.ChainInbound and errown.ChainOutbound`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := startErr(t, tt.give...)
			require.ErrorIs(t, err, errown.ErrNotWired)
			assert.ErrorContains(t, err, tt.want)
			assert.True(t, strings.HasSuffix(err.Error(), "; set errown.wiring: warn to start anyway"), "the error names the way out: %v", err)
			assert.Less(t, len(err.Error()), 300, "one fix, not every fix there is: %v", err)
		})
	}
}

func TestWiringWarnStartsAndLogs(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	err := startErr(t,
		fx.Provide(yamlProvider("errown:\n  wiring: warn\n")),
		fx.Supply(zap.New(core)),
		fx.Provide(yarpcConfig, dispatcherFromConfig),
		fx.Module("service", errown.Module),
		fx.Invoke(func(*yarpc.Dispatcher) {}),
	)
	require.NoError(t, err)
	warned := logs.FilterMessage("errown is off").All()
	require.Len(t, warned, 1)
	assert.Equal(t, zapcore.WarnLevel, warned[0].Level)
	assert.Contains(t, warned[0].ContextMap()["error"], "was not built from the yarpc.Config errown.Module decorates")
}

func TestWiringBadValue(t *testing.T) {
	err := startErr(t,
		fx.Provide(yamlProvider("errown:\n  wiring: maybe\n")),
		fx.Provide(yarpcConfig, dispatcherFromConfig),
		errown.Module,
		fx.Invoke(func(*yarpc.Dispatcher) {}),
	)
	assert.ErrorContains(t, err, `wiring: must be "require", "warn" or "strict", got "maybe"`)
}

func TestStartLogSaysWhatErrownRunsWith(t *testing.T) {
	tests := []struct {
		name          string
		give          fx.Option
		wantConfig    string
		wantPolicies  []interface{}
		wantMode      string
		wantOverrides []interface{}
	}{
		{
			name:          "config.Provider",
			give:          fx.Provide(yamlProvider("errown:\n  retry:\n    policies:\n      - {service: users, idempotent: true}\n")),
			wantConfig:    "config.Provider",
			wantPolicies:  []interface{}{"users"},
			wantMode:      "enforce",
			wantOverrides: []interface{}{},
		},
		{
			// What config.NewYAML returns, provided as is: fx does not
			// match it to the config.Provider interface.
			name: "*config.YAML",
			give: fx.Provide(func() (*config.YAML, error) {
				return config.NewYAML(config.Source(strings.NewReader("errown:\n  retry:\n    policies:\n      - {service: users, procedure: get, idempotent: true}\n")))
			}),
			wantConfig:    "*config.YAML",
			wantPolicies:  []interface{}{"users::get"},
			wantMode:      "enforce",
			wantOverrides: []interface{}{},
		},
		{
			name:          "no configuration at all",
			give:          fx.Options(),
			wantConfig:    "none found: defaults, no retry policies",
			wantPolicies:  []interface{}{},
			wantMode:      "enforce",
			wantOverrides: []interface{}{},
		},
		{
			name:          "a config.Provider without the errown key",
			give:          fx.Provide(yamlProvider("service:\n  name: svc\n")),
			wantConfig:    "config.Provider (no errown key: defaults, no retry policies)",
			wantPolicies:  []interface{}{},
			wantMode:      "enforce",
			wantOverrides: []interface{}{},
		},
		{
			name:          "the errown key with no value",
			give:          fx.Provide(yamlProvider("errown:\n")),
			wantConfig:    "config.Provider",
			wantPolicies:  []interface{}{},
			wantMode:      "enforce",
			wantOverrides: []interface{}{},
		},
		{
			name: "observe mode, one policy enforcing",
			give: fx.Provide(yamlProvider("errown:\n  mode: observe\n  retry:\n    policies:\n" +
				"      - {service: users, procedure: get, mode: enforce, idempotent: true}\n" +
				"      - {service: users, mode: observe, idempotent: true}\n")),
			wantConfig:    "config.Provider",
			wantPolicies:  []interface{}{"users::get", "users"},
			wantMode:      "observe",
			wantOverrides: []interface{}{"users::get=enforce"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			require.NoError(t, startErr(t,
				tt.give,
				fx.Supply(zap.New(core)),
				fx.Provide(func() yarpc.Config { return yarpcConfigCalling(outboundTo("users")) }, dispatcherFromConfig),
				errown.Module,
				fx.Invoke(func(*yarpc.Dispatcher) {}),
			))
			started := logs.FilterMessage("errown started").All()
			require.Len(t, started, 1)
			fields := started[0].ContextMap()
			assert.Equal(t, tt.wantConfig, fields["config"])
			assert.Equal(t, tt.wantPolicies, fields["retryPolicies"])
			assert.Equal(t, tt.wantMode, fields["mode"])
			assert.Equal(t, tt.wantOverrides, fields["modeOverrides"])
			assert.Equal(t, "none", fields["snapshot"])
			assert.Equal(t, "none", fields["fleet"])
			assert.Equal(t, "require", fields["wiring"])
		})
	}
}

func TestModuleIsNamedErrown(t *testing.T) {
	var provided []*fxevent.Provided
	app := fxtest.New(t,
		fx.WithLogger(func() fxevent.Logger { return eventRecorder{&provided} }),
		fx.Provide(yarpcConfig, dispatcherFromConfig),
		errown.Module,
		fx.Invoke(func(*yarpc.Dispatcher) {}),
	)
	app.RequireStart().RequireStop()
	var module string
	for _, p := range provided {
		for _, ty := range p.OutputTypeNames {
			if ty == "*errown.Middleware" {
				module = p.ModuleName
			}
		}
	}
	assert.Equal(t, "errown", module)
}

type eventRecorder struct{ provided *[]*fxevent.Provided }

func (r eventRecorder) LogEvent(e fxevent.Event) {
	if p, ok := e.(*fxevent.Provided); ok {
		*r.provided = append(*r.provided, p)
	}
}

// tracing is a second middleware library, as a user's app has beside
// errown: it decorates yarpc.Config with an inbound middleware that tags
// every response, and contributes an outbound middleware to the group.
type tracing struct{ outboundCalls int }

func (*tracing) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	err := h.Handle(ctx, req, resw)
	resw.AddHeaders(transport.NewHeaders().With("x-traced", "yes"))
	return err
}

func (t *tracing) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	t.outboundCalls++
	return out.Call(ctx, req)
}

type groupedDispatcherParams struct {
	fx.In

	Config   yarpc.Config
	Inbound  []middleware.UnaryInbound  `group:"yarpc.unary_inbound"`
	Outbound []middleware.UnaryOutbound `group:"yarpc.unary_outbound"`
}

func TestGroupedComposesWithAnotherLibrary(t *testing.T) {
	// A plain backend the service calls, failing.
	backendIn := failingService(t, "backend", "fail")

	tr := &tracing{}
	in := yhttp.NewTransport().NewInbound("127.0.0.1:0")
	var d *yarpc.Dispatcher
	app := fxtest.New(t,
		fx.NopLogger,
		fx.Provide(func() yarpc.Config {
			return yarpc.Config{Name: "svc", Inbounds: yarpc.Inbounds{in}, Outbounds: yarpc.Outbounds{
				"backend": {Unary: yhttp.NewTransport().NewSingleOutbound("http://" + backendIn.Addr().String())},
			}}
		}),
		// The other library decorates yarpc.Config, as errown.Module
		// would: the two could not share one scope.
		fx.Decorate(func(cfg yarpc.Config) yarpc.Config {
			cfg.InboundMiddleware.Unary = yarpc.UnaryInboundMiddleware(tr, cfg.InboundMiddleware.Unary)
			return cfg
		}),
		// ... and contributes an outbound middleware to the group.
		fx.Provide(fx.Annotate(func() middleware.UnaryOutbound { return tr }, fx.ResultTags(`group:"yarpc.unary_outbound"`))),
		errown.Grouped,
		fx.Provide(func(p groupedDispatcherParams, lc fx.Lifecycle) *yarpc.Dispatcher {
			cfg := p.Config
			cfg.InboundMiddleware.Unary = errown.ChainInbound(p.Inbound, cfg.InboundMiddleware.Unary)
			cfg.OutboundMiddleware.Unary = errown.ChainOutbound(p.Outbound, cfg.OutboundMiddleware.Unary)
			return dispatcherFromConfig(cfg, lc)
		}),
		fx.Populate(&d),
	)
	d.Register(raw.Procedure("front", func(ctx context.Context, body []byte) ([]byte, error) {
		return raw.New(d.ClientConfig("backend")).Call(ctx, "fail", body)
	}))
	app.RequireStart()
	defer app.RequireStop()

	headers, err := callOver(t, in, "front")
	require.Error(t, err)
	// The backend runs no errown: its claim is missing, and with no
	// retry policy the service keeps the error claimed (at-least-once).
	assert.Equal(t, "claimed", headers["errown-claim"], "errown's inbound middleware is on the dispatcher")
	assert.Equal(t, "yes", headers["x-traced"], "so is the other library's")
	assert.Equal(t, 1, tr.outboundCalls, "the other library's outbound middleware ran")
}

func TestChainPutsErrownFirst(t *testing.T) {
	m, err := errown.New(errown.Config{})
	require.NoError(t, err)
	tr := &tracing{}
	grouped := []middleware.UnaryInbound{tr, m.Inbound().Unary}
	chain := errown.ChainInbound(grouped, nil)

	// A request through the chain: errown's middleware, first (outermost),
	// adds its claim and storm telemetry after the tracer, inside it,
	// added its header.
	resw := newRecordingWriter()
	_ = chain.Handle(context.Background(), &transport.Request{Procedure: "p", Headers: transport.NewHeaders()}, resw,
		transport.UnaryHandler(handlerFunc(func(context.Context, *transport.Request, transport.ResponseWriter) error {
			return yarpcerrors.InternalErrorf("x")
		})))
	assert.Equal(t, []string{"x-traced", "errown-claim", "errown-storm"}, resw.order)
	assert.Equal(t, []middleware.UnaryInbound{tr, m.Inbound().Unary}, grouped, "the group is left as it was")
}

type handlerFunc func(context.Context, *transport.Request, transport.ResponseWriter) error

func (f handlerFunc) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter) error {
	return f(ctx, req, resw)
}

// recordingWriter records the order headers were added in.
type recordingWriter struct {
	transport.ResponseWriter
	order []string
}

func newRecordingWriter() *recordingWriter { return &recordingWriter{} }

func (w *recordingWriter) AddHeaders(h transport.Headers) {
	for k := range h.Items() {
		w.order = append(w.order, k)
	}
}

func (w *recordingWriter) SetApplicationError()        {}
func (w *recordingWriter) Write(p []byte) (int, error) { return len(p), nil }
