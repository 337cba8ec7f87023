package nethttp

import (
	"net/http"

	"github.com/errown/errown"
	"go.uber.org/fx"
)

// Module adds errown to an fx application that serves and calls with
// net/http: it is errown.Core, which provides the *errown.Middleware (in
// an fx.Module named "errown", configured from the "errown" section of the
// application's config.Provider or *config.YAML, logging to its
// *zap.Logger, with metrics on its tally.Scope, started and stopped with
// the application), and it provides Middleware, whose Handler and
// Transport put errown on the application's handler and clients. The
// configuration is the one a yarpc service reads, and the metrics have
// the same names.
//
//	fx.New(
//		fx.Provide(newConfigProvider, zap.NewProduction, newScope), // each optional
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
//
// An application has one errown.Core. One that also serves grpc-go, or
// runs a yarpc dispatcher, places errown.Core (or errown.Module, for the
// dispatcher) once and provides this package's constructor beside it:
//
//	errown.Module, // or errown.Core
//	fx.Provide(nethttp.NewMiddleware, grpcgo.NewServerOptions, grpcgo.NewDialer),
var Module = fx.Options(
	errown.Core,
	fx.Provide(NewMiddleware),
)

// Middleware puts one errown.Middleware on an fx application's net/http
// handlers and clients. Take it from Module or NewMiddleware: the zero
// Middleware has no errown.Middleware.
type Middleware struct {
	mw *errown.Middleware
}

// NewMiddleware returns the Middleware of mw. It is what Module provides;
// an application that places errown.Core or errown.Module itself provides
// it beside.
func NewMiddleware(mw *errown.Middleware) Middleware {
	return Middleware{mw: mw}
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
