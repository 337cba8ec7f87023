package retrier

import (
	"context"
	"fmt"
	"testing"

	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
)

// routeRecorder is an outbound that, as a peer chooser reading the
// call's route would, records a peer per attempt in the Route its
// context carries, and keeps the Routes it saw.
type routeRecorder struct {
	*fakeOutbound
	routes []*reqlog.Route
}

func (o *routeRecorder) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	r := reqlog.RouteFromContext(ctx)
	o.routes = append(o.routes, r)
	if r != nil {
		r.Record(fmt.Sprintf("peer%d", len(o.routes)))
	}
	return o.fakeOutbound.Call(ctx, req)
}

func TestRouteInEveryAttemptsContext(t *testing.T) {
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
			out := &routeRecorder{fakeOutbound: newOutbound(fail(errUnavailable), succeed("ok"))}
			var state reqlog.CallState
			_, err := m.Call(reqlog.WithCallState(context.Background(), &state), req("callee", "get", "x"), out)
			seen := 0
			for _, r := range out.routes {
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
			assert.Same(t, out.routes[0], out.routes[1], "both attempts share the call's route")
			assert.Same(t, state.Route, out.routes[0])
			assert.Equal(t, 2, state.Route.Len())
			assert.Equal(t, "peer2", state.Route.Last())
			assert.True(t, state.Route.Used("peer1"))
		})
	}
}

// witnessRecorder is a routeRecorder that is its routes' witness: it
// keeps the peers the routes told it of (Route.Served).
type witnessRecorder struct {
	routeRecorder
	told []string
}

func (o *witnessRecorder) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	if r := reqlog.RouteFromContext(ctx); r != nil {
		r.Witness(func(p string) { o.told = append(o.told, p) })
	}
	return o.routeRecorder.Call(ctx, req)
}

// TestServedTellsTheRoute: once a retry is served, the route's witness
// (package retrypeer's chooser) hears of the peer whose attempt failed;
// a call whose every attempt failed tells it nothing.
func TestServedTellsTheRoute(t *testing.T) {
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
			out := &witnessRecorder{routeRecorder: routeRecorder{fakeOutbound: newOutbound(tt.give...)}}
			_, _ = m.Call(context.Background(), req("callee", "get", "x"), out)
			assert.Equal(t, tt.wantTold, out.told)
		})
	}
}
