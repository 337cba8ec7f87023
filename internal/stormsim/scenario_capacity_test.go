package stormsim

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// capacityRun is a measured run of the capacity scenario with the given
// summary figures (recovery nil: not recovered).
func capacityRun(group, arm string, recovery *float64, during float64, sentDuring int, perOffered float64) RunReport {
	return RunReport{Label: group + ": " + arm, Group: group, Result: &Result{Timeline: &Timeline{
		BinMS: 250,
		Summary: Summary{
			Constrained: "D", RecoveryS: recovery, RecoveryHorizonS: 5,
			GoodputBefore: 1, GoodputDuring: during, GoodputAfter: 0.9, SentDuring: sentDuring,
			ArrivalsPerOffered: perOffered, ArrivalsPerRequest: perOffered,
		},
	}}}
}

func seconds_(v float64) *float64 { return &v }

func TestCapacityFigures(t *testing.T) {
	// The serve variant, judged on made-up figures: every hop retrying
	// never recovers (a: PASS), errown recovers after 0.5s (b: PASS), but
	// later than the budget by more than a bin (b: FAIL); its goodput
	// during the trigger is under the budget's by more than the noise
	// (c: FAIL); D gets 1.05 of its offered load under errown (d: PASS).
	//
	// Beside them: the fixed-limit oracle served 0.2 during the trigger,
	// twice errown's (g: FAIL); failsafe-go's goodput after the trigger,
	// 0.95, beats errown's 0.9 by more than the noise (h: FAIL); errown's
	// admission shed 3 requests in the bins before the trigger at 1s (i:
	// FAIL), and 7 more during it, which (i) does not count.
	runs := []RunReport{
		capacityRun("serve", ArmRetries, nil, 0, 480, 2.3),
		capacityRun("serve", ArmBudget, seconds_(0), 0.20, 480, 1.3),
		capacityRun("serve", ArmFailsafe, seconds_(0.25), 0.15, 480, 1.2),
		capacityRun("serve", ArmErrown, seconds_(0.5), 0.10, 480, 1.05),
		capacityRun("serve", ArmErrownObserve, seconds_(0), 0.5, 480, 1.3), // not a peer
		capacityRun("serve", ArmOracle, seconds_(0), 0.2, 480, 1),          // not a peer either
	}
	runs[2].Result.Timeline.Summary.GoodputAfter = 0.95
	tl := runs[3].Result.Timeline
	tl.Summary.TriggerFromS = 1
	tl.Refused = map[string][]int64{"shed": {0, 1, 0, 2, 0, 7}, "budget": {5, 0, 0, 0, 0, 0}}
	figs, notes := capacityFigures(scenarioConfig{}, runs)
	got := make(map[string]bool)
	for _, f := range figs {
		got[strings.SplitN(f.Name, ",", 2)[0]] = f.judge().Pass
	}
	assert.Equal(t, map[string]bool{
		"every hop retries recovered (1) or not (0) within the run":                     true,
		"errown's recovery after the trigger's end (s)":                                 true,
		"errown's recovery after the trigger's end (s) beside the earliest other arm's": false,
		"the best other arm's goodput during the trigger less errown's":                 false,
		"D's arrivals ÷ offered load over the run":                                      true,
		"errown's recovery after the trigger's end (s) within one bin":                  false,
		"errown's goodput during the trigger ÷ its bound":                               false,
		"errown's goodput during the trigger ÷ the fixed limit's":                       false,
		"failsafe-go's goodput after the trigger less errown's":                         false,
		"requests errown's admission shed before the trigger":                           false,
	}, got)
	for _, f := range figs {
		if strings.HasPrefix(f.Name, "the best other") {
			// 3 standard errors of 0.2 and 0.1 over 480 requests each.
			assert.InDelta(t, 3*math.Sqrt(0.2*0.8/480+0.1*0.9/480), f.Tolerance, 1e-9)
			assert.Contains(t, f.Basis, "10% budget, 0.200")
		}
		if strings.HasPrefix(f.Name, "errown's goodput during the trigger ÷ its bound") {
			// D serves 2 / 50ms = 40/s of the 240/s it is sent.
			assert.InDelta(t, 0.10/(40.0/240), f.Value, 1e-9)
			assert.Contains(t, f.Basis, "a bound of 0.167")
		}
		if strings.HasPrefix(f.Name, "errown's goodput during the trigger ÷ the fixed limit's") {
			assert.InDelta(t, 0.5, f.Value, 1e-9)
		}
		if strings.HasPrefix(f.Name, "failsafe-go's goodput after") {
			assert.InDelta(t, 0.05, f.Value, 1e-9)
		}
		if strings.HasPrefix(f.Name, "requests errown's admission shed") {
			assert.Equal(t, 3.0, f.Value, "the bins that end by the trigger's start only")
		}
		if strings.Contains(f.Name, "beside the earliest") {
			assert.Equal(t, []float64{0.5, 0, 0.25}, []float64{f.Value, f.Reference, f.Tolerance})
		}
	}
	require.Len(t, notes, 5, "four notes and the serve variant's table")
	table := notes[4]
	assert.Contains(t, table, "serve: A→B→C→D")
	assert.Contains(t, table, "Goodput bound during the trigger: 16.7% of the root requests.")
	assert.Contains(t, table, "every hop retries  not within 5s")
	assert.Contains(t, table, "10% budget         at once")
	assert.Contains(t, table, "errown             after 500ms")
	assert.Contains(t, table, "100.0% / 10.0% / 90.0%")

	// errown not recovering: +Inf, which fails "at most 1" and, with an
	// arm that recovered, "no later than any other arm".
	runs[3] = capacityRun("serve", ArmErrown, nil, 0.3, 480, 1.05)
	runs[2].Result.Timeline.Summary.GoodputAfter = 0.9
	figs, _ = capacityFigures(scenarioConfig{}, runs)
	var failed []string
	for _, f := range figs {
		if f = f.judge(); !f.Pass {
			failed = append(failed, f.Name)
		}
	}
	assert.Equal(t, []string{
		"errown's recovery after the trigger's end (s) within one bin, serve",
		"errown's recovery after the trigger's end (s), serve",
		"errown's recovery after the trigger's end (s) beside the earliest other arm's, serve",
	}, failed)
	b, err := json.Marshal(figs)
	require.NoError(t, err, "+Inf is written as null")
	assert.Contains(t, string(b), `"value":null`)
}

