package reqlog

import (
	"context"
	"sync/atomic"

	"github.com/errown/errown/internal/calls"
)

type routeKey struct{}

// routeContext is a context node allocated with its call's Route.
type routeContext struct {
	context.Context
	route calls.Route
}

func (c *routeContext) Value(key any) any {
	if _, ok := key.(routeKey); ok {
		return &c.route
	}
	return c.Context.Value(key)
}

// NewRouteContext returns a child of ctx carrying a fresh Route, and the
// Route, in one allocation.
func NewRouteContext(ctx context.Context) (context.Context, *calls.Route) {
	c := &routeContext{Context: ctx}
	return c, &c.route
}

// routesRead: a Route-reading peer chooser exists (ReadRoutes).
var routesRead atomic.Bool

// ReadRoutes records that a Route-reading peer chooser exists (package
// retrypeer's New calls it); from then on the retry middleware gives each
// call it may retry a Route. Until then no call pays for one.
func ReadRoutes() { routesRead.Store(true) }

// RoutesRead reports whether ReadRoutes was called.
func RoutesRead() bool { return routesRead.Load() }

// SetRoutesRead sets what ReadRoutes sets and returns a function restoring
// the previous setting, for tests.
func SetRoutesRead(read bool) (restore func()) {
	prev := routesRead.Swap(read)
	return func() { routesRead.Store(prev) }
}

// RouteFromContext returns the Route in ctx, or nil.
func RouteFromContext(ctx context.Context) *calls.Route {
	r, _ := ctx.Value(routeKey{}).(*calls.Route)
	return r
}
