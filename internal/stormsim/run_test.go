package stormsim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// _ratioTolerance is how far a measured ratio may be from Expected.
//
// Naive retries are exact: every call fails the same way, so the node at
// depth d serves exactly R^d requests per root request. A budget is exact
// up to its concurrency: with no floor and a window longer than the run, a
// hop that saw n requests may have retried floor(B·n) of them, and with c
// calls in flight the budget lags by at most c deposits, so a hop falls
// short of B·n by at most B·c+1 retries. With n >= 400 requests, c = 16 and
// B = 0.1 that is 2.6/400 < 0.007 per hop, under 0.02 after the two
// compounding hops of these chains. ±0.05 (the tolerance of cmd/stormsim)
// leaves margin for that and for nothing else: a lost claim header or a
// retry on the wrong hop moves a ratio by at least 0.1.
const _ratioTolerance = 0.05

// runChain is the chain of the end-to-end tests: five nodes, C failing.
// Naive runs, exact whatever their size and the costliest (15 calls per
// request), send fewer requests.
func runChain(p Policy, transport string) Options {
	requests := 400
	if p == PolicyNaive {
		requests = 150
	}
	return Options{
		Depth:       5,
		FailDepth:   2,
		Attempts:    2,
		Budget:      0.1,
		Requests:    requests,
		Concurrency: 16,
		Policy:      p,
		Transport:   transport,
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		give Options
		want []float64 // literal, to check Expected as well
	}{
		{give: runChain(PolicyNaive, TransportHTTP), want: []float64{1, 2, 4, 4, 4}},
		{give: runChain(PolicyBudget, TransportHTTP), want: []float64{1, 1.1, 1.21, 1.21, 1.21}},
		{give: runChain(PolicyOwnership, TransportHTTP), want: []float64{1, 1, 1.1, 1.1, 1.1}},
		{give: runChain(PolicyNaive, TransportGRPC), want: []float64{1, 2, 4, 4, 4}},
		{give: runChain(PolicyBudget, TransportGRPC), want: []float64{1, 1.1, 1.21, 1.21, 1.21}},
		{give: runChain(PolicyOwnership, TransportGRPC), want: []float64{1, 1, 1.1, 1.1, 1.1}},
		{give: runChain(PolicyNaive, TransportTChannel), want: []float64{1, 2, 4, 4, 4}},
		{give: runChain(PolicyBudget, TransportTChannel), want: []float64{1, 1.1, 1.21, 1.21, 1.21}},
		{give: runChain(PolicyOwnership, TransportTChannel), want: []float64{1, 1, 1.1, 1.1, 1.1}},
		{give: runChain(PolicyNaive, TransportGRPCGo), want: []float64{1, 2, 4, 4, 4}},
		{give: runChain(PolicyBudget, TransportGRPCGo), want: []float64{1, 1.1, 1.21, 1.21, 1.21}},
		{give: runChain(PolicyOwnership, TransportGRPCGo), want: []float64{1, 1, 1.1, 1.1, 1.1}},
		{give: runChain(PolicyNaive, TransportNetHTTP), want: []float64{1, 2, 4, 4, 4}},
		{give: runChain(PolicyBudget, TransportNetHTTP), want: []float64{1, 1.1, 1.21, 1.21, 1.21}},
		{give: runChain(PolicyOwnership, TransportNetHTTP), want: []float64{1, 1, 1.1, 1.1, 1.1}},
		// yarpc over HTTP → grpc-go → net/http → yarpc → grpc-go: every
		// pair of kinds on an edge, C (net/http) failing.
		{give: runChain(PolicyNaive, TransportMixed), want: []float64{1, 2, 4, 4, 4}},
		{give: runChain(PolicyBudget, TransportMixed), want: []float64{1, 1.1, 1.21, 1.21, 1.21}},
		{give: runChain(PolicyOwnership, TransportMixed), want: []float64{1, 1, 1.1, 1.1, 1.1}},
	}
	for _, tt := range tests {
		t.Run(string(tt.give.Policy)+"/"+tt.give.Transport, func(t *testing.T) {
			require.InDeltaSlice(t, tt.want, Expected(tt.give), 1e-9, "Expected")

			res, err := Run(context.Background(), tt.give)
			require.NoError(t, err)

			assert.Equal(t, tt.give.Policy, res.Policy)
			assert.Equal(t, tt.give.Transport, res.Transport)
			assert.Equal(t, tt.give.Requests, res.Requests)
			assert.Equal(t, "chain", res.Topology)
			assert.Equal(t, tt.give.Requests, res.Failed, "every request fails")
			require.Len(t, res.Nodes, tt.give.Depth)
			a := res.Nodes[0]
			assert.Equal(t, []any{"A", 0, int64(tt.give.Requests), 1.0, int64(0)}, []any{a.Name, a.Depth, a.Served, a.Ratio, a.Retried},
				"the client does not retry")
			assert.Equal(t, []any{"E", 4}, []any{res.Nodes[4].Name, res.Nodes[4].Depth})
			assert.InDeltaSlice(t, tt.want, res.Ratios(), _ratioTolerance, "measured %v", res.Ratios())
			c := res.Nodes[2]
			assert.Equal(t, c.Served, c.OwnFailures, "C fails every request on its own")
			assert.Equal(t, c.Served, c.Errors)
			if tt.give.Policy == PolicyOwnership {
				// C claims; B retried and unclaims; A passes that on.
				assert.Zero(t, c.Unclaimed, "C claims its own failure")
				assert.Equal(t, res.Nodes[1].Errors, res.Nodes[1].Unclaimed, "B unclaims")
				assert.Equal(t, res.Nodes[0].Errors, res.Nodes[0].Unclaimed, "A passes unclaimed on")
				assert.Equal(t, 1, res.Radius.Max, "only B→C retries")
			}
		})
	}
}

func TestRunNaiveIsExact(t *testing.T) {
	// Naive retries leave nothing to chance: every count is exact, also
	// with more attempts, a failing leaf and more requests in flight than
	// there are requests.
	o := Options{Depth: 3, FailDepth: 2, Attempts: 3, Requests: 20, Concurrency: 32, Policy: PolicyNaive}
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, []NodeResult{
		{Name: "A", Depth: 0, Served: 20, Ratio: 1, MaxPerPath: 1, Errors: 20},
		{Name: "B", Depth: 1, Served: 60, Ratio: 3, MaxPerPath: 3, Retried: 40, Errors: 60},
		{Name: "C", Depth: 2, Served: 180, Ratio: 9, MaxPerPath: 9, Retried: 120, Errors: 180, OwnFailures: 180},
	}, res.Nodes)
	assert.Equal(t, []EdgeResult{
		{From: "A", To: "B", Retries: 40, PerRequest: 2},
		{From: "B", To: "C", Retries: 120, PerRequest: 6},
	}, res.Edges)
	assert.Equal(t, Radius{Failed: 20, Max: 2, Mean: 2, Retried: 20, MeanRetried: 2}, res.Radius)
}

func TestRunInvalidOptions(t *testing.T) {
	_, err := Run(context.Background(), Options{Depth: 3, FailDepth: 3, Attempts: 2, Requests: 1, Policy: PolicyNaive})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fail-depth: must be >= 0 and < depth (3), got 3")
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, Options{Depth: 2, FailDepth: 1, Attempts: 2, Requests: 100, Policy: PolicyNaive})
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, res.Requests, "nothing is sent once ctx is done")
	assert.Len(t, res.Nodes, 2)
}
