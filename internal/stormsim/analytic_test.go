package stormsim

import (
	"math"
	"testing"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// topo returns the shipped topology name, changed by change when not nil.
func topo(name string, change func(*Topology)) *Topology {
	t := mustTopology(name).Clone()
	if change != nil {
		change(t)
	}
	return t
}

func TestAnalyzeLoads(t *testing.T) {
	tests := []struct {
		name string
		give Options
		want []float64
	}{
		{name: "context drop, naive", give: Options{Topology: topo("context-drop", nil), Policy: PolicyNaive}, want: []float64{1, 2, 4, 8}},
		{name: "context drop halves", give: Options{Topology: topo("context-drop", nil), Policy: PolicyOwnershipNaive}, want: []float64{1, 1, 2, 4}},
		{name: "context drop, budget", give: Options{Topology: topo("context-drop", nil), Policy: PolicyOwnership}, want: []float64{1, 1, 1.1, 1.21}},
		{name: "mixed: C retries blind, B once", give: Options{Topology: topo("mixed", nil), Policy: PolicyOwnershipNaive}, want: []float64{1, 1, 2, 4, 8}},
		{
			name: "mixed without C's retries",
			give: Options{Topology: topo("mixed", func(t *Topology) { t.Node("C").Retry = new(bool) }), Policy: PolicyOwnershipNaive},
			want: []float64{1, 1, 2, 2, 4},
		},
		{name: "no retry below", give: Options{Topology: topo("no-retry-below", nil), Policy: PolicyOwnershipNaive}, want: []float64{1, 2, 2, 2}},
		{name: "fanout", give: Options{Topology: topo("fanout", nil), Policy: PolicyOwnership}, want: []float64{1, 1, 1, 1, 3, 4.4}},
		{name: "fanout naive", give: Options{Topology: topo("fanout", nil), Policy: PolicyNaive}, want: []float64{1, 2, 2, 4, 12, 32}},
		{
			name: "a soft edge is retried all the same",
			give: Options{Topology: topo("coincidental", func(t *Topology) { t.Node("B").FailCode = "" }), Policy: PolicyNaive},
			want: []float64{1, 1.1, 1},
		},
		{
			name: "three attempts within a budget",
			give: Options{Topology: Chain(3, 2), Policy: PolicyBudget, Attempts: 3, Budget: 0.5},
			want: []float64{1, 1.5, 2.25},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.give
			o.Requests = 1
			if o.Attempts == 0 {
				o.Attempts, o.Budget = 2, 0.1
			}
			a, err := Analyze(o)
			require.NoError(t, err)
			assert.InDeltaSlice(t, tt.want, a.Loads(), 1e-9)
		})
	}
}

func TestAnalyzeAvailabilityTable(t *testing.T) {
	// docs/DESIGN.md's second table caps every retry at 10% of requests;
	// errown's budget counts only the retries that fail (a retry that
	// succeeds is refunded), so at every base of the table each failure
	// gets its one retry: availability 1-f², B's load 1+f.
	for _, row := range _availabilityRows {
		f := 1 - row.base/100
		top := topo("availability", func(t *Topology) { t.Node("B").Fail = f })
		a, err := Analyze(Options{Topology: top, Policy: PolicyOwnership, Attempts: 2, Budget: 0.1, Requests: 1})
		require.NoError(t, err)
		assert.InDelta(t, 100*(1-f*f), 100*a.Availability, 1e-6, "base %v%%", row.base)
		assert.GreaterOrEqual(t, 100*a.Availability+1e-9, row.after, "base %v%%: no worse than the published capped retries", row.base)
		assert.InDelta(t, 1+f, a.Nodes[1].Load, 1e-9, "B serves one retry per failure, the failed ones within the budget")
	}
}

func TestAnalyzeCoincidental(t *testing.T) {
	tests := []struct {
		name    string
		memory  depmem.Config
		unknown string
		want    float64 // A's own errors that go out unclaimed
	}{
		{name: "memory disabled", memory: depmem.Config{Disabled: true}, want: 1 - 0.9*0.9},
		{name: "memory learned", memory: depmem.Config{}, want: 0},
		{name: "only fail-close edges unclaim", memory: depmem.Config{Disabled: true}, unknown: inbound.UnknownCoincidental, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Analyze(Options{Topology: topo("coincidental", nil), Policy: PolicyOwnership, Attempts: 2, Budget: 0.1, Requests: 1, Memory: tt.memory, UnknownEdges: tt.unknown})
			require.NoError(t, err)
			root := a.Nodes[0]
			assert.InDelta(t, 0.1, root.OwnFailureRate, 1e-12)
			assert.InDelta(t, tt.want, root.OwnUnclaimedRate/root.OwnFailureRate, 1e-9)
			assert.InDelta(t, 0.1, root.ErrorRate, 1e-12, "A's soft dependencies never fail it")
			assert.Equal(t, 0, a.RadiusMax, "nothing is retried: data-loss is final")
		})
	}
}

