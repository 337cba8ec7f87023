package stormsim

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/errown/errown"
	"github.com/errown/errown/retry"
	"github.com/errown/errown/retrypeer"
	"go.uber.org/yarpc/api/peer"
)

// ArmFailsafe names the failsafe-go arm of PartialArms.
const ArmFailsafe = "failsafe-go"

// PartialArms returns the arms of the partial scenario, in the order it
// runs them: no retries; every hop retrying (2 attempts, no budget); a
// 10% budget at every hop; failsafe-go at every hop (its retry policy in
// its 20% budget, its adaptive limiter); errown with its defaults (its
// default budget) and its peer chooser for callees of several
// instances; the same in observe mode.
func PartialArms() []Arm {
	defaultBudget := func(c *errown.Config) { c.Retry.Budget = retry.BudgetConfig{} }
	return []Arm{
		{Name: ArmNone, Policy: PolicyNaive, Attempts: 1},
		{Name: ArmRetries, Policy: PolicyNaive},
		{Name: ArmBudget, Policy: PolicyBudget},
		{Name: ArmFailsafe, Policy: PolicyNaive, Failsafe: &Failsafe{}},
		{Name: ArmErrown, Policy: PolicyOwnership, Errown: defaultBudget, Chooser: errownChooser},
		{Name: ArmErrownObserve, Policy: PolicyOwnership, Mode: retry.ModeObserve, Errown: defaultBudget, Chooser: errownChooser},
	}
}

// partialRow is one partial failure of the partial scenario: the
// topology "partial" changed by set, run under every arm.
type partialRow struct {
	group string
	what  string
	set   func(t *Topology)
	// requests of each run at full size and under Small.
	full, small int
}

var _partialRows = []partialRow{
	{
		group: "C fails", what: "one of three C instances fails every call",
		set:  func(*Topology) {},
		full: 4000, small: 300,
	},
	{
		group: "C hangs", what: "one of three C instances hangs past B's 60ms attempt timeout",
		set: func(t *Topology) {
			c := t.Node("C")
			c.Fail, c.Hang = 0, true
		},
		full: 2000, small: 150,
	},
	{
		group: "B fails", what: "one of three B instances fails every call (C three healthy instances)",
		set: func(t *Topology) {
			b, c := t.Node("B"), t.Node("C")
			b.Instances, b.Faulty, b.Fail = 3, 1, 1
			c.Faulty, c.Fail = 0, 0
		},
		full: 4000, small: 300,
	},
}

// _partialBases are the base availabilities of the independent-failure
// table, in percent: the rows of docs/DESIGN.md's second table, with
// errown's target where there is one (0 for none).
var _partialBases = []struct{ base, target float64 }{
	{99.9, 0},
	{99, 0},
	{95, 0},
	{90, 99},
	{80, 96},
	{70, 91},
}

// Sizes of the partial scenario.
const (
	_partialConcurrency = 4
	_partialWarmup      = 100
	_partialDeadline    = DefaultTimeout
	// _partialMargin is how far below every hop retrying errown's
	// availability may be, in points.
	_partialMargin = 0.5
	// _partialIndependent is the requests of each independent-failure
	// run at full size and under Small.
	_partialIndependentFull, _partialIndependentSmall = 5000, 400
)

// independentArms are the arms of the independent-failure table: no
// retries is the base itself.
func independentArms(arms []Arm) []Arm {
	var out []Arm
	for _, a := range arms {
		if a.Name != ArmNone {
			out = append(out, a)
		}
	}
	return out
}

const _unmodelledRefund = "the model's budget spends its ratio on every retry, and package retry's budget refunds the retries that succeed"

const _unmodelledArms = "the arm's own mechanisms (failsafe-go, errown's default budget and peer chooser) are beyond the model"