func TestCapacityScenarioPlanAndAnalytic(t *testing.T) {
	s, ok := LookupScenario("capacity")
	require.True(t, ok)
	assert.True(t, s.Long)
	assert.True(t, s.Chart)
	runs := s.plan(scenarioConfig{})
	require.Len(t, runs, len(_capacityVariants)*len(CapacityArms()), "every arm on every variant")
	assert.Equal(t, "serve: "+ArmNone, runs[0].label)
	assert.Equal(t, "leave", runs[len(CapacityArms())].group)
	assert.Equal(t, AbandonedLeave, runs[len(CapacityArms())].opts.Topology.Node("D").Abandoned)
	assert.Equal(t, AbandonedServe, runs[0].opts.Topology.Node("D").Abandoned, "the leave variant is a clone")
	for _, r := range runs {
		o := r.opts
		o.Attempts, o.Budget = or(o.Attempts, 2), 0.1 // Scenario.Run's defaults
		require.NoError(t, o.Validate(), r.label)
		assert.True(t, o.openLoop(), r.label)
	}
	small := s.plan(scenarioConfig{ScenarioOptions{Small: true}})
	assert.Len(t, small, 4, "small: every hop retries and errown, serve and leave")
	picked := s.plan(scenarioConfig{ScenarioOptions{Arms: []string{ArmErrown}}})
	assert.Len(t, picked, len(_capacityVariants))
	one := s.plan(scenarioConfig{ScenarioOptions{Arms: []string{ArmErrown, ArmOracle}, Variants: []string{"fan-out"}}})
	require.Len(t, one, 2, "one variant, two arms")
	assert.Equal(t, "fan-out: "+ArmErrown, one[0].label)
	assert.Equal(t, "fan-out: "+ArmOracle, one[1].label)
	assert.Equal(t, []string{"serve", "leave", "fan-out", "crash", "four callers", "no caller policy"}, CapacityVariants())

	// Analytic: nothing runs, nothing is judged, the report says why.
	rep, err := s.Run(context.Background(), ScenarioOptions{Analytic: true})
	require.NoError(t, err)
	assert.Zero(t, rep.Failed())
	for _, f := range rep.Figures {
		assert.Equal(t, CheckNone, f.Check, f.Name)
	}
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "Measured only: a node has a finite capacity or a timeline of triggers")
	_, chart := rep.TimeChart()
	assert.False(t, chart, "no timeline to draw")
}

