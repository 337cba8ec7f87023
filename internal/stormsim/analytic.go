package stormsim

import (
	"encoding/json"
	"math"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
)

// Analysis is what Analyze expects of a topology under a policy: the
// mean of what Run measures, for an unbounded number of requests.
type Analysis struct {
	// Topology is the name of the topology analysed.
	Topology string `json:"topology"`
	// Policy is the policy of every hop.
	Policy Policy `json:"policy"`
	// Nodes are the topology's nodes, root first.
	Nodes []NodeAnalysis `json:"nodes"`
	// Edges are the caller→callee hops, in the order of the calls.
	Edges []EdgeAnalysis `json:"edges"`
	// Availability is the probability that a root request succeeds.
	Availability float64 `json:"availability"`
	// RadiusMax is the largest number of hops on one call path (root →
	// ... → leaf) on which a retry may be spent for one root request:
	// those with any retries. Hops on sibling paths do not add up. It is
	// the retry storm radius of a root request that meets every failure
	// there is.
	RadiusMax int `json:"radiusMax"`
	// Exact reports that every root request meets the same fate: no
	// failure probability and no budget share is strictly between 0 and
	// 1. Then every root request that fails has radius RadiusMax.
	Exact bool `json:"exact"`
	// MeasuredOnly, when not empty, says why the model has no figures
	// for the topology: its fate turns on time (a node that hangs,
	// per-attempt timeouts), which the model does not follow. Then every
	// load, rate and retry count is NaN (null in JSON), Availability is 0
	// when no root request can succeed whatever the timing and NaN
	// otherwise, RadiusMax counts the most hops on one call path where a
	// retry may be spent at all, and Run's figures are measured only.
	MeasuredOnly string `json:"measuredOnly,omitempty"`
}

// MarshalJSON writes NaN figures as null.
func (a Analysis) MarshalJSON() ([]byte, error) {
	type plain Analysis // without this method
	return json.Marshal(struct {
		plain
		Availability *float64 `json:"availability"`
	}{plain(a), finite(a.Availability)})
}

// NodeAnalysis is what Analyze expects of one node.
type NodeAnalysis struct {
	// Name is the node's name.
	Name string `json:"name"`
	// Depth is the node's shortest distance from the root.
	Depth int `json:"depth"`
	// Load is the requests the node serves per root request.
	Load float64 `json:"load"`
	// ErrorRate is the fraction of its requests the node fails.
	ErrorRate float64 `json:"errorRate"`
	// UnclaimedRate is the fraction of its requests the node fails with
	// an unclaimed error.
	UnclaimedRate float64 `json:"unclaimedRate"`
	// OwnFailureRate is the fraction of its requests the node's own work
	// fails.
	OwnFailureRate float64 `json:"ownFailureRate"`
	// OwnUnclaimedRate is the fraction of its requests whose own failure
	// goes out unclaimed: the node blames a dependency for it.
	OwnUnclaimedRate float64 `json:"ownUnclaimedRate"`
}

// MarshalJSON writes NaN figures (Analysis.MeasuredOnly) as null.
func (n NodeAnalysis) MarshalJSON() ([]byte, error) {
	type plain NodeAnalysis // without this method
	return json.Marshal(struct {
		plain
		Load             *float64 `json:"load"`
		ErrorRate        *float64 `json:"errorRate"`
		UnclaimedRate    *float64 `json:"unclaimedRate"`
		OwnUnclaimedRate *float64 `json:"ownUnclaimedRate"`
	}{plain(n), finite(n.Load), finite(n.ErrorRate), finite(n.UnclaimedRate), finite(n.OwnUnclaimedRate)})
}

// EdgeAnalysis is what Analyze expects of one hop.
type EdgeAnalysis struct {
	// From is the caller's name.
	From string `json:"from"`
	// To is the callee's name.
	To string `json:"to"`
	// Retries is the retries spent on the hop per root request.
	Retries float64 `json:"retries"`
}

