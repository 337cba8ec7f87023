package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/internal/stormsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// _small is a chain small enough to run in a test: three nodes, B failing.
var _small = []string{"-depth", "3", "-fail-depth", "1", "-requests", "50"}

func args(extra ...string) []string {
	return append(append([]string(nil), _small...), extra...)
}

func TestRunJSONOnePolicy(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), args("-policy", "ownership", "-transport", "grpc", "-json"), &stdout, &stderr))

	var got map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	assert.ElementsMatch(t, []string{"topology", "policy", "transport", "requests", "seed", "failed", "nodes", "edges", "radius", "telemetry"}, keys(got))
	// A→B→C, B failing: A, B's caller, retries it within its budget
	// (radius 1 or 0), and blind nobody else would have: errown at A
	// reports the lab's radius, and nothing prevented.
	telemetry := got["telemetry"].(map[string]any)
	radius := got["radius"].(map[string]any)
	want := map[string]any{"max": radius["max"], "mean": radius["mean"]}
	assert.Equal(t, 1.0, want["max"])
	assert.Equal(t, want, telemetry["radius"])
	assert.Equal(t, want, telemetry["counterfactualRadius"])
	assert.Equal(t, 0.0, telemetry["prevented"])
	assert.Equal(t, 0.0, telemetry["unknown"])
	assert.Equal(t, "ownership", got["policy"])
	assert.Equal(t, "grpc", got["transport"])
	assert.Equal(t, 50.0, got["requests"])
	nodes := got["nodes"].([]any)
	require.Len(t, nodes, 3)
	assert.Subset(t, keys(nodes[0].(map[string]any)), []string{"name", "depth", "served", "ratio", "retried", "errors", "unclaimed", "ownFailures", "ownUnclaimed"})
	assert.Equal(t, 50.0, nodes[0].(map[string]any)["unclaimed"], "B retried its child and unclaimed: A passed that on")
	assert.Empty(t, stderr.String())
}

func TestRunJSONAllPolicies(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), args("-json"), &stdout, &stderr))

	var got []stormsim.Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	require.Len(t, got, 3)
	for i, p := range stormsim.Policies() {
		assert.Equal(t, p, got[i].Policy)
		assert.Equal(t, "http", got[i].Transport)
		assert.Len(t, got[i].Nodes, 3)
	}
}

// TestRunJSONNativeTransports runs the small chain under every policy on
// meshes of grpc-go and net/http services and on the mixed mesh.
func TestRunJSONNativeTransports(t *testing.T) {
	want := map[stormsim.Policy][]float64{
		stormsim.PolicyNaive:     {1, 2, 2},
		stormsim.PolicyBudget:    {1, 1.1, 1.1},
		stormsim.PolicyOwnership: {1, 1.1, 1.1},
	}
	for _, tr := range []string{"grpc-go", "nethttp", "mixed"} {
		t.Run(tr, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.NoError(t, run(context.Background(), args("-transport", tr, "-concurrency", "1", "-json"), &stdout, &stderr))
			var got []stormsim.Result
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
			require.Len(t, got, 3)
			for i, p := range stormsim.Policies() {
				assert.Equal(t, p, got[i].Policy)
				assert.Equal(t, tr, got[i].Transport)
				assert.InDeltaSlice(t, want[p], got[i].Ratios(), 1e-9, "%s", p)
			}
		})
	}
}

