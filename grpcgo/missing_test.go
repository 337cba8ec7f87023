package grpcgo_test

import (
	"testing"

	"github.com/errown/errown/inbound"
	"github.com/stretchr/testify/assert"
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
			assert.Equal(t, tt.served, served(a, b, c), "served")
			assert.Equal(t, codes.Unavailable, r.code, "root code (trailer %v)", r.trailer)
			assert.Equal(t, tt.rootClaim, r.get(_claimHeader), "root claim (trailer %v)", r.trailer)
			calls := tt.served[_b] // B makes one logical call per request
			assert.Equal(t, calls, b.counter("egress.failures", map[string]string{"claim": tt.bsClaim}), "B's failed calls with claim %s", tt.bsClaim)
			assert.Equal(t, int64(1), a.counter("egress.failures", map[string]string{"claim": tt.asClaim}), "A's failed calls with claim %s", tt.asClaim)
			assert.Equal(t, tt.aRetried, a.counter("retry.attempts", map[string]string{"callee": _b}), "A's retries")
			// C runs no errown, so it says nothing of its storm: the
			// root's figures are unknown, never wrong.
			assert.Equal(t, []inbound.Storm{rootStorm(false, true, 0, 0, 0, 0, 0)}, a.rootStorms(), "A's root storms")
		})
	}
}
