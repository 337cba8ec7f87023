package stormsim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// designTable is docs/DESIGN.md's first table, copied literally: requests served
// by A..G per request at A, D failing, two attempts, 10% budget.
var designTable = map[Policy][]float64{
	PolicyNaive:     {1, 2, 4, 8, 8, 8, 8},
	PolicyBudget:    {1, 1.1, 1.21, 1.33, 1.33, 1.33, 1.33},
	PolicyOwnership: {1, 1, 1, 1.1, 1.1, 1.1, 1.1},
}

// designOptions is the chain of docs/DESIGN.md's first table.
func designOptions(p Policy) Options {
	return Options{Depth: 7, FailDepth: 3, Attempts: 2, Budget: 0.1, Requests: 2000, Policy: p}
}

func TestExpectedDesignTable(t *testing.T) {
	tests := []struct {
		give Policy
		want []float64
	}{
		{give: PolicyNaive, want: designTable[PolicyNaive]},
		{give: PolicyBudget, want: designTable[PolicyBudget]},
		{give: PolicyOwnership, want: designTable[PolicyOwnership]},
	}
	for _, tt := range tests {
		t.Run(string(tt.give), func(t *testing.T) {
			// docs/DESIGN.md prints two decimals (1.1^3 = 1.331 as 1.33), so
			// agreement is to within half the last printed digit.
			assert.InDeltaSlice(t, tt.want, Expected(designOptions(tt.give)), 0.005)
		})
	}
}

func TestPublished(t *testing.T) {
	for _, p := range Policies() {
		got, ok := Published(designOptions(p))
		require.True(t, ok, "policy %s", p)
		assert.Equal(t, designTable[p], got, "policy %s", p)
	}

	tests := []struct {
		name string
		give Options
	}{
		{name: "depth", give: Options{Depth: 6, FailDepth: 3, Attempts: 2, Budget: 0.1, Policy: PolicyBudget}},
		{name: "fail-depth", give: Options{Depth: 7, FailDepth: 2, Attempts: 2, Budget: 0.1, Policy: PolicyBudget}},
		{name: "attempts", give: Options{Depth: 7, FailDepth: 3, Attempts: 3, Budget: 0.1, Policy: PolicyNaive}},
		{name: "budget", give: Options{Depth: 7, FailDepth: 3, Attempts: 2, Budget: 0.2, Policy: PolicyOwnership}},
		{name: "policy", give: Options{Depth: 7, FailDepth: 3, Attempts: 2, Budget: 0.1, Policy: "bogus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Published(tt.give)
			assert.False(t, ok)
			assert.Nil(t, got)
		})
	}

	t.Run("naive ignores budget", func(t *testing.T) {
		o := designOptions(PolicyNaive)
		o.Budget = 0.5
		_, ok := Published(o)
		assert.True(t, ok)
	})
}

func TestExpected(t *testing.T) {
	tests := []struct {
		name string
		give Options
		want []float64
	}{
		{
			name: "naive three attempts",
			give: Options{Depth: 4, FailDepth: 2, Attempts: 3, Requests: 1, Policy: PolicyNaive},
			want: []float64{1, 3, 9, 9},
		},
		{
			name: "naive failing leaf",
			give: Options{Depth: 3, FailDepth: 2, Attempts: 2, Requests: 1, Policy: PolicyNaive},
			want: []float64{1, 2, 4},
		},
		{
			name: "failing root is retried by nobody",
			give: Options{Depth: 3, FailDepth: 0, Attempts: 2, Budget: 0.1, Requests: 1, Policy: PolicyNaive},
			want: []float64{1, 1, 1},
		},
		{
			name: "ownership failing root",
			give: Options{Depth: 3, FailDepth: 0, Attempts: 2, Budget: 0.1, Requests: 1, Policy: PolicyOwnership},
			want: []float64{1, 1, 1},
		},
		{
			name: "budget one attempt",
			give: Options{Depth: 3, FailDepth: 2, Attempts: 1, Budget: 0.5, Requests: 1, Policy: PolicyBudget},
			want: []float64{1, 1, 1},
		},
		{
			name: "budget capped by attempts",
			give: Options{Depth: 3, FailDepth: 2, Attempts: 2, Budget: 5, Requests: 1, Policy: PolicyBudget},
			want: []float64{1, 2, 4},
		},
		{
			name: "budget half",
			give: Options{Depth: 4, FailDepth: 2, Attempts: 2, Budget: 0.5, Requests: 1, Policy: PolicyBudget},
			want: []float64{1, 1.5, 2.25, 2.25},
		},
		{
			name: "ownership failing leaf",
			give: Options{Depth: 4, FailDepth: 3, Attempts: 3, Budget: 0.25, Requests: 1, Policy: PolicyOwnership},
			want: []float64{1, 1, 1, 1.25},
		},
		{
			name: "single node",
			give: Options{Depth: 1, FailDepth: 0, Attempts: 2, Budget: 0.1, Requests: 1, Policy: PolicyOwnership},
			want: []float64{1},
		},
		{
			name: "invalid",
			give: Options{Depth: 3, FailDepth: 3, Attempts: 2, Requests: 1, Policy: PolicyNaive},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDeltaSlice(t, tt.want, Expected(tt.give), 1e-9)
		})
	}
}

