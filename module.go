package errown

import (
	"fmt"

	"github.com/uber-go/tally/v4"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
	"go.uber.org/zap"
	"gopkg.in/yaml.v2"
)

// Module adds errown to an fx application that provides a yarpc.Config:
// it provides *Middleware and decorates the yarpc.Config with it. The
// configuration comes from the application's config.Provider under the key
// "errown" when there is one; logs go to its *zap.Logger and metrics to its
// tally.Scope when it has them.
var Module = fx.Options(
	fx.Provide(NewFromParams),
	fx.Decorate(decorate),
)

// Params are the inputs of NewFromParams.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Config    config.Provider `optional:"true"`
	Logger    *zap.Logger     `optional:"true"`
	Scope     tally.Scope     `optional:"true"`
}

// Result is the output of NewFromParams.
type Result struct {
	fx.Out

	Middleware *Middleware
}

// NewFromParams reads the "errown" section of p.Config and builds the
// middleware, whose background work starts and stops with p.Lifecycle. It
// is what Module provides.
func NewFromParams(p Params) (Result, error) {
	cfg, err := configFromProvider(p.Config)
	if err != nil {
		return Result{}, err
	}
	m, err := New(cfg, WithLogger(p.Logger), WithScope(p.Scope))
	if err != nil {
		return Result{}, fmt.Errorf("errown: config: %w", err)
	}
	p.Lifecycle.Append(fx.StartStopHook(m.Start, m.Stop))
	return Result{Middleware: m}, nil
}

// configFromProvider reads the errown section strictly, whatever the
// provider's own mode: it is taken out as plain data and decoded again with
// unknown keys rejected.
func configFromProvider(p config.Provider) (Config, error) {
	if p == nil {
		return ConfigFromYAML(nil)
	}
	var raw interface{}
	if err := p.Get(ConfigKey).Populate(&raw); err != nil {
		return Config{}, fmt.Errorf("errown: config: %w", err)
	}
	if raw == nil {
		return ConfigFromYAML(nil)
	}
	b, err := yaml.Marshal(raw)
	if err != nil {
		return Config{}, fmt.Errorf("errown: config: %w", err)
	}
	return ConfigFromYAML(b)
}

func decorate(cfg yarpc.Config, m *Middleware) yarpc.Config {
	return m.Apply(cfg)
}
