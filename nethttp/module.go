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
// when the application runs a yarpc dispatcher too) once in the
// application beside it, which reads the configuration from the "errown"
// section of the application's config.Provider or *config.YAML, logs to
// its *zap.Logger, puts metrics on its tally.Scope and starts and stops
// with the application. An application that also serves grpc-go adds
// grpcgo.Module beside it, on the same Core. An application without Core
// fails fx.New with ErrNoCore's message, which names the fix. The
// configuration is the one a yarpc service reads, and the metrics have
// the same names.
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
// When the application starts, errown checks that its middleware was
// taken: that a constructor called Middleware.Handler or
// Middleware.Transport. If none did (nothing depends on the constructor
// that does, which fx then never calls), start fails with
// errown.ErrNotWired; errown.wiring: warn logs it instead. Call them while
// the application is built, not in a start hook. The check sees only
// that they were called, not that what they returned serves.
var Module = fx.Module("errown.nethttp",
	fx.Provide(provideMiddleware),
	_requireCore,
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

// middlewareParams are the inputs of provideMiddleware.
type middlewareParams struct {
	fx.In

	// Middleware is the application's one, which errown.Core or
	// errown.Module provides. Without it provideMiddleware returns
	// ErrNoCore.
	Middleware *errown.Middleware `optional:"true"`
}

// middlewareResult is the output of provideMiddleware.
type middlewareResult struct {
	fx.Out

	Middleware Middleware
}

// provideMiddleware returns the Middleware of p.Middleware. It is what Module
// provides; the Middleware counts as wiring once its Handler or Transport
// is called.
func provideMiddleware(p middlewareParams) (middlewareResult, error) {
	if p.Middleware == nil {
		return middlewareResult{}, ErrNoCore
	}
	return middlewareResult{Middleware: Middleware{mw: p.Middleware}}, nil
}

// Handler returns Handler(mw, h, opts...) for the Middleware's
// errown.Middleware: h served under errown's inbound middleware.
func (m Middleware) Handler(h http.Handler, opts ...HandlerOption) http.Handler {
	return Handler(m.mw, h, opts...)
}

// Transport returns Transport(mw, base, opts...) for the Middleware's
// errown.Middleware: an http.RoundTripper sending each request through
// errown's outbound middleware to base (http.DefaultTransport when nil).
func (m Middleware) Transport(base http.RoundTripper, opts ...TransportOption) http.RoundTripper {
	return Transport(m.mw, base, opts...)
}

// _requireCore fails start when the application does not include errown.Core.
var _requireCore = fxcore.Require(ErrNoCore)