// MarshalJSON writes a NaN Retries (Analysis.MeasuredOnly) as null.
func (e EdgeAnalysis) MarshalJSON() ([]byte, error) {
	type plain EdgeAnalysis // without this method
	return json.Marshal(struct {
		plain
		Retries *float64 `json:"retries"`
	}{plain(e), finite(e.Retries)})
}

// finite returns &v, or nil for NaN and infinities, which JSON cannot
// carry.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// Loads returns the load of every node, root first.
func (a Analysis) Loads() []float64 {
	loads := make([]float64, len(a.Nodes))
	for i, n := range a.Nodes {
		loads[i] = n.Load
	}
	return loads
}

// Analyze computes, without running anything, the requests each node of
// o's topology (o.Topology, else the chain of o.Depth and o.FailDepth)
// serves per root request under o.Policy, and the fate of those requests.
//
// The model follows the simulator's mechanism, not a formula per
// scenario. Every request a node serves is alike: its own failure and its
// children's are independent draws, so a node is described by the
// distribution of its response (success, or an error of a retryable or
// final code with a claim: missing, claimed, unclaimed) and the load it
// causes below, per request. Going up from the leaves, a caller's retry
// policy turns its child's distribution into that of one logical call:
// an attempt is retried when its error is retryable in kind, not
// unclaimed (unless the caller runs no errown and so ignores claims) and
// attempts remain. A budget of ratio B gives every such wanted retry the
// same chance ρ, chosen so that the retries per call, Σ (ρw)^n for n from
// 1 to attempts-1 with w the chance an attempt wants a retry, are at most
// B: in the long run the budget grants B retries per call and grants them
// to whichever call wants one. errown's own budget (the ownership
// policies) refunds a retry that succeeds, so there the retries that
// fail, a share 1 − P(success) of them, are at most B. The caller's own claim then follows
// ingress.Decide over its failed calls, with the edge kinds errown would
// use: unknown with the memory disabled, else what the memory learns in
// the long run (fail-close for a hard edge; for a soft one, by the chance
// the caller fails anyway). It ignores the first requests of a run, before
// the budget has deposits to spend or the memory its minimum of samples,
// and retries cut short by deadlines.
//
// Time is beyond it: for a topology with a node that hangs or a call with
// a per-attempt timeout, whose retries turn on which timeout fires first,
// it gives no loads (see Analysis.MeasuredOnly).
func Analyze(o Options) (Analysis, error) {
	o, g, err := o.compiled()
	if err != nil {
		return Analysis{}, err
	}
	return newAnalyzer(g, o).analyze(), nil
}

// Error classes and claims of the model's outcome distributions.
const (
	_retryable = iota // the error's code is worth a retry
	_final            // the error is not retryable by nature
	_classes
)

const (
	_missing = iota
	_claimed
	_unclaimed
	_claims
)

// outcome is the distribution of one response: success, or an error of a
// class with a claim.
type outcome struct {
	ok  float64
	err [_classes][_claims]float64
}

// callOutcome is the distribution of one logical call's end, after the
// caller's retries: success, or an error of a class, with the callee's
// claim, and whether the retry criteria were satisfied (index 1) or not.
type callOutcome struct {
	ok   float64
	fail [_classes][_claims][2]float64
}

// nodeModel is what one request served by a node brings about.
type nodeModel struct {
	out          outcome
	load         []float64 // requests served by each node, this one included
	retries      []float64 // retries spent on each edge
	ownUnclaimed float64
}

type analyzer struct {
	g                 *graph
	o                 Options
	unknownCorrelated bool
	thresholds        memory.Thresholds
	exact             bool
}

