package grpcgo_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A handler that forwards its incoming metadata to its own calls (a
// proxy, say) forwards its caller's attempt header too: errown's client
// interceptor replaces it with its own attempt number, never sends two
// values (yarpc's gRPC inbound refuses a key sent twice), and tells the
// callee that an errown caller reads its telemetry. In the steady state a
// request comes unmarked, so there is nothing to forward, and errown sends
// the handler's call as it is.
func TestAttemptHeaderReplaced(t *testing.T) {
	var (
		mu   sync.Mutex
		seen [][]string
	)
	c := startGRPC(t, nodeConfig{name: _c, handler: func(ctx context.Context, _ *node) error {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, md.Get("errown-attempt"))
		return nil
	}})
	b := startGRPC(t, nodeConfig{name: _b, errown: noPolicy(), callee: c, handler: func(ctx context.Context, n *node) error {
		in, _ := metadata.FromIncomingContext(ctx)
		if _, err := n.client.Check(metadata.NewOutgoingContext(ctx, in), &healthpb.HealthCheckRequest{}); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "own failure, after C answered")
	}})
	a := startGRPC(t, nodeConfig{name: _a, errown: retrying(_b), callee: b})
	seenNow := func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}

	// The onset: A's first attempt goes unmarked (A's procedure is in no
	// incident yet), so B's call forwards no attempt header and goes
	// unmarked too; A's retry, "2", is marked, and B's call for it
	// carries "1", not the "2" it forwarded.
	r := callRoot(t, a)
	assert.Equal(t, codes.Unavailable, r.code, "onset: root code (trailer %v)", r.trailer)
	assert.Equal(t, _unclaimed, r.get(_claimHeader), "onset: root claim (trailer %v)", r.trailer)
	assert.Equal(t, [][]string{nil, {"1"}}, seenNow(), "onset: C saw attempt headers")
	assert.Equal(t, int64(1), b.counter("inbound.retried", nil), "onset: B's inbound.retried (A's second attempt)")

	// In the incident: B served A's two attempts, "1" and "2", both
	// marked; each of B's calls to C is a first attempt, whatever B
	// forwarded.
	r = callRoot(t, a)
	assert.Equal(t, codes.Unavailable, r.code, "root code (trailer %v)", r.trailer)
	assert.Equal(t, _unclaimed, r.get(_claimHeader), "root claim (trailer %v)", r.trailer)
	assert.Equal(t, [][]string{nil, {"1"}, {"1"}, {"1"}}, seenNow(), "C saw attempt headers")
	assert.Equal(t, int64(2), b.counter("inbound.retried", nil), "B's inbound.retried (A's second attempts)")
}

// Pinned: in the steady state errown sends a call as the application made
// it, so an attempt header the handler set itself (not forwarded: its
// request came unmarked) goes through as it was set, where errown used to
// replace it with "1". Once the call is marked, errown's own value
// replaces it.
func TestAttemptHeaderSetByCallerSteadyState(t *testing.T) {
	var (
		mu   sync.Mutex
		seen [][]string
	)
	c := startGRPC(t, nodeConfig{name: _c, handler: func(ctx context.Context, _ *node) error {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, md.Get("errown-attempt"))
		return nil
	}}) // no errown: it only records
	b := startGRPC(t, nodeConfig{name: _b, errown: noPolicy(), callee: c, handler: func(ctx context.Context, n *node) error {
		_, err := n.client.Check(metadata.AppendToOutgoingContext(ctx, "errown-attempt", "7"), &healthpb.HealthCheckRequest{})
		return err
	}})
	assert.Equal(t, codes.OK, callRoot(t, b).code, "unmarked: root code")
	r := callRoot(t, b, grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(metadata.AppendToOutgoingContext(ctx, "errown-attempt", "1"), method, req, reply, cc, opts...)
	}))
	assert.Equal(t, codes.OK, r.code, "marked: root code (trailer %v)", r.trailer)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, [][]string{{"7"}, {"1"}}, seen, "C saw attempt headers: B's own, then errown's")
}
