package main

import (
	"context"
	nethttp "net/http"
	"time"

	"github.com/errown/errown"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	promreporter "github.com/uber-go/tally/v4/prometheus"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/zap"
)

func main() { fx.New(app).Run() }

var app = fx.Options(
	fx.Provide(newConfig, zap.NewProduction, newMetrics, newYARPCConfig, newDispatcher),
	errown.Module, // errown's middleware on the yarpc.Config, tuned by config.yaml, reporting to the tally.Scope
	fx.Invoke(register),
)

func newConfig() (*config.YAML, error) { return config.NewYAML(config.File("config.yaml")) }

// newMetrics is the tally Scope errown reports to, read at /metrics.
func newMetrics(lc fx.Lifecycle) (tally.Scope, *nethttp.ServeMux) {
	reporter := promreporter.NewReporter(promreporter.Options{Registerer: prom.NewRegistry()})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{CachedReporter: reporter, Separator: promreporter.DefaultSeparator}, time.Second)
	lc.Append(fx.StopHook(closer.Close))
	mux := nethttp.NewServeMux()
	mux.Handle("/metrics", reporter.HTTPHandler())
	return scope, mux
}

func newYARPCConfig(y *config.YAML, mux *nethttp.ServeMux) (yarpc.Config, error) {
	var addr struct{ Listen, Payments string }
	if err := y.Get("checkout").Populate(&addr); err != nil {
		return yarpc.Config{}, err
	}
	t := http.NewTransport()
	return yarpc.Config{
		Name:      "checkout",
		Inbounds:  yarpc.Inbounds{t.NewInbound(addr.Listen, http.Mux("/", mux))}, // yarpc on /, /metrics beside it
		Outbounds: yarpc.Outbounds{"payments": {Unary: t.NewSingleOutbound(addr.Payments)}},
	}, nil
}

func newDispatcher(cfg yarpc.Config, lc fx.Lifecycle) *yarpc.Dispatcher {
	d := yarpc.NewDispatcher(cfg)
	lc.Append(fx.StartStopHook(d.Start, d.Stop))
	return d
}

// register serves checkout::pay, which calls payments::charge.
func register(d *yarpc.Dispatcher) {
	payments := raw.New(d.ClientConfig("payments"))
	d.Register(raw.Procedure("pay", func(ctx context.Context, body []byte) ([]byte, error) {
		return payments.Call(ctx, "charge", body)
	}))
}
