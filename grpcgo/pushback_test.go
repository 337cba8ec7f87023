package grpcgo_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/inbound"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A callee's grpc-retry-pushback-ms that grpc-go would not retry on (a
// negative or garbled value, or several) stops errown's retry at the
// hop next to it, and satisfies the retry criteria: nobody above
// retries. A non-negative value is no pushback: the retry goes.
func TestPushback(t *testing.T) {
	for _, tt := range []struct {
		name    string
		values  []string
		refused bool
	}{
		{"negative", []string{"-1"}, true},
		{"garbled", []string{"soon"}, true},
		{"several", []string{"10", "20"}, true},
		{"delay", []string{"5"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := startGRPC(t, nodeConfig{name: _c, handler: func(ctx context.Context, _ *node) error {
				_ = grpc.SetTrailer(ctx, metadata.MD{"grpc-retry-pushback-ms": tt.values})
				return status.Error(codes.Unavailable, "busy")
			}}) // a plain grpc-go service: no errown
			b := startGRPC(t, nodeConfig{name: _b, errown: retrying(_c), callee: c})
			a := startGRPC(t, nodeConfig{name: _a, errown: retrying(_b), callee: b})
			r := callRoot(t, a)
			want := map[string]int64{_a: 1, _b: 1, _c: 2}
			var denied int64
			if tt.refused {
				want[_c], denied = 1, 1
			}
			assert.Equal(t, want, served(a, b, c), "served")
			assert.Equal(t, codes.Unavailable, r.code, "root code (trailer %v)", r.trailer)
			assert.Equal(t, _unclaimed, r.get(_claimHeader), "root claim (trailer %v)", r.trailer)
			assert.Equal(t, denied, b.counter("retry.denied", map[string]string{"callee": _c, "reason": "pushback"}), "B's retry.denied{reason=pushback}")
			assert.Equal(t, int64(1), a.counter("retry.suppressed", map[string]string{"callee": _b}), "A's retry.suppressed")
		})
	}
}

// _grpcRetry is a service config under which grpc-go itself retries
// Health/Check up to three attempts on unavailable.
const _grpcRetry = `{"methodConfig": [{
	"name": [{"service": "grpc.health.v1.Health"}],
	"retryPolicy": {
		"maxAttempts": 3,
		"initialBackoff": "0.001s",
		"maxBackoff": "0.001s",
		"backoffMultiplier": 1,
		"retryableStatusCodes": ["UNAVAILABLE"]
	}
}]}`

// inbound.DoNotRetry on a grpc-go service also speaks gRPC's pushback: a
// caller without errown whose grpc-go retryPolicy would retry does not.
func TestDoNotRetrySpeaksGRPCPushback(t *testing.T) {
	for _, tt := range []struct {
		name       string
		doNotRetry bool
		served     int64
	}{
		{"pushback", true, 1},
		{"control: grpc-go retries", false, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := startGRPC(t, nodeConfig{name: _c, errown: noPolicy(), handler: func(ctx context.Context, _ *node) error {
				if tt.doNotRetry {
					inbound.DoNotRetry(ctx)
				}
				return status.Error(codes.Unavailable, "busy")
			}})
			r := callRoot(t, c, grpc.WithDefaultServiceConfig(_grpcRetry))
			assert.Equal(t, tt.served, c.served.Load(), "served")
			want := map[string]string{_claimHeader: _claimed, _noRetryHeader: "", "grpc-retry-pushback-ms": ""}
			if tt.doNotRetry {
				want[_noRetryHeader], want["grpc-retry-pushback-ms"] = "true", "-1"
			}
			for k, v := range want {
				assert.Equal(t, v, r.get(k), "trailer %s (%v)", k, r.trailer)
			}
		})
	}
}

// With renamed headers, WithConfig tells the interceptors the names
// errown.Middleware keeps to itself: the attempt header (B is no root once
// A's calls are marked) and the no-retry header (C's gRPC pushback is
// translated to it).
func TestWithConfigRenamedHeaders(t *testing.T) {
	renamed := func(cfg *errown.Config) *errown.Config {
		cfg.Headers.Attempt, cfg.Headers.NoRetry = "x-attempt", "x-no-retry"
		return cfg
	}
	var (
		mu       sync.Mutex
		attempts [][]string // C's x-attempt, then errown-attempt, headers, per request
	)
	c := startGRPC(t, nodeConfig{name: _c, handler: func(ctx context.Context, _ *node) error {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		attempts = append(attempts, md.Get("x-attempt"), md.Get("errown-attempt"))
		mu.Unlock()
		_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", "-1"))
		return status.Error(codes.Unavailable, "busy")
	}}) // no errown: only gRPC's pushback
	var nodes []*node
	callee := c
	for _, name := range []string{_b, _a} {
		cfg := renamed(retrying(callee.name))
		opts := []grpcgo.Option{grpcgo.WithConfig(*cfg)}
		callee = startGRPC(t, nodeConfig{name: name, errown: cfg, callee: callee, serverOptions: opts, clientOptions: opts})
		nodes = append(nodes, callee)
	}
	b, a := nodes[0], nodes[1]
	seen := func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(attempts)
	}
	unknown := rootStorm(false, true, 0, 0, 0, 0, 0) // C runs no errown

	// The onset: A's call goes unmarked (no incident yet), so B's request
	// is a root, and B's call to C unmarked too.
	r := callRoot(t, a)
	assert.Equal(t, map[string]int64{_a: 1, _b: 1, _c: 1}, served(a, b, c), "onset: served")
	assert.Equal(t, codes.Unavailable, r.code, "onset: root code (trailer %v)", r.trailer)
	assert.Equal(t, _unclaimed, r.get(_claimHeader), "onset: root claim (trailer %v)", r.trailer)
	assert.Equal(t, int64(1), b.counter("retry.denied", map[string]string{"callee": _c, "reason": "pushback"}), "onset: B's retry.denied{reason=pushback}")
	assert.Equal(t, [][]string{nil, nil}, seen(), "onset: C's attempt headers")
	assert.Equal(t, []inbound.Storm{atOnset(unknown)}, b.rootStorms(), "onset: B's root storms")
	assert.Equal(t, []inbound.Storm{atOnset(unknown)}, a.rootStorms(), "onset: A's root storms")

	// In the incident A's call is marked by the renamed header: B reads
	// it, is no root, and marks its own call to C by that name too.
	r = callRoot(t, a)
	assert.Equal(t, map[string]int64{_a: 2, _b: 2, _c: 2}, served(a, b, c), "served")
	assert.Equal(t, codes.Unavailable, r.code, "root code (trailer %v)", r.trailer)
	assert.Equal(t, _unclaimed, r.get(_claimHeader), "root claim (trailer %v)", r.trailer)
	assert.Equal(t, int64(2), b.counter("retry.denied", map[string]string{"callee": _c, "reason": "pushback"}), "B's retry.denied{reason=pushback}")
	assert.Equal(t, [][]string{nil, nil, {"1"}, nil}, seen(), "C's attempt headers")
	assert.Equal(t, []inbound.Storm{atOnset(unknown)}, b.rootStorms(), "B is no root but reported storms")
	assert.Equal(t, []inbound.Storm{atOnset(unknown), unknown}, a.rootStorms(), "A's root storms")
}
