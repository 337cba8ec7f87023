// Command stormsim is errown's storm lab: it runs call graphs of real yarpc
// services on 127.0.0.1 under naive retries, retry budgets and errown, and
// prints what each service served beside the figures docs/DESIGN.md publishes.
//
// With no flags it runs docs/DESIGN.md's first table: the seven-node chain
// A→…→G, D failing, under the three policies (naive, budget, ownership)
// over HTTP. Each policy's table is titled with what ran (policy, chain,
// failing node, attempts, requests, transport) and prints each measured
// ratio beside the published figure with PASS or FAIL (within ±0.05), and
// the policy's retry storm radius; a summary puts the policies side by
// side (loads, requests served in all, radius, what errown prevented) and
// a legend says what every column means. It exits 1 if any node fails.
// -depth, -fail-depth, -policy, -attempts and -budget change the chain.
// Then, with no flags, a short partial-failure table shows the other side
// of the trade-off: A→B→C, C three instances behind round-robin, one
// failing every call, and each arm's availability and calls at C per
// root request, with errown's targets PASS or FAIL (-scenario partial
// runs the full comparison).
//
// -scenario NAME runs one of the lab's named scenarios (-scenario all runs
// every one): each prints its runs' loads per node, measured beside the
// analytic model's, and its headline figures beside the published ones,
// each with the tolerance it is judged within. -topology FILE runs a call
// graph described in YAML (see the shipped ones under
// internal/stormsim/topologies) under -policy or the three policies.
//
// -scenario overload runs docs/DESIGN.md's "Overload and timeouts": a chain
// whose leaf hangs, per-attempt timeouts at every hop, well nested and
// mis-nested, and the attempts that reach the hanging leaf per root
// request under each policy.
//
// -scenario capacity runs docs/DESIGN.md's "Capacity and recovery": a
// node of finite capacity under open-loop load and a trigger, in both
// abandoned modes, on a fan-out and with a crash, under every arm (-arms
// picks some), and the recovery of each. -rate, -duration and -bin give a
// topology (or the chain) open-loop load.
//
// -scenario partial runs docs/DESIGN.md's "Partial failures": one bad
// instance of three (a leaf instance failing every call or hanging past
// its caller's attempt timeout, a middle instance failing), and
// independent failures at docs/DESIGN.md's second table's bases, under no
// retries, every hop retrying, a 10% budget, failsafe-go, errown and
// errown observe; each of errown's targets PASS or FAIL.
//
// -analytic computes everything with the analytic model instead of running
// services (a topology with a hanging node or per-attempt timeouts has no
// model: its figures are measured only); -json prints JSON (for the chain:
// one object for one -policy, an array for all three; for a
// scenario its report; for all, an array of reports); -svg FILE writes a
// chart of the loads per node, one line per run. A run longer than a few
// seconds shows its progress on stderr.
//
// -transport runs the services over yarpc's HTTP (default), gRPC or
// TChannel transports, as plain grpc-go (grpc-go) or net/http (nethttp)
// services with errown through packages grpcgo and nethttp, or mixed:
// yarpc over HTTP, grpc-go and net/http services in turn.
//
//	go run ./cmd/stormsim -scenario deep -svg docs/deep.svg
//	go run ./cmd/stormsim -policy ownership -transport grpc -json
//	go run ./cmd/stormsim -transport grpc-go -scenario all
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/errown/errown/internal/stormsim"
	"github.com/errown/errown/retry"
	"go.uber.org/multierr"
)

// _tolerance is how far a measured ratio of the chain may be from the
// published or expected figure and still PASS.
const _tolerance = 0.05

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "stormsim:", err)
		os.Exit(1)
	}
}

// _usage heads -h: what the tool is, in one line, then how to call it.
const _usage = `stormsim is errown's storm lab: it runs call graphs of real yarpc services on 127.0.0.1 under naive retries, retry budgets and errown, and prints the requests each service served.

Usage: go run ./cmd/stormsim [flags]
With no flags it runs docs/DESIGN.md's first table: the chain A→B→C→D→E→F→G, D failing every call, under naive, budget and ownership; then a short partial-failure table: A→B→C, one of C's three instances failing every call, availability and load per arm.

Flags:
`

