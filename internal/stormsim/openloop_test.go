package stormsim

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunOpenLoop(t *testing.T) {
	tests := []struct {
		transport string
		policy    Policy
	}{
		{transport: TransportHTTP, policy: PolicyNaive},
		{transport: TransportGRPCGo, policy: PolicyOwnership},
	}
	for _, tt := range tests {
		t.Run(tt.transport+"/"+string(tt.policy), func(t *testing.T) {
			// C at a quarter of its capacity before the trigger: at half
			// of it, a loaded machine running the race detector slowed
			// the hops enough that B's calls timed out and retried, and
			// the naive mesh fell into its storm before the trigger.
			top := shortCapacity()
			top.Rate = 100
			o := Options{Topology: top, Policy: tt.policy, Attempts: 2, Budget: 0.1, Requests: 1, Seed: 5, Timeout: time.Second, Bin: 100 * time.Millisecond, Transport: tt.transport}
			res, err := Run(context.Background(), o)
			require.NoError(t, err)
			tl := res.Timeline
			require.NotNil(t, tl)
			t.Logf("goodput per bin: %v; max lag %.1fms", tl.Goodput, tl.MaxLagMS)

			// The schedule is the seed's; every bin of the load has
			// requests, and every request an outcome.
			assert.Equal(t, len(arrivals(100, 3*time.Second, 5)), res.Requests)
			require.Len(t, tl.Sent, 30)
			require.Len(t, tl.LagMS, len(tl.Sent), "the load's lag, per bin of Sent")
			sent, outcomes, maxLag := 0, 0, 0.0
			for b, n := range tl.Sent {
				assert.Positive(t, n, "bin %d", b)
				assert.LessOrEqual(t, tl.Good[b], n)
				assert.GreaterOrEqual(t, tl.LagMS[b], 0.0, "bin %d's lag", b)
				sent += n
				maxLag = max(maxLag, tl.LagMS[b])
			}
			assert.Equal(t, tl.MaxLagMS, maxLag, "the most lag is the most of a bin's")
			for _, n := range tl.Outcomes {
				outcomes += n
			}
			assert.Equal(t, []int{res.Requests, res.Requests}, []int{sent, outcomes})
			assert.Equal(t, res.Requests-tl.Outcomes["ok"], res.Failed)

			s := tl.Summary
			assert.Equal(t, []any{"C", 1.0, 2.0}, []any{s.Constrained, s.TriggerFromS, s.TriggerToS})
			over := func(from, to int) (good, sent int) { // bins [from, to)
				for b := from; b < to; b++ {
					good, sent = good+tl.Good[b], sent+tl.Sent[b]
				}
				return good, sent
			}
			good, sentBefore := over(0, 10)
			assert.InDelta(t, float64(good)/float64(sentBefore), s.GoodputBefore, 1e-9, "goodput before the trigger: its bins'")
			// Judged up to 0.8s: a request sent in the last bins before
			// the trigger may reach C after it slowed.
			good, sent = over(0, 8)
			assert.Greater(t, float64(good)/float64(sent), 0.9, "C at a quarter of its capacity before the trigger")
			assert.Less(t, s.GoodputDuring, 0.5, "C able to serve 40% of the load during it")
			assert.Equal(t, []TriggerWindow{{Node: "C", Kind: TriggerSlow, FromS: 1, ToS: 2, Factor: 10}}, tl.Triggers)

			// C's series: its queue bounded by 50, and full at some point.
			require.Len(t, tl.Nodes, 1)
			c := tl.Nodes[0]
			assert.Equal(t, []any{"C", 1.0}, []any{c.Name, c.Visits})
			assert.Equal(t, int64(50), maxOf(c.Queue), "the queue fills to its bound, never past it")
			assert.Positive(t, c.TotalRejected, "a full queue refuses at once")
			assert.Equal(t, res.Node("C").Served, c.TotalArrivals)
			assert.Equal(t, c.TotalArrivals, s.Arrivals)
			assert.InDelta(t, float64(s.Arrivals)/float64(res.Requests), s.ArrivalsPerOffered, 1e-9)
			// Before the trigger C gets each root request once, in the
			// bin it was sent in or, delayed in the mesh, a later one.
			var arrived int64
			for b := range 10 {
				arrived += c.Arrivals[b]
			}
			assert.GreaterOrEqual(t, float64(arrived), 0.8*float64(sentBefore), "C's arrivals before the trigger")
			assert.LessOrEqual(t, arrived, 2*int64(sentBefore), "at most an attempt and a retry each")
			assert.Positive(t, maxOf(tl.Retries), "the hops retried C's timeouts")
			assert.Positive(t, tl.Summary.Refused["code"], "resource-exhausted is not retried (refused: code)")
			if tt.policy == PolicyOwnership {
				assert.Positive(t, tl.Summary.Refused["suppressed"]+tl.Summary.Refused["budget"], "errown's refusals, read from its metrics")
			}

			b, err := json.Marshal(res)
			require.NoError(t, err)
			var back Result
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, tl.Sent, back.Timeline.Sent)
			assert.Equal(t, tl.Summary.Arrivals, back.Timeline.Summary.Arrivals)
		})
	}
}

