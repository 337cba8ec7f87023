package grpcgo

import (
	"errors"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/fxcore"
	"go.uber.org/fx"
	"google.golang.org/grpc"
)

// Module is the fx.Module "errown.grpcgo": it adapts the application's
// one *errown.Middleware to grpc-go, providing what the application's
// constructors build their server and ClientConns with:
//
//   - ServerOptions, errown's server interceptor as grpc.ServerOptions,
//     to pass to grpc.NewServer first;
//   - Dialer, whose DialOptions put errown on a ClientConn.
//
// It provides no *errown.Middleware: place errown.Core (or errown.Module,
// when the application runs a yarpc dispatcher too) once in the
// application beside it, which reads the configuration from the "errown"
// section of the application's config.Provider or *config.YAML, logs to
// its *zap.Logger, puts metrics on its tally.Scope and starts and stops
// with the application. An application that also serves net/http adds
// nethttp.Module beside it, on the same Core. An application without
// Core fails fx.New with ErrNoCore's message, which names the fix.
//
// The configuration is the one a yarpc service reads, and the metrics
// have the same names. The interceptors read the header names from it:
// WithConfig is not needed.
//
//	fx.New(
//		fx.Provide(newConfigProvider, zap.NewProduction, newScope), // each optional
//		errown.Core,
//		grpcgo.Module,
//		fx.Provide(func(opts grpcgo.ServerOptions) *grpc.Server {
//			return grpc.NewServer(append(opts, grpc.ChainUnaryInterceptor(authInterceptor))...)
//		}),
//		fx.Provide(func(d grpcgo.Dialer) (*grpc.ClientConn, error) {
//			return grpc.NewClient("dns:///payments:8080", append(d.DialOptions(grpcgo.WithService("payments")),
//				grpc.WithTransportCredentials(creds))...)
//		}),
//		fx.Invoke(registerAndServe), // takes the *grpc.Server, serves on start, stops on stop
//	).Run()
//
// When the application starts, errown checks that its middleware was
// taken: that a constructor consumed ServerOptions or called
// Dialer.DialOptions. If none did (the server is built without them, or
// nothing depends on the constructor that takes them, which fx then never
// calls), start fails with errown.ErrNotWired; errown.wiring: warn logs it
// instead. Take them while the application is built, not in a start hook.
// The check sees only that they were taken: a constructor that takes
// ServerOptions and builds its server without them passes it.
var Module = fx.Module("errown.grpcgo",
	fx.Provide(provideServerOptions, provideDialer),
	_requireCore,
)

// ErrNoCore is the error of an application that has this package's Module
// but no *errown.Middleware: errown.Core (or errown.Module) is missing.
var ErrNoCore = errors.New("grpcgo: the application has no *errown.Middleware: " +
	"add errown.Core (or errown.Module, with a yarpc dispatcher) to it once, beside grpcgo.Module")

// ServerOptions are the grpc.ServerOptions that put errown on a
// grpc.Server: errown's UnaryServerInterceptor, as a
// grpc.ChainUnaryInterceptor. Pass them to grpc.NewServer before the
// server's other interceptors, so that errown's is the outermost and sees
// the error the caller will see; add those with grpc.ChainUnaryInterceptor
// (grpc.UnaryInterceptor would put its interceptor outside errown's).
type ServerOptions []grpc.ServerOption

// serverOptionsParams are the inputs of provideServerOptions.
type serverOptionsParams struct {
	fx.In

	// Middleware is the application's one, which errown.Core or
	// errown.Module provides. Without it provideServerOptions returns
	// ErrNoCore.
	Middleware *errown.Middleware `optional:"true"`
}

// serverOptionsResult is the output of provideServerOptions.
type serverOptionsResult struct {
	fx.Out

	ServerOptions ServerOptions
}

// provideServerOptions returns the ServerOptions of p.Middleware. It is what
// Module provides, and counts as wiring as soon as it is called.
func provideServerOptions(p serverOptionsParams) (serverOptionsResult, error) {
	if p.Middleware == nil {
		return serverOptionsResult{}, ErrNoCore
	}
	return serverOptionsResult{
		ServerOptions: ServerOptions{grpc.ChainUnaryInterceptor(UnaryServerInterceptor(p.Middleware))},
	}, nil
}

// Dialer gives an fx application's ClientConns errown's dial options,
// those of the Middleware it was built with. Take it from Module: the zero
// Dialer has no Middleware.
type Dialer struct {
	mw *errown.Middleware
}

// dialerParams are the inputs of provideDialer.
type dialerParams struct {
	fx.In

	// Middleware is the application's one, which errown.Core or
	// errown.Module provides. Without it provideDialer returns ErrNoCore.
	Middleware *errown.Middleware `optional:"true"`
}

// dialerResult is the output of provideDialer.
type dialerResult struct {
	fx.Out

	Dialer Dialer
}

// provideDialer returns the Dialer of p.Middleware. It is what Module
// provides; the Dialer counts as wiring once its DialOptions are called.
func provideDialer(p dialerParams) (dialerResult, error) {
	if p.Middleware == nil {
		return dialerResult{}, ErrNoCore
	}
	return dialerResult{Dialer: Dialer{mw: p.Middleware}}, nil
}

// DialOptions returns DialOptions(mw, opts...) for the Dialer's
// Middleware: errown's client interceptor, and grpc-go's own retry
// policies turned off (see DialOptions). Give each ClientConn the callee's
// name its retry policy uses, with WithService.
func (d Dialer) DialOptions(opts ...Option) []grpc.DialOption {
	return DialOptions(d.mw, opts...)
}

// _requireCore fails start when the application does not include errown.Core.
var _requireCore = fxcore.Require(ErrNoCore)
