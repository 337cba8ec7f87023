// Package fxcore holds what errown's adapter modules (grpcgo.Module,
// nethttp.Module) share in their fx wiring: the check that the
// application includes errown.Core.
package fxcore

import (
	"github.com/errown/errown"
	"go.uber.org/fx"
)

// params are the inputs of Require's invoke.
type params struct {
	fx.In

	// Optional, so that its absence gets the adapter's own message rather
	// than fx's missing type.
	Middleware *errown.Middleware `optional:"true"`
}

// Require returns an fx.Invoke that fails start with errNoCore when the
// application provides no *errown.Middleware. It runs whether or not
// anything takes the adapter, so that a missing Core fails loudly rather
// than leave errown off, and builds nothing Core's own start check does
// not build.
func Require(errNoCore error) fx.Option {
	return fx.Invoke(func(p params) error {
		if p.Middleware == nil {
			return errNoCore
		}
		return nil
	})
}
