package e2e_test

import (
	"context"
	"testing"

	"github.com/errown/errown/e2e/internal/chaos"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/yarpcerrors"
)

// _observeRequests is each run's requests: one is 0.1 points.
const _observeRequests = 1000

// TestObservePredictsEnforce runs the same traffic and failures in
// observe mode, then in enforce mode, and holds observe mode's figures to
// what enforce then did: the users' requests enforce loses are the calls
// observe mode kept alive with a retry enforce would have held back
// (retry.would_suppress_succeeded), and the requests below the root that
// enforce no longer sends are what observe said it would prevent
// (storm.prevented).
func TestObservePredictsEnforce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two meshes per case; not in -short")
	}
	down := func(context.Context) error { return yarpcerrors.UnavailableErrorf("this call fails") }
	tests := []struct {
		name string
		cs   func(seed uint64) partialC
	}{
		{name: "one C instance of three fails every call", cs: func(uint64) partialC {
			return partialC{bad: down}
		}},
		{name: "every C call fails with probability 0.3", cs: func(seed uint64) partialC {
			src := chaos.NewSeeded(seed) // shared by C's instances, safe for them
			return partialC{every: true, bad: func(ctx context.Context) error {
				if float64(src.Next()>>11)/(1<<53) < 0.3 {
					return down(ctx)
				}
				return nil
			}}
		}},
		{name: "C down", cs: func(uint64) partialC { return partialC{every: true, bad: down} }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := func(mode retry.Mode) partialResult {
				cs := tt.cs(uint64(i + 1))
				cs.kind, cs.requests = testmesh.HTTP, _observeRequests
				return runPartial(t, partialArm{name: string(mode), errown: true, mode: mode}, cs)
			}
			observe, enforce := run(retry.ModeObserve), run(retry.ModeEnforce)
			below := func(r partialResult) float64 { return r.bPerRequest + r.cPerRequest } // requests below the root

			predictedLoss := float64(observe.counter("retry.would_suppress_succeeded")) / _observeRequests
			actualLoss := observe.availability - enforce.availability
			predictedBelow := below(observe) - float64(observe.counter("storm.prevented"))/_observeRequests
			t.Logf("%s: observe %.1f%% · %.2f below the root (%.2f at C) · would_suppress_succeeded %d · prevented %d; "+
				"enforce %.1f%% · %.2f below the root (%.2f at C) · prevented %d",
				tt.name, 100*observe.availability, below(observe), observe.cPerRequest,
				observe.counter("retry.would_suppress_succeeded"), observe.counter("storm.prevented"),
				100*enforce.availability, below(enforce), enforce.cPerRequest, enforce.counter("storm.prevented"))
			t.Logf("%s: users' loss predicted %.1f points, actual %.1f; requests below the root per request predicted %.2f, actual %.2f",
				tt.name, 100*predictedLoss, 100*actualLoss, predictedBelow, below(enforce))
			// With 0.3 failing, the loss enforce has and the loss observe
			// predicts, from two runs, differ by about 1.3 points (one
			// standard deviation, 1000 requests): held within 4.5.
			assert.InDelta(t, actualLoss, predictedLoss, 0.045,
				"users' loss: retry.would_suppress_succeeded in observe against what enforce lost")
			// storm.prevented counts the subtrees of suppressed retries;
			// the budget refuses more on top: observe's figure bounds the
			// load enforce keeps from above, and never predicts a rise.
			assert.GreaterOrEqual(t, predictedBelow, below(enforce)-0.05, "requests below the root: observe's prediction bounds enforce's")
			assert.LessOrEqual(t, below(enforce), below(observe)+0.05, "enforce sends no more below the root than observe")
		})
	}
}
