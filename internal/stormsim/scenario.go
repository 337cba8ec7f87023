package stormsim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/errown/errown/retry"

	"go.uber.org/zap"
)

// LoadTolerance is how far, relatively, a node's measured load may be from
// its reference (the published figure where there is one, else Analyze's)
// and still pass: 5%, and ±0.05 for loads under 1.
const LoadTolerance = 0.05

// Scenario is a named experiment of the storm lab: runs of shipped
// topologies under several policies, and the headline figures they give,
// each beside the published one where there is one and judged within a
// stated tolerance.
type Scenario struct {
	// Name is what -scenario takes.
	Name string
	// Summary says what the scenario shows, in one line.
	Summary string
	// Chart reports whether the scenario has a chart (Report.SVG): its
	// runs share their nodes, so that Report.Chart can draw their loads,
	// or they are open-loop runs, whose goodput Report.TimeChart draws.
	Chart bool
	// Long reports that the scenario takes minutes, its runs following
	// load over seconds of wall-clock time: its tests check its
	// machinery on short runs, not the scenario at the size of the tests.
	Long bool

	plan    func(c scenarioConfig) []plannedRun
	figures func(c scenarioConfig, runs []RunReport) ([]Figure, []string)
}

// ScenarioOptions configure Scenario.Run. Zero values take Options'
// defaults and each scenario's own sizes.
type ScenarioOptions struct {
	// Transport is the transport of every hop (Options.Transport).
	// Default "http".
	Transport string
	// Concurrency is the root requests kept in flight. Default: the
	// scenario's own (DefaultConcurrency unless it says otherwise).
	Concurrency int
	// Timeout, when positive, is the deadline of each root request.
	// Default: the scenario's own (DefaultTimeout unless it says
	// otherwise).
	Timeout time.Duration
	// Requests, when positive, replaces the root requests of every run.
	Requests int
	// Seed seeds the nodes' failures.
	Seed uint64
	// Small runs the scenario at the size of its tests: fewer requests,
	// so wider tolerances where they depend on the sample, and the
	// costliest runs computed by Analyze instead.
	Small bool
	// Analytic computes every run with Analyze and runs no service.
	Analytic bool
	// Logger is handed to Run.
	Logger *zap.Logger
	// Progress, when not nil, is called after each root request of each
	// run with the scenario and run's label.
	Progress func(label string, done, total int)
	// Rate, Duration and Bin, when positive, replace those of every run
	// under open-loop load (Options.Rate, Duration, Bin).
	Rate     float64
	Duration time.Duration
	Bin      time.Duration
	// Arms, when not empty, are the names of the only arms the capacity
	// scenario runs (see CapacityArms).
	Arms []string
	// Variants, when not empty, are the names of the only variants the
	// capacity scenario runs (see CapacityVariants): a loop of a minute
	// on the one being worked on.
	Variants []string
}

// scenarioConfig is what a scenario plans its runs and figures with.
type scenarioConfig struct {
	ScenarioOptions
}

// requests returns the root requests of a run: full normally, small
// under Small, or Requests when set.
func (c scenarioConfig) requests(full, small int) int {
	if c.Requests > 0 {
		return c.Requests
	}
	return c.size(full, small)
}

// size returns full, or small under Small, whatever Requests says.
func (c scenarioConfig) size(full, small int) int {
	if c.Small {
		return small
	}
	return full
}

// concurrency returns the root requests in flight: the option, else
// full, or small under Small.
func (c scenarioConfig) concurrency(full, small int) int {
	if c.Concurrency > 0 {
		return c.Concurrency
	}
	return c.size(full, small)
}

// plannedRun is one run a scenario asks for.
type plannedRun struct {
	label string
	// group names the runs compared together (a panel of TimeChart).
	group string
	// opts need only Topology, Policy, Requests and what differs from
	// the scenario's defaults (2 attempts, 10% budget).
	opts Options
	// analytic: too costly to run (e.g. naive retries 25 deep); computed.
	analytic bool
	// smallConcurrency is the root requests in flight under Small, 4 when
	// 0.
	smallConcurrency int
	// published loads per node, where published.
	published []float64
	// unmodelled, when set, says why the model has no figures for the
	// run though it has for its topology and policy: an arm's mechanism
	// it does not follow (see Analysis.MeasuredOnly).
	unmodelled string
}

