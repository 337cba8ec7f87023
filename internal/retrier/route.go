package retrier

import (
	"context"

	"github.com/errown/errown/internal/reqlog"
)

// withRoute returns ctx carrying a fresh Route for the attempts of the
// call of state, which a retry may follow, and records it in state: a
// peer chooser that reads it (package retrypeer) records the peer each
// attempt goes to, and sends a retry elsewhere. With no such chooser in
// the process (reqlog.RoutesRead) it returns ctx as it is: nobody would
// record a peer.
func withRoute(ctx context.Context, state *reqlog.CallState) context.Context {
	if !reqlog.RoutesRead() {
		return ctx
	}
	ctx, state.Route = reqlog.NewRouteContext(ctx)
	return ctx
}

// routed returns ctx carrying a fresh Route for the call whose first
// attempt SendFirst sends, and keeps both in f for Continue, which sends
// the retries in the same context; ctx as it is, with no chooser to read
// the Route (withRoute).
func (f *First) routed(ctx context.Context) context.Context {
	if !reqlog.RoutesRead() {
		return ctx
	}
	f.ctx, f.route = reqlog.NewRouteContext(ctx)
	return f.ctx
}
