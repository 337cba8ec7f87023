package retrier

import (
	"context"

	"github.com/errown/errown/internal/reqlog"
)

// withRoute returns ctx carrying a fresh Route for the attempts of the
// call of state, which a retry may follow, and records it in state: a
// peer chooser that reads it (package retrypeer) records the peer each
// attempt goes to, and sends a retry elsewhere.
func withRoute(ctx context.Context, state *reqlog.CallState) context.Context {
	ctx, state.Route = reqlog.NewRouteContext(ctx)
	return ctx
}

// routed returns ctx carrying a fresh Route for the call whose first
// attempt SendFirst sends, and keeps both in f for Continue, which sends
// the retries in the same context.
func (f *First) routed(ctx context.Context) context.Context {
	f.ctx, f.route = reqlog.NewRouteContext(ctx)
	return f.ctx
}
