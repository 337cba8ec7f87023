package retrier

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
)

// choosingPeers returns script with each step recording, as a peer
// chooser reading the call's route would, a peer per attempt in the Route
// its context carries: peer1 for the first, peer2 for the second...
func choosingPeers(script ...step) []step {
	var n atomic.Int32
	chosen := make([]step, len(script))
	for i, s := range script {
		chosen[i] = func(ctx context.Context, req *transport.Request) (*transport.Response, error) {
			if r := reqlog.RouteFromContext(ctx); r != nil {
				r.Record(fmt.Sprintf("peer%d", n.Add(1)))
			}
			return s(ctx, req)
		}
	}
	return chosen
}

// routes returns the Route each request's context carried.
func routes(out *outboundtest.Outbound) []*calls.Route {
	var rs []*calls.Route
	for _, r := range out.Requests() {
		rs = append(rs, reqlog.RouteFromContext(r.Ctx))
	}
	return rs
}

func TestRouteInEveryAttemptsContext(t *testing.T) {
	defer reqlog.SetRoutesRead(true)() // as a retrypeer chooser in the process sets it
	tests := []struct {
		name       string
		give       retry.PolicyConfig
		wantRoutes int // attempts that saw a route
		wantSame   bool
	}{
		{name: "two attempts", give: retry.PolicyConfig{Service: "callee", Idempotent: new(true)}, wantRoutes: 2, wantSame: true},
		{name: "one attempt", give: retry.PolicyConfig{Service: "callee", MaxAttempts: 1, Idempotent: new(true)}, wantRoutes: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{tt.give}, Budget: retry.BudgetConfig{Disabled: true}}, newClock().option())
			out := newOutbound(choosingPeers(fail(errUnavailable), succeed("ok"))...)
			var state CallState
			_, err := m.Call(WithCallState(context.Background(), &state), req("callee", "get", "x"), out)
			seen := 0
			seenRoutes := routes(out)
			for _, r := range seenRoutes {
				if r != nil {
					seen++
				}
			}
			assert.Equal(t, tt.wantRoutes, seen)
			if !tt.wantSame {
				assert.Nil(t, state.Route)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, state.Route, "the call's state names its route")
			assert.Same(t, seenRoutes[0], seenRoutes[1], "both attempts share the call's route")
			assert.Same(t, state.Route, seenRoutes[0])
			assert.Equal(t, 2, state.Route.Len())
			assert.Equal(t, "peer2", state.Route.Last())
			assert.True(t, state.Route.Used("peer1"))
		})
	}
}

func TestRouteOnlyWithAChooser(t *testing.T) {
	defer reqlog.SetRoutesRead(false)() // no retrypeer chooser in the process
	m := newMiddleware(t, retry.Config{
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}},
		Budget:   retry.BudgetConfig{Disabled: true},
	}, newClock().option())
	out := newOutbound(fail(errUnavailable), succeed("ok"))
	var state CallState
	_, err := m.Call(WithCallState(context.Background(), &state), req("callee", "get", "x"), out)
	require.NoError(t, err)
	seen := routes(out)
	require.Len(t, seen, 2, "the call was retried")
	assert.Nil(t, seen[0], "no route in the first attempt's context")
	assert.Nil(t, seen[1], "no route in the retry's context")
	assert.Nil(t, state.Route)
}

// witnessing wraps out: each call's route gets a witness that keeps the
// peers the route tells it of (Route.Served), as package retrypeer's
// chooser is.
type witnessing struct {
	*outboundtest.Outbound

	mu   sync.Mutex
	told []string
}

func (o *witnessing) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	if r := reqlog.RouteFromContext(ctx); r != nil {
		r.Witness(func(p string) {
			o.mu.Lock()
			o.told = append(o.told, p)
			o.mu.Unlock()
		})
	}
	return o.Outbound.Call(ctx, req)
}

// TestServedTellsTheRoute: once a retry is served, the route's witness
// (package retrypeer's chooser) hears of the peer whose attempt failed;
// a call whose every attempt failed tells it nothing.
func TestServedTellsTheRoute(t *testing.T) {
	defer reqlog.SetRoutesRead(true)() // as a retrypeer chooser in the process sets it
	tests := []struct {
		name     string
		give     []step
		wantTold []string
	}{
		{name: "retry served", give: []step{fail(errUnavailable), succeed("ok")}, wantTold: []string{"peer1"}},
		{name: "retry answered", give: []step{fail(errUnavailable), fail(errInvalid)}, wantTold: []string{"peer1"}},
		{name: "first served", give: []step{succeed("ok")}},
		{name: "every attempt failed", give: []step{fail(errUnavailable), fail(errUnavailable)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}, Budget: retry.BudgetConfig{Disabled: true}}, newClock().option())
			out := &witnessing{Outbound: newOutbound(choosingPeers(tt.give...)...)}
			_, _ = m.Call(context.Background(), req("callee", "get", "x"), out)
			out.mu.Lock()
			defer out.mu.Unlock()
			assert.Equal(t, tt.wantTold, out.told)
		})
	}
}