// RunReport is one run of a scenario.
type RunReport struct {
	// Label names the run in the scenario, e.g. "ownership, C drops".
	Label string `json:"label"`
	// Group names the runs it is compared with, where a scenario has
	// several groups (the variants of the capacity scenario).
	Group string `json:"group,omitempty"`
	// Topology is the name of the topology run.
	Topology string `json:"topology"`
	// Policy is the policy of every hop.
	Policy Policy `json:"policy"`
	// Analytic reports that the run was computed by Analyze, not run.
	Analytic bool `json:"analytic"`
	// Result is what the run measured; nil when Analytic.
	Result *Result `json:"result,omitempty"`
	// Expected is what Analyze expects of the run.
	Expected Analysis `json:"expected"`
	// Published are the published loads per node, where published.
	Published []float64 `json:"published,omitempty"`
}

// Source is "measured" for a run that ran, else "analytic".
func (r RunReport) Source() string {
	if r.Result != nil {
		return "measured"
	}
	return "analytic"
}

// Loads returns every node's load per root request, root first: measured
// when the run ran, else expected.
func (r RunReport) Loads() []float64 {
	if r.Result != nil {
		return r.Result.Ratios()
	}
	return r.Expected.Loads()
}

// Load returns the load of the node called name, as Loads.
func (r RunReport) Load(name string) float64 {
	for i, n := range r.Expected.Nodes {
		if strings.EqualFold(n.Name, name) {
			return r.Loads()[i]
		}
	}
	return math.NaN()
}

// Retries returns the retries per root request spent on the hop
// from→to: measured when the run ran, else expected.
func (r RunReport) Retries(from, to string) float64 {
	if r.Result != nil {
		return r.Result.Edge(from, to).PerRequest
	}
	for _, e := range r.Expected.Edges {
		if strings.EqualFold(e.From, from) && strings.EqualFold(e.To, to) {
			return e.Retries
		}
	}
	return math.NaN()
}

// Radius returns the retry storm radius: measured when the run ran, else
// what Analyze knows of it (Max always; the means only when every root
// request meets the same fate, else NaN).
func (r RunReport) Radius() Radius {
	if r.Result != nil {
		return r.Result.Radius
	}
	a := r.Expected
	rad := Radius{Max: a.RadiusMax, Mean: math.NaN(), MeanRetried: math.NaN()}
	if a.Exact && a.Availability == 0 {
		rad.Mean, rad.MeanRetried = float64(a.RadiusMax), float64(a.RadiusMax)
	}
	return rad
}

// Availability returns the fraction of root requests that succeeded:
// measured when the run ran, else expected.
func (r RunReport) Availability() float64 {
	if r.Result != nil {
		if r.Result.Requests == 0 {
			return math.NaN()
		}
		return 1 - float64(r.Result.Failed)/float64(r.Result.Requests)
	}
	return r.Expected.Availability
}

// LoadReferences returns, for each node, what its load is judged against:
// the published figure where there is one, else the expected one (NaN,
// no reference, where the model has none: Analysis.MeasuredOnly).
func (r RunReport) LoadReferences() []float64 {
	if len(r.Published) == len(r.Expected.Nodes) {
		return r.Published
	}
	return r.Expected.Loads()
}

// LoadPasses reports, for each node, whether its measured load is within
// LoadTolerance of its reference; all true for an analytic run, and true
// for a node with no reference.
func (r RunReport) LoadPasses() []bool {
	refs := r.LoadReferences()
	loads := r.Loads()
	pass := make([]bool, len(refs))
	for i, ref := range refs {
		pass[i] = r.Result == nil || math.IsNaN(ref) || math.Abs(loads[i]-ref) <= LoadTolerance*math.Max(1, ref)
	}
	return pass
}

// Checks of a Figure.
const (
	// CheckWithin: Reference - Tolerance - Low <= Value <= Reference +
	// Tolerance.
	CheckWithin = "within"
	// CheckAtMost: Value <= Reference + Tolerance.
	CheckAtMost = "at most"
	// CheckAtLeast: Value >= Reference - Tolerance.
	CheckAtLeast = "at least"
	// CheckNone: the figure is shown, not judged.
	CheckNone = ""
)

// Figure is one headline figure of a scenario.
type Figure struct {
	// Name says what the figure is, and of which run.
	Name string `json:"name"`
	// Value is the figure, measured or (for an analytic run) expected.
	Value float64 `json:"value"`
	// Source is "measured" or "analytic".
	Source string `json:"source"`
	// Expected is what Analyze expects.
	Expected float64 `json:"expected"`
	// Published is the published figure, where there is one.
	Published *float64 `json:"published,omitempty"`
	// Check says how Value is judged against Reference and Tolerance.
	Check string `json:"check,omitempty"`
	// Reference is what Value is judged against: the published figure,
	// a bound, or the analytic one.
	Reference float64 `json:"reference"`
	// Tolerance is how far from Reference Value may be.
	Tolerance float64 `json:"tolerance"`
	// Low is how much further below Reference - Tolerance a CheckWithin
	// Value may be: the allowance of the root requests at an incident's
	// onset, whose figures can only be low.
	Low float64 `json:"low,omitempty"`
	// Basis says where Reference and Tolerance come from.
	Basis string `json:"basis,omitempty"`
	// Pass reports whether Value passes Check (true when not judged).
	Pass bool `json:"pass"`
}