// config is what the flags say.
type config struct {
	opts     stormsim.Options
	policies []stormsim.Policy
	json     bool
	scenario string // "" for the chain of the flags
	topology string // file
	analytic bool
	svg      string
	small    bool
	arms     []string
	variants []string
	set      map[string]bool // flags given on the command line
}

// _chainFlags shape the chain or a -topology run; a named scenario sets
// them itself.
var _chainFlags = []string{"depth", "fail-depth", "policy", "attempts", "budget", "mode"}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("stormsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), _usage)
		fs.PrintDefaults()
	}
	var (
		c      config
		policy string
	)
	fs.IntVar(&c.opts.Depth, "depth", 7, "number of nodes in the chain (A, B, ...)")
	fs.IntVar(&c.opts.FailDepth, "fail-depth", 3, "depth of the node failing every call (0 is the root)")
	fs.StringVar(&policy, "policy", "", "naive, budget, ownership or ownership-naive; empty runs the first three")
	fs.IntVar(&c.opts.Attempts, "attempts", 2, "attempts per call at every hop, the first one included")
	fs.Float64Var(&c.opts.Budget, "budget", 0.1, "retry budget ratio (budget and ownership policies)")
	fs.IntVar(&c.opts.Requests, "requests", 2000, "root requests to send (a scenario's own number unless given)")
	fs.IntVar(&c.opts.Concurrency, "concurrency", stormsim.DefaultConcurrency, "root requests in flight (a scenario's own unless given)")
	fs.DurationVar(&c.opts.Timeout, "timeout", stormsim.DefaultTimeout, "deadline of each root request (a scenario's own unless given)")
	fs.StringVar(&c.opts.Transport, "transport", stormsim.DefaultTransport, "http, grpc, tchannel (yarpc), grpc-go, nethttp (plain grpc-go or net/http services) or mixed (yarpc http → grpc-go → nethttp, cycled)")
	fs.Uint64Var(&c.opts.Seed, "seed", 1, "seed of the nodes' failure draws")
	fs.BoolVar(&c.json, "json", false, "print JSON: for the chain one object for one -policy, an array for all; a report for a scenario")
	fs.StringVar(&c.scenario, "scenario", "", "run a named scenario, or all: "+strings.Join(stormsim.ScenarioNames(), ", "))
	fs.StringVar(&c.topology, "topology", "", "run the call graph of a YAML `file` under -policy or the three policies")
	fs.BoolVar(&c.analytic, "analytic", false, "compute the expected figures with the analytic model; run no service")
	fs.StringVar(&c.svg, "svg", "", "write a chart of the loads per node, one line per run, to `file` (one scenario)")
	fs.Func("mode", "errown's mode under the ownership policies: enforce (default) or observe, which retries blind to claims and reports what enforce would prevent", func(v string) error {
		c.opts.Mode = retry.Mode(v)
		return nil
	})
	fs.BoolVar(&c.small, "small", false, "run scenarios at the size of their tests: quicker, wider sampling tolerances")
	fs.Float64Var(&c.opts.Rate, "rate", 0, "open-loop load: root requests per second, Poisson, seeded by -seed, each with the -timeout deadline (default: the topology's or scenario's; 0 and none, the closed loop of -requests and -concurrency)")
	fs.DurationVar(&c.opts.Duration, "duration", 0, "how long open-loop load lasts (default: the topology's or scenario's, else 12s)")
	fs.DurationVar(&c.opts.Bin, "bin", 0, "width of a bin of an open-loop run's series (default 250ms)")
	fs.Func("arms", "the capacity scenario's arms to run, comma-separated: "+strings.Join(stormsim.ArmNames(stormsim.CapacityArms()), ", ")+" (default all)", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if !slices.Contains(stormsim.ArmNames(stormsim.CapacityArms()), strings.TrimSpace(name)) {
				return fmt.Errorf("no arm %q", name)
			}
			c.arms = append(c.arms, strings.TrimSpace(name))
		}
		return nil
	})
	fs.Func("variants", "the capacity scenario's variants to run, comma-separated: "+strings.Join(stormsim.CapacityVariants(), ", ")+" (default all)", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if !slices.Contains(stormsim.CapacityVariants(), strings.TrimSpace(name)) {
				return fmt.Errorf("no variant %q", name)
			}
			c.variants = append(c.variants, strings.TrimSpace(name))
		}
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	c.set = make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	if c.scenario != "" && c.topology != "" {
		return c, errors.New("-scenario and -topology: give one")
	}
	if c.scenario == "chain" {
		c.scenario = "" // the chain of the flags, as without -scenario
	}
	c.policies = stormsim.Policies()
	if policy != "" {
		c.policies = []stormsim.Policy{stormsim.Policy(policy)}
	}

	var err error
	switch {
	case c.scenario != "":
		if _, ok := stormsim.LookupScenario(c.scenario); !ok && c.scenario != "all" {
			return c, fmt.Errorf("scenario: must be all or one of %s, got %q", strings.Join(stormsim.ScenarioNames(), ", "), c.scenario)
		}
		for _, name := range _chainFlags {
			if c.set[name] {
				err = multierr.Append(err, fmt.Errorf("-%s: a named scenario sets its own; use it with the chain or -topology", name))
			}
		}
		if c.svg != "" && c.scenario == "all" {
			err = multierr.Append(err, errors.New("-svg: give one scenario, not all"))
		}
		if s, ok := stormsim.LookupScenario(c.scenario); ok && c.svg != "" && !s.Chart {
			err = multierr.Append(err, fmt.Errorf("-svg: scenario %s has no load chart", c.scenario))
		}
		return c, err
	case c.topology != "":
		for _, name := range []string{"depth", "fail-depth"} {
			if c.set[name] {
				err = multierr.Append(err, fmt.Errorf("-%s: the topology file gives the graph", name))
			}
		}
	}
	// Check every policy's options before running any, reporting each
	// problem once.
	seen := make(map[string]bool)
	for _, p := range c.policies {
		o := c.opts
		o.Policy = p
		if c.topology != "" {
			o.Topology = stormsim.Chain(1, 0) // validated when read
		}
		for _, e := range multierr.Errors(o.Validate()) {
			if !seen[e.Error()] {
				seen[e.Error()] = true
				err = multierr.Append(err, e)
			}
		}
	}
	return c, err
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	p := newProgress(stderr)
	defer p.finish()
	switch {
	case c.scenario != "":
		return runScenarios(ctx, c, stdout, p)
	case c.topology != "":
		return runTopology(ctx, c, stdout, p)
	default:
		return runChain(ctx, c, stdout, p)
	}
}

