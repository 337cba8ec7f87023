package stormsim

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScenariosSmall runs every scenario on real services at the size of
// its tests and checks each headline figure within its stated tolerance,
// and every measured node load within 5% of Analyze where the model has
// one (not for a timed topology: Analysis.MeasuredOnly): a regression in
// errown's mechanism (or the lab's) shows here, not only in the lab. Every
// shipped topology is measured by at least one run.
//
// A Long scenario (capacity: minutes of open-loop load) is not run here:
// its machinery is tested on short runs (openloop_test.go,
// capacity_test.go, scenario_capacity_test.go), and its topologies, which
// those short runs stand in for, are parsed and validated with every
// shipped one (TestShippedTopologies, TestCapacityScenarioPlanAndAnalytic).
func TestScenariosSmall(t *testing.T) {
	measured := make(map[string]bool)
	long := make(map[string]bool) // topologies of the Long scenarios
	for _, s := range Scenarios() {
		if s.Long {
			for _, r := range s.plan(scenarioConfig{}) {
				name, _, _ := strings.Cut(r.opts.Topology.Name, " (") // a variant: "capacity (leave)"
				long[name] = true
			}
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			rep, err := runSmall(s)
			require.NoError(t, err)
			for _, f := range rep.Figures {
				assert.True(t, f.Pass, "%s: %s %v, want %s %v ± %v (%s)", f.Name, f.Source, f.Value, f.Check, f.Reference, f.Tolerance, f.Basis)
			}
			for _, run := range rep.Runs {
				if run.Result == nil {
					continue
				}
				measured[run.Topology] = true
				if run.Expected.MeasuredOnly == "" {
					assert.InEpsilonSlice(t, run.Expected.Loads(), run.Result.Ratios(), LoadTolerance, "%s: analytic and measured loads", run.Label)
				}
				for i, ok := range run.LoadPasses() {
					assert.True(t, ok, "%s: node %s: measured %v, reference %v", run.Label, run.Expected.Nodes[i].Name, run.Loads()[i], run.LoadReferences()[i])
				}
			}
			assert.Zero(t, rep.Failed())
		})
	}
	var names []string
	for name := range measured {
		if _, err := LoadTopology(name); err == nil {
			names = append(names, name)
		}
	}
	for name := range long {
		if !slices.Contains(names, name) { // a Long scenario may run a measured one too (partial: the chain)
			names = append(names, name)
		}
	}
	sort.Strings(names)
	assert.Equal(t, TopologyNames(), names, "every shipped topology is measured, or run by a Long scenario")
}

// _small caches the reports of runSmall: a scenario that more than one
// test checks runs once.
var _small = struct {
	sync.Mutex
	reports map[string]Report
}{reports: make(map[string]Report)}

// runSmall runs s at the size of its tests, seed 1, or returns the report
// of an earlier run.
func runSmall(s Scenario) (Report, error) {
	_small.Lock()
	defer _small.Unlock()
	if rep, ok := _small.reports[s.Name]; ok {
		return rep, nil
	}
	rep, err := s.Run(context.Background(), ScenarioOptions{Small: true, Seed: 1})
	if err == nil {
		_small.reports[s.Name] = rep
	}
	return rep, err
}

func TestScenarioOptions(t *testing.T) {
	tests := []struct {
		name string
		give ScenarioOptions
		want []int // requests(2000, 200), size(2000, 200), concurrency(16, 4)
	}{
		{name: "full", give: ScenarioOptions{}, want: []int{2000, 2000, 16}},
		{name: "small", give: ScenarioOptions{Small: true}, want: []int{200, 200, 4}},
		{name: "requests and concurrency given", give: ScenarioOptions{Small: true, Requests: 7, Concurrency: 3}, want: []int{7, 200, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := scenarioConfig{tt.give}
			assert.Equal(t, tt.want, []int{c.requests(2000, 200), c.size(2000, 200), c.concurrency(16, 4)})
		})
	}
}