// MarshalJSON writes a NaN Value, Expected, Reference or Tolerance (a
// figure the model cannot give, such as a mean radius under a budget, or
// one measured against a run that did not run) as null.
func (f Figure) MarshalJSON() ([]byte, error) {
	type plain Figure // without this method
	return json.Marshal(struct {
		plain
		Value     *float64 `json:"value"`
		Expected  *float64 `json:"expected"`
		Reference *float64 `json:"reference"`
		Tolerance *float64 `json:"tolerance"`
	}{plain(f), finite(f.Value), finite(f.Expected), finite(f.Reference), finite(f.Tolerance)})
}

// judge sets f.Pass.
func (f Figure) judge() Figure {
	switch f.Check {
	case CheckWithin:
		f.Pass = f.Value <= f.Reference+f.Tolerance+1e-9 && f.Value >= f.Reference-f.Tolerance-f.Low-1e-9
	case CheckAtMost:
		f.Pass = f.Value <= f.Reference+f.Tolerance+1e-9
	case CheckAtLeast:
		f.Pass = f.Value >= f.Reference-f.Tolerance-1e-9
	default:
		f.Pass = true
	}
	return f
}

// Report is what one Scenario.Run found.
type Report struct {
	// Scenario is the scenario's name.
	Scenario string `json:"scenario"`
	// Summary is the scenario's Summary.
	Summary string `json:"summary"`
	// Analytic reports that every run was computed, none run.
	Analytic bool `json:"analytic"`
	// Runs are the scenario's runs, in order.
	Runs []RunReport `json:"runs"`
	// Figures are the scenario's headline figures, judged.
	Figures []Figure `json:"figures"`
	// Notes explain the figures.
	Notes []string `json:"notes,omitempty"`
	// Seconds is how long the scenario took.
	Seconds float64 `json:"seconds"`
}

// Failed returns how many figures and measured node loads did not pass.
func (r Report) Failed() int {
	n := 0
	for _, f := range r.Figures {
		if !f.Pass {
			n++
		}
	}
	for _, run := range r.Runs {
		for _, ok := range run.LoadPasses() {
			if !ok {
				n++
			}
		}
	}
	return n
}