func TestRunTable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), args("-policy", "naive"), &stdout, &stderr))
	out := stdout.String()

	// The title says what ran, before the table.
	assert.True(t, strings.HasPrefix(out, "== policy naive: every hop retries, no budget\n"+
		"   chain A→B→C, one call per hop, B failing every call (after its call to C)\n"+
		"   2 attempts per hop (the first and one retry); 50 requests at A over http, in "), out)
	// Naive counts are exact: 50, 100, 100.
	assert.Contains(t, out, "  node  depth  served  ratio  expected  published      \n")
	assert.Contains(t, out, "     B      1     100  2.000     2.000          -  PASS\n")
	assert.Contains(t, out, "     C      2     100  2.000     2.000          -  PASS\n")
	assert.NotContains(t, out, "  FAIL\n")
	// The legend after it says what the columns are; a single run has no
	// summary, and no errown to report prevented requests.
	assert.Less(t, strings.Index(out, "     C      2"), strings.Index(out, "columns:\n"))
	for _, want := range []string{
		"  node, depth  the chain's nodes, A the root (depth 0)\n",
		"  served       requests the node's handler ran, retries included",
		"  ratio        served per request at A\n",
		"  PASS, FAIL   ratio within ±0.05 of published (of expected where none is published)\n",
		"  radius       retry storm radius: per failed request at A, the most hops on one call path",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "== summary")
	assert.NotContains(t, out, "summary:")
	assert.NotContains(t, out, "prevented")
}

// TestRunChainSummary runs the three policies on A→B→C→D, C failing: the
// summary holds each run's loads, totals, radius and what errown
// prevented, and the legend compares that with the budget run.
func TestRunChainSummary(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-depth", "4", "-fail-depth", "2", "-requests", "50"}, &stdout, &stderr))
	out := stdout.String()
	for _, p := range []string{"naive", "budget", "ownership"} {
		assert.Contains(t, out, "== policy "+p+": ")
	}
	assert.Contains(t, out, "== policy ownership: errown at every service, the same retries within a 10% retry budget per callee\n")
	assert.Contains(t, out, "   chain A→B→C→D, one call per hop, C failing every call (after its call to D)\n")

	summary := regexp.MustCompile(`(?m)^== summary: requests served per request at A\n` +
		`\s+policy\s+A\s+B\s+C\s+D\s+served\s+radius\s+prevented\n` +
		`\s+naive\s+1\.000\s+2\.000\s+4\.000\s+4\.000\s+550\s+2\s+-\n` +
		`\s+budget\s+1\.000\s+\S+\s+\S+\s+\S+\s+(\d+)\s+\d+\s+-\n` +
		`\s+ownership\s+1\.000\s+1\.000\s+\S+\s+\S+\s+(\d+)\s+1\s+(\d+)\n`).FindStringSubmatch(out)
	require.NotNil(t, summary, out)
	budget, ownership, prevented := atoi(t, summary[1]), atoi(t, summary[2]), atoi(t, summary[3])
	assert.Greater(t, budget, ownership, "A retries B under budget only")

	legend := out[strings.Index(out, "columns:\n"):]
	assert.Contains(t, legend, "  ratio        served per request at A (summary: columns A..D)\n")
	assert.Contains(t, legend, "  reported     by the root's errown: what errown at A computed")
	flat := strings.Join(strings.Fields(legend), " ")
	assert.Contains(t, flat, "prevented requests the retries errown suppressed would have caused (each would have replayed its callee's whole subtree), "+
		"summed over the requests at A: blind − served, where blind keeps every hop's attempts and budget: what the budget policy serves.")
	assert.Contains(t, flat, fmt.Sprintf("Here budget served %d, ownership %d: %d fewer, and errown reported %d (under a budget",
		budget, ownership, budget-ownership, prevented))
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		give []string
		want string
	}{
		{name: "fail-depth", give: []string{"-depth", "3", "-fail-depth", "3"}, want: "fail-depth: must be >= 0 and < depth (3), got 3"},
		{name: "policy", give: []string{"-policy", "retry-harder"}, want: `policy: must be one of naive, budget, ownership, ownership-naive, got "retry-harder"`},
		{name: "scenario", give: []string{"-scenario", "tornado"}, want: `scenario: must be all or one of chain, availability, context-drop, mixed, coincidental, no-retry-below, deep, fanout, overload, capacity, partial, got "tornado"`},
		{name: "chain flags with a scenario", give: []string{"-scenario", "deep", "-depth", "3", "-budget", "0.2"}, want: "-depth: a named scenario sets its own"},
		{name: "scenario and topology", give: []string{"-scenario", "deep", "-topology", "x.yaml"}, want: "-scenario and -topology: give one"},
		{name: "svg of all", give: []string{"-scenario", "all", "-svg", "x.svg"}, want: "-svg: give one scenario, not all"},
		{name: "svg without a chart", give: []string{"-scenario", "availability", "-svg", "x.svg"}, want: "-svg: scenario availability has no load chart"},
		{name: "depth with a topology", give: []string{"-topology", "x.yaml", "-depth", "3"}, want: "-depth: the topology file gives the graph"},
		{name: "topology file", give: []string{"-topology", "/nonexistent/x.yaml"}, want: "open /nonexistent/x.yaml: no such file or directory"},
		{name: "transport", give: []string{"-transport", "smoke-signals"}, want: `transport: must be one of http, grpc, tchannel, grpc-go, nethttp, mixed, got "smoke-signals"`},
		{name: "budget", give: []string{"-policy", "budget", "-budget", "0"}, want: `budget: must be > 0 and <= 1000 for policy "budget", got 0`},
		{name: "unknown flag", give: []string{"-colour"}, want: "flag provided but not defined: -colour"},
		{name: "bad value", give: []string{"-requests", "many"}, want: `invalid value "many" for flag -requests`},
		{name: "arguments", give: []string{"extra"}, want: "unexpected arguments: extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.give, &stdout, &stderr)
			require.Error(t, err)
			assert.Contains(t, err.Error()+stderr.String(), tt.want)
			assert.Empty(t, stdout.String(), "nothing runs")
		})
	}
}

