package stormsim

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPartialScenarioSmall runs the partial scenario at the size of its
// tests under four arms and checks its machinery by counts, not times:
// round robin sends a third of the calls to the bad instance, so that
// without retries a third of the root requests fail; retries add calls
// at C; and every figure is the comparison it names, of the runs it
// names, judged as it says (PASS or FAIL, whatever errown's figures).
func TestPartialScenarioSmall(t *testing.T) {
	arms := PartialArms()
	byName := make(map[string]Arm)
	for _, a := range arms {
		byName[a.Name] = a
	}
	s := PartialScenario([]Arm{byName[ArmNone], byName[ArmRetries], byName[ArmFailsafe], byName[ArmErrown]})
	rep, err := s.Run(context.Background(), ScenarioOptions{Small: true, Seed: 1})
	require.NoError(t, err)

	run := func(group, arm string) RunReport {
		r := partialRun(rep.Runs, group, arm)
		require.NotNil(t, r, "%s: %s", group, arm)
		return *r
	}
	for _, row := range _partialRows {
		none := run(row.group, ArmNone)
		n := none.Result.Requests
		// Round robin over three instances: every third call of B's (or
		// the client's) reaches the bad one, whatever the interleaving;
		// the warm-up's calls shift the phase by one at most.
		assert.InDelta(t, float64(n)/3, float64(none.Result.Failed), 2, "%s: no retries: a third fail", row.group)
		retries := run(row.group, ArmRetries)
		assert.Greater(t, retries.Availability(), none.Availability(), "%s: retries mend failures", row.group)
		assert.Greater(t, retries.Load("C"), none.Load("C"), "%s: retries add calls at C", row.group)
		if row.group == "B fails" {
			// A's retries reach B again, B's calls at C with them (but
			// for a call a loaded machine times out before C serves it).
			assert.InDelta(t, retries.Load("B"), retries.Load("C"), 3/float64(n), "%s: one call at C per call at B", row.group)
		}
	}

	figures := make(map[string]Figure, len(rep.Figures))
	for _, f := range rep.Figures {
		figures[f.Name] = f
		switch f.Check {
		case CheckAtLeast:
			assert.Equal(t, f.Value >= f.Reference-f.Tolerance-1e-9, f.Pass, "%s: %v at least %v - %v", f.Name, f.Value, f.Reference, f.Tolerance)
		case CheckAtMost:
			assert.Equal(t, f.Value <= f.Reference+f.Tolerance+1e-9, f.Pass, "%s: %v at most %v + %v", f.Name, f.Value, f.Reference, f.Tolerance)
		default:
			t.Errorf("%s: judged by %q, want at least or at most", f.Name, f.Check)
		}
	}
	find := func(prefix string) Figure {
		for name, f := range figures {
			if strings.HasPrefix(name, prefix) {
				return f
			}
		}
		t.Fatalf("no figure %q in %v", prefix, rep.Figures)
		return Figure{}
	}
	for _, row := range _partialRows {
		e, retries, fs := run(row.group, ArmErrown), run(row.group, ArmRetries), run(row.group, ArmFailsafe)
		avail := func(r RunReport) float64 {
			return 100 * float64(r.Result.Requests-r.Result.Failed) / float64(r.Result.Requests)
		}
		f := find(row.group + ": errown's availability %, at least every hop retrying's")
		assert.InDelta(t, avail(e), f.Value, 1e-9, f.Name)
		assert.InDelta(t, avail(retries)-_partialMargin, f.Reference, 1e-9, f.Name)
		f = find(row.group + ": errown's availability %, at least failsafe-go's")
		assert.InDelta(t, avail(e), f.Value, 1e-9, f.Name)
		assert.InDelta(t, avail(fs), f.Reference, 1e-9, f.Name)
		f = find(row.group + ": errown's calls at C per root request")
		assert.InDelta(t, float64(e.Result.Node("C").Served)/float64(e.Result.Requests), f.Value, 1e-9, f.Name)
		assert.InDelta(t, float64(retries.Result.Node("C").Served)/float64(retries.Result.Requests), f.Reference, 1e-9, f.Name)
	}
	for _, b := range _partialBases {
		e := run(fmt.Sprintf("base %v%%", b.base), ArmErrown)
		none := float64(e.Result.Requests) * (1 - b.base/100)
		// Independent draws: errown's one retry mends failures, it adds
		// none (at most the draws' own spread above the base's).
		assert.LessOrEqual(t, float64(e.Result.Failed), none+4*math.Sqrt(none)+1, "base %v%%", b.base)
		if b.target == 0 {
			continue
		}
		f := find(fmt.Sprintf("independent failures, base %v%%:", b.base))
		assert.InDelta(t, 100*e.Availability(), f.Value, 1e-9, f.Name)
		assert.Equal(t, b.target, f.Reference, f.Name)
		assert.Greater(t, f.Tolerance, 0.0, f.Name)
	}
	f := find("chain (D failing every call)")
	assert.InDelta(t, 1.1, f.Value, 0.011, "the chain's bound: D and below serve 1 + 10%% under errown")
	assert.True(t, f.Pass, f.Name)

	assert.Len(t, rep.Figures, 3*len(_partialRows)+3+1)
	for _, row := range _partialRows {
		assert.Contains(t, strings.Join(rep.Notes, "\n"), row.group+": "+row.what)
	}
}

func TestFigureAtLeast(t *testing.T) {
	assert.True(t, Figure{Value: 91}.atLeast(91, "").judge().Pass)
	assert.True(t, Figure{Value: 90.5}.atLeast(91, "").tolerance(0.5).judge().Pass)
	assert.False(t, Figure{Value: 90.4}.atLeast(91, "").tolerance(0.5).judge().Pass)
	assert.False(t, Figure{Value: math.NaN()}.atLeast(91, "").judge().Pass, "NaN is not at least anything")
}

func TestRunInstancesNeedYARPC(t *testing.T) {
	for _, tr := range []string{TransportGRPCGo, TransportNetHTTP} {
		_, err := Run(context.Background(), Options{Topology: mustTopology("partial"), Policy: PolicyNaive, Attempts: 2, Budget: 0.1, Requests: 1, Transport: tr})
		require.Error(t, err, tr)
		assert.Contains(t, err.Error(), "C: a "+tr+" node runs one instance; instances need a yarpc transport, got 3")
	}
}