// runChain runs (or computes) the chain of the flags under each policy.
func runChain(ctx context.Context, c config, stdout io.Writer, p *progress) error {
	results := make([]stormsim.Result, 0, len(c.policies))
	analyses := make([]stormsim.Analysis, 0, len(c.policies))
	failed := 0
	for _, policy := range c.policies {
		o := c.opts
		o.Policy = policy
		if c.analytic {
			a, err := stormsim.Analyze(o)
			if err != nil {
				return err
			}
			analyses = append(analyses, a)
			if !c.json {
				printAnalysis(stdout, o, a)
			}
			continue
		}
		o.Progress = p.update("chain: " + string(policy))
		res, err := stormsim.Run(ctx, o)
		if err != nil {
			return err
		}
		results = append(results, res)
		if !c.json {
			p.clear()
			failed += printTable(stdout, o, res)
		}
	}
	if !c.json {
		if c.analytic {
			printLegend(stdout, c.opts, nil)
		} else {
			if len(results) > 1 {
				printSummary(stdout, results)
			}
			printLegend(stdout, c.opts, results)
		}
	}
	if len(c.set) == 0 {
		// With no flags: the other side of the trade-off, where retries
		// keep users' requests working.
		if err := runBrief(ctx, stdout, p); err != nil {
			return err
		}
	}
	if c.svg != "" {
		chart := stormsim.Chart{
			Title:    "stormsim chain: requests served per request at the root",
			Subtitle: chainSubtitle(c.opts, c.analytic),
			XLabel:   "node (root first)",
			YLabel:   "requests per root request",
		}
		for _, n := range stormsim.Chain(c.opts.Depth, c.opts.FailDepth).Nodes {
			chart.Categories = append(chart.Categories, n.Name)
		}
		for i, policy := range c.policies {
			s := stormsim.Series{Name: string(policy)}
			if c.analytic {
				s.Values = analyses[i].Loads()
			} else {
				s.Values = results[i].Ratios()
			}
			chart.Series = append(chart.Series, s)
		}
		if err := os.WriteFile(c.svg, chart.SVG(), 0o644); err != nil {
			return err
		}
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		switch {
		case c.analytic && len(analyses) == 1:
			return enc.Encode(analyses[0])
		case c.analytic:
			return enc.Encode(analyses)
		case len(results) == 1:
			return enc.Encode(results[0])
		default:
			return enc.Encode(results)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d nodes off the reference figures by more than ±%v", failed, _tolerance)
	}
	return nil
}

// runBrief runs and prints the short partial-failure table: one of three
// C instances failing every call, availability and load per arm.
func runBrief(ctx context.Context, stdout io.Writer, p *progress) error {
	rep, err := stormsim.PartialBrief().Run(ctx, stormsim.ScenarioOptions{
		Progress: p.updateLabelled,
	})
	p.clear()
	if err != nil {
		return err
	}
	printBrief(stdout, rep)
	return nil
}

// printBrief prints the partial-failure table of rep (PartialBrief) and
// its targets, PASS or FAIL.
func printBrief(w io.Writer, rep stormsim.Report) {
	requests := 0
	for _, r := range rep.Runs {
		if r.Result != nil {
			requests = r.Result.Requests
		}
	}
	fmt.Fprintf(w, "\n== partial failure: A→B→C, C three instances behind round-robin, one failing every call; 2 attempts per hop, 4 requests in flight, %d requests per arm\n", requests)
	if len(rep.Notes) > 0 {
		_, table, _ := strings.Cut(rep.Notes[0], "\n") // after the row's title
		fmt.Fprintln(w, table)
	}
	for _, f := range rep.Figures {
		verdict := "PASS"
		if !f.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %s: %s\n", verdict, strings.TrimPrefix(f.Name, "C fails: "), num(f.Value))
	}
	fmt.Fprintln(w, "availability: root requests that succeeded; calls at C, at B: requests each served per root request, retries included; the full comparison: -scenario partial")
}

// runScenarios runs the named scenario, or all of them.
func runScenarios(ctx context.Context, c config, stdout io.Writer, p *progress) error {
	var scenarios []stormsim.Scenario
	if c.scenario == "all" {
		scenarios = stormsim.Scenarios()
	} else {
		s, _ := stormsim.LookupScenario(c.scenario) // checked by parseFlags
		scenarios = []stormsim.Scenario{s}
	}
	return runReports(ctx, c, scenarios, stdout, p)
}

// runTopology runs the topology file under each policy.
func runTopology(ctx context.Context, c config, stdout io.Writer, p *progress) error {
	b, err := os.ReadFile(c.topology)
	if err != nil {
		return err
	}
	t, err := stormsim.ParseTopology(b)
	if err != nil {
		return fmt.Errorf("%s: %w", c.topology, err)
	}
	return runReports(ctx, c, []stormsim.Scenario{stormsim.TopologyScenario(t, c.policies, c.opts)}, stdout, p)
}

// runReports runs scenarios and prints their reports.
func runReports(ctx context.Context, c config, scenarios []stormsim.Scenario, stdout io.Writer, p *progress) error {
	so := stormsim.ScenarioOptions{
		Transport: c.opts.Transport,
		Seed:      c.opts.Seed,
		Small:     c.small,
		Analytic:  c.analytic,
		Progress:  p.updateLabelled,
	}
	if c.set["requests"] {
		so.Requests = c.opts.Requests
	}
	if c.set["concurrency"] {
		so.Concurrency = c.opts.Concurrency
	}
	if c.set["timeout"] {
		so.Timeout = c.opts.Timeout
	}
	so.Rate, so.Duration, so.Bin, so.Arms, so.Variants = c.opts.Rate, c.opts.Duration, c.opts.Bin, c.arms, c.variants
	var (
		reports []stormsim.Report
		failed  int
	)
	for _, s := range scenarios {
		rep, err := s.Run(ctx, so)
		if err != nil {
			return err
		}
		reports = append(reports, rep)
		failed += rep.Failed()
		if !c.json {
			p.clear()
			printReport(stdout, rep)
		}
	}
	if c.svg != "" {
		svg, err := reports[0].SVG()
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.svg, svg, 0o644); err != nil {
			return err
		}
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		var err error
		if c.scenario == "all" {
			err = enc.Encode(reports)
		} else {
			err = enc.Encode(reports[0])
		}
		if err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d figures or node loads off their references", failed)
	}
	return nil
}

