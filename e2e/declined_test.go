package e2e_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	errownwire "github.com/errown/errown/internal/wire"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/uber-go/tally/v4"
)

// declining is an errown config whose one policy, for callee, is policy
// with the tiny backoff of every other policy of these tests.
func declining(callee string, policy retry.PolicyConfig) *errown.Config {
	cfg := withRetries()
	policy.Service = callee
	policy.MaxAttempts = 2
	policy.InitialBackoff, policy.MaxBackoff = _tiny, _tiny
	cfg.Retry.Policies = []retry.PolicyConfig{policy}
	return cfg
}

// deniedCounters returns retry.denied per reason for callee, as counted
// in scope, for every reason a retry can be refused.
func deniedCounters(scope tally.TestScope, callee string) map[string]int64 {
	counters := scope.Snapshot().Counters()
	denied := make(map[string]int64)
	for _, r := range errownwire.Refusals() {
		key := tally.KeyForPrefixedStringMap("errown.retry.denied", map[string]string{"callee": callee, "reason": r.String()})
		if c, ok := counters[key]; ok {
			denied[r.String()] = c.Value()
		}
	}
	return denied
}

// A→B→C→D, D fails with unavailable, A and B have a policy of two attempts
// for their callee, and C declines to retry D on its own authority: its
// policy for D says the procedure is not idempotent, or does not list
// unavailable among its retryable codes, or the body C sends is over C's
// replay cap; or C has no policy for D at all but D pushes back (the
// no-retry header, read with or without a policy).
//
// The hop nearest the failure has decided: its refusal satisfies the
// retry criteria, C unclaims, and nobody above replays C's subtree. For
// each root request D, C and B serve exactly one request each, the root
// sees unavailable unclaimed, and C counts the refusal in retry.denied
// under its reason (pushback without a policy has no retry metrics to
// count in).
func TestDeclinedRetryStopsAbove(t *testing.T) {
	const (
		roots = 3
		// bodyCap is C's maxBodyBytes in the body-too-large case; the
		// root's body, which every node forwards, is four times that.
		bodyCap = 256
	)
	type refusal struct {
		// c is C's errown config, d D's handler, body the root's
		// request body.
		c    func() *errown.Config
		d    errowntest.Handler
		body []byte
		// reason is C's retry.denied tag; "" when C counts nothing.
		reason string
	}
	refusals := []struct {
		name string
		give refusal
	}{
		{
			name: "not-idempotent",
			give: refusal{
				c:      func() *errown.Config { return declining(_d, retry.PolicyConfig{Idempotent: new(false)}) },
				d:      fail(_d),
				reason: errownwire.RefusedNotIdempotent.String(),
			},
		},
		{
			name: "code-not-listed",
			give: refusal{
				c: func() *errown.Config {
					return declining(_d, retry.PolicyConfig{RetryableCodes: []string{"internal"}, Idempotent: new(true)})
				},
				d:      fail(_d),
				reason: errownwire.RefusedCode.String(),
			},
		},
		{
			name: "body-too-large",
			give: refusal{
				c: func() *errown.Config {
					cfg := withRetries(_d)
					cfg.Retry.MaxBodyBytes = bodyCap
					return cfg
				},
				d:      fail(_d),
				body:   bytes.Repeat([]byte("x"), 4*bodyCap),
				reason: errownwire.RefusedBodyTooLarge.String(),
			},
		},
		{
			name: "pushback-without-policy",
			give: refusal{
				c: func() *errown.Config { return withRetries() }, // no policy at all
				d: pushBack,
			},
		},
	}
	round := []string{
		attempt(_c, _d, 1, _claimed),
		attempt(_b, _c, 1, _unclaimed),
		attempt(_a, _b, 1, _unclaimed),
		attempt(_outside, _a, 1, _unclaimed),
	}
	want := result{
		Code:     _unavail,
		Claim:    _unclaimed,
		Served:   map[string]int64{_a: roots, _b: roots, _c: roots, _d: roots},
		Attempts: slices.Concat(slices.Repeat([][]string{round}, roots)...),
	}
	for _, rf := range refusals {
		for _, tr := range _transports {
			t.Run(tr+"/"+rf.name, func(t *testing.T) {
				t.Parallel()
				scope := tally.NewTestScope("", nil)
				mesh := errowntest.NewMesh(t)
				mesh.Start(errowntest.ServiceConfig{Name: _d, Transport: tr, Errown: withRetries(), Handler: rf.give.d})
				mesh.Start(errowntest.ServiceConfig{
					Name: _c, Transport: tr, Errown: rf.give.c(), ErrownOptions: []errown.Option{errown.WithScope(scope)},
					Callees: []string{_d}, Handler: errowntest.Forward,
				})
				mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tr, Errown: withRetries(_c), Callees: []string{_c}, Handler: errowntest.Forward})
				mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tr, Errown: withRetries(_b), Callees: []string{_b}, Handler: errowntest.Forward})

				var reply errowntest.Reply
				for i := range roots {
					reply = mesh.Call(callCtx(t), _a, rf.give.body)
					assert.Equal(t, _unavail, reply.Code(), "root request %d: outside caller's code (claim %q, %v)", i, reply.Claim, reply.Err)
					assert.Equal(t, _unclaimed, reply.Claim, "root request %d: outside caller's claim (code %v, %v)", i, reply.Code(), reply.Err)
				}

				assertResult(t, want, observe(mesh, reply, _a, _b, _c, _d))
				wantDenied := map[string]int64{}
				if rf.give.reason != "" {
					for _, r := range errownwire.Refusals() {
						wantDenied[r.String()] = 0
					}
					wantDenied[rf.give.reason] = roots
				}
				assert.Equal(t, wantDenied, deniedCounters(scope, _d), "C's retry.denied for D by reason")
			})
		}
	}
}
