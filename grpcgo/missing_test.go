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
			// The first root request is the incident's onset, the
			// second is in it: they are served alike.
			for i := range 2 {
				r := callRoot(t, a)
				assert.Equal(t, codes.Unavailable, r.code, "root request %d: root code (trailer %v)", i, r.trailer)
				assert.Equal(t, tt.rootClaim, r.get(_claimHeader), "root request %d: root claim (trailer %v)", i, r.trailer)
			}
			want := make(map[string]int64, len(tt.served))
			for k, v := range tt.served {
				want[k] = 2 * v
			}
			assert.Equal(t, want, served(a, b, c), "served")
			calls := want[_b] // B makes one logical call per request
			assert.Equal(t, calls, b.counter("egress.failures", map[string]string{"claim": tt.bsClaim}), "B's failed calls with claim %s", tt.bsClaim)
			assert.Equal(t, int64(2), a.counter("egress.failures", map[string]string{"claim": tt.asClaim}), "A's failed calls with claim %s", tt.asClaim)
			assert.Equal(t, 2*tt.aRetried, a.counter("retry.attempts", map[string]string{"callee": _b}), "A's retries")
			// C runs no errown, so it says nothing of its storm: the
			// root's figures are unknown, never wrong. At the onset A's
			// call went unmarked, and so B's first request was a root
			// too, its figures unknown; after it, only A is a root.
			unknown := rootStorm(false, true, 0, 0, 0, 0, 0)
			assert.Equal(t, []inbound.Storm{atOnset(unknown), unknown}, a.rootStorms(), "A's root storms")
			assert.Equal(t, []inbound.Storm{atOnset(unknown)}, b.rootStorms(), "B's root storms: the onset's only")
		})
	}
}
