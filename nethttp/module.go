package nethttp

import (
	"errors"
	"net/http"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/fxcore"
	"go.uber.org/fx"
)

// Module is the fx.Module "errown.nethttp": it adapts the application's
// one *errown.Middleware to net/http, providing Middleware, whose Handler
// and Transport put errown on the application's handler and clients.
//
// It provides no *errown.Middleware: place errown.Core (or errown.Module,
// when the application runs a yarpc dispatcher too) once beside it, which
// reads the "errown" section of the application's config, logs to its
// *zap.Logger, puts metrics on its tally.Scope and starts and stops with
// it. grpcgo.Module may sit beside it on the same Core. Without Core,
// fx.New fails with ErrNoCore.
//
//	fx.New(
//		fx.Provide(newConfigProvider, zap.NewProduction, newScope), // each optional
//		errown.Core,
//		nethttp.Module,
//		fx.Provide(func(m nethttp.Middleware) *http.Client {
//			return &http.Client{Transport: m.Transport(nil, nethttp.WithService(func(*http.Request) string { return "inventory" }))}
//		}),
//		fx.Provide(func(m nethttp.Middleware, c *http.Client) *http.Server {
//			return &http.Server{Addr: ":8080", Handler: m.Handler(newMux(c))}
//		}),
//		fx.Invoke(serve), // takes the *http.Server, serves on start, shuts down on stop
//	).Run()
//
// Start fails with errown.ErrNotWired (errown.wiring: warn logs it
// instead) when no constructor called Middleware.Handler or
// Middleware.Transport while the application was built. The check sees
// only that they were called, not that what they returned serves.
var Module = fx.Module("errown.nethttp",
	fx.Provide(provideMiddleware),
	fxcore.Require(ErrNoCore),
)

// ErrNoCore is the error of an application that has this package's Module
// but no *errown.Middleware: errown.Core (or errown.Module) is missing.
var ErrNoCore = errors.New("nethttp: the application has no *errown.Middleware: " +
	"add errown.Core (or errown.Module, with a yarpc dispatcher) to it once, beside nethttp.Module")

// Middleware puts one errown.Middleware on an fx application's net/http
// handlers and clients. Take it from Module: the zero Middleware has no
// errown.Middleware.
type Middleware struct {
	mw *errown.Middleware
}

type middlewareResult struct {
	fx.Out

	Middleware Middleware
}

// provideMiddleware is what Module provides; the Middleware counts as
// wiring once its Handler or Transport is called.
func provideMiddleware(p fxcore.Params) (middlewareResult, error) {
	if p.Middleware == nil {
		return middlewareResult{}, ErrNoCore
	}
	return middlewareResult{Middleware: Middleware{mw: p.Middleware}}, nil
}

// Handler returns Handler(mw, h, opts...) for the Middleware's
// errown.Middleware.
func (m Middleware) Handler(h http.Handler, opts ...HandlerOption) http.Handler {
	return Handler(m.mw, h, opts...)
}

// Transport returns Transport(mw, base, opts...) for the Middleware's
// errown.Middleware.
func (m Middleware) Transport(base http.RoundTripper, opts ...TransportOption) http.RoundTripper {
	return Transport(m.mw, base, opts...)
}
