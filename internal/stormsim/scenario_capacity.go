package stormsim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/errown/errown/retry"
)

// capacityVariant is one experiment of the capacity scenario: a shipped
// topology whose constrained node has a trigger, run under every arm.
type capacityVariant struct {
	group    string // names the variant's runs: "serve: errown"
	topology string
	leave    bool // the constrained node's abandoned requests leave its queue
	// callers, when set, runs each caller of the constrained node as
	// that many instances behind a round-robin peer list: as many
	// overload limits, each its own.
	callers int
	// noCallerPolicy leaves the constrained node's callers with no retry
	// policy at all: no retries there, no attempt timeout and no overload
	// limit.
	noCallerPolicy bool
	what           string
	// boundShare is the share of the goodput bound errown is to reach
	// at the root during the trigger; 0 for _capacityBoundShare.
	boundShare float64
	// answerShare, when set, is the share of what the degraded node can
	// serve in the trigger (answerBound) that its answers in time are to
	// reach under errown.
	answerShare float64
	// errown's targets judged on this variant: every hop retrying
	// does not recover (metastable); errown recovers within a second of
	// the trigger's end, no later than any other arm.
	metastable, recovers bool
}

var _capacityVariants = []capacityVariant{
	{group: "serve", topology: "capacity", what: "A→B→C→D, D 10× slower from 3s to 5s; D serves its queued requests after their caller has gone", metastable: true, recovers: true},
	{group: "leave", topology: "capacity", leave: true, what: "the same, D's queued requests leave the queue once their caller has gone", metastable: true, recovers: true},
	{group: "fan-out", topology: "capacity-fanout", what: "F, reached by three paths (4 requests per root request), 10× slower from 3s to 5s; served anyway", boundShare: _capacityFanoutShare, answerShare: _capacityAnswerShare},
	{group: "crash", topology: "capacity-crash", what: "A→B→C→D, D crashed at 3s and restarted on the same port at 5s", recovers: true},
	{group: "four callers", topology: "capacity", callers: 4, what: "the serve variant with D's caller C run as four instances behind a round-robin peer list (four overload limits)", recovers: true},
	{group: "no caller policy", topology: "capacity", noCallerPolicy: true, what: "the serve variant with no retry policy at C, D's caller: no retry, no attempt timeout (C's calls to D run on B's 150ms) and no overload limit in front of D", recovers: true},
}

// CapacityVariants returns the names of the capacity scenario's
// variants, in the order it runs them.
func CapacityVariants() []string {
	names := make([]string, len(_capacityVariants))
	for i, v := range _capacityVariants {
		names[i] = v.group
	}
	return names
}

// Sizes of the capacity scenario.
const (
	// _capacityDeadline is every root request's deadline.
	_capacityDeadline = time.Second
	// _capacitySmallDuration is the load of each run under Small: long
	// enough to see a recovery within a second of the trigger's end.
	_capacitySmallDuration = 8 * time.Second
	// _capacityMinNoise is the least noise allowed when comparing two
	// arms' goodput during the trigger.
	_capacityMinNoise = 0.02
)

// Shares errown is to reach at the root during the trigger: of the
// goodput bound (on the fan-out, where a root needs all four of its
// visits admitted, a lower one), and of the fixed-limit oracle's goodput
// (ArmOracle).
const (
	_capacityBoundShare  = 0.75
	_capacityFanoutShare = 0.5
	_capacityOracleShare = 0.9
	// _capacityAnswerShare is the share of what the degraded node can
	// serve during the trigger that its answers in time are to reach on
	// the fan-out: admission is to keep its workers on requests that
	// finish in time, whichever roots they belong to.
	_capacityAnswerShare = 0.8
)

// load returns the variant's topology.
func (v capacityVariant) load() *Topology {
	t := mustTopology(v.topology)
	if !v.leave && v.callers == 0 && !v.noCallerPolicy {
		return t
	}
	t = t.Clone()
	switch {
	case v.leave:
		t.Name += " (leave)"
	case v.callers > 0:
		t.Name += fmt.Sprintf(" (%d callers)", v.callers)
	default:
		t.Name += " (no caller policy)"
	}
	constrained := map[string]bool{}
	for i := range t.Nodes {
		if t.Nodes[i].Capacity != nil {
			constrained[strings.ToLower(t.Nodes[i].Name)] = true
			if v.leave {
				t.Nodes[i].Abandoned = AbandonedLeave
			}
		}
	}
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if !slices.ContainsFunc(n.Calls, func(c Call) bool { return constrained[strings.ToLower(c.To)] }) {
			continue
		}
		if v.callers > 0 {
			n.Instances = v.callers
		}
		if v.noCallerPolicy {
			// No policy, no attempt timeout either: its calls run on the
			// deadline it was given.
			n.Retry = new(false)
			for j := range n.Calls {
				n.Calls[j].AttemptTimeout = 0
			}
		}
	}
	return t
}

