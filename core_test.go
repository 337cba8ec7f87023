package errown_test

import (
	"strings"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/adapt"
	"github.com/errown/errown/internal/egress"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/fx/fxtest"
	"go.uber.org/yarpc"
)

func TestCoreAloneFailsStartWhenNobodyTakesItsMiddleware(t *testing.T) {
	const adapters = "no grpc-go or net/http server or client took errown's middleware: build them from what grpcgo.Module or nethttp.Module provide"
	tests := []struct {
		name string
		give []fx.Option
		want string
	}{
		{name: "nothing takes it", give: []fx.Option{errown.Core}, want: adapters},
		{
			name: "the Middleware is taken, its middleware is not",
			give: []fx.Option{errown.Core, fx.Invoke(func(*errown.Middleware) {})},
			want: adapters,
		},
		{
			// Inbound and Outbound are for a hand-built yarpc.Config:
			// the dispatcher check is Module's.
			name: "Inbound and Outbound do not count",
			give: []fx.Option{errown.Core, fx.Invoke(func(m *errown.Middleware) { m.Inbound(); m.Outbound() })},
			want: adapters,
		},
		{
			// Core decorates nothing: the dispatcher is errown-free.
			name: "a yarpc dispatcher beside Core",
			give: []fx.Option{
				fx.Provide(yarpcConfig, dispatcherFromConfig),
				errown.Core,
				fx.Invoke(func(*yarpc.Dispatcher) {}),
			},
			want: `the dispatcher "svc" does not carry errown's middleware: use errown.Module (or errown.Grouped) instead of errown.Core`,
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

func TestCoreAdaptCountsAsWiring(t *testing.T) {
	var in, out any
	require.NoError(t, startErr(t,
		errown.Core,
		fx.Invoke(func(m *errown.Middleware) {
			parts := adapt.PartsOf(m)
			in, out = parts.Inbound, parts.Outbound
			assert.Equal(t, m.Inbound().Unary, in, "the middleware Inbound returns")
			assert.IsType(t, &egress.Middleware{}, out, "the egress middleware Outbound starts with")
		}),
	))
	assert.NotNil(t, in)
	assert.NotNil(t, out)
}

func TestCoreAdaptReturnsTheConfig(t *testing.T) {
	var headers ownership.Headers
	require.NoError(t, startErr(t,
		fx.Provide(yamlProvider("errown:\n  attemptHeader: x-try\n  noRetryHeader: x-no-retry\n")),
		errown.Core,
		fx.Invoke(func(m *errown.Middleware) { headers = adapt.PartsOf(m).Headers }),
	))
	assert.Equal(t, "x-try", headers.Attempt)
	assert.Equal(t, "x-no-retry", headers.NoRetry)
}

func TestCoreIsNamedErrownAndDecoratesNothing(t *testing.T) {
	var provided []*fxevent.Provided
	var cfg yarpc.Config
	app := fxtest.New(t,
		fx.WithLogger(func() fxevent.Logger { return eventRecorder{&provided} }),
		fx.Provide(yamlProvider("errown:\n  wiring: warn\n")),
		fx.Provide(yarpcConfig),
		errown.Core,
		fx.Populate(&cfg),
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
	assert.Nil(t, cfg.InboundMiddleware.Unary, "Core leaves yarpc.Config alone")
	assert.Nil(t, cfg.OutboundMiddleware.Unary)
}