func TestRunErrorsOnce(t *testing.T) {
	// All three policies share the flags: a bad one is reported once.
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-depth", "3", "-fail-depth", "3", "-budget", "0"}, &stdout, &stderr)
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "fail-depth:"), err.Error())
	assert.Contains(t, err.Error(), `budget: must be > 0 and <= 1000 for policy "budget", got 0`)
	assert.Contains(t, err.Error(), `budget: must be > 0 and <= 1000 for policy "ownership", got 0`)
}

func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-h"}, &stdout, &stderr)
	assert.ErrorIs(t, err, flag.ErrHelp)
	first, rest, _ := strings.Cut(stderr.String(), "\n")
	assert.Equal(t, "stormsim is errown's storm lab: it runs call graphs of real yarpc services on 127.0.0.1 "+
		"under naive retries, retry budgets and errown, and prints the requests each service served.", first)
	assert.Contains(t, rest, "\nUsage: go run ./cmd/stormsim [flags]\n")
	assert.Contains(t, rest, "\nFlags:\n")
	assert.Less(t, strings.Index(rest, "Flags:"), strings.Index(rest, "-fail-depth"), "the flags after the summary")
	assert.Empty(t, stdout.String())
}

func TestPrintTableFails(t *testing.T) {
	// A measured figure off the published one by more than 0.05 FAILs.
	o := stormsim.Options{Depth: 7, FailDepth: 3, Attempts: 2, Budget: 0.1, Requests: 100, Policy: stormsim.PolicyOwnership}
	res := stormsim.Result{Policy: o.Policy, Transport: "tchannel", Requests: 100}
	for d, r := range []float64{1, 1.1, 1.21, 1.33, 1.33, 1.33, 1.33} {
		res.Nodes = append(res.Nodes, stormsim.NodeResult{Name: string(rune('A' + d)), Depth: d, Served: int64(r * 100), Ratio: r})
	}
	var out bytes.Buffer
	assert.Equal(t, 6, printTable(&out, o, res))
	assert.Contains(t, out.String(), "     A      0     100  1.000     1.000       1.00  PASS\n")
	assert.Contains(t, out.String(), "     D      3     133  1.330     1.100       1.10  FAIL\n")
}