// goodputBound returns the share of root requests that can succeed while
// the constrained node of t is slowed: its workers' rate under the slow
// trigger over what the root's load sends it (each root request needs
// every one of its visits served), at most 1; 0 when its trigger is no
// slowdown (a crash serves nothing) or it has none.
func goodputBound(t *Topology) float64 {
	visits := map[string]float64{strings.ToLower(t.Nodes[0].Name): 1}
	var visit func(name string, n float64, depth int)
	visit = func(name string, n float64, depth int) {
		node := t.Node(name)
		if node == nil || depth > len(t.Nodes) {
			return
		}
		for _, c := range node.Calls {
			k := n * float64(max(1, c.Times))
			visits[strings.ToLower(c.To)] += k
			visit(c.To, k, depth+1)
		}
	}
	visit(t.Nodes[0].Name, 1, 0)
	n, rate, _ := slowed(t)
	if rate == 0 || t.Rate <= 0 {
		return 0
	}
	return math.Min(1, rate/(t.Rate*visits[strings.ToLower(n.Name)]))
}

// answerBound returns what the constrained node of t can serve during
// its slow trigger: its workers' rate while slowed times the trigger's
// length; 0 when it has no slow trigger.
func answerBound(t *Topology) float64 {
	_, rate, tr := slowed(t)
	return rate * tr.For.Seconds()
}

// slowed returns the first node of t with a capacity and a slow trigger,
// its workers' rate while slowed (requests a second) and that trigger;
// a rate of 0 when there is none.
func slowed(t *Topology) (Node, float64, Trigger) {
	for _, n := range t.Nodes {
		if n.Capacity == nil {
			continue
		}
		for _, tr := range n.Triggers {
			if tr.Kind == TriggerSlow && tr.Factor > 0 {
				return n, float64(n.Capacity.Workers) / (n.Capacity.ServiceTime.Seconds() * tr.Factor), tr
			}
		}
	}
	return Node{}, 0, Trigger{}
}

// CapacityScenario returns the capacity scenario (DESIGN.md's "Capacity
// and recovery") run under arms: finite capacity, open-loop load and a
// trigger, the root's goodput over time and the recovery after the
// trigger, in both abandoned modes, on a fan-out and with a crash and
// restart. Scenarios runs it under CapacityArms.
func CapacityScenario(arms []Arm) Scenario {
	return Scenario{
		Name:    "capacity",
		Summary: "finite capacity, open-loop load, a trigger: recovery and goodput per arm (DESIGN.md's \"Capacity and recovery\")",
		Chart:   true,
		Long:    true,
		plan: func(c scenarioConfig) []plannedRun {
			var runs []plannedRun
			for _, v := range _capacityVariants {
				if c.Small && !v.metastable || len(c.Variants) > 0 && !oneOf(v.group, c.Variants) {
					continue
				}
				t := v.load()
				for _, a := range arms {
					switch {
					case len(c.Arms) > 0 && !oneOf(a.Name, c.Arms):
						continue
					case len(c.Arms) == 0 && c.Small && a.Name != ArmRetries && a.Name != ArmErrown:
						continue
					}
					o := a.apply(Options{Topology: t, Requests: 1, Timeout: _capacityDeadline, BudgetWindow: retry.DefaultConfig().Budget.Window})
					if c.Small {
						o.Duration = _capacitySmallDuration
					}
					runs = append(runs, plannedRun{label: v.group + ": " + a.Name, group: v.group, opts: o})
				}
			}
			return runs
		},
		figures: capacityFigures,
	}
}

// armOf returns the arm's name of a run of the capacity scenario.
func armOf(r RunReport) string { return strings.TrimPrefix(r.Label, r.Group+": ") }

// summaryOf returns a figure function: f of the run's Summary, NaN for a
// run that did not run.
func summaryOf(f func(Summary) float64) func(RunReport) float64 {
	return func(r RunReport) float64 {
		if r.Result == nil || r.Result.Timeline == nil {
			return math.NaN()
		}
		return f(r.Result.Timeline.Summary)
	}
}

