package grpcgo

import (
	"github.com/errown/errown"
	"go.uber.org/fx"
	"google.golang.org/grpc"
)

// Module adds errown to an fx application that serves and calls with
// grpc-go: it is errown.Core, which provides the *errown.Middleware (in an
// fx.Module named "errown", configured from the "errown" section of the
// application's config.Provider or *config.YAML, logging to its
// *zap.Logger, with metrics on its tally.Scope, started and stopped with
// the application), and it provides what the application's constructors
// build their server and ClientConns with:
//
//   - ServerOptions, errown's server interceptor as grpc.ServerOptions,
//     to pass to grpc.NewServer first;
//   - Dialer, whose DialOptions put errown on a ClientConn.
//
// The configuration is the one a yarpc service reads, and the metrics
// have the same names. The interceptors read the header names from it:
// WithConfig is not needed.
//
//	fx.New(
//		fx.Provide(newConfigProvider, zap.NewProduction, newScope), // each optional
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
//
// An application has one errown.Core. One that also serves net/http, or
// runs a yarpc dispatcher, places errown.Core (or errown.Module, for the
// dispatcher) once and provides this package's constructors beside it:
//
//	errown.Module, // or errown.Core
//	fx.Provide(grpcgo.NewServerOptions, grpcgo.NewDialer, nethttp.NewMiddleware),
var Module = fx.Options(
	errown.Core,
	fx.Provide(NewServerOptions, NewDialer),
)

// ServerOptions are the grpc.ServerOptions that put errown on a
// grpc.Server: errown's UnaryServerInterceptor, as a
// grpc.ChainUnaryInterceptor. Pass them to grpc.NewServer before the
// server's other interceptors, so that errown's is the outermost and sees
// the error the caller will see; add those with grpc.ChainUnaryInterceptor
// (grpc.UnaryInterceptor would put its interceptor outside errown's).
type ServerOptions []grpc.ServerOption

// NewServerOptions returns the ServerOptions of mw. It is what Module
// provides; an application that places errown.Core or errown.Module
// itself provides it beside.
func NewServerOptions(mw *errown.Middleware) ServerOptions {
	return ServerOptions{grpc.ChainUnaryInterceptor(UnaryServerInterceptor(mw))}
}

// Dialer gives an fx application's ClientConns errown's dial options,
// those of the Middleware it was built with. Take it from Module or
// NewDialer: the zero Dialer has no Middleware.
type Dialer struct {
	mw *errown.Middleware
}

// NewDialer returns the Dialer of mw. It is what Module provides; an
// application that places errown.Core or errown.Module itself provides it
// beside.
func NewDialer(mw *errown.Middleware) Dialer {
	return Dialer{mw: mw}
}

// DialOptions returns DialOptions(mw, opts...) for the Dialer's
// Middleware: errown's client interceptor, and grpc-go's own retry
// policies turned off (see DialOptions). Give each ClientConn the callee's
// name its retry policy uses, with WithService.
func (d Dialer) DialOptions(opts ...Option) []grpc.DialOption {
	return DialOptions(d.mw, opts...)
}