func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestRunChainRadius(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), args("-policy", "ownership"), &stdout, &stderr))
	assert.Contains(t, stdout.String(), "retry storm radius (most hops with a retry on one call path, per failed request): max 1, mean 0.10 over 50 failed requests (1.00 over the 5 with any retry)\n")
}

func TestRunChainAnalytic(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-analytic", "-policy", "budget"}, &stdout, &stderr))
	assert.Equal(t, `== policy budget (analytic: computed, no service runs): every hop retries within a 10% retry budget per callee
   chain A→B→C→D→E→F→G, one call per hop, D failing every call (after its calls to E..G)
   2 attempts per hop (the first and one retry); availability at the root 0, retry storm radius at most 3
  node  depth  expected  published
     A      0     1.000       1.00
     B      1     1.100       1.10
     C      2     1.210       1.21
     D      3     1.331       1.33
     E      4     1.331       1.33
     F      5     1.331       1.33
     G      6     1.331       1.33

columns:
  node, depth  the chain's nodes, A the root (depth 0)
  expected     requests the node serves per request at A, as the analytic model computes them
  published    docs/DESIGN.md's first table (- when the chain or its flags are not that table's)

`, stdout.String())
}

func TestRunScenarioSmall(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-scenario", "no-retry-below", "-small"}, &stdout, &stderr))
	out := stdout.String()
	assert.Contains(t, out, "== scenario no-retry-below: ")
	assert.Contains(t, out, "run ownership-naive: ownership-naive over http, 60 requests in ")
	assert.Contains(t, out, "node  depth  naive      ownership-naive  ownership\n")
	assert.Contains(t, out, "D     3      2.000 [2]  2.000 [2]        ")
	assert.Contains(t, out, "  PASS  requests at D beyond the first, per request, ownership-naive: measured 1, analytic 1, published 1\n        exactly 1: no budget and no chance: every count is exact\n")
	assert.NotContains(t, out, "FAIL")
	assert.Contains(t, out, "scenario no-retry-below: 5 figures, 0 failed or off, ")
}

func TestRunScenariosAnalyticJSON(t *testing.T) {
	// The analytic model alone reproduces every published figure.
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-scenario", "all", "-analytic", "-json"}, &stdout, &stderr))
	var got []stormsim.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	require.Len(t, got, len(stormsim.Scenarios()))
	for i, rep := range got {
		assert.Equal(t, stormsim.ScenarioNames()[i], rep.Scenario)
		assert.True(t, rep.Analytic)
		assert.Zero(t, rep.Failed(), rep.Scenario)
		for _, run := range rep.Runs {
			assert.Nil(t, run.Result, "nothing runs")
		}
	}
}

func TestRunSVG(t *testing.T) {
	tests := []struct {
		name string
		give []string
		want []string // substrings of the chart
	}{
		{name: "scenario", give: []string{"-scenario", "deep", "-analytic"}, want: []string{"stormsim deep: requests served", "(log scale)", "naive (analytic)", ">Y</text>"}},
		{name: "chain", give: []string{"-depth", "3", "-fail-depth", "1", "-requests", "20", "-policy", "naive"}, want: []string{"stormsim chain: requests served", "(linear scale)", ">naive</text>", ">C</text>"}},
		{name: "topology", give: []string{"-topology", "testdata/tee.yaml", "-analytic"}, want: []string{"stormsim tee: requests served", ">ownership (analytic)</text>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chart.svg")
			var stdout, stderr bytes.Buffer
			require.NoError(t, run(context.Background(), append(tt.give, "-svg", path), &stdout, &stderr))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(string(b), "<svg "), string(b))
			for _, w := range tt.want {
				assert.Contains(t, string(b), w)
			}
		})
	}
}