// recoveryOf is a run's recovery in seconds after the trigger's end, +Inf
// when it did not recover within the run.
var recoveryOf = summaryOf(func(s Summary) float64 {
	if s.RecoveryS == nil {
		return math.Inf(1)
	}
	return *s.RecoveryS
})

// recoveredOf is 1 for a run that recovered, else 0.
var recoveredOf = summaryOf(func(s Summary) float64 {
	if s.RecoveryS == nil {
		return 0
	}
	return 1
})

// shedBeforeOf is the requests errown's admission shed in the steady
// state of a run (Timeline.ShedBefore).
func shedBeforeOf(r RunReport) float64 {
	if r.Result == nil || r.Result.Timeline == nil {
		return math.NaN()
	}
	return float64(r.Result.Timeline.ShedBefore())
}

var (
	afterOf             = summaryOf(func(s Summary) float64 { return s.GoodputAfter })
	duringOf            = summaryOf(func(s Summary) float64 { return s.GoodputDuring })
	arrivalsPerOfferedO = summaryOf(func(s Summary) float64 { return s.ArrivalsPerOffered })
	answersDuringOf     = summaryOf(func(s Summary) float64 { return float64(s.AnswersDuring) })
)

// capacityFigures judges errown's targets on every variant: (a)
// every hop retrying does not recover, in both abandoned modes; (b)
// errown recovers within 1s of the trigger's end, in both modes and after
// the crash, no later than any other arm; (c) errown's goodput during
// the trigger is at least the best other arm's, within the noise of two
// proportions; (d) the constrained node's arrivals under errown are at
// most 1.1 times its offered load over the run; (e) errown's goodput
// during the trigger is at least a share of the bound, (g) and of the
// fixed-limit oracle's; (f) it recovers within one bin; (h) its goodput
// after the trigger is at least failsafe-go's; (i) its admission sheds
// nothing in the steady state; (j) on the fan-out, the constrained node's
// answers in time during the trigger are a share of what it can serve.
func capacityFigures(c scenarioConfig, runs []RunReport) ([]Figure, []string) {
	var (
		figs  []Figure
		notes = []string{
			"Open-loop load: root requests arrive as a Poisson process (the schedule drawn from -seed) whatever became of the earlier ones, each with a 1s deadline; every hop allows 2 attempts (\"no retries\": 1), per-attempt timeouts as the topology says. Goodput is, per bin of the schedule, the root requests that succeeded within their deadline ÷ those sent. Recovered: from the trigger's end, goodput ≥ 95% in every bin for 2s; the time is the start of the first such bin after the trigger's end (a multiple of the bin), or 'not within' what the run leaves after the trigger.",
			"Arms: every hop retries blind to claims (a retry library), with the per-attempt timeout below its retry middleware; the 10% budget is 10% of the requests to the callee, no floor, over 10s; adaptive throttling (Google SRE book: reject locally with probability max(0, (requests − 2·accepts)/(requests + 1)) over a 2s window in 200ms buckets, every attempt counted, failures and timeouts not accepted) sits below the 10% budget's retries; failsafe-go runs at every hop its retry policy within its budget (20% of the executions in flight) around its adaptive limiter, and its adaptive limiter (defaults, no queue) on every node's inbound, a request without a permit refused resource-exhausted; errown runs with the same budget, its whole-attempt rule for retries and its admission control, enforce or observe; the fixed limit is errown without admission in front of a constrained node that holds as many requests as it has workers and refuses the rest at once: the oracle admission is judged against, since it knows the node's capacity. After a whole window of failures the throttle's rule admits about 2·accepts per window, so its admissions grow about e^0.8 per second (K = 2, 2s), some 8s from a total outage; with no accept yet in its window (its first requests) it rejects too.",
			"A node of finite capacity answers resource-exhausted at once when its queue is full; no retry policy retries that code by default (refused: code). Refusals are errown's and the blind retry middleware's retry.denied counters by reason, retry.suppressed (suppressed) and the throttle's local rejections (throttled), read from each node's metrics at every bin's end.",
			"Reproducible at a seed: the arrival schedule, the nodes' failure draws and the throttle's draws. Not: what the machine's scheduling does to timers, queues and timeouts (2 shared cores); between runs a recovery moves by a bin or so and a goodput by a few points. Requests still queued when the last root request has ended are dropped.",
		}
	)
	for _, v := range _capacityVariants {
		var group []RunReport
		for _, r := range runs {
			if r.Group == v.group {
				group = append(group, r)
			}
		}
		if len(group) == 0 {
			continue
		}
		figs = append(figs, capacityTargets(v, group, c)...)
		notes = append(notes, capacityTable(v, group))
	}
	return figs, notes
}

