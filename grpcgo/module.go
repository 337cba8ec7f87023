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
// when the application runs a yarpc dispatcher too) once beside it, which
// reads the "errown" section of the application's config (the header
// names the interceptors read included: WithConfig is not needed), logs
// to its *zap.Logger, puts metrics on its tally.Scope and starts and
// stops with it. nethttp.Module may sit beside it on the same Core.
// Without Core, fx.New fails with ErrNoCore.
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
// Start fails with errown.ErrNotWired (errown.wiring: warn logs it
// instead) when no constructor took ServerOptions or called
// Dialer.DialOptions while the application was built. The check sees
// only that they were taken: a server built without them passes it.
var Module = fx.Module("errown.grpcgo",
	fx.Provide(provideServerOptions, provideDialer),
	fxcore.Require(ErrNoCore),
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

type serverOptionsResult struct {
	fx.Out

	ServerOptions ServerOptions
}

// provideServerOptions is what Module provides; calling it counts as wiring.
func provideServerOptions(p fxcore.Params) (serverOptionsResult, error) {
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

type dialerResult struct {
	fx.Out

	Dialer Dialer
}

// provideDialer is what Module provides; the Dialer counts as wiring once
// its DialOptions are called.
func provideDialer(p fxcore.Params) (dialerResult, error) {
	if p.Middleware == nil {
		return dialerResult{}, ErrNoCore
	}
	return dialerResult{Dialer: Dialer{mw: p.Middleware}}, nil
}

// DialOptions returns DialOptions(mw, opts...) for the Dialer's
// Middleware. Give each ClientConn the callee's name its retry policy
// uses, with WithService.
func (d Dialer) DialOptions(opts ...Option) []grpc.DialOption {
	return DialOptions(d.mw, opts...)
}