func TestRunTopology(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-topology", "testdata/tee.yaml", "-policy", "ownership", "-requests", "40", "-transport", "grpc"}, &stdout, &stderr))
	out := stdout.String()
	assert.Contains(t, out, "== scenario tee: A calls B and C; C fails every request.\n")
	assert.Contains(t, out, "run ownership: ownership over grpc, 40 requests in ")
	assert.Contains(t, out, "C     1      1.100 [1.1]\n")
	assert.Contains(t, out, "  PASS  max storm radius (hops), ownership: measured 1, analytic 1\n")

	stdout.Reset()
	err := run(context.Background(), []string{"-topology", "testdata/bad.yaml"}, &stdout, &stderr)
	assert.ErrorContains(t, err, `testdata/bad.yaml: topology "bad": nodes[0] (A).calls[0].to: no node named "B"`)
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name string
		tty  bool
		want string
	}{
		{name: "log", want: "stormsim: deep: budget: 3/10 requests, 4s elapsed\n"},
		{name: "terminal", tty: true, want: "\r\033[Kstormsim: deep: budget: 3/10 requests, 4s elapsed\r\033[K"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := newProgress(&buf)
			p.tty = tt.tty
			p.updateLabelled("early", 1, 10)
			assert.Empty(t, buf.String(), "nothing in the first seconds")
			p.start = p.start.Add(-4 * time.Second)
			p.update("deep: budget")(3, 10)
			p.updateLabelled("deep: budget", 4, 10) // too soon after the last
			p.finish()
			assert.Equal(t, tt.want, buf.String())
		})
	}
}

func TestRunScenarioOverload(t *testing.T) {
	// Four root requests per run: naive still sends 2^3 = 8 to the
	// hanging D on every call path, errown at most 2.
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-scenario", "overload", "-small", "-requests", "4", "-json"}, &stdout, &stderr)
	var rep stormsim.Report
	if err != nil && json.Unmarshal(stdout.Bytes(), &rep) == nil {
		for _, f := range rep.Figures {
			if !f.Pass {
				t.Logf("off: %+v", f)
			}
		}
	}
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	assert.Equal(t, "overload", rep.Scenario)
	require.Len(t, rep.Runs, 8)
	for _, r := range rep.Runs {
		require.NotNil(t, r.Result, r.Label)
		assert.NotEmpty(t, r.Expected.MeasuredOnly, r.Label)
		assert.NotEmpty(t, r.Result.Trace, r.Label)
	}
	assert.Equal(t, "naive, mis-nested", rep.Runs[4].Label)
	assert.EqualValues(t, 8, rep.Runs[4].Result.Node("D").MaxPerPath)
	figs := make(map[string]stormsim.Figure)
	for _, f := range rep.Figures {
		figs[f.Name] = f
		assert.True(t, f.Pass, f.Name)
	}
	f := figs["D (hanging) requests per root request, most on one call path, ownership-naive, mis-nested"]
	assert.Equal(t, []any{stormsim.CheckAtMost, 2.0, "measured"}, []any{f.Check, f.Reference, f.Source})
	assert.LessOrEqual(t, f.Value, 2.0)
	assert.Zero(t, f.Expected, "no model: null in JSON")
	assert.Contains(t, stdout.String(), `"expected": null`)

	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"-scenario", "overload", "-analytic"}, &stdout, &stderr))
	out := stdout.String()
	assert.Contains(t, out, "run naive, mis-nested: naive (measured only, not run): no model\n")
	assert.Contains(t, out, "D     3      [-]")
	assert.Contains(t, out, "        D (hanging) requests per root request, most on one call path, naive, well nested: analytic -\n")
	assert.Contains(t, out, "  - Measured only: a node hangs or a call has a per-attempt timeout")
	assert.Contains(t, out, "scenario overload: 18 figures, 0 failed or off, ")
}

