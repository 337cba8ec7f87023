package reqlog

import (
	"context"
	"sync/atomic"

	"github.com/errown/errown/internal/calls"
)

type routeKey struct{}

// routeContext is a context node carrying a call's Route, allocated with
// it.
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

// NewRouteContext returns a child of ctx that carries a fresh Route, and
// that Route, in one allocation.
func NewRouteContext(ctx context.Context) (context.Context, *calls.Route) {
	c := &routeContext{Context: ctx}
	return c, &c.route
}

// routesRead is set once a peer chooser that reads Routes exists in the
// process (ReadRoutes).
var routesRead atomic.Bool

// ReadRoutes records that a peer chooser reading calls' Routes exists in
// the process (package retrypeer's New calls it): from then on the retry
// middleware gives every call it may retry a Route. Until then nothing
// would record a peer in one, and no call pays for it.
func ReadRoutes() { routesRead.Store(true) }

// RoutesRead reports whether ReadRoutes was called: whether a call's
// attempts are to carry a Route.
func RoutesRead() bool { return routesRead.Load() }

// SetRoutesRead sets whether calls' attempts carry a Route, as ReadRoutes
// does (true), and returns a function restoring the previous setting: for
// tests.
func SetRoutesRead(read bool) (restore func()) {
	prev := routesRead.Swap(read)
	return func() { routesRead.Store(prev) }
}

// RouteFromContext returns the Route in ctx, or nil.
func RouteFromContext(ctx context.Context) *calls.Route {
	r, _ := ctx.Value(routeKey{}).(*calls.Route)
	return r
}
