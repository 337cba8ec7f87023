package grpcgo_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A handler that forwards its incoming metadata to its own calls (a
// proxy, say) forwards its caller's attempt header too: errown's client
// interceptor replaces it with its own attempt number, never sends two
// values (yarpc's gRPC inbound refuses a key sent twice), and tells the
// callee that an errown caller reads its telemetry.
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
	if r := callRoot(t, a); r.code != codes.Unavailable || r.get(_claimHeader) != _unclaimed {
		t.Errorf("root got %v, trailer %v; want unavailable, unclaimed", r.code, r.trailer)
	}
	// B served A's two attempts, "1" and "2"; each of B's calls to C is
	// a first attempt.
	if want := [][]string{{"1"}, {"1"}}; !slices.EqualFunc(seen, want, slices.Equal) {
		t.Errorf("C saw attempt headers %q, want %q", seen, want)
	}
	if got := b.counter("inbound.retried", nil); got != 1 {
		t.Errorf("B's inbound.retried = %d, want 1 (A's second attempt)", got)
	}
}