func newAnalyzer(g *graph, o Options) *analyzer {
	if o.Mode == retry.ModeObserve && o.Policy.runsErrown() {
		// errown observes: it retries blind to claims, and neither its
		// budget nor its overload limit holds a retry back, so the loads
		// are those of every hop retrying per its policy.
		o.Policy = PolicyNaive
	}
	thresholds := memory.ThresholdsOf(o.Memory)
	thresholds.MinSamples = 1
	return &analyzer{
		g:                 g,
		o:                 o,
		unknownCorrelated: o.UnknownEdges != inbound.UnknownCoincidental,
		thresholds:        thresholds,
		exact:             true,
	}
}

func (a *analyzer) analyze() Analysis {
	g := a.g
	models := make([]nodeModel, len(g.nodes))
	for _, i := range g.order {
		models[i] = a.node(i, models)
	}
	root := models[0]
	res := Analysis{
		Topology:     g.t.Name,
		Policy:       a.o.Policy,
		Availability: root.out.ok,
		Nodes:        make([]NodeAnalysis, len(g.nodes)),
		Edges:        make([]EdgeAnalysis, len(g.edges)),
	}
	for i, n := range g.nodes {
		m := models[i]
		unclaimed := 0.0
		for c := range _classes {
			unclaimed += m.out.err[c][_unclaimed]
		}
		res.Nodes[i] = NodeAnalysis{
			Name:             n.name,
			Depth:            n.depth,
			Load:             root.load[i],
			ErrorRate:        1 - m.out.ok,
			UnclaimedRate:    unclaimed,
			OwnFailureRate:   n.fail,
			OwnUnclaimedRate: m.ownUnclaimed,
		}
		if n.fail > 0 && n.fail < 1 {
			a.exact = false
		}
	}
	for e, ed := range g.edges {
		res.Edges[e] = EdgeAnalysis{From: g.nodes[ed.from].name, To: g.nodes[ed.to].name, Retries: root.retries[e]}
	}
	res.RadiusMax = g.mostOnOnePath(func(e int) bool { return root.retries[e] > 1e-12 })
	res.Exact = a.exact
	if g.timed() || g.partial() {
		a.measuredOnly(&res)
	}
	return res
}

// _measuredOnly is Analysis.MeasuredOnly of a timed topology;
// _measuredOnlyCapacity of one with a finite capacity or triggers.
const (
	_measuredOnly         = "a node hangs or a call has a per-attempt timeout: which timeout fires first decides every retry, and the model does not follow time"
	_measuredOnlyCapacity = "a node has a finite capacity or a timeline of triggers: queues, timeouts and load over time decide every retry, and the model does not follow time"
	_measuredOnlyPartial  = "a node's instances differ: which instance its callers' peer lists choose for each attempt decides every retry, and the model does not follow the peer lists"
)

