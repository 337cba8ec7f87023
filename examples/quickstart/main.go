package main

import (
	"context"

	"github.com/errown/errown"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/zap"
)

func main() { fx.New(app).Run() }

var app = fx.Options(
	fx.Provide(newConfig, zap.NewProduction, newYARPCConfig, newDispatcher),
	errown.Module, // errown's middleware on the yarpc.Config, tuned by config.yaml
	fx.Invoke(register),
)

func newConfig() (*config.YAML, error) { return config.NewYAML(config.File("config.yaml")) }

func newYARPCConfig(y *config.YAML) (yarpc.Config, error) {
	var addr struct{ Listen, Payments string }
	if err := y.Get("checkout").Populate(&addr); err != nil {
		return yarpc.Config{}, err
	}
	t := http.NewTransport()
	return yarpc.Config{
		Name:      "checkout",
		Inbounds:  yarpc.Inbounds{t.NewInbound(addr.Listen)},
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