// Run runs the scenario's runs one after the other, each on its own
// services, and computes its figures. In Analytic mode, and for runs too
// costly to run, it computes them with Analyze instead.
func (s Scenario) Run(ctx context.Context, so ScenarioOptions) (Report, error) {
	start := time.Now()
	c := scenarioConfig{so}
	rep := Report{Scenario: s.Name, Summary: s.Summary, Analytic: so.Analytic}
	for _, p := range s.plan(c) {
		o := p.opts
		o.Attempts = cmp.Or(o.Attempts, 2)
		o.Budget = cmp.Or(o.Budget, 0.1)
		o.Transport, o.Seed, o.Logger = so.Transport, so.Seed, so.Logger
		if so.Timeout > 0 {
			o.Timeout = so.Timeout
		}
		small := p.smallConcurrency
		small = cmp.Or(small, 4)
		o.Concurrency = c.concurrency(o.Concurrency, small)
		if o.openLoop() {
			o.Rate = or(so.Rate, o.Rate)
			o.Duration = or(so.Duration, o.Duration)
			o.Bin = or(so.Bin, o.Bin)
		}
		a, err := Analyze(o)
		if err != nil {
			return rep, fmt.Errorf("%s: %s: %w", s.Name, p.label, err)
		}
		if p.unmodelled != "" && a.MeasuredOnly == "" {
			a = a.unmodelled(p.unmodelled)
		}
		rr := RunReport{Label: p.label, Group: p.group, Topology: a.Topology, Policy: o.Policy, Analytic: so.Analytic || p.analytic, Expected: a, Published: p.published}
		if !rr.Analytic {
			if so.Progress != nil {
				label := s.Name + ": " + p.label
				o.Progress = func(done, total int) { so.Progress(label, done, total) }
			}
			res, err := Run(ctx, o)
			if err != nil {
				return rep, fmt.Errorf("%s: %s: %w", s.Name, p.label, err)
			}
			rr.Result = &res
		}
		rep.Runs = append(rep.Runs, rr)
	}
	rep.Figures, rep.Notes = s.figures(c, rep.Runs)
	for i, f := range rep.Figures {
		if f.Source == "analytic" && math.IsNaN(f.Value) {
			f.Check = CheckNone // the model has none to judge
		}
		rep.Figures[i] = f.judge()
	}
	for _, r := range rep.Runs {
		if r.Result == nil && r.Expected.MeasuredOnly != "" {
			rep.Notes = append(rep.Notes, "Measured only: "+r.Expected.MeasuredOnly+". Run without -analytic for the figures.")
			break
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// or returns v, or else when v is zero.
func or[T comparable](v, orElse T) T {
	var zero T
	if v != zero {
		return v
	}
	return orElse
}

// SVG returns the report's chart as an SVG document: goodput over time,
// one line per run, for a report of open-loop runs (TimeChart), else the
// loads per node (Chart).
func (r Report) SVG() ([]byte, error) {
	if tc, ok := r.TimeChart(); ok {
		return tc.SVG(), nil
	}
	c, err := r.Chart()
	if err != nil {
		return nil, err
	}
	return c.SVG(), nil
}

// Scenarios returns every named scenario, in the order -scenario all
// runs them.
func Scenarios() []Scenario {
	return []Scenario{
		scenarioChain(),
		scenarioAvailability(),
		scenarioContextDrop(),
		scenarioMixed(),
		scenarioCoincidental(),
		scenarioNoRetryBelow(),
		scenarioDeep(),
		scenarioFanout(),
		scenarioOverload(),
		CapacityScenario(CapacityArms()),
		PartialScenario(PartialArms()),
	}
}

// ScenarioNames returns the names of Scenarios, in order.
func ScenarioNames() []string {
	var names []string
	for _, s := range Scenarios() {
		names = append(names, s.Name)
	}
	return names
}

// LookupScenario returns the scenario called name.
func LookupScenario(name string) (Scenario, bool) {
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// TopologyScenario returns a scenario that runs t under each of policies
// with base's settings (its Topology and Policy are replaced): no
// published figure, every node's measured load judged against Analyze,
// and the storm radius of each run shown.
func TopologyScenario(t *Topology, policies []Policy, base Options) Scenario {
	return Scenario{
		Name:    t.Name,
		Summary: t.Description,
		Chart:   true,
		plan: func(c scenarioConfig) []plannedRun {
			var runs []plannedRun
			for _, p := range policies {
				o := base
				o.Topology, o.Policy = t, p
				o.Requests = c.requests(base.Requests, base.Requests)
				runs = append(runs, plannedRun{label: string(p), opts: o})
			}
			return runs
		},
		figures: func(_ scenarioConfig, runs []RunReport) ([]Figure, []string) {
			var figs []Figure
			blind := map[Policy]*RunReport{}
			for i, r := range runs {
				figs = append(figs, measure("max storm radius (hops), "+r.Label, r, radiusMax).atMost(float64(r.Expected.RadiusMax), "the most hops on one call path where a retry may be spent"))
				blind[r.Policy] = &runs[i]
			}
			for i, r := range runs {
				if r.Result == nil || r.Result.Telemetry == nil {
					continue
				}
				if why := t.hidesTelemetry(); why != "" {
					// Unknown figures are expected, not checked.
					figs = append(figs, measure("root requests with unknown telemetry, "+r.Label+" ("+why+")", r, telemetryUnknown))
					continue
				}
				switch b, tol := blindOf(blind, r.Policy); {
				case b != nil && r.Result.Mode != retry.ModeObserve:
					figs = append(figs, telemetryFigures(r.Label, &runs[i], b, tol, "the same graph's requests served blind to claims ("+string(b.Policy)+") less "+r.Label+"'s, measured")...)
				default:
					figs = append(figs, measure("prevented per root request reported by the root's errown, "+r.Label, r, telemetryPrevented))
				}
			}
			return figs, []string{_telemetryNote}
		},
	}
}

// blindOf returns the run among runs, by policy, that retries like p blind
// to claims, and the tolerance of comparing their requests served: exact
// without a budget, 5% with one.
func blindOf(runs map[Policy]*RunReport, p Policy) (*RunReport, float64) {
	if !p.runsErrown() {
		return nil, 0
	}
	tol := 0.0
	if p.budgeted() {
		tol = LoadTolerance
	}
	return runs[p.blind()], tol
}