func TestAnalyzeDeep(t *testing.T) {
	tests := []struct {
		give       Options
		wantY      float64
		wantRadius int
		wantExact  bool
	}{
		{give: Options{Topology: topo("deep", nil), Policy: PolicyNaive}, wantY: 1 << 24, wantRadius: 24, wantExact: true},
		{give: Options{Topology: topo("deep", nil), Policy: PolicyBudget}, wantY: math.Pow(1.1, 24), wantRadius: 24},
		{give: Options{Topology: topo("deep", nil), Policy: PolicyOwnership}, wantY: 1.1, wantRadius: 1},
		{give: Options{Topology: topo("deep-drop", nil), Policy: PolicyOwnership}, wantY: 1.21, wantRadius: 2},
		{give: Options{Topology: topo("deep-drop", nil), Policy: PolicyOwnershipNaive}, wantY: 4, wantRadius: 2, wantExact: true},
	}
	for _, tt := range tests {
		t.Run(tt.give.Topology.Name+"/"+string(tt.give.Policy), func(t *testing.T) {
			o := tt.give
			o.Attempts, o.Budget, o.Requests = 2, 0.1, 1
			a, err := Analyze(o)
			require.NoError(t, err)
			assert.InDelta(t, tt.wantY, a.Nodes[24].Load, 1e-9*tt.wantY)
			assert.Equal(t, tt.wantRadius, a.RadiusMax)
			assert.Equal(t, tt.wantExact, a.Exact)
			assert.Zero(t, a.Availability)
		})
	}
}

func TestAnalyzeRadius(t *testing.T) {
	// The storm radius per call path: retries on sibling paths do not
	// add up.
	tee, err := ParseTopology([]byte("name: tee\nnodes: [{name: A, calls: [B, C]}, {name: B, calls: [D]}, {name: C, calls: [E]}, {name: D, fail: 1}, {name: E, fail: 1}]"))
	require.NoError(t, err)
	tests := []struct {
		name string
		give Options
		want int
	}{
		{name: "chain, naive", give: Options{Topology: topo("chain", nil), Policy: PolicyNaive}, want: 3},
		{name: "chain, budget", give: Options{Topology: topo("chain", nil), Policy: PolicyBudget}, want: 3},
		{name: "chain, ownership", give: Options{Topology: topo("chain", nil), Policy: PolicyOwnership}, want: 1},
		{name: "fanout, naive: 7 hops retry, 3 on each call path", give: Options{Topology: topo("fanout", nil), Policy: PolicyNaive}, want: 3},
		{name: "fanout, ownership: D→F and E→F, one on each call path", give: Options{Topology: topo("fanout", nil), Policy: PolicyOwnership}, want: 1},
		{name: "two leaves each retried by their own callers", give: Options{Topology: tee, Policy: PolicyOwnership}, want: 1},
		{name: "two leaves, naive", give: Options{Topology: tee, Policy: PolicyNaive}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.give
			o.Attempts, o.Budget, o.Requests = 2, 0.1, 1
			a, err := Analyze(o)
			require.NoError(t, err)
			assert.Equal(t, tt.want, a.RadiusMax)
		})
	}
}

func TestAnalyzeInvalid(t *testing.T) {
	_, err := Analyze(Options{Topology: &Topology{Name: "empty"}, Policy: PolicyNaive, Attempts: 2, Requests: 1})
	assert.ErrorContains(t, err, `stormsim: topology "empty": nodes: must not be empty`)
}

func TestBudgetShare(t *testing.T) {
	tests := []struct {
		name     string
		w        float64
		attempts int
		budget   float64
		want     float64
	}{
		{name: "every call fails", w: 1, attempts: 2, budget: 0.1, want: 0.1},
		{name: "binding at 20% errors", w: 0.2, attempts: 2, budget: 0.1, want: 0.5},
		{name: "not binding", w: 0.05, attempts: 2, budget: 0.1, want: 1},
		{name: "nothing wanted", w: 0, attempts: 2, budget: 0.1, want: 1},
		{name: "three attempts: ρ+ρ² = 0.25", w: 1, attempts: 3, budget: 0.25, want: (math.Sqrt(2) - 1) / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, budgetShare(tt.w, tt.attempts, tt.budget), 1e-9)
		})
	}
}
