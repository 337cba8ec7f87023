package e2e_test

import (
	"context"
	"maps"
	"testing"

	"github.com/errown/errown"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/errown/errown/fxtest"
	"github.com/errown/errown/retry"
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
			mesh := fxtest.NewMesh(t)
			nodes := make(map[string]*stormNode)
			start := func(name string, h fxtest.Handler, callees ...string) {
				nodes[name] = newStormNode()
				mesh.Start(fxtest.ServiceConfig{
					Name: name, Transport: tr, Errown: stormConfig(retry.ModeEnforce, callees...), ErrownOptions: nodes[name].options(),
					ExtraOutbound: retryOnce{}, Callees: callees, Handler: h,
				})
			}
			start(_d, fail(_d))
			start(_c, fxtest.Forward, _d)
			start(_b, fxtest.Forward, _c)
			start(_a, fxtest.Forward, _b)

			for i := range _stormRoots {
				before := servedBy(mesh, _a, _b, _c, _d)
				reply := mesh.Call(callCtx(t), _a, []byte("storm"))
				if reply.Code() != _unavail || reply.Claim != _unclaimed {
					t.Errorf("root request %d: outside caller got code %v claim %q, want %v %q (%v)", i, reply.Code(), reply.Claim, _unavail, _unclaimed, reply.Err)
				}
				if got := servedSince(mesh, before); !maps.Equal(got, served) {
					t.Errorf("root request %d: served %v, want %v", i, got, served)
				}
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
				if got := counterValue(nodes[h.caller].scope, "errown.retry."+h.counter, tags); got != h.want*_stormRoots {
					t.Errorf("%s's retry.%s%v: got %d, want %d", h.caller, h.counter, tags, got, h.want*_stormRoots)
				}
			}

			// The root's storm figures count every attempt that left a
			// process: 5 served (A 1, B 1, C 1, D 2), one retry, radius 1.
			m := nodes[_a].rootMetrics()
			if m.Requests != _stormRoots || m.Retries != _stormRoots || !maps.Equal(m.Radius, map[float64]int64{1: _stormRoots}) {
				t.Errorf("A's root storm metrics: %+v, want %d requests, %d retries, radius 1 each", m, _stormRoots, _stormRoots)
			}
			for _, s := range nodes[_a].hooked() {
				if !s.Known || s.Served != 5 || s.Retries != 1 || s.Radius != 1 {
					t.Errorf("A's root storm: %+v, want known, served 5, 1 retry, radius 1", s)
				}
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
func loopForward(ctx context.Context, c *fxtest.Client, body []byte) ([]byte, error) {
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
				mesh := fxtest.NewMesh(t)
				node := newStormNode()
				core, logs := observer.New(zapcore.WarnLevel)
				mesh.Start(fxtest.ServiceConfig{Name: _d, Transport: tr, Errown: withRetries(), Handler: fail(_d)})
				mesh.Start(fxtest.ServiceConfig{Name: _c, Transport: tr, Errown: withRetries(_d), Callees: []string{_d}, Handler: fxtest.Forward})
				cfg := withRetries(_c)
				cfg.RefuseRepeats = tt.giveRefuse
				mesh.Start(fxtest.ServiceConfig{
					Name: _b, Transport: tr, Errown: cfg, ErrownOptions: append(node.options(), errown.WithLogger(zap.New(core))),
					Callees: []string{_c}, Handler: loopForward,
				})

				for i := range _stormRoots {
					before := servedBy(mesh, _b, _c, _d)
					reply := mesh.Call(callCtx(t), _b, []byte("loop"))
					if reply.Code() != _unavail || reply.Claim != _unclaimed {
						t.Errorf("root request %d: got code %v claim %q, want %v %q (%v)", i, reply.Code(), reply.Claim, _unavail, _unclaimed, reply.Err)
					}
					want := map[string]int64{_b: 1, _c: tt.wantC, _d: 2 * tt.wantC}
					if got := servedSince(mesh, before); !maps.Equal(got, want) {
						t.Errorf("root request %d: served %v, want %v", i, got, want)
					}
				}
				if got := counterValue(node.scope, "errown.egress.repeated_after_unclaimed", nil); got != 2*_stormRoots {
					t.Errorf("B's egress.repeated_after_unclaimed = %d, want %d", got, 2*_stormRoots)
				}
				warned := logs.FilterMessageSnippet("called a procedure again after it failed unclaimed").All()
				if len(warned) != 1 || warned[0].ContextMap()["service"] != _c {
					t.Errorf("warnings %v, want one naming %s", logs.All(), _c)
				}
			})
		}
	}
}