// capacityTargets returns the judged targets of one variant's runs.
func capacityTargets(v capacityVariant, runs []RunReport, c scenarioConfig) []Figure {
	var (
		figs                     []Figure
		errown, oracle, failsafe *RunReport
		others                   []RunReport
	)
	for i, r := range runs {
		switch armOf(r) {
		case ArmErrown:
			errown = &runs[i]
		case ArmErrownObserve:
			// errown itself, retrying as a budget would: not a peer.
		case ArmOracle:
			// knows the constrained node's capacity: a reference, not a peer.
			oracle = &runs[i]
		default:
			if armOf(r) == ArmFailsafe {
				failsafe = &runs[i]
			}
			others = append(others, r)
		}
		if v.metastable && armOf(r) == ArmRetries {
			figs = append(figs, measure("every hop retries recovered (1) or not (0) within the run, "+v.group, r, recoveredOf).
				within(0, 0, "(a) a metastable failure: the retries keep the constrained node overloaded after the trigger has gone; if it recovers, the scenario is wrong"))
		}
	}
	if errown == nil {
		return figs
	}
	bin := math.NaN()
	if errown.Result != nil && errown.Result.Timeline != nil {
		bin = errown.Result.Timeline.BinMS / 1000
	}
	figs = append(figs, measure("errown's recovery after the trigger's end (s) within one bin, "+v.group, *errown, recoveryOf).
		atMost(bin, "(f) within one bin (250ms) of the trigger's end, every variant (+Inf: not within the run)"))
	if bound := goodputBound(v.load()); bound > 0 {
		share := cmp.Or(v.boundShare, _capacityBoundShare)
		figs = append(figs, measure("errown's goodput during the trigger ÷ its bound, "+v.group, *errown, func(r RunReport) float64 { return duringOf(r) / bound }).
			atLeast(share, fmt.Sprintf("(e) at least %.0f%% of what the degraded node can serve: a bound of %.3f of the root requests (its workers' rate while slowed over what the root's load sends it)", 100*share, bound)))
		if oracle != nil {
			o := duringOf(*oracle)
			figs = append(figs, measure("errown's goodput during the trigger ÷ the fixed limit's, "+v.group, *errown, func(r RunReport) float64 { return duringOf(r) / o }).
				atLeast(_capacityOracleShare, fmt.Sprintf("(g) at least %.0f%% of the oracle's (%.3f): errown without admission in front of a constrained node holding as many requests as it has workers and no queue", 100*_capacityOracleShare, o)))
		}
	}
	if bound := answerBound(v.load()); v.answerShare > 0 && bound > 0 {
		figs = append(figs, measure("the constrained node's answers in time during the trigger ÷ what it can serve, errown, "+v.group, *errown, func(r RunReport) float64 { return answersDuringOf(r) / bound }).
			atLeast(v.answerShare, fmt.Sprintf("(j) at least %.0f%% of what the degraded node can serve during the trigger (%.0f requests: its workers' rate while slowed times the trigger's length), finished before their callers' deadlines", 100*v.answerShare, bound)))
	}
	if failsafe != nil {
		fs := afterOf(*failsafe)
		f := measure("failsafe-go's goodput after the trigger less errown's, "+v.group, *errown, func(r RunReport) float64 { return fs - afterOf(r) }).
			atMost(0, fmt.Sprintf("(h) errown's goodput after the trigger at least failsafe-go's (%.3f), within %v", fs, _capacityMinNoise))
		f.Tolerance = _capacityMinNoise
		figs = append(figs, f)
	}
	figs = append(figs, measure("requests errown's admission shed before the trigger, "+v.group, *errown, shedBeforeOf).
		atMost(0, "(i) none in the steady state"))
	if v.recovers {
		earliest, who := math.Inf(1), "none recovered"
		for _, r := range others {
			if rec := recoveryOf(r); rec < earliest {
				earliest, who = rec, armOf(r)
			}
		}
		figs = append(figs,
			measure("errown's recovery after the trigger's end (s), "+v.group, *errown, recoveryOf).
				atMost(1, "(b) within 1s of the trigger's end (+Inf: not within the run)"),
		)
		f := measure("errown's recovery after the trigger's end (s) beside the earliest other arm's, "+v.group, *errown, recoveryOf).
			atMost(earliest, fmt.Sprintf("(b) no later than any other arm (the earliest: %s), within one bin", who))
		f.Tolerance = bin
		figs = append(figs, f)
	}
	best, who, noise := math.Inf(-1), "", math.NaN()
	for _, r := range others {
		if d := duringOf(r); d > best {
			best, who = d, armOf(r)
			noise = proportionNoise(errown, &r)
		}
	}
	if who != "" {
		f := measure("the best other arm's goodput during the trigger less errown's, "+v.group, *errown, func(r RunReport) float64 { return best - duringOf(r) }).
			atMost(0, fmt.Sprintf("(c) errown's goodput during the trigger at least the best other arm's (%s, %.3f), within 3 standard errors of the difference of the two proportions, at least %v", who, best, _capacityMinNoise))
		f.Tolerance = noise
		figs = append(figs, f)
	}
	constrained := "the constrained node"
	if errown.Result != nil && errown.Result.Timeline != nil {
		constrained = errown.Result.Timeline.Summary.Constrained
	}
	figs = append(figs, measure(constrained+"'s arrivals ÷ offered load over the run, errown, "+v.group, *errown, arrivalsPerOfferedO).
		atMost(1.1, "(d) at most 1.1 times what it gets with no failure and no retry"))
	return figs
}

