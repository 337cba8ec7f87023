package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"strings"
	"testing"

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
	assert.ElementsMatch(t, []string{"policy", "transport", "requests", "nodes"}, keys(got))
	assert.Equal(t, "ownership", got["policy"])
	assert.Equal(t, "grpc", got["transport"])
	assert.Equal(t, 50.0, got["requests"])
	nodes := got["nodes"].([]any)
	require.Len(t, nodes, 3)
	assert.ElementsMatch(t, []string{"name", "depth", "served", "ratio"}, keys(nodes[0].(map[string]any)))
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

func TestRunTable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), args("-policy", "naive"), &stdout, &stderr))

	// Naive counts are exact: 50, 100, 100.
	assert.Equal(t, `policy naive over http: 50 requests in `, stdout.String()[:39])
	assert.Contains(t, stdout.String(), "  node  depth  served  ratio  expected  published      \n")
	assert.Contains(t, stdout.String(), "     B      1     100  2.000     2.000          -  PASS\n")
	assert.Contains(t, stdout.String(), "     C      2     100  2.000     2.000          -  PASS\n")
	assert.NotContains(t, stdout.String(), "FAIL")
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		give []string
		want string
	}{
		{name: "fail-depth", give: []string{"-depth", "3", "-fail-depth", "3"}, want: "fail-depth: must be >= 0 and < depth (3), got 3"},
		{name: "policy", give: []string{"-policy", "retry-harder"}, want: `policy: must be one of naive, budget, ownership, got "retry-harder"`},
		{name: "transport", give: []string{"-transport", "smoke-signals"}, want: `transport: must be one of http, grpc, tchannel, got "smoke-signals"`},
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
	assert.Contains(t, stderr.String(), "-fail-depth")
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