// PartialScenario returns the partial scenario (DESIGN.md's "Partial
// failures") run under arms: one bad instance of three, failing or
// hanging at the leaf, failing in the middle; the availability and the
// calls at C per root request of every arm; independent failures at the
// bases of docs/DESIGN.md's second table; and the chain's bound on a
// whole callee failing under errown with its chooser. Scenarios runs it
// under PartialArms.
func PartialScenario(arms []Arm) Scenario {
	return Scenario{
		Name:    "partial",
		Summary: "one bad instance of three: availability and load per arm, and independent failures (DESIGN.md's \"Partial failures\")",
		// Tens of runs, some of tens of thousands of requests: its test
		// checks its figures' computation on a short run.
		Long: true,
		plan: func(c scenarioConfig) []plannedRun {
			var runs []plannedRun
			for _, row := range _partialRows {
				t := mustTopology("partial").Clone()
				row.set(t)
				for _, a := range arms {
					o := a.apply(Options{Topology: t, Requests: c.requests(row.full, row.small), Warmup: _partialWarmup,
						Concurrency: _partialConcurrency, Timeout: _partialDeadline, BudgetWindow: retry.DefaultConfig().Budget.Window})
					runs = append(runs, plannedRun{label: row.group + ": " + a.Name, group: row.group, opts: o})
				}
			}
			for _, b := range _partialBases {
				t := mustTopology("partial-independent").Clone()
				t.Node("B").Fail = 1 - b.base/100
				group := fmt.Sprintf("base %v%%", b.base)
				for _, a := range independentArms(arms) {
					o := a.apply(Options{Topology: t, Requests: c.requests(_partialIndependentFull, _partialIndependentSmall), Warmup: _partialWarmup,
						Concurrency: _partialConcurrency, Timeout: _partialDeadline, BudgetWindow: retry.DefaultConfig().Budget.Window})
					runs = append(runs, plannedRun{label: group + ": " + a.Name, group: group, opts: o, unmodelled: unmodelled(a)})
				}
			}
			for _, a := range arms {
				if a.Name == ArmErrown {
					o := Options{Topology: mustTopology("chain"), Policy: PolicyOwnership, Chooser: a.Chooser, Requests: c.requests(2000, 300)}
					runs = append(runs, plannedRun{label: "chain: errown, the lab's 10% budget", group: "chain", opts: o})
				}
			}
			return runs
		},
		figures: partialFigures,
	}
}

// PartialBrief returns the first row of the partial scenario alone (one
// of three C instances failing every call) under PartialArms, at a size
// for the main command's short table: 300 root requests per arm (150
// under Small).
func PartialBrief() Scenario {
	s := PartialScenario(PartialArms())
	s.Name, s.Summary = "partial-brief", "one of three C instances fails every call: availability and load per arm"
	plan := s.plan
	s.plan = func(c scenarioConfig) []plannedRun {
		var runs []plannedRun
		for _, r := range plan(c) {
			if r.group == _partialRows[0].group {
				r.opts.Requests = c.requests(300, 150)
				runs = append(runs, r)
			}
		}
		return runs
	}
	return s
}

// unmodelled returns why the model has no figures for arm a's runs, ""
// when it has.
func unmodelled(a Arm) string {
	switch {
	case a.Failsafe != nil || a.Chooser != nil || a.Errown != nil:
		return _unmodelledArms
	case a.Policy.budgeted():
		return _unmodelledRefund
	}
	return ""
}

// partialRun returns the run of arm in group, nil when none ran.
func partialRun(runs []RunReport, group, arm string) *RunReport {
	for i := range runs {
		if runs[i].Group == group && armOf(runs[i]) == arm && runs[i].Result != nil {
			return &runs[i]
		}
	}
	return nil
}

// pct returns a figure function: the availability in percent.
func pct(r RunReport) float64 { return 100 * r.Availability() }

