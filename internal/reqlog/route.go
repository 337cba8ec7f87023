package reqlog

import (
	"context"

	"github.com/errown/errown/internal/calls"
)

// Route is the peers one logical call's attempts went to (calls.Route),
// which the egress log's entry of the call keeps.
type Route = calls.Route

type routeKey struct{}

// routeContext is a context node carrying a call's Route, allocated with
// it.
type routeContext struct {
	context.Context
	route Route
}

func (c *routeContext) Value(key any) any {
	if _, ok := key.(routeKey); ok {
		return &c.route
	}
	return c.Context.Value(key)
}

// NewRouteContext returns a child of ctx that carries a fresh Route, and
// that Route, in one allocation.
func NewRouteContext(ctx context.Context) (context.Context, *Route) {
	c := &routeContext{Context: ctx}
	return c, &c.route
}

// RouteFromContext returns the Route in ctx, or nil.
func RouteFromContext(ctx context.Context) *Route {
	r, _ := ctx.Value(routeKey{}).(*Route)
	return r
}
