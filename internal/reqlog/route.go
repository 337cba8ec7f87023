package reqlog

import (
	"context"
	"sync"
)

// _routePeers is how many peers a Route remembers: the latest ones. A
// call's attempts are few (two by default); one that makes more avoids
// the peers of its latest attempts.
const _routePeers = 3

// Route is the peers (instances) one logical call's attempts went to, in
// order, as a peer chooser that reads it (package retrypeer) recorded
// them: a retry of the call avoids them. The retry middleware puts it in
// the context of every attempt of a call it may retry (NewRouteContext);
// it is allocated per call, never pooled, since a transport may hold an
// attempt's context after the call returned. It is safe for concurrent
// use (a hedge chooses while another attempt of the call is under way).
type Route struct {
	mu    sync.Mutex
	n     int // peers recorded, the latest _routePeers of them kept
	peers [_routePeers]string
}

// Record adds the identifier of the peer an attempt of the call went to.
func (r *Route) Record(peer string) {
	r.mu.Lock()
	r.peers[r.n%_routePeers] = peer
	r.n++
	r.mu.Unlock()
}

// Used reports whether an attempt of the call went to peer (among the
// latest ones recorded).
func (r *Route) Used(peer string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range min(r.n, _routePeers) {
		if r.peers[i] == peer {
			return true
		}
	}
	return false
}

// Len returns how many attempts of the call a peer was recorded for.
func (r *Route) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Last returns the peer the call's latest recorded attempt went to, or "".
func (r *Route) Last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return ""
	}
	return r.peers[(r.n-1)%_routePeers]
}

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
