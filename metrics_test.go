package errown_test

import (
	"cmp"
	"errors"
	"fmt"
	"testing"

	"github.com/errown/errown"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tallyv3 "github.com/uber-go/tally"
	"github.com/uber-go/tally/v4"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/yarpc"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// _modeGauge is errown's mode gauge, which errown sets on start.
const _modeGauge = "errown.mode+mode=enforce"

// startLine starts and stops an fx application of opts with errown.Module
// and a dispatcher built from a yarpc.Config of cfg, and returns errown's
// start line.
func startLine(t *testing.T, cfg func() yarpc.Config, opts ...fx.Option) observer.LoggedEntry {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	fxtest.New(t, append(opts,
		fx.NopLogger,
		fx.Supply(zap.New(core)),
		fx.Provide(cfg, dispatcherFromConfig),
		errown.Module,
		fx.Invoke(func(*yarpc.Dispatcher) {}),
	)...).RequireStart().RequireStop()
	started := logs.FilterMessage("errown started").All()
	require.Len(t, started, 1)
	return started[0]
}

// TestMetricsToATallyV4Scope: given a tally v4 Scope, errown reports to
// it, and its start line says so.
func TestMetricsToATallyV4Scope(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	line := startLine(t, yarpcConfig, fx.Supply(fx.Annotate(scope, fx.As(new(tally.Scope)))))
	assert.Equal(t, "tally v4 Scope", line.ContextMap()["metrics"])
	require.Contains(t, scope.Snapshot().Gauges(), _modeGauge)
	assert.Equal(t, 1.0, scope.Snapshot().Gauges()[_modeGauge].Value())
}

// TestMetricsToYARPCsTallyV3Scope: given only the tally v3 Scope yarpc
// takes its metrics from, errown reports to it, and its start line says
// so.
func TestMetricsToYARPCsTallyV3Scope(t *testing.T) {
	scope := tallyv3.NewTestScope("", nil)
	cfg := func() yarpc.Config {
		c := yarpcConfig()
		c.Metrics.Tally = scope
		return c
	}
	line := startLine(t, cfg, fx.Supply(fx.Annotate(scope, fx.As(new(tallyv3.Scope)))))
	assert.Equal(t, "yarpc's tally v3 Scope (github.com/uber-go/tally)", line.ContextMap()["metrics"])
	require.Contains(t, scope.Snapshot().Gauges(), _modeGauge)
	assert.Equal(t, 1.0, scope.Snapshot().Gauges()[_modeGauge].Value())
}

// TestMetricsFromTheYARPCConfig: with no scope in the fx graph, errown
// reports to the tally v3 Scope of the yarpc.Config it decorates.
func TestMetricsFromTheYARPCConfig(t *testing.T) {
	scope := tallyv3.NewTestScope("", nil)
	cfg := func() yarpc.Config {
		c := yarpcConfig()
		c.Metrics.Tally = scope
		return c
	}
	line := startLine(t, cfg)
	assert.Equal(t, "yarpc's tally v3 Scope (github.com/uber-go/tally), from the yarpc.Config", line.ContextMap()["metrics"])
	require.Contains(t, scope.Snapshot().Gauges(), _modeGauge)
	assert.Equal(t, 1.0, scope.Snapshot().Gauges()[_modeGauge].Value())
}

// TestMetricsNoneProvided: with no scope, the start line says so;
// wiring: strict fails start. Grouped and Core, which decorate nothing,
// take no scope from the yarpc.Config.
func TestMetricsNoneProvided(t *testing.T) {
	withV3 := func() yarpc.Config {
		c := yarpcConfig()
		c.Metrics.Tally = tallyv3.NewTestScope("", nil)
		return c
	}
	tests := []struct {
		name    string
		cfg     func() yarpc.Config
		grouped bool // errown.Grouped, else errown.Module
		wiring  string
		want    string // the start line's metrics
		wantErr string // "": start succeeds
	}{
		{name: "no scope", cfg: yarpcConfig, want: "none provided"},
		{name: "no scope, Grouped", cfg: withV3, grouped: true, want: "none provided"},
		{name: "strict", cfg: yarpcConfig, wiring: "strict", wantErr: "errown: metrics: none provided, and wiring is strict"},
		{name: "strict, the yarpc.Config's scope", cfg: withV3, wiring: "strict", want: "from the yarpc.Config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			err := startErr(t,
				fx.Provide(yamlProvider("errown:\n  wiring: "+cmp.Or(tt.wiring, "require")+"\n")),
				fx.Supply(zap.New(core)),
				fx.Provide(tt.cfg),
				errownApp(tt.grouped),
				fx.Invoke(func(*yarpc.Dispatcher) {}),
			)
			started := logs.FilterMessage("errown started").All()
			assert.Equal(t, tt.wantErr == "", err == nil, "start succeeds: %v", err)
			assert.Contains(t, fmt.Sprint(err), tt.wantErr)
			assert.Equal(t, tt.wantErr != "", errors.Is(err, errown.ErrNoMetrics))
			assert.Len(t, started, oneIf(err == nil))
			for _, l := range started {
				assert.Contains(t, l.ContextMap()["metrics"], tt.want)
			}
		})
	}
}

// errownApp is errown.Grouped with a dispatcher that chains its groups,
// or errown.Module with a dispatcher built from the yarpc.Config.
func errownApp(grouped bool) fx.Option {
	if !grouped {
		return fx.Options(errown.Module, fx.Provide(dispatcherFromConfig))
	}
	return fx.Options(errown.Grouped, fx.Provide(func(p groupedDispatcherParams, lc fx.Lifecycle) *yarpc.Dispatcher {
		cfg := p.Config
		cfg.InboundMiddleware.Unary = errown.ChainInbound(p.Inbound, cfg.InboundMiddleware.Unary)
		cfg.OutboundMiddleware.Unary = errown.ChainOutbound(p.Outbound, cfg.OutboundMiddleware.Unary)
		return dispatcherFromConfig(cfg, lc)
	}))
}
