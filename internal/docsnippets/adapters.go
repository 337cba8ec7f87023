package docsnippets

import (
	"context"
	"net/http"

	"github.com/errown/errown"
	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/nethttp"
	"github.com/uber-go/tally/v4"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// adapters is docs/adapters.md's application with fx: a grpc-go server
// and client and a net/http server and client on one errown.Core.
func adapters() {
	fx.New(
		fx.Provide(newConfigProvider, zap.NewProduction, newScope), // each optional
		errown.Core, // once: errown.Module instead, when a yarpc dispatcher runs too
		grpcgo.Module,
		nethttp.Module,
		fx.Provide(func(opts grpcgo.ServerOptions) *grpc.Server {
			// errown's interceptor first (outermost), the others chained after it.
			return grpc.NewServer(append(opts, grpc.ChainUnaryInterceptor(authInterceptor))...)
		}),
		fx.Provide(func(d grpcgo.Dialer) (*grpc.ClientConn, error) {
			return grpc.NewClient("dns:///payments:8080", append(d.DialOptions(grpcgo.WithService("payments")),
				grpc.WithTransportCredentials(creds))...)
		}),
		fx.Provide(func(m nethttp.Middleware) *http.Client {
			return &http.Client{Transport: m.Transport(nil, nethttp.WithService(func(*http.Request) string { return "inventory" }))}
		}),
		fx.Provide(func(m nethttp.Middleware, c *http.Client) *http.Server {
			return &http.Server{Addr: ":8080", Handler: m.Handler(newMux(c))}
		}),
		fx.Invoke(registerAndServe, serve),
	).Run()
}

var _ = adapters

// What the application provides itself.

func newConfigProvider() (config.Provider, error) { return config.NewYAML(config.File("config.yaml")) }

func newScope() tally.Scope { return tally.NoopScope }

var creds credentials.TransportCredentials = insecure.NewCredentials()

func authInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	return next(ctx, req)
}

func newMux(*http.Client) http.Handler { return http.NewServeMux() }

func registerAndServe(*grpc.Server, *grpc.ClientConn) {}

func serve(*http.Server) {}
