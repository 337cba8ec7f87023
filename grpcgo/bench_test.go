package grpcgo_test

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// BenchmarkHop is one successful request, root → A → B over 127.0.0.1,
// with errown on A (its server and its ClientConn to B) and B, and
// without; with an application interceptor inside errown's on A's
// ClientConn, and AttemptsInterceptor below it.
func BenchmarkHop(b *testing.B) {
	passThrough := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	for _, tt := range []struct {
		name  string
		cfg   *errown.Config
		inner []grpc.UnaryClientInterceptor
	}{{"plain", nil, nil}, {"errown", noPolicy(), nil}, {"errown/inner", noPolicy(), []grpc.UnaryClientInterceptor{passThrough}}} {
		b.Run(tt.name, func(b *testing.B) {
			leaf := startGRPC(b, nodeConfig{name: _b, errown: tt.cfg})
			a := startGRPC(b, nodeConfig{name: _a, errown: tt.cfg, callee: leaf, inner: tt.inner})
			client := dial(b, "root", a, nil, nodeConfig{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
