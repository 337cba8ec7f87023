// Package fxcore holds what errown's adapter modules (grpcgo.Module,
// nethttp.Module) share in their fx wiring: the check that the
// application includes errown.Core.
package fxcore

import (
	"github.com/errown/errown"
	"github.com/errown/errown/internal/adapt"
	"go.uber.org/config"
	"go.uber.org/fx"
)

// Params are the inputs of an adapter module's constructors and of
// Require's invoke: the application's *errown.Middleware, optional so that
// its absence gets the adapter's own error rather than fx's.
type Params struct {
	fx.In

	Middleware *errown.Middleware `optional:"true"`
}

// Require returns an fx.Invoke that fails start with errNoCore when the
// application provides no *errown.Middleware. It runs whether or not
// anything takes the adapter, so that a missing Core fails loudly rather
// than leave errown off, and builds nothing Core's own start check does
// not build.
//
// An invoke before it checks errown's configuration, as errown's modules
// do first: placed before errown.Core, an adapter module's invoke would
// otherwise be the first to build the *errown.Middleware, and an invalid
// configuration's error would come behind fx's account of it.
func Require(errNoCore error) fx.Option {
	return fx.Options(
		fx.Invoke(func(p configParams) error {
			return adapt.CheckConfig(p.Config, p.YAML, p.Files)
		}),
		fx.Invoke(func(p Params) error {
			if p.Middleware == nil {
				return errNoCore
			}
			return nil
		}),
	)
}

// configParams are where errown reads its configuration from.
type configParams struct {
	fx.In

	Config config.Provider    `optional:"true"`
	YAML   *config.YAML       `optional:"true"`
	Files  errown.ConfigFiles `optional:"true"`
}