func TestLookupScenario(t *testing.T) {
	assert.Equal(t, []string{"chain", "availability", "context-drop", "mixed", "coincidental", "no-retry-below", "deep", "fanout", "overload", "capacity", "partial"}, ScenarioNames())
	s, ok := LookupScenario("deep")
	assert.True(t, ok)
	assert.True(t, s.Chart)
	_, ok = LookupScenario("hurricane")
	assert.False(t, ok)
}

func TestTopologyScenario(t *testing.T) {
	top, err := ParseTopology([]byte("name: tee\ndescription: A calls B and C, C failing.\nnodes: [{name: A, calls: [B, C]}, {name: B}, {name: C, fail: 1}]"))
	require.NoError(t, err)
	s := TopologyScenario(top, []Policy{PolicyNaive, PolicyOwnership}, Options{Attempts: 2, Budget: 0.1, Requests: 30})
	rep, err := s.Run(context.Background(), ScenarioOptions{Concurrency: 1}) // one at a time: the budget is exact
	require.NoError(t, err)
	assert.Equal(t, "tee", rep.Scenario)
	require.Len(t, rep.Runs, 2)
	assert.Equal(t, []float64{1, 1, 2}, rep.Runs[0].Loads(), "naive: A retries C")
	assert.InDeltaSlice(t, []float64{1, 1, 1.1}, rep.Runs[1].Loads(), 1e-9, "errown: A retries C within the budget")
	assert.Equal(t, 30, rep.Runs[1].Result.Requests)
	assert.Zero(t, rep.Failed())
}

// TestScenariosSmallNative runs the scenarios at the size of their tests
// on meshes of plain grpc-go and net/http services, errown on them through
// packages grpcgo and nethttp, and on the mixed mesh (yarpc over HTTP →
// grpc-go → net/http → ...): every headline figure within its stated
// tolerance, as on yarpc. The chain runs on all three; every other
// scenario on one of grpc-go and net/http, to keep the test short (all of
// them on both take twice as long; `go run ./cmd/stormsim -transport
// grpc-go -scenario all` runs them at full size).
func TestScenariosSmallNative(t *testing.T) {
	on := map[string][]string{
		TransportGRPCGo:  {"chain", "availability", "coincidental", "deep", "no-retry-below"},
		TransportNetHTTP: {"chain", "context-drop", "mixed", "fanout", "overload"},
		TransportMixed:   {"chain"},
	}
	covered := make(map[string]bool)
	for _, tr := range []string{TransportGRPCGo, TransportNetHTTP, TransportMixed} {
		for _, name := range on[tr] {
			covered[name] = true
			s, ok := LookupScenario(name)
			require.True(t, ok, name)
			t.Run(tr+"/"+name, func(t *testing.T) {
				rep, err := s.Run(context.Background(), ScenarioOptions{Small: true, Seed: 1, Transport: tr})
				require.NoError(t, err)
				for _, f := range rep.Figures {
					assert.True(t, f.Pass, "%s: %s %v, want %s %v ± %v (%s)", f.Name, f.Source, f.Value, f.Check, f.Reference, f.Tolerance, f.Basis)
				}
				for _, run := range rep.Runs {
					if run.Result == nil {
						continue
					}
					assert.Equal(t, tr, run.Result.Transport)
					for i, ok := range run.LoadPasses() {
						assert.True(t, ok, "%s: node %s: measured %v, reference %v", run.Label, run.Expected.Nodes[i].Name, run.Loads()[i], run.LoadReferences()[i])
					}
				}
				assert.Zero(t, rep.Failed())
			})
		}
	}
	for _, s := range Scenarios() {
		// A Long scenario's machinery runs on grpc-go in TestRunOpenLoop.
		assert.True(t, covered[s.Name] || s.Long, "scenario %s runs on a grpc-go or net/http mesh", s.Name)
	}
}
