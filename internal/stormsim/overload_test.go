package stormsim

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScenarioOverloadSmall checks the overload scenario's headline
// figures at the size of its tests, in both nestings: naive retries send
// 2^3 = 8 attempts to the hanging D per root request, errown at most 2,
// with a storm radius of at most 2 hops.
func TestScenarioOverloadSmall(t *testing.T) {
	s, ok := LookupScenario("overload")
	require.True(t, ok)
	rep, err := runSmall(s)
	require.NoError(t, err)
	require.Len(t, rep.Runs, 2*len(AllPolicies()))

	byLabel := make(map[string]RunReport, len(rep.Runs))
	for _, r := range rep.Runs {
		require.NotNil(t, r.Result, r.Label)
		assert.NotEmpty(t, r.Expected.MeasuredOnly, "%s: the model does not follow time", r.Label)
		assert.Equal(t, 12, r.Result.Requests, r.Label)
		assert.Equal(t, r.Result.Requests, r.Result.Failed, "%s: every root request times out", r.Label)
		assert.NotEmpty(t, r.Result.Trace, "%s: root request 0 is traced", r.Label)
		byLabel[r.Label] = r
	}
	for _, nest := range []string{"well nested", "mis-nested"} {
		t.Run(nest, func(t *testing.T) {
			naive := byLabel["naive, "+nest].Result
			d := naive.Node("D")
			assert.EqualValues(t, 8, d.MaxPerPath, "naive: 2^3 attempts reach D on the call path")
			assert.InDelta(t, 8, d.Ratio, relTol(8), "naive: D serves 2^3 per root request")
			assert.Equal(t, 3, naive.Radius.Max, "naive: every hop retries")

			for _, p := range []Policy{PolicyOwnership, PolicyOwnershipNaive} {
				res := byLabel[string(p)+", "+nest].Result
				d := res.Node("D")
				assert.LessOrEqual(t, d.MaxPerPath, int64(2), "%s: at most 2 attempts reach D on the call path", p)
				assert.LessOrEqual(t, d.Ratio, 2.0, "%s", p)
				assert.LessOrEqual(t, res.Radius.Max, 2, "%s: storm radius", p)
				assert.Equal(t, res.Nodes[0].Errors, res.Nodes[0].Unclaimed, "%s: A's errors go out unclaimed: a retry was spent or refused below", p)
				assert.Zero(t, res.Edge("A", "B").Retries, "%s: A never retries", p)
			}
		})
	}
	for _, f := range rep.Figures {
		assert.True(t, f.Pass, "%s: %v, want %s %v (%s)", f.Name, f.Value, f.Check, f.Reference, f.Basis)
		assert.True(t, math.IsNaN(f.Expected), "%s: the model has no figure", f.Name)
	}
	assert.Zero(t, rep.Failed())
	b, err := json.Marshal(rep)
	require.NoError(t, err, "NaN figures are written as null")
	assert.Contains(t, string(b), `"load":null`)
	assert.Contains(t, string(b), `"maxPerPath":8`)
}

func TestScenarioOverloadAnalytic(t *testing.T) {
	// The model does not follow time: under -analytic nothing is judged,
	// and the report says why.
	s, _ := LookupScenario("overload")
	rep, err := s.Run(context.Background(), ScenarioOptions{Analytic: true})
	require.NoError(t, err)
	assert.Zero(t, rep.Failed())
	for _, f := range rep.Figures {
		assert.True(t, math.IsNaN(f.Value), f.Name)
		assert.Equal(t, CheckNone, f.Check, f.Name)
	}
	assert.Contains(t, rep.Notes[len(rep.Notes)-1], "Measured only: a node hangs or a call has a per-attempt timeout")
	_, err = json.Marshal(rep)
	assert.NoError(t, err)
}