// _validOptions pass Validate; each case of TestOptionsValidate breaks them.
var _validOptions = Options{Depth: 4, FailDepth: 2, Attempts: 2, Budget: 0.1, Requests: 10, Policy: PolicyBudget}

func TestOptionsValidateAccepts(t *testing.T) {
	tests := []struct {
		name string
		give func(*Options)
	}{
		{name: "as is", give: func(*Options) {}},
		{name: "naive ignores budget", give: func(o *Options) { o.Policy, o.Budget = PolicyNaive, 0 }},
		{name: "failing root", give: func(o *Options) { o.FailDepth = 0 }},
		{name: "failing leaf", give: func(o *Options) { o.FailDepth = 3 }},
		{name: "every transport", give: func(o *Options) { o.Transport = TransportTChannel }},
		{name: "ownership-naive ignores budget", give: func(o *Options) { o.Policy, o.Budget = PolicyOwnershipNaive, 0 }},
		{name: "topology ignores depth", give: func(o *Options) { o.Topology, o.Depth, o.FailDepth = Chain(2, 1), 0, 5 }},
		{name: "warm-up and memory", give: func(o *Options) { o.Warmup, o.Memory.MinSamples, o.UnknownEdges = 5, 3, "coincidental" }},
		{name: "open-loop chain", give: func(o *Options) { o.Rate, o.Duration, o.Bin = 100, 2*time.Second, 100*time.Millisecond }},
		{name: "the topology's rate and triggers", give: func(o *Options) { o.Topology = shortCapacity() }},
		{name: "throttle", give: func(o *Options) { o.Throttle, o.BudgetWindow = &Throttle{K: 1.5}, time.Second }},
		{name: "capacity on net/http", give: func(o *Options) { o.Topology, o.Transport = shortCapacity(), TransportNetHTTP }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := _validOptions
			tt.give(&o)
			assert.NoError(t, o.Validate())
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		give func(*Options)
		want []string // substrings of the error
	}{
		{name: "depth zero", give: func(o *Options) { o.Depth, o.FailDepth = 0, 0 }, want: []string{"depth: must be between 1 and 26, got 0", "fail-depth: must be >= 0 and < depth (0), got 0"}},
		{name: "depth too big", give: func(o *Options) { o.Depth = 27 }, want: []string{"depth: must be between 1 and 26, got 27"}},
		{name: "fail-depth at depth", give: func(o *Options) { o.FailDepth = 4 }, want: []string{"fail-depth: must be >= 0 and < depth (4), got 4"}},
		{name: "fail-depth negative", give: func(o *Options) { o.FailDepth = -1 }, want: []string{"fail-depth: must be >= 0 and < depth (4), got -1"}},
		{name: "attempts zero", give: func(o *Options) { o.Attempts = 0 }, want: []string{"attempts: must be between 1 and 10, got 0"}},
		{name: "attempts too many", give: func(o *Options) { o.Attempts = 11 }, want: []string{"attempts: must be between 1 and 10, got 11"}},
		{name: "budget zero", give: func(o *Options) { o.Budget = 0 }, want: []string{`budget: must be > 0 and <= 1000 for policy "budget", got 0`}},
		{name: "budget NaN", give: func(o *Options) { o.Policy, o.Budget = PolicyOwnership, math.NaN() }, want: []string{`budget: must be > 0 and <= 1000 for policy "ownership", got NaN`}},
		{name: "budget too big", give: func(o *Options) { o.Budget = 1001 }, want: []string{"budget: must be > 0 and <= 1000"}},
		{name: "requests", give: func(o *Options) { o.Requests = 0 }, want: []string{"requests: must be >= 1, got 0"}},
		{name: "concurrency negative", give: func(o *Options) { o.Concurrency = -1 }, want: []string{"concurrency: must be between 1 and 1024, got -1"}},
		{name: "concurrency too big", give: func(o *Options) { o.Concurrency = 1025 }, want: []string{"concurrency: must be between 1 and 1024, got 1025"}},
		{name: "timeout", give: func(o *Options) { o.Timeout = -1 }, want: []string{"timeout: must be > 0, got -1ns"}},
		{name: "policy empty", give: func(o *Options) { o.Policy = "" }, want: []string{`policy: must be one of naive, budget, ownership, ownership-naive, got ""`}},
		{name: "topology", give: func(o *Options) { o.Topology = &Topology{Name: "t"} }, want: []string{`topology "t": nodes: must not be empty`}},
		{name: "warmup", give: func(o *Options) { o.Warmup = -1 }, want: []string{"warmup: must be >= 0, got -1"}},
		{name: "unknown edges", give: func(o *Options) { o.UnknownEdges = "maybe" }, want: []string{`unknown-edges: must be correlated or coincidental, got "maybe"`}},
		{name: "memory", give: func(o *Options) { o.Memory.MinSamples = -1 }, want: []string{"memory.minSamples: must be at least 1, got -1"}},
		{name: "transport", give: func(o *Options) { o.Transport = "udp" }, want: []string{`transport: must be one of http, grpc, tchannel, grpc-go, nethttp, mixed, got "udp"`}},
		{
			name: "open-loop load",
			give: func(o *Options) {
				o.Rate, o.Duration, o.Bin, o.BudgetWindow = math.NaN(), 11*time.Minute, 5*time.Millisecond, -1
				o.Throttle = &Throttle{K: 0.5, Window: time.Millisecond, Buckets: 1001}
			},
			want: []string{
				"rate: must be between 0 and 5000 root requests per second, got NaN",
				"duration: must be between 1s and 10m0s, got 11m0s",
				"bin: must be between 10ms and 10s, got 5ms",
				"budget-window: must be > 0, got -1ns",
				"throttle.k: must be between 1 and 1000, got 0.5",
				"throttle.window: must be at least 10ms, got 1ms",
				"throttle.buckets: must be between 1 and 1000, got 1001",
			},
		},
		{name: "throttle with errown", give: func(o *Options) { o.Policy, o.Throttle = PolicyOwnership, &Throttle{} }, want: []string{`throttle: adds to a policy blind to claims (naive or budget), got "ownership"`}},
		{name: "bin longer than the load", give: func(o *Options) { o.Rate, o.Duration, o.Bin = 10, time.Second, 2*time.Second }, want: []string{"bin: must not be longer than the load (1s), got 2s"}},
		{
			name: "triggers without open-loop load",
			give: func(o *Options) { o.Topology = shortCapacity(); o.Topology.Rate = 0 },
			want: []string{`rate: topology "short" has triggers, which need open-loop load (-rate, or rate: in the topology), got 0`},
		},
		{name: "triggers after the load", give: func(o *Options) { o.Topology, o.Duration = shortCapacity(), 1500*time.Millisecond }, want: []string{`duration: topology "short"'s triggers end at 2s, after the load (1.5s)`}},
		{
			name: "a crash on grpc-go",
			give: func(o *Options) {
				o.Topology, o.Transport = shortCapacity(), TransportGRPCGo
				o.Topology.Node("C").Triggers[0] = Trigger{Kind: TriggerCrash, At: time.Second, For: time.Second}
			},
			want: []string{`transport: node C of topology "short" crashes and restarts, which needs a yarpc transport (http, grpc, tchannel), got grpc-go`},
		},
		{
			name: "every problem at once",
			give: func(o *Options) { o.Depth, o.Attempts, o.Requests = 2, 0, 0 },
			want: []string{"fail-depth: must be >= 0 and < depth (2), got 2", "attempts: must be", "requests: must be"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := _validOptions
			tt.give(&o)
			err := o.Validate()
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