// measuredOnly turns the untimed analysis res of a timed topology into
// what is known whatever the timing: whether every root request fails
// (a failure on every path that no retry can mend stays one when
// timeouts cut retries short or add some), and the most hops on one call
// path on which a retry may be spent at all.
func (a *analyzer) measuredOnly(res *Analysis) {
	g := a.g
	res.MeasuredOnly = _measuredOnly
	if g.capacity() {
		res.MeasuredOnly = _measuredOnlyCapacity
	}
	if g.partial() {
		res.MeasuredOnly = _measuredOnlyPartial
	}
	res.Exact = false
	if res.Availability != 0 || g.partial() {
		res.Availability = math.NaN()
	}
	for i := range res.Nodes {
		n := &res.Nodes[i]
		n.Load, n.ErrorRate, n.UnclaimedRate, n.OwnUnclaimedRate = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	// slow: the node or one below it hangs, so an attempt to it may time
	// out; worth: an attempt to it may end in an error worth a retry.
	slow, worth := make([]bool, len(g.nodes)), make([]bool, len(g.nodes))
	for _, i := range g.order {
		n := g.nodes[i]
		// A queue can outlast an attempt, and a fail or crash trigger
		// fails what reaches the node.
		slow[i] = n.hang || n.capacity != nil || len(n.triggers) > 0
		worth[i] = n.hang || (n.fail > 0 || len(n.triggers) > 0) && n.retryable
		for _, c := range n.calls {
			slow[i] = slow[i] || slow[c.child]
			worth[i] = worth[i] || !c.soft && worth[c.child]
		}
		worth[i] = worth[i] || slow[i]
	}
	for e := range g.edges {
		res.Edges[e].Retries = math.NaN()
	}
	res.RadiusMax = g.mostOnOnePath(func(e int) bool {
		ed := g.edges[e]
		return g.nodes[ed.from].retry && a.o.Attempts > 1 && worth[ed.to]
	})
}

// unmodelled returns a without figures, for a run whose mechanisms the
// model does not follow (why): as a measured-only analysis, with NaN
// availability, loads, rates and retries.
func (a Analysis) unmodelled(why string) Analysis {
	a.MeasuredOnly, a.Exact, a.Availability = why, false, math.NaN()
	a.Nodes, a.Edges = append([]NodeAnalysis(nil), a.Nodes...), append([]EdgeAnalysis(nil), a.Edges...)
	for i := range a.Nodes {
		n := &a.Nodes[i]
		n.Load, n.ErrorRate, n.UnclaimedRate, n.OwnUnclaimedRate = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	for e := range a.Edges {
		a.Edges[e].Retries = math.NaN()
	}
	return a
}

// node models node i, whose children are modelled already.
func (a *analyzer) node(i int, models []nodeModel) nodeModel {
	g := a.g
	n := g.nodes[i]
	m := nodeModel{load: make([]float64, len(g.nodes)), retries: make([]float64, len(g.edges))}
	m.load[i] = 1
	calls := make([]callOutcome, len(n.calls))
	hardOK := 1.0 // chance every call on a hard edge succeeds
	for k, c := range n.calls {
		child := models[c.child]
		out, attempts := a.call(i, child.out)
		calls[k] = out
		times := float64(c.times)
		for j := range m.load {
			m.load[j] += times * attempts * child.load[j]
		}
		for e := range m.retries {
			m.retries[e] += times * attempts * child.retries[e]
		}
		m.retries[c.edge] += times * (attempts - 1)
		if !c.soft {
			hardOK *= math.Pow(out.ok, times)
		}
	}
	failsAnyway := 1 - (1-n.fail)*hardOK // the node's error rate, which soft calls do not change
	errown := a.o.Policy.runsErrown() && n.errown

	// Distribution over (the class of the first failed hard call, or
	// none; the decision state of the failed calls errown tracks).
	const (
		decNone   = iota // no correlated failure yet
		decAllRCS        // correlated failures, all with their retry criteria satisfied
		decNotRCS        // a correlated failure nobody has retried yet
	)
	var state [_classes + 1][3]float64 // first index: 0 none, 1+class
	state[0][decNone] = 1
	for k, c := range n.calls {
		correlated := errown && !n.drop && a.correlated(c, calls[k], failsAnyway)
		for range c.times {
			var next [_classes + 1][3]float64
			for first := range state {
				for dec, p := range state[first] {
					if p == 0 {
						continue
					}
					next[first][dec] += p * calls[k].ok
					for class := range _classes {
						for claim := range _claims {
							for rcs, q := range calls[k].fail[class][claim] {
								nf, nd := first, dec
								if first == 0 && !c.soft {
									nf = 1 + class
								}
								if correlated && dec != decNotRCS {
									nd = decAllRCS
									if rcs == 0 {
										nd = decNotRCS
									}
								}
								next[nf][nd] += p * q
							}
						}
					}
				}
			}
			state = next
		}
	}
	if n.hang {
		// It never answers: its caller's attempt times out, a failure
		// worth a retry with no claim, whatever the node runs. How many
		// retries the timeouts leave is beyond the model (measuredOnly).
		m.out = outcome{}
		m.out.err[_retryable][_missing] = 1
		return m
	}
	own := _retryable
	if !n.retryable {
		own = _final
	}
	for first := range state {
		for dec, p := range state[first] {
			claim := _missing
			if errown {
				claim = _claimed
				if dec == decAllRCS {
					claim = _unclaimed
				}
			}
			m.out.err[own][claim] += p * n.fail
			if claim == _unclaimed {
				m.ownUnclaimed += p * n.fail
			}
			if first == 0 {
				m.out.ok += p * (1 - n.fail)
			} else {
				m.out.err[first-1][claim] += p * (1 - n.fail)
			}
		}
	}
	return m
}

// correlated reports whether errown at the caller counts a failed call on
// c as correlated with its own error: by the edge's kind, unknown with
// the memory disabled, else as learned in the long run. failsAnyway is the
// caller's error rate apart from its soft calls.
func (a *analyzer) correlated(c gcall, out callOutcome, failsAnyway float64) bool {
	kind := ownership.KindUnknown
	if !a.o.Memory.Disabled && out.ok < 1 {
		ratio := 1.0 // P(caller fails | this call failed): a hard edge always fails the caller
		if c.soft {
			ratio = failsAnyway
		}
		const samples = 1_000_000
		kind = memory.Classify(ownership.KindUnknown, samples, int64(math.Round(ratio*samples)), a.thresholds)
	}
	return ingress.Correlated(kind, a.unknownCorrelated)
}

// call returns the distribution of one logical call from node caller to a
// child whose responses follow child, after the caller's retries, and the
// attempts it makes on average.
func (a *analyzer) call(caller int, child outcome) (callOutcome, float64) {
	n := a.g.nodes[caller]
	maxAttempts := 1
	if n.retry {
		maxAttempts = a.o.Attempts
	}
	claimAware := a.o.Policy.runsErrown() && n.errown
	wanted := func(class, claim int) bool {
		return class == _retryable && (!claimAware || claim != _unclaimed)
	}
	w := 0.0
	for class := range _classes {
		for claim := range _claims {
			if wanted(class, claim) {
				w += child.err[class][claim]
			}
		}
	}
	rho := 1.0
	if a.o.Policy.budgeted() && maxAttempts > 1 {
		counted := 1.0 // the share of retries the budget counts
		if a.o.Policy.runsErrown() {
			// errown's budget refunds a retry that succeeds: it counts
			// the retries that fail.
			counted = 1 - child.ok
		}
		rho = budgetShare(w, maxAttempts, a.o.Budget/max(counted, 1e-12))
	}
	if w > 0 && w < 1 || rho > 0 && rho < 1 && w > 0 {
		a.exact = false
	}
	var out callOutcome
	attempts, reach := 0.0, 1.0
	for n := 1; n <= maxAttempts; n++ {
		attempts += reach
		out.ok += reach * child.ok
		for class := range _classes {
			for claim := range _claims {
				p := reach * child.err[class][claim]
				if wanted(class, claim) && n < maxAttempts {
					out.fail[class][claim][1] += p * (1 - rho) // refused by the budget
					continue
				}
				rcs := n > 1 || claim == _unclaimed || class == _final
				out.fail[class][claim][b2i(rcs)] += p
			}
		}
		reach *= rho * w
	}
	return out, attempts
}

// budgetShare returns the chance ρ that a budget of ratio b grants a
// wanted retry when an attempt wants one with chance w and a call makes at
// most attempts attempts: the largest ρ in [0, 1] with
// Σ_{n=1}^{attempts-1} (ρw)^n <= b.
func budgetShare(w float64, attempts int, b float64) float64 {
	retries := func(rho float64) float64 {
		sum, term := 0.0, 1.0
		for range attempts - 1 {
			term *= rho * w
			sum += term
		}
		return sum
	}
	if retries(1) <= b {
		return 1
	}
	lo, hi := 0.0, 1.0
	for range 64 {
		mid := (lo + hi) / 2
		if retries(mid) <= b {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
