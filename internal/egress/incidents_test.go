package egress

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// contextFor returns a tracked context for a request of procedure.
func contextFor(procedure string) (context.Context, *reqlog.Log) {
	n := &reqlog.Node{Context: context.Background(), Log: reqlog.Log{Procedure: procedure}}
	return n, &n.Log
}

// TestCallSteadyStateSendsTheRequestAsItIs: outside an incident a call
// goes on as the caller made it, the same *transport.Request with the
// same headers, and nothing of errown's; the request's log says a call
// went unmarked.
func TestCallSteadyStateSendsTheRequestAsItIs(t *testing.T) {
	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	ctx, log := trackedContext()
	h := transport.NewHeaders().With("X-Trace", "abc")
	req := &transport.Request{Service: "payments", Procedure: "charge", Headers: h}
	out := outboundtest.New(outboundtest.Answer(headers("errown-storm", "3,3,0,0,0"), nil))

	_, err = mw.Call(ctx, req, out)
	require.NoError(t, err)

	require.Len(t, out.Requests(), 1)
	assert.Same(t, req, out.Requests()[0].Req, "the caller's own request")
	assert.Equal(t, map[string]string{"x-trace": "abc"}, out.Requests()[0].Headers)
	assert.True(t, log.UnmarkedCall())
}

// TestCallMarksAfterAnIncident: a call that fails, is retried, or meets a
// storm below puts its edge in an incident: the edge's calls are marked
// for the window after it, the caller procedure's other edges and other
// procedures' calls are not, and an answer or a quiet success is no
// incident.
func TestCallMarksAfterAnIncident(t *testing.T) {
	down := yarpcerrors.UnavailableErrorf("down")
	tests := []struct {
		name     string
		res      *transport.Response
		err      error
		incident bool
	}{
		{name: "a failure", res: headers("errown-claim", "claimed"), err: down, incident: true},
		{name: "a failure without errown below", err: down, incident: true},
		{name: "an answer", res: headers("errown-claim", "claimed"), err: yarpcerrors.NotFoundErrorf("no such order")},
		{name: "a quiet success", res: headers()},
		{name: "a quiet success that took more", res: headers("errown-storm", "5,5,0,0,0")},
		{name: "a success with a retry below", res: headers("errown-storm", "3,3,1,1,1"), incident: true},
		{name: "a success with a retry suppressed below", res: headers("errown-storm", "3,5,0,0,1"), incident: true},
		{name: "a success with figures unknown below", res: headers("errown-storm", "unknown"), incident: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(1000, 0)}
			mw, err := New(outbound.Config{IncidentWindow: 10 * time.Second}, WithClock(clock.Now))
			require.NoError(t, err)
			ctx, _ := contextFor("checkout")
			_, _ = mw.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"}, outboundtest.New(outboundtest.Answer(tt.res, tt.err)))

			marked := func(procedure, service string) bool {
				t.Helper()
				ctx, _ := contextFor(procedure)
				out := outboundtest.New(outboundtest.Answer(headers(), nil))
				_, err := mw.Call(ctx, &transport.Request{Service: service, Procedure: "charge"}, out)
				require.NoError(t, err)
				require.Len(t, out.Requests(), 1)
				return out.Requests()[0].Headers["errown-attempt"] == "1"
			}
			assert.Equal(t, tt.incident, marked("checkout", "payments"), "the next call on the edge")
			assert.False(t, marked("checkout", "billing"), "a call of the procedure on another edge")
			assert.False(t, marked("browse", "payments"), "a call of another procedure to the same callee")
			clock.Add(10 * time.Second)
			assert.Equal(t, tt.incident, marked("checkout", "payments"), "at the window's end")
			clock.Add(time.Millisecond)
			assert.False(t, marked("checkout", "payments"), "past the window")
		})
	}
}

// TestIncidentsResetLatest: once the latest incident is past the window,
// the service is back in the steady state, which reads no clock: the
// first call to find the window over forgets the incident, and a new
// incident starts a window again.
func TestIncidentsResetLatest(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	var reads int
	s := newIncidents(time.Second, func() time.Time { reads++; return clock.Now() })
	edge := ownership.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "charge"}
	assert.False(t, s.hot(edge))
	assert.Zero(t, reads, "no incident yet: no clock read")

	s.record(edge, nil)
	assert.True(t, s.hot(edge))
	clock.Add(2 * time.Second)
	assert.False(t, s.hot(edge), "past the window")
	reads = 0
	for range 3 {
		assert.False(t, s.hot(edge))
		assert.False(t, s.any())
	}
	assert.Zero(t, reads, "back in the steady state: no clock read")

	s.record(edge, nil)
	assert.True(t, s.hot(edge), "a new incident")
	assert.True(t, s.any())
}

// TestIncidentsRecordAt: hotAt hands back the edge's own time, which
// record then writes without looking the edge up again: an edge past the
// window is hot again, and another edge is not.
func TestIncidentsRecordAt(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	s := newIncidents(time.Second, clock.Now)
	edge := ownership.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "charge"}
	other := ownership.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "refund"}
	hot, at := s.hotAt(edge)
	assert.False(t, hot)
	assert.Nil(t, at, "no incident yet: nothing looked up")

	s.record(edge, nil)
	s.record(other, nil)
	clock.Add(1500 * time.Millisecond)
	s.record(other, nil) // keeps the service's window open
	hot, at = s.hotAt(edge)
	assert.False(t, hot, "past edge's window")
	require.NotNil(t, at, "edge has a time")
	assert.Same(t, s.byEdge.Get(edge), at, "edge's own time")

	s.record(edge, at)
	assert.True(t, s.hot(edge), "recorded through hotAt's time")
	clock.Add(1200 * time.Millisecond)
	s.record(edge, at)
	assert.True(t, s.hot(edge))
	assert.False(t, s.hot(other), "another edge's time is its own")
}