// partialFigures judges errown's targets: under one bad instance of
// three (C failing, C hanging, B failing) errown's availability at least
// every hop retrying's less 0.5 points and at least failsafe-go's, with
// no more calls at C per root request than every hop retrying; with
// independent failures errown's availability at its targets
// (within the sampling noise of the run); and, unchanged, the chain's
// callee failing every call getting at most 1.1 requests per root
// request at any depth under errown with its chooser.
func partialFigures(c scenarioConfig, runs []RunReport) ([]Figure, []string) {
	var (
		figs  []Figure
		notes []string
	)
	for _, row := range _partialRows {
		e := partialRun(runs, row.group, ArmErrown)
		notes = append(notes, partialTable(row, runs))
		if e == nil {
			continue
		}
		if r := partialRun(runs, row.group, ArmRetries); r != nil {
			ref := pct(*r) - _partialMargin
			figs = append(figs, Figure{Name: fmt.Sprintf("%s: errown's availability %%, at least every hop retrying's (%.2f%%) less %v points", row.group, pct(*r), _partialMargin),
				Value: pct(*e), Source: e.Source(), Expected: math.NaN()}.atLeast(ref, "issue 33's target"))
			figs = append(figs, Figure{Name: fmt.Sprintf("%s: errown's calls at C per root request, at most every hop retrying's", row.group),
				Value: e.Load("C"), Source: e.Source(), Expected: math.NaN()}.atMost(r.Load("C"), "issue 33's target"))
		}
		if f := partialRun(runs, row.group, ArmFailsafe); f != nil {
			figs = append(figs, Figure{Name: fmt.Sprintf("%s: errown's availability %%, at least failsafe-go's", row.group),
				Value: pct(*e), Source: e.Source(), Expected: math.NaN()}.atLeast(pct(*f), "issue 33's target"))
		}
	}
	if t := independentTable(runs); t != "" {
		notes = append(notes, t)
	}
	for _, b := range _partialBases {
		group := fmt.Sprintf("base %v%%", b.base)
		e := partialRun(runs, group, ArmErrown)
		if b.target == 0 || e == nil {
			continue
		}
		n := float64(e.Result.Requests)
		p := 1 - b.target/100
		tol := 100 * 3 * math.Sqrt(p*(1-p)/n)
		figs = append(figs, Figure{Name: fmt.Sprintf("independent failures, base %v%%: errown's availability %%, at least %v%%", b.base, b.target),
			Value: pct(*e), Source: e.Source(), Expected: math.NaN()}.
			atLeast(b.target, fmt.Sprintf("issue 33's target, less 3 standard errors of a binomial at %v requests (the sampling noise of a run)", n)).
			tolerance(tol))
	}
	for i := range runs {
		r := runs[i]
		if r.Group != "chain" || r.Result == nil {
			continue
		}
		most := 0.0
		for _, n := range r.Result.Nodes {
			most = max(most, n.Ratio)
		}
		figs = append(figs, Figure{Name: "chain (D failing every call): errown with its chooser, the most requests per root request at any depth, at most 1.1",
			Value: most, Source: r.Source(), Expected: math.NaN()}.atMost(1.1, "DESIGN.md's first table: 1 + the budget's ratio"))
	}
	notes = append(notes,
		"B fails: a retry that reaches a healthy B makes B call C again, so an arm that mends more of B's failures calls C more; every hop retrying's retries from A often reach the bad B again (round robin under concurrency), errown's do not.",
		"A calls B, B calls C (B's attempts to C time out at 60ms), two attempts per hop, 4 root requests in flight, after a warm-up of 100; the bad instance is the first of three behind yarpc's round-robin peer list. Calls at C and at B are the requests each served per root request, retries included.",
		"errown runs with its default budget (10% of requests, a floor of 10 retries per second, a 10s window) and retrypeer's chooser; the 10% budget arm is package retry's budget blind to claims, with no floor, and like errown's it refunds the retries that succeed. failsafe-go v0.9.8 runs its retry policy (the same attempts, retrying what errown's code table retries by default) in its budget (20% of the executions in flight, at least 3), around its adaptive limiter with its defaults.")
	return figs, notes
}

// partialTable returns the note of one row of the partial scenario: a
// line per arm.
func partialTable(row partialRow, runs []RunReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s.\n", row.group, row.what)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    arm\tavailability\tcalls at C per request\tcalls at B per request\n")
	for _, r := range runs {
		if r.Group != row.group {
			continue
		}
		if r.Result == nil {
			fmt.Fprintf(tw, "    %s\t(not run)\t\t\n", armOf(r))
			continue
		}
		fmt.Fprintf(tw, "    %s\t%.2f%%\t%.2f\t%.2f\n", armOf(r), pct(r), r.Load("C"), r.Load("B"))
	}
	_ = tw.Flush() // a strings.Builder does not fail
	return strings.TrimRight(b.String(), "\n")
}

// independentTable returns the note of the independent-failure runs: a
// line per arm, a column per base availability; "" without any.
func independentTable(runs []RunReport) string {
	var arms []string
	for _, r := range runs {
		if strings.HasPrefix(r.Group, "base ") && !oneOf(armOf(r), arms) {
			arms = append(arms, armOf(r))
		}
	}
	if len(arms) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Independent failures: A calls B (three instances, round-robin), every instance failing independently; availability per base.\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    arm")
	for _, base := range _partialBases {
		fmt.Fprintf(tw, "\t%v%%", base.base)
	}
	fmt.Fprintln(tw)
	for _, arm := range arms {
		fmt.Fprintf(tw, "    %s", arm)
		for _, base := range _partialBases {
			if r := partialRun(runs, fmt.Sprintf("base %v%%", base.base), arm); r != nil {
				fmt.Fprintf(tw, "\t%.2f%%", pct(*r))
			} else {
				fmt.Fprintf(tw, "\t-")
			}
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush() // a strings.Builder does not fail
	return strings.TrimRight(b.String(), "\n")
}

// errownChooser is the peer chooser wrapper of the errown arms:
// retrypeer's, which sends a retry to an instance the call's earlier
// attempts did not reach.
func errownChooser(c peer.Chooser) peer.Chooser { return retrypeer.New(c) }