func TestRunCrashAndFail(t *testing.T) {
	// A→B→C: B crashes at 0.5s and restarts on its port at 1.5s; C fails
	// every call from 2.5s to 3.5s. Goodput is 0 within either trigger
	// and back once it has passed.
	//
	// No hop retries (one attempt each): the test is of the triggers, a
	// retry after an attempt's timeout (A's is 400ms) carries a request
	// across a trigger's edge, and retries multiply the load a starved
	// machine has to carry. The bins are 100ms, and the three at either
	// edge of a trigger are not judged: a request is late on its place in
	// the schedule (MaxLagMS at the root), later still inside the mesh
	// when a loaded machine runs the race detector (a hop's request that
	// waited 200ms and more was seen to reach B after the crash, or C
	// after its recovery), and a trigger's change lands a moment after
	// its time (B's restart listens again). Each stretch is judged by its
	// goodput over all its bins, so that one request does not decide a
	// bin of ten.
	top := &Topology{Name: "crash", Rate: 100, Duration: 4500 * time.Millisecond, Nodes: []Node{
		{Name: "A", Calls: []Call{{To: "B", AttemptTimeout: 400 * time.Millisecond}}},
		{Name: "B", Calls: []Call{{To: "C", AttemptTimeout: 100 * time.Millisecond}}, Triggers: []Trigger{{Kind: TriggerCrash, At: 500 * time.Millisecond, For: time.Second}}},
		{Name: "C", Triggers: []Trigger{{Kind: TriggerFail, At: 2500 * time.Millisecond, For: time.Second}}},
	}}
	res, err := Run(context.Background(), Options{Topology: top, Policy: PolicyNaive, Attempts: 1, Requests: 1, Seed: 2, Timeout: time.Second, Bin: 100 * time.Millisecond})
	require.NoError(t, err)
	tl := res.Timeline
	require.Len(t, tl.Goodput, 45)
	t.Logf("goodput per bin: %v; max lag %.1fms", tl.Goodput, tl.MaxLagMS)
	goodput := func(from, to int) float64 { // over bins [from, to)
		good, sent := 0, 0
		for b := from; b < to; b++ {
			good, sent = good+tl.Good[b], sent+tl.Sent[b]
		}
		require.Positive(t, sent, "bins %d–%d: requests sent", from, to-1)
		return float64(good) / float64(sent)
	}
	for _, r := range [][2]int{{8, 12}, {28, 32}} { // 0.8s–1.2s, 2.8s–3.2s
		assert.LessOrEqual(t, goodput(r[0], r[1]), 0.1, "bins %d–%d: within a trigger", r[0], r[1]-1)
	}
	for _, r := range [][2]int{{0, 2}, {18, 22}, {38, 45}} { // before, between, after
		assert.GreaterOrEqual(t, goodput(r[0], r[1]), 0.85, "bins %d–%d: B serves, on the port it had, and C answers", r[0], r[1]-1)
	}
	require.Len(t, tl.Nodes, 2)
	b := tl.Nodes[0]
	var down int64
	for i := 8; i < 12; i++ {
		down += b.Arrivals[i]
	}
	assert.Equal(t, "B", b.Name)
	assert.Zero(t, down, "nothing reaches B while it is down")
	assert.Positive(t, b.Arrivals[18], "B serves again after its restart")
	assert.Positive(t, res.Node("C").OwnFailures, "C's fail trigger fails its calls")
	assert.Equal(t, tl.Summary.RecoveryHorizonS, 0.0, "the run ends 1s after the last trigger: less than the hold")
	assert.Nil(t, tl.Summary.RecoveryS)
}

func TestGraphVisits(t *testing.T) {
	g, err := compile(mustTopology("fanout"))
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 1, 1, 1, 3, 4}, g.visits(), "F gets D's one request and E's three per root request")
}