// proportionNoise is 3 standard errors of the difference of two runs'
// goodput during the trigger, at least _capacityMinNoise.
func proportionNoise(a, b *RunReport) float64 {
	se := 0.0
	for _, r := range []*RunReport{a, b} {
		if r.Result == nil || r.Result.Timeline == nil {
			return math.NaN()
		}
		s := r.Result.Timeline.Summary
		if s.SentDuring > 0 && !math.IsNaN(s.GoodputDuring) {
			se += s.GoodputDuring * (1 - s.GoodputDuring) / float64(s.SentDuring)
		}
	}
	return math.Max(_capacityMinNoise, 3*math.Sqrt(se))
}

// capacityTable returns the note of one variant: a row per arm.
func capacityTable(v capacityVariant, runs []RunReport) string {
	var b strings.Builder
	horizon, constrained := "", "the constrained node"
	for _, r := range runs {
		if r.Result != nil && r.Result.Timeline != nil {
			s := r.Result.Timeline.Summary
			horizon = fmt.Sprintf("%gs", s.RecoveryHorizonS)
			constrained = s.Constrained
			break
		}
	}
	fmt.Fprintf(&b, "%s: %s.", v.group, v.what)
	if bound := goodputBound(v.load()); bound > 0 {
		fmt.Fprintf(&b, " Goodput bound during the trigger: %s of the root requests.", percent(bound))
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    arm\trecovered after the trigger\tgoodput before / during / after\t%s arrivals ÷ offered\tper root request\tabandoned (served / left)\tretries sent\trefused\n", constrained)
	for _, r := range runs {
		if r.Result == nil || r.Result.Timeline == nil {
			fmt.Fprintf(tw, "    %s\t(not run)\t\t\t\t\t\t\n", armOf(r))
			continue
		}
		t := r.Result.Timeline
		s := t.Summary
		recovered := "not within " + horizon
		if d, ok := s.Recovered(); ok {
			recovered = "after " + d.String()
			if d == 0 {
				recovered = "at once"
			}
		}
		var abandoned string
		for _, n := range t.Nodes {
			if n.Name == s.Constrained {
				abandoned = fmt.Sprintf("%d / %d", n.TotalAbandoned, n.TotalLeft)
			}
		}
		var refused []string
		for _, reason := range sortedKeys(s.Refused) {
			refused = append(refused, fmt.Sprintf("%s %d", reason, s.Refused[reason]))
		}
		if len(refused) == 0 {
			refused = []string{"-"}
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s / %s / %s\t%.2f\t%.2f\t%s\t%d\t%s\n", armOf(r), recovered,
			percent(s.GoodputBefore), percent(s.GoodputDuring), percent(s.GoodputAfter),
			s.ArrivalsPerOffered, s.ArrivalsPerRequest, abandoned, s.Retries, strings.Join(refused, ", "))
	}
	_ = tw.Flush() // a strings.Builder does not fail
	return strings.TrimRight(b.String(), "\n")
}

func percent(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