// TestCallRetriesAreMarked: a call's retries carry their attempt number
// even when its first attempt went out unmarked, and the retry puts the
// procedure in an incident.
func TestCallRetriesAreMarked(t *testing.T) {
	r, err := retrier.New(retry.Config{Policies: []retry.PolicyConfig{{Service: "payments", MaxAttempts: 2, InitialBackoff: time.Nanosecond, Idempotent: new(true)}}})
	require.NoError(t, err)
	mw, err := New(outbound.Config{}, WithInner(r))
	require.NoError(t, err)
	ctx, _ := trackedContext()
	down := yarpcerrors.UnavailableErrorf("down")
	out := outboundtest.New(outboundtest.Answer(headers("errown-claim", "claimed"), down), outboundtest.Answer(headers(), nil))
	_, err = mw.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"}, out)
	require.NoError(t, err)
	_, err = mw.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"}, out)
	require.NoError(t, err)

	require.Len(t, out.Requests(), 3)
	var got []string
	for _, s := range out.Requests() {
		got = append(got, s.Headers["errown-attempt"])
	}
	assert.Equal(t, []string{"", "2", "1"}, got, "unmarked first attempt, its retry, the next call")
}

// TestIncidentsBound: past _maxIncidentEdges edges, the others share one
// time, so a client choosing procedure names cannot grow the map, and an
// incident of one of them marks them all.
func TestIncidentsBound(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	s := newIncidents(time.Second, clock.Now)
	edge := func(p string) ownership.Edge {
		return ownership.Edge{CallerProcedure: p, Service: "payments", Procedure: "charge"}
	}
	for i := range _maxIncidentEdges + 10 {
		s.record(edge("p"+strconv.Itoa(i)), nil)
	}
	assert.Equal(t, _maxIncidentEdges+1, s.byEdge.Len(), "the bound, and the others' one")
	assert.True(t, s.hot(edge("p0")))
	assert.True(t, s.hot(edge("never-seen")), "past the bound, edges share the others' time")
	clock.Add(2 * time.Second)
	assert.False(t, s.hot(edge("p0")))
	assert.False(t, s.hot(edge("never-seen")))

	fresh := newIncidents(time.Second, clock.Now)
	assert.False(t, fresh.hot(edge("p0")), "no incident yet")
	fresh.record(edge("p0"), nil)
	assert.True(t, fresh.hot(edge("p0")))
	assert.False(t, fresh.hot(edge("p1")), "below the bound, each edge has its own")
	assert.False(t, fresh.hot(ownership.Edge{CallerProcedure: "p0", Service: "payments", Procedure: "refund"}), "another procedure of the callee")
}

func TestConfigIncidentWindow(t *testing.T) {
	_, err := New(outbound.Config{IncidentWindow: -time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "incidentWindow: must be positive, got -1s")
	assert.Equal(t, 10*time.Second, defaults.Fill(outbound.Config{}, outbound.DefaultConfig()).IncidentWindow)
}

// TestCallAbandonedIsNoIncident: a call the handler cancelled (a hedge's
// loser, a first-answer-wins fan-out) has no response and unknown
// figures, but says nothing of the callee: the procedure stays out of an
// incident.
func TestCallAbandonedIsNoIncident(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	mw, err := New(outbound.Config{IncidentWindow: 10 * time.Second}, WithClock(clock.Now))
	require.NoError(t, err)
	n, _ := contextFor("checkout")
	ctx, cancel := context.WithCancel(n)
	cancel()
	_, _ = mw.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"},
		outboundtest.New(outboundtest.Answer(nil, context.Canceled)))

	next, _ := contextFor("checkout")
	out := outboundtest.New(outboundtest.Answer(headers(), nil))
	_, err = mw.Call(next, &transport.Request{Service: "inventory", Procedure: "reserve"}, out)
	require.NoError(t, err)
	require.Len(t, out.Requests(), 1)
	assert.Empty(t, out.Requests()[0].Headers["errown-attempt"], "the next call of the procedure goes unmarked")
}

// TestCallOrphanMarkedInAnIncident: a call tied to no request (a fresh
// context) goes out as it is, unless the service is in an incident: then
// it is marked, so that its callee answers with its figures.
func TestCallOrphanMarkedInAnIncident(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	mw, err := New(outbound.Config{IncidentWindow: 10 * time.Second}, WithClock(clock.Now), WithOrphans(new(calls.Orphans)))
	require.NoError(t, err)
	orphan := func() string {
		out := outboundtest.New(outboundtest.Answer(headers(), nil))
		_, err := mw.Call(context.Background(), &transport.Request{Service: "audit", Procedure: "log"}, out)
		require.NoError(t, err)
		require.Len(t, out.Requests(), 1)
		return out.Requests()[0].Headers["errown-attempt"]
	}
	assert.Empty(t, orphan(), "the steady state")
	ctx, _ := contextFor("checkout")
	_, _ = mw.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"},
		outboundtest.New(outboundtest.Answer(headers("errown-claim", "claimed"), yarpcerrors.UnavailableErrorf("down"))))
	assert.Equal(t, "1", orphan(), "in an incident")
	clock.Add(11 * time.Second)
	assert.Empty(t, orphan(), "a window after it")
}

// hot reports whether a call on edge met an incident within the window.
func (s *incidents) hot(edge ownership.Edge) bool {
	hot, _ := s.hotAt(edge)
	return hot
}
