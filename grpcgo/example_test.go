package grpcgo_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/grpcgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Two grpc-go services with errown, checkout calling payments, which
// fails: checkout retries payments once, and its caller sees the error
// unclaimed, so it does not retry again. Each service puts errown's server
// interceptor on its grpc.Server and DialOptions on the ClientConns it
// calls others with, all from one Middleware built from the same YAML a
// yarpc service reads.
func Example() {
	// payments: errown on its server; its handler fails.
	paymentsMW := startMiddleware(errown.Config{})
	defer paymentsMW.Stop()
	var paymentsServed atomic.Int64
	payments := serveHealth(paymentsMW, func(ctx context.Context) error {
		paymentsServed.Add(1)
		return status.Error(codes.Unavailable, "payments is down")
	})
	defer payments.Stop()

	// checkout: errown on its server and on its ClientConn to payments,
	// with a retry policy for payments.
	cfg, err := errown.ConfigFromYAML([]byte(`
retry:
  policies:
    - service: payments  # the name WithService gives the ClientConn's calls
      maxAttempts: 2
      idempotent: true
`))
	if err != nil {
		panic(err)
	}
	checkoutMW := startMiddleware(cfg)
	defer checkoutMW.Stop()
	toPayments := dialHealth(payments.addr, grpcgo.DialOptions(checkoutMW, grpcgo.WithService("payments"), grpcgo.WithConfig(cfg))...)
	defer toPayments.Close()
	checkout := serveHealth(checkoutMW, func(ctx context.Context) error {
		_, err := healthpb.NewHealthClient(toPayments).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	})
	defer checkout.Stop()

	// A caller of checkout, without errown.
	toCheckout := dialHealth(checkout.addr)
	defer toCheckout.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var trailer metadata.MD
	_, err = healthpb.NewHealthClient(toCheckout).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	fmt.Println(status.Code(err), trailer.Get("errown-claim"), paymentsServed.Load())
	// Output: Unavailable [unclaimed] 2
}

// An application keeps its own retry interceptor, which sends a failed
// call up to four times, inside errown's: errown's innermost step, which
// DialOptions chains after it, holds it to errown's policy of two
// attempts.
func ExampleWithInnerInterceptors() {
	var served atomic.Int64
	paymentsMW := startMiddleware(errown.Config{})
	defer paymentsMW.Stop()
	payments := serveHealth(paymentsMW, func(context.Context) error {
		served.Add(1)
		return status.Error(codes.Unavailable, "payments is down")
	})
	defer payments.Stop()

	cfg, err := errown.ConfigFromYAML([]byte(`
retry:
  policies:
    - service: payments
      maxAttempts: 2
      idempotent: true
`))
	if err != nil {
		panic(err)
	}
	mw := startMiddleware(cfg)
	defer mw.Stop()
	appRetry := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var err error
		for range 4 {
			if err = invoker(ctx, method, req, reply, cc, opts...); err == nil {
				return nil
			}
		}
		return err
	}
	toPayments := dialHealth(payments.addr, grpcgo.DialOptions(mw, grpcgo.WithService("payments"), grpcgo.WithInnerInterceptors(appRetry))...)
	defer toPayments.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(toPayments).Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(status.Code(err), served.Load())
	// Output: Unavailable 2
}

func startMiddleware(cfg errown.Config) *errown.Middleware {
	mw, err := errown.New(cfg)
	if err != nil {
		panic(err)
	}
	if err := mw.Start(); err != nil {
		panic(err)
	}
	return mw
}

type healthServing struct {
	*grpc.Server
	addr string
	done chan struct{}
}

func (s healthServing) Stop() {
	s.Server.Stop()
	<-s.done
}

// serveHealth serves grpc.health.v1.Health/Check with check on 127.0.0.1, with
// errown's interceptor.
func serveHealth(mw *errown.Middleware, check func(context.Context) error) healthServing {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s := healthServing{
		Server: grpc.NewServer(grpc.ChainUnaryInterceptor(grpcgo.UnaryServerInterceptor(mw))),
		addr:   l.Addr().String(),
		done:   make(chan struct{}),
	}
	healthpb.RegisterHealthServer(s.Server, checker{check: check})
	go func() {
		defer close(s.done)
		_ = s.Serve(l)
	}()
	return s
}

func dialHealth(addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	cc, err := grpc.NewClient("passthrough:///"+addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		panic(err)
	}
	return cc
}

type checker struct {
	healthpb.UnimplementedHealthServer
	check func(context.Context) error
}

func (c checker) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}