func TestAnalyzeMeasuredOnly(t *testing.T) {
	tests := []struct {
		name             string
		top              *Topology
		policy           Policy
		wantAvailability float64 // NaN: unknown
		wantRadiusMax    int
	}{
		{name: "overload, naive", top: mustTopology("overload"), policy: PolicyNaive, wantAvailability: 0, wantRadiusMax: 3},
		{name: "overload, ownership: the hops that may retry at all", top: mustTopology("overload-misnested"), policy: PolicyOwnership, wantAvailability: 0, wantRadiusMax: 3},
		{
			name: "a hanging soft dependency: requests may succeed",
			top: &Topology{Name: "soft", Nodes: []Node{
				{Name: "A", Calls: []Call{{To: "B"}}},
				{Name: "B", Calls: []Call{{To: "C", Soft: true, AttemptTimeout: 10 * time.Millisecond}}},
				{Name: "C", Hang: true},
			}},
			policy:           PolicyNaive,
			wantAvailability: math.NaN(),
			wantRadiusMax:    2, // B→C times out; A→B may, when B's wait outlasts A's deadline
		},
		{
			name: "timeouts alone: the whole-attempt rule turns on time",
			top: &Topology{Name: "timeouts", Nodes: []Node{
				{Name: "A", Calls: []Call{{To: "B", AttemptTimeout: 10 * time.Millisecond}}},
				{Name: "B", Fail: 1, FailCode: "data-loss"},
			}},
			policy:           PolicyOwnership,
			wantAvailability: 0,
			wantRadiusMax:    0, // data-loss is never retried
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Analyze(Options{Topology: tt.top, Policy: tt.policy, Attempts: 2, Budget: 0.1, Requests: 1})
			require.NoError(t, err)
			assert.Equal(t, _measuredOnly, a.MeasuredOnly)
			assert.False(t, a.Exact)
			if math.IsNaN(tt.wantAvailability) {
				assert.True(t, math.IsNaN(a.Availability), "availability %v", a.Availability)
			} else {
				assert.Equal(t, tt.wantAvailability, a.Availability)
			}
			assert.Equal(t, tt.wantRadiusMax, a.RadiusMax)
			for _, n := range a.Loads() {
				assert.True(t, math.IsNaN(n))
			}
			for _, e := range a.Edges {
				assert.True(t, math.IsNaN(e.Retries))
			}
			b, err := json.Marshal(a)
			require.NoError(t, err)
			assert.Contains(t, string(b), `"load":null`)
			assert.Contains(t, string(b), `"retries":null`)
		})
	}
}

func TestRunHang(t *testing.T) {
	// A 100ms attempt timeout: under the race detector on a loaded
	// machine an attempt of 20ms could time out before B's handler saw it.
	const timeout = 100 * time.Millisecond
	hard := &Topology{Name: "hang", Nodes: []Node{
		{Name: "A", Calls: []Call{{To: "B", AttemptTimeout: timeout}}},
		{Name: "B", Hang: true},
	}}
	soft := hard.Clone()
	soft.Nodes[0].Calls[0].Soft = true
	tests := []struct {
		name       string
		give       *Topology
		wantFailed int
	}{
		{name: "every request times out", give: hard, wantFailed: 4},
		{name: "a soft hanging dependency costs time, not the request", give: soft, wantFailed: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Options{Topology: tt.give, Policy: PolicyNaive, Attempts: 2, Requests: 4, Concurrency: 4, Timeout: time.Second, Trace: true})
			require.NoError(t, err)
			assert.Equal(t, tt.wantFailed, res.Failed)
			b := res.Node("B")
			assert.Equal(t, []int64{8, 2, 8}, []int64{b.Served, b.MaxPerPath, b.Errors}, "B times out twice per request, the second time a retry")
			require.Len(t, res.Trace, 2)
			for i, e := range res.Trace {
				assert.Equal(t, []any{"A→B", i + 1, "deadline-exceeded"}, []any{e.Edge, e.Attempt, e.Code})
				// It lasts its timeout: it ended at its deadline or after,
				// and that deadline was its timeout's, not the
				// request's second. Timed from StartMS it may last less
				// on a loaded machine: the deadline was set above the
				// middleware that takes StartMS. B's copy of the deadline
				// (the TTL header, whole milliseconds) may fall up to 1ms
				// earlier, and B's answer end the attempt then.
				assert.GreaterOrEqual(t, e.EndMS, e.DeadlineMS-1, "an attempt lasts its timeout: %+v", e)
				assert.Positive(t, e.DeadlineMS, "the attempt's deadline: %+v", e)
				assert.LessOrEqual(t, e.DeadlineMS-e.StartMS, float64(timeout.Milliseconds()), "the attempt's deadline is its timeout's: %+v", e)
			}
			assert.GreaterOrEqual(t, res.Trace[1].StartMS, res.Trace[0].EndMS-1, "the retry follows the first attempt")
		})
	}
}

func TestCallPath(t *testing.T) {
	tests := []struct{ give, want string }{
		{give: "17", want: "17"},
		{give: "17@1/0.0", want: "17/0.0"},
		{give: "17@2/0.1@12/3.0", want: "17/0.1/3.0"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, callPath(tt.give), tt.give)
	}
}

func TestTraceText(t *testing.T) {
	assert.Equal(t, "C→D#1 0-40ms deadline-exceeded, C→D#2 41-81ms deadline-exceeded claimed", TraceText([]TraceEvent{
		{Edge: "C→D", Attempt: 1, StartMS: 0, EndMS: 40.2, Code: "deadline-exceeded"},
		{Edge: "C→D", Attempt: 2, StartMS: 41, EndMS: 80.9, Code: "deadline-exceeded", Claim: "claimed"},
	}))
}