func TestRunOpenLoop(t *testing.T) {
	// The topology's open-loop load, at the rate -rate gives, its series
	// in JSON and its goodput over time in -svg.
	path := filepath.Join(t.TempDir(), "goodput.svg")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-topology", "testdata/open.yaml", "-policy", "ownership", "-rate", "80", "-bin", "100ms", "-timeout", "1s", "-json", "-svg", path}, &stdout, &stderr))
	var rep stormsim.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	require.Len(t, rep.Runs, 1)
	tl := rep.Runs[0].Result.Timeline
	require.NotNil(t, tl)
	assert.Equal(t, []any{80.0, 100.0, 2.0, 1.0}, []any{tl.Rate, tl.BinMS, tl.DurationS, tl.DeadlineS})
	assert.Len(t, tl.Sent, 20)
	assert.Equal(t, "B", tl.Summary.Constrained)
	assert.Equal(t, []stormsim.TriggerWindow{{Node: "B", Kind: "slow", FromS: 0.5, ToS: 1, Factor: 3}}, tl.Triggers)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), "stormsim open: goodput at the root over time")
	assert.Contains(t, string(b), "<title>ownership</title></polyline>")
}

func TestRunOpenLoopErrors(t *testing.T) {
	tests := []struct {
		name string
		give []string
		want string
	}{
		{name: "arm", give: []string{"-scenario", "capacity", "-arms", "errown,prayer"}, want: `invalid value "errown,prayer" for flag -arms: no arm "prayer"`},
		{name: "variant", give: []string{"-scenario", "capacity", "-variants", "fan-out,fan-in"}, want: `invalid value "fan-out,fan-in" for flag -variants: no variant "fan-in"`},
		{name: "rate", give: []string{"-depth", "3", "-fail-depth", "1", "-rate", "-5"}, want: "rate: must be between 0 and 5000 root requests per second, got -5"},
		{name: "bin", give: []string{"-depth", "3", "-fail-depth", "1", "-rate", "5", "-bin", "1ms"}, want: "bin: must be between 10ms and 10s, got 1ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.give, &stdout, &stderr)
			require.Error(t, err)
			assert.Contains(t, err.Error()+stderr.String(), tt.want)
			assert.Empty(t, stdout.String(), "nothing runs")
		})
	}
}

// TestBrief runs the main command's partial-failure table at the size of
// the tests: a line per arm with its availability and calls at C, the
// availability without retries a third off by round robin's count, and
// errown's targets with their verdicts as the report judged them.
func TestBrief(t *testing.T) {
	rep, err := stormsim.PartialBrief().Run(context.Background(), stormsim.ScenarioOptions{Small: true, Seed: 1})
	require.NoError(t, err)
	var out bytes.Buffer
	printBrief(&out, rep)
	s := out.String()
	assert.Contains(t, s, "== partial failure: A→B→C, C three instances behind round-robin, one failing every call; 2 attempts per hop, 4 requests in flight, 150 requests per arm\n")
	assert.Contains(t, s, "    arm                availability  calls at C per request  calls at B per request\n")
	for _, arm := range stormsim.ArmNames(stormsim.PartialArms()) {
		assert.Regexp(t, regexp.MustCompile(`(?m)^    `+regexp.QuoteMeta(arm)+` +\d+\.\d\d% +\d\.\d\d +\d\.\d\d$`), s, arm)
	}
	none := regexp.MustCompile(`(?m)^    no retries +(\d+\.\d\d)% +(\d\.\d\d)`).FindStringSubmatch(s)
	require.Len(t, none, 3, s)
	avail, err := strconv.ParseFloat(none[1], 64)
	require.NoError(t, err)
	assert.InDelta(t, 200.0/3, avail, 100*2.0/150, "a third of the calls reach the bad instance")
	assert.Equal(t, "1.00", none[2], "one call at C per request")
	require.Len(t, rep.Figures, 3)
	for _, f := range rep.Figures {
		verdict := "PASS"
		if !f.Pass {
			verdict = "FAIL"
		}
		assert.Contains(t, s, "  "+verdict+"  "+strings.TrimPrefix(f.Name, "C fails: ")+": ")
	}
}