// TestCapacityArms checks what each arm runs.
func TestCapacityArms(t *testing.T) {
	base := Options{Attempts: 2}
	var got []string
	for _, a := range CapacityArms() {
		o := a.apply(base)
		throttle := ""
		if o.Throttle != nil {
			throttle = "+throttle"
		}
		if o.Failsafe != nil && o.Failsafe.Server {
			throttle = "+failsafe server"
		}
		if o.NoQueue {
			throttle = "+no queue"
		}
		got = append(got, string(o.Policy)+"/"+string(o.Mode)+"/"+string(rune('0'+o.Attempts))+throttle)
	}
	assert.Equal(t, []string{"naive//1", "naive//2", "budget//2", "budget//2+throttle", "naive//2+failsafe server", "ownership//2", "ownership/observe/2", "ownership//2+no queue"}, got)
	assert.Equal(t, []string{ArmNone, ArmRetries, ArmBudget, ArmThrottle, ArmFailsafe, ArmErrown, ArmErrownObserve, ArmOracle}, ArmNames(CapacityArms()))
}

// TestCapacityVariantsOfTheCallers: the four-callers variant runs D's
// caller as four instances, the no-caller-policy one leaves it with no
// retry policy; both are the serve variant otherwise, and the bound
// counts every visit of a root request to the slowed node.
func TestCapacityVariantsOfTheCallers(t *testing.T) {
	byGroup := make(map[string]capacityVariant)
	for _, v := range _capacityVariants {
		byGroup[v.group] = v
	}
	four := byGroup["four callers"].load()
	assert.Equal(t, 4, four.Node("C").Instances)
	assert.Equal(t, 0, four.Node("B").Instances, "only D's callers")
	assert.Equal(t, AbandonedServe, four.Node("D").Abandoned)
	none := byGroup["no caller policy"].load()
	require.NotNil(t, none.Node("C").Retry)
	assert.False(t, *none.Node("C").Retry)
	assert.Nil(t, none.Node("B").Retry, "only D's callers")
	assert.Nil(t, mustTopology("capacity").Node("C").Retry, "the shipped topology is left alone")
	assert.Zero(t, mustTopology("capacity").Node("C").Instances)
	for _, v := range []*Topology{four, none} {
		require.NoError(t, v.Validate(), v.Name)
	}

	assert.InDelta(t, 40.0/240, goodputBound(byGroup["serve"].load()), 1e-9)
	assert.InDelta(t, 40.0/240, goodputBound(four), 1e-9)
	// F: 4 workers × 50ms, 80/s of the 4 × 120/s sent.
	assert.InDelta(t, 80.0/480, goodputBound(byGroup["fan-out"].load()), 1e-9)
	assert.Zero(t, goodputBound(byGroup["crash"].load()), "a crash serves nothing")
	// F: 4 workers × 50ms for 2s.
	assert.InDelta(t, 160, answerBound(byGroup["fan-out"].load()), 1e-9)
	assert.InDelta(t, 80, answerBound(byGroup["serve"].load()), 1e-9)
	assert.Zero(t, answerBound(byGroup["crash"].load()), "a crash serves nothing")
}

func TestCapacityFanoutAnswersInTime(t *testing.T) {
	// F's answers in time during the trigger: 120 of the 160 degraded F
	// can serve fails the fan-out's 0.8; 130 passes. No other variant
	// judges them.
	for _, tt := range []struct {
		answers int64
		want    bool
	}{{120, false}, {130, true}} {
		run := capacityRun("fan-out", ArmErrown, seconds_(0), 0.1, 480, 1)
		run.Result.Timeline.Summary.AnswersDuring = tt.answers
		figs, _ := capacityFigures(scenarioConfig{}, []RunReport{run})
		var found bool
		for _, f := range figs {
			if strings.HasPrefix(f.Name, "the constrained node's answers in time") {
				found = true
				assert.InDelta(t, float64(tt.answers)/160, f.Value, 1e-9)
				assert.Equal(t, tt.want, f.judge().Pass, "%d answers", tt.answers)
			}
		}
		assert.True(t, found, "the fan-out judges F's answers in time")
	}
	serve := capacityRun("serve", ArmErrown, seconds_(0), 0.1, 480, 1)
	figs, _ := capacityFigures(scenarioConfig{}, []RunReport{serve})
	for _, f := range figs {
		assert.NotContains(t, f.Name, "answers in time")
	}
}
