package grpcgo_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/errown/errown/inbound"
	"google.golang.org/grpc/codes"
)

// The missing-claim rule with a plain grpc-go callee without errown: the
// first caller running errown that sees no claim retries once and passes
// the error on unclaimed; where that caller has no policy, its error
// stays claimed and the next caller up retries (at-least-once).
func TestMissingClaim(t *testing.T) {
	for _, tt := range []struct {
		name      string
		bConfig   func() *nodeConfig
		served    map[string]int64
		bsClaim   string // the claim B's errown saw on C's error
		asClaim   string // the claim A's errown saw on B's error
		aRetried  int64
		rootClaim string
	}{
		{
			name:    "retried by the first caller",
			bConfig: func() *nodeConfig { return &nodeConfig{name: _b, errown: retrying(_c)} },
			served:  map[string]int64{_a: 1, _b: 1, _c: 2},
			bsClaim: "missing", asClaim: _unclaimed, aRetried: 0, rootClaim: _unclaimed,
		},
		{
			name:    "at-least-once: the first caller has no policy",
			bConfig: func() *nodeConfig { return &nodeConfig{name: _b, errown: noPolicy()} },
			served:  map[string]int64{_a: 1, _b: 2, _c: 2},
			bsClaim: "missing", asClaim: _claimed, aRetried: 1, rootClaim: _unclaimed,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := startGRPC(t, nodeConfig{name: _c, work: failWith(codes.Unavailable)}) // no errown
			bc := tt.bConfig()
			bc.callee = c
			b := startGRPC(t, *bc)
			a := startGRPC(t, nodeConfig{name: _a, errown: retrying(_b), callee: b})
			r := callRoot(t, a)
			if got := served(a, b, c); !maps.Equal(got, tt.served) {
				t.Errorf("served %v, want %v", got, tt.served)
			}
			if r.code != codes.Unavailable || r.get(_claimHeader) != tt.rootClaim {
				t.Errorf("root got %v, trailer %v; want unavailable, claim %s", r.code, r.trailer, tt.rootClaim)
			}
			calls := tt.served[_b] // B makes one logical call per request
			if got := b.counter("egress.failures", map[string]string{"claim": tt.bsClaim}); got != calls {
				t.Errorf("B's failed calls with claim %s: %d, want %d", tt.bsClaim, got, calls)
			}
			if got := a.counter("egress.failures", map[string]string{"claim": tt.asClaim}); got != 1 {
				t.Errorf("A's failed calls with claim %s: %d, want 1", tt.asClaim, got)
			}
			if got := a.counter("retry.attempts", map[string]string{"callee": _b}); got != tt.aRetried {
				t.Errorf("A's retries: %d, want %d", got, tt.aRetried)
			}
			// C runs no errown, so it says nothing of its storm: the
			// root's figures are unknown, never wrong.
			if got, want := a.rootStorms(), []inbound.Storm{rootStorm(false, true, 0, 0, 0, 0, 0)}; !slices.Equal(got, want) {
				t.Errorf("A's root storms %+v, want %+v", got, want)
			}
		})
	}
}
