package e2e_test

import (
	"context"
	"maps"
	"testing"

	"github.com/errown/errown"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/uber-go/tally/v4"
)

// Retries errown does not own: the application keeps its own blind retry
// middleware (retryOnce: two attempts, whatever the response says) in its
// yarpc.Config, inside errown's, at every hop of A→B→C→D, D failing every
// call. errown's innermost step, below the application's middleware, sees
// every attempt and holds the application's retries to errown's rules:
//
//   - C→D: errown's first attempt fails (D claims); retryOnce sends it
//     again, which the policy (two attempts) allows: D serves 2. errown's
//     own retry is then out of attempts. C's error is unclaimed.
//   - B→C: C's error is unclaimed; retryOnce's replay is refused before it
//     leaves B (retry.denied reason foreign-unclaimed), retryOnce gets C's
//     response back, errown suppresses its own retry: C serves 1.
//   - A→B likewise: B serves 1.
//
// Without the innermost step D served 16 per root request (2 attempts of
// retryOnce inside 2 of errown's at C, and retryOnce's replays above).
func TestForeignRetriesHeldToErrownsRules(t *testing.T) {
	served := map[string]int64{_a: 1, _b: 1, _c: 1, _d: 2}
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			mesh := errowntest.NewMesh(t)
			nodes := make(map[string]*stormNode)
			start := func(name string, h errowntest.Handler, callees ...string) {
				nodes[name] = newStormNode()
				mesh.Start(errowntest.ServiceConfig{
					Name: name, Transport: tr, Errown: stormConfig(retry.ModeEnforce, callees...), ErrownOptions: nodes[name].options(),
					ExtraOutbound: retryOnce{}, Callees: callees, Handler: h,
				})
			}
			start(_d, fail(_d))
			start(_c, errowntest.Forward, _d)
			start(_b, errowntest.Forward, _c)
			start(_a, errowntest.Forward, _b)

			for i := range _stormRoots {
				before := servedBy(mesh, _a, _b, _c, _d)
				reply := mesh.Call(callCtx(t), _a, []byte("storm"))
				assert.Equal(t, _unavail, reply.Code(), "root request %d: outside caller's code (claim %q, %v)", i, reply.Claim, reply.Err)
				assert.Equal(t, _unclaimed, reply.Claim, "root request %d: outside caller's claim (code %v, %v)", i, reply.Code(), reply.Err)
				assert.Equal(t, served, servedSince(mesh, before), "root request %d: served", i)
			}

			for _, h := range []struct {
				caller, callee string
				counter        string
				tags           map[string]string
				want           int64
			}{
				{_c, _d, "foreign_attempts", nil, 1},
				{_c, _d, "attempts", nil, 0}, // errown's own retry had no attempt left
				{_b, _c, "denied", map[string]string{"reason": "foreign-unclaimed"}, 1},
				{_b, _c, "suppressed", nil, 1},
				{_a, _b, "denied", map[string]string{"reason": "foreign-unclaimed"}, 1},
				{_a, _b, "suppressed", nil, 1},
				{_b, _c, "foreign_attempts", nil, 0},
			} {
				tags := map[string]string{"callee": h.callee}
				maps.Copy(tags, h.tags)
				assert.Equal(t, h.want*_stormRoots, counterValue(nodes[h.caller].scope, "errown.retry."+h.counter, tags), "%s's retry.%s%v", h.caller, h.counter, tags)
			}

			// The root's storm figures count every attempt that left a
			// process: 5 served (A 1, B 1, C 1, D 2), one retry, radius 1.
			m := nodes[_a].rootMetrics()
			assert.Equal(t, int64(_stormRoots), m.Requests, "A's root storm metrics %+v: requests", m)
			assert.Equal(t, int64(_stormRoots), m.Retries, "A's root storm metrics %+v: retries", m)
			assert.Equal(t, map[float64]int64{1: _stormRoots}, m.Radius, "A's root storm metrics %+v: radius 1 each", m)
			for _, s := range nodes[_a].hooked() {
				assert.True(t, s.Known, "A's root storm: %+v, want known", s)
				assert.Equal(t, uint64(5), s.Served, "A's root storm: %+v, served", s)
				assert.Equal(t, uint64(1), s.Retries, "A's root storm: %+v, retries", s)
				assert.Equal(t, 1, s.Radius, "A's root storm: %+v, radius", s)
			}
		})
	}
}

// counterValue returns the value of the counter name with tags in scope's
// snapshot, 0 when it was never incremented.
func counterValue(scope tally.TestScope, name string, tags map[string]string) int64 {
	if c, ok := scope.Snapshot().Counters()[tally.KeyForPrefixedStringMap(name, tags)]; ok {
		return c.Value()
	}
	return 0
}

// loopForward is a Handler with a retry loop of its own: it calls its one
// callee up to three times while the call fails.
func loopForward(ctx context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
	var err error
	for range 3 {
		var res []byte
		if res, err = c.Call(ctx, c.Callees()[0], body); err == nil {
			return res, nil
		}
	}
	return nil, err
}

// A handler that loops over a client call: B calls C again after C's
// unclaimed failure (C retried D itself). errown counts each repeat in
// egress.repeated_after_unclaimed and logs the edge once; with
// refuseRepeats the repeats fail at once in B, unclaimed, and C serves one
// request per root request instead of three.
func TestHandlerRetryLoop(t *testing.T) {
	tests := []struct {
		name       string
		giveRefuse bool
		wantC      int64
	}{
		{name: "detected", wantC: 3},
		{name: "refused", giveRefuse: true, wantC: 1},
	}
	for _, tt := range tests {
		for _, tr := range _transports {
			t.Run(tt.name+"/"+tr, func(t *testing.T) {
				t.Parallel()
				mesh := errowntest.NewMesh(t)
				node := newStormNode()
				core, logs := observer.New(zapcore.WarnLevel)
				mesh.Start(errowntest.ServiceConfig{Name: _d, Transport: tr, Errown: withRetries(), Handler: fail(_d)})
				mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Errown: withRetries(_d), Callees: []string{_d}, Handler: errowntest.Forward})
				cfg := withRetries(_c)
				cfg.RefuseRepeats = tt.giveRefuse
				mesh.Start(errowntest.ServiceConfig{
					Name: _b, Transport: tr, Errown: cfg, ErrownOptions: append(node.options(), errown.WithLogger(zap.New(core))),
					Callees: []string{_c}, Handler: loopForward,
				})

				for i := range _stormRoots {
					before := servedBy(mesh, _b, _c, _d)
					reply := mesh.Call(callCtx(t), _b, []byte("loop"))
					assert.Equal(t, _unavail, reply.Code(), "root request %d: code (claim %q, %v)", i, reply.Claim, reply.Err)
					assert.Equal(t, _unclaimed, reply.Claim, "root request %d: claim (code %v, %v)", i, reply.Code(), reply.Err)
					want := map[string]int64{_b: 1, _c: tt.wantC, _d: 2 * tt.wantC}
					assert.Equal(t, want, servedSince(mesh, before), "root request %d: served", i)
				}
				assert.Equal(t, int64(2*_stormRoots), counterValue(node.scope, "errown.egress.repeated_after_unclaimed", nil), "B's egress.repeated_after_unclaimed")
				warned := logs.FilterMessageSnippet("called a procedure again after it failed unclaimed").All()
				if assert.Len(t, warned, 1, "warnings %v, want one naming %s", logs.All(), _c) {
					assert.Equal(t, _c, warned[0].ContextMap()["service"], "warnings %v, want one naming %s", logs.All(), _c)
				}
			})
		}
	}
}