// printTable prints res beside the figures expected for o and returns how
// many nodes FAIL. Nodes are judged against docs/DESIGN.md's published figures
// when o is that table's chain, else against stormsim.Expected.
func printTable(w io.Writer, o stormsim.Options, res stormsim.Result) int {
	expected := stormsim.Expected(o)
	published, isPublished := stormsim.Published(o)
	reference := expected
	if isPublished {
		reference = published
	}
	fmt.Fprintf(w, "== policy %s: %s\n", res.Policy, policyText(o))
	fmt.Fprintf(w, "   %s\n", chainText(o))
	fmt.Fprintf(w, "   %s; %d requests at %s over %s, in %v\n", attemptsText(o), res.Requests, res.Nodes[0].Name, res.Transport, res.Elapsed.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "node\tdepth\tserved\tratio\texpected\tpublished\t\t")
	failed := 0
	for i, n := range res.Nodes {
		pub := "-"
		if isPublished {
			pub = fmt.Sprintf("%.2f", published[i])
		}
		verdict := "PASS"
		if math.Abs(n.Ratio-reference[i]) > _tolerance {
			verdict = "FAIL"
			failed++
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%s\t%s\t\n", n.Name, n.Depth, n.Served, n.Ratio, expected[i], pub, verdict)
	}
	_ = tw.Flush() // w is stdout; a failed print has nowhere better to go
	fmt.Fprintf(w, "retry storm radius (most hops with a retry on one call path, per failed request): %s\n", radiusText(res.Radius))
	if res.Telemetry != nil {
		fmt.Fprintf(w, "reported by the root's errown: %s\n", telemetryText(res.Telemetry))
	}
	fmt.Fprintln(w)
	return failed
}

// printAnalysis prints what the analytic model expects of the chain o.
func printAnalysis(w io.Writer, o stormsim.Options, a stormsim.Analysis) {
	published, isPublished := stormsim.Published(o)
	fmt.Fprintf(w, "== policy %s (analytic: computed, no service runs): %s\n", a.Policy, policyText(o))
	fmt.Fprintf(w, "   %s\n", chainText(o))
	fmt.Fprintf(w, "   %s; availability at the root %s, retry storm radius at most %d\n", attemptsText(o), num(a.Availability), a.RadiusMax)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "node\tdepth\texpected\tpublished\t")
	for i, n := range a.Nodes {
		pub := "-"
		if isPublished {
			pub = fmt.Sprintf("%.2f", published[i])
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%s\t\n", n.Name, n.Depth, n.Load, pub)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

// chainText describes the chain of o: its nodes and its failing node.
func chainText(o stormsim.Options) string {
	t := stormsim.Chain(o.Depth, o.FailDepth)
	names := make([]string, len(t.Nodes))
	for i, n := range t.Nodes {
		names[i] = n.Name
	}
	failing := t.Nodes[o.FailDepth].Name
	below := ""
	switch last := len(names) - 1; {
	case o.FailDepth == last-1:
		below = fmt.Sprintf(" (after its call to %s)", names[last])
	case o.FailDepth < last:
		below = fmt.Sprintf(" (after its calls to %s..%s)", names[o.FailDepth+1], names[last])
	}
	return fmt.Sprintf("chain %s, one call per hop, %s failing every call%s", strings.Join(names, "→"), failing, below)
}

// attemptsText says how many attempts every hop makes under o.
func attemptsText(o stormsim.Options) string {
	if o.Attempts == 1 {
		return "1 attempt per hop (no retry)"
	}
	if o.Attempts == 2 {
		return "2 attempts per hop (the first and one retry)"
	}
	return fmt.Sprintf("%d attempts per hop (the first and %d retries)", o.Attempts, o.Attempts-1)
}

// policyText says what every hop does under o's policy.
func policyText(o stormsim.Options) string {
	budget := fmt.Sprintf("a %v%% retry budget per callee", o.Budget*100)
	var text string
	switch o.Policy {
	case stormsim.PolicyNaive:
		text = "every hop retries, no budget"
	case stormsim.PolicyBudget:
		text = "every hop retries within " + budget
	case stormsim.PolicyOwnership:
		text = "errown at every service, the same retries within " + budget
	case stormsim.PolicyOwnershipNaive:
		text = "errown at every service, the same retries with no budget"
	default:
		text = string(o.Policy)
	}
	if o.Policy == stormsim.PolicyOwnership || o.Policy == stormsim.PolicyOwnershipNaive {
		if o.Mode == retry.ModeObserve {
			text += "; mode observe: retries blind to claims, reports what enforce would prevent"
		}
	}
	return text
}

// blindPolicy is the policy that retries like p, blind to claims: the
// world errown's "blind" and "prevented" figures are computed for.
func blindPolicy(p stormsim.Policy) stormsim.Policy {
	switch p {
	case stormsim.PolicyOwnership:
		return stormsim.PolicyBudget
	case stormsim.PolicyOwnershipNaive:
		return stormsim.PolicyNaive
	}
	return p
}

// totalServed is the requests every node of res served together.
func totalServed(res stormsim.Result) int64 {
	var n int64
	for _, node := range res.Nodes {
		n += node.Served
	}
	return n
}

// printSummary prints one row per run: the loads per request at the root,
// the requests served in all, the radius and what errown prevented.
func printSummary(w io.Writer, results []stormsim.Result) {
	fmt.Fprintf(w, "== summary: requests served per request at %s\n", results[0].Nodes[0].Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "policy\t")
	for _, n := range results[0].Nodes {
		fmt.Fprintf(tw, "%s\t", n.Name)
	}
	fmt.Fprintln(tw, "served\tradius\tprevented\t")
	for _, res := range results {
		fmt.Fprintf(tw, "%s\t", res.Policy)
		for _, n := range res.Nodes {
			fmt.Fprintf(tw, "%.3f\t", n.Ratio)
		}
		prevented := "-"
		if res.Telemetry != nil {
			prevented = fmt.Sprint(res.Telemetry.Prevented)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t\n", totalServed(res), res.Radius.Max, prevented)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

// printLegend says what the chain's tables show. results are the runs
// printed (nil for the analytic model's tables): what errown at the root
// reported is compared with the run blind to claims when both ran.
func printLegend(w io.Writer, o stormsim.Options, results []stormsim.Result) {
	t := stormsim.Chain(o.Depth, o.FailDepth)
	root, last := t.Nodes[0].Name, t.Nodes[len(t.Nodes)-1].Name
	fmt.Fprintln(w, "columns:")
	item := func(term, format string, args ...any) { legendItem(w, term, fmt.Sprintf(format, args...)) }
	item("node, depth", "the chain's nodes, %s the root (depth 0)", root)
	if results == nil {
		item("expected", "requests the node serves per request at %s, as the analytic model computes them", root)
	} else {
		if len(results) > 1 {
			item("served", "requests the node's handler ran, retries included (summary: all nodes together)")
			item("ratio", "served per request at %s (summary: columns %s..%s)", root, root, last)
		} else {
			item("served", "requests the node's handler ran, retries included")
			item("ratio", "served per request at %s", root)
		}
		item("expected", "the analytic model's ratio for the policy")
	}
	item("published", "docs/DESIGN.md's first table (- when the chain or its flags are not that table's)")
	if results == nil {
		fmt.Fprintln(w)
		return
	}
	item("PASS, FAIL", "ratio within ±%v of published (of expected where none is published)", _tolerance)
	radius := fmt.Sprintf("retry storm radius: per failed request at %s, the most hops on one call path that spent a retry on it "+
		"(max over the requests, mean, and mean over those with a retry", root)
	if len(results) > 1 {
		radius += "; summary: the max"
	}
	item("radius", "%s)", radius)
	var errownRun *stormsim.Result
	for i := range results {
		if results[i].Telemetry != nil {
			errownRun = &results[i]
			break
		}
	}
	if errownRun == nil {
		fmt.Fprintln(w)
		return
	}
	item("reported", "by the root's errown: what errown at %s computed from its callees' storm headers, the radius, "+
		"and the blind radius had every hop retried per its own policy, blind to claims", root)
	blind := blindPolicy(errownRun.Policy)
	prevented := fmt.Sprintf("requests the retries errown suppressed would have caused (each would have replayed "+
		"its callee's whole subtree), summed over the requests at %s: blind − served, where blind keeps every hop's "+
		"attempts and budget: what the %s policy serves", root, blind)
	switch {
	case errownRun.Mode == retry.ModeObserve:
		prevented += "; in observe mode, what enforce mode would prevent"
	default:
		for _, res := range results {
			if res.Policy == blind && res.Transport == errownRun.Transport && res.Requests == errownRun.Requests {
				b, e := totalServed(res), totalServed(*errownRun)
				prevented += fmt.Sprintf(". Here %s served %d, %s %d: %d fewer, and errown reported %d",
					blind, b, errownRun.Policy, e, b-e, errownRun.Telemetry.Prevented)
				break
			}
		}
		if errownRun.Policy == stormsim.PolicyOwnership {
			prevented += " (under a budget errown's blind figure is an estimate; without one, -policy ownership-naive against -policy naive, it is exact)"
		}
	}
	item("prevented", "%s", prevented)
	fmt.Fprintln(w)
}

// legendItem prints one entry of a legend: term, then text wrapped
// beside it.
func legendItem(w io.Writer, term, text string) {
	const indent, width = 15, 100
	line := fmt.Sprintf("  %-*s", indent-2, term)
	if len(term) > indent-3 {
		line = "  " + term + " "
	}
	fresh := true // nothing of text on line yet
	for _, word := range strings.Fields(text) {
		if !fresh && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			fmt.Fprintln(w, line)
			line, fresh = strings.Repeat(" ", indent), true
		}
		if !fresh {
			line += " "
		}
		line += word
		fresh = false
	}
	fmt.Fprintln(w, line)
}

// radiusText describes a measured Radius.
func radiusText(r stormsim.Radius) string {
	if r.Failed == 0 {
		return "no failed request"
	}
	return fmt.Sprintf("max %d, mean %.2f over %d failed requests (%.2f over the %d with any retry)", r.Max, r.Mean, r.Failed, r.MeanRetried, r.Retried)
}

// telemetryText describes what errown at the root reported.
func telemetryText(t *stormsim.Telemetry) string {
	return fmt.Sprintf("radius max %d, mean %.2f; blind to claims max %d, mean %.2f; prevented %d (%s per request)%s",
		t.Radius.Max, t.Radius.Mean, t.CounterfactualRadius.Max, t.CounterfactualRadius.Mean,
		t.Prevented, num(t.PreventedPerRequest), unknownText(t.Unknown))
}

func unknownText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d root requests unknown (a hop below runs no errown or lost its request's context)", n)
}

// num formats a figure: integers whole, others to six significant digits.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.6g", v)
	}
}

// printReport prints a scenario's report: the loads of its runs, then its
// figures, each judged within its stated tolerance.
func printReport(w io.Writer, r stormsim.Report) {
	fmt.Fprintf(w, "== scenario %s: %s\n", r.Scenario, r.Summary)
	for _, run := range r.Runs {
		switch {
		case run.Result == nil && run.Expected.MeasuredOnly != "":
			fmt.Fprintf(w, "run %s: %s (measured only, not run): no model\n", run.Label, run.Policy)
			continue
		case run.Result == nil:
			fmt.Fprintf(w, "run %s: %s (analytic, not run): availability %s, radius at most %d\n", run.Label, run.Policy, num(run.Expected.Availability), run.Expected.RadiusMax)
			continue
		}
		res := run.Result
		fmt.Fprintf(w, "run %s: %s over %s, %d requests", run.Label, res.Policy, res.Transport, res.Requests)
		if res.Warmup > 0 {
			fmt.Fprintf(w, " after %d warm-up", res.Warmup)
		}
		fmt.Fprintf(w, " in %v: %d failed; storm radius %s\n", res.Elapsed.Round(time.Millisecond), res.Failed, radiusText(res.Radius))
		if res.Telemetry != nil {
			fmt.Fprintf(w, "  reported by the root's errown: %s\n", telemetryText(res.Telemetry))
		}
	}

	if sameNodes(r.Runs) {
		printLoads(w, r.Runs)
	} else {
		fmt.Fprintln(w, "loads per request at the root: the runs' topologies differ; see the tables below")
	}

	fmt.Fprintln(w, "figures:")
	for _, f := range r.Figures {
		verdict := "PASS"
		switch {
		case f.Check == stormsim.CheckNone:
			verdict = "    "
		case !f.Pass:
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %s: %s %s", verdict, f.Name, f.Source, num(f.Value))
		if f.Source != "analytic" {
			fmt.Fprintf(w, ", analytic %s", num(f.Expected))
		}
		if f.Published != nil {
			fmt.Fprintf(w, ", published %s", num(*f.Published))
		}
		fmt.Fprintln(w)
		switch f.Check {
		case stormsim.CheckWithin:
			if f.Tolerance == 0 && f.Low == 0 {
				fmt.Fprintf(w, "        exactly %s: %s\n", num(f.Reference), f.Basis)
				break
			}
			if f.Low > 0 {
				fmt.Fprintf(w, "        within +%s/-%s of %s: %s\n", num(f.Tolerance), num(f.Tolerance+f.Low), num(f.Reference), f.Basis)
				break
			}
			fmt.Fprintf(w, "        within ±%s of %s: %s\n", num(f.Tolerance), num(f.Reference), f.Basis)
		case stormsim.CheckAtMost:
			fmt.Fprintf(w, "        at most %s: %s\n", num(f.Reference+f.Tolerance), f.Basis)
		case stormsim.CheckAtLeast:
			fmt.Fprintf(w, "        at least %s: %s\n", num(f.Reference-f.Tolerance), f.Basis)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
	fmt.Fprintf(w, "scenario %s: %d figures, %d failed or off, %.1fs\n\n", r.Scenario, len(r.Figures), r.Failed(), r.Seconds)
}

// sameNodes reports whether runs share their nodes, so that one table
// shows their loads side by side.
func sameNodes(runs []stormsim.RunReport) bool {
	for _, run := range runs {
		if len(run.Expected.Nodes) != len(runs[0].Expected.Nodes) {
			return false
		}
		for i, n := range run.Expected.Nodes {
			if n.Name != runs[0].Expected.Nodes[i].Name {
				return false
			}
		}
	}
	return len(runs) > 0
}

// printLoads prints the loads of runs, which share their nodes: a column
// per run.
func printLoads(w io.Writer, runs []stormsim.RunReport) {
	none := ""
	for _, run := range runs {
		if run.Expected.MeasuredOnly != "" {
			none = ", [-] where the model has none"
			break
		}
	}
	fmt.Fprintf(w, "loads per request at the root: measured [analytic; published], ! when off the reference by more than %v%%%s\n", stormsim.LoadTolerance*100, none)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "node\tdepth")
	for _, run := range runs {
		fmt.Fprintf(tw, "\t%s", run.Label)
	}
	fmt.Fprintln(tw)
	for i, n := range runs[0].Expected.Nodes {
		fmt.Fprintf(tw, "%s\t%d", n.Name, n.Depth)
		for _, run := range runs {
			fmt.Fprintf(tw, "\t%s", loadCell(run, i))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()

}

// loadCell formats node i's load in run: measured [analytic; published].
func loadCell(run stormsim.RunReport, i int) string {
	expected := run.Expected.Nodes[i].Load
	pub := ""
	if len(run.Published) > i {
		pub = "; " + num(run.Published[i])
	}
	if run.Result == nil {
		return fmt.Sprintf("[%s%s]", num(expected), pub)
	}
	mark := ""
	if !run.LoadPasses()[i] {
		mark = " !"
	}
	return fmt.Sprintf("%.3f [%s%s]%s", run.Result.Nodes[i].Ratio, num(expected), pub, mark)
}

// chainSubtitle describes the chain of o for its chart.
func chainSubtitle(o stormsim.Options, analytic bool) string {
	t := stormsim.Chain(o.Depth, o.FailDepth)
	how := "measured on real yarpc services"
	if analytic {
		how = "computed, not run"
	}
	return fmt.Sprintf("A→…→%s, %s failing every request, %d attempts per hop, %v%% budget; %s",
		t.Nodes[o.Depth-1].Name, t.Nodes[o.FailDepth].Name, o.Attempts, o.Budget*100, how)
}
