package retrier

import (
	"context"

	"github.com/errown/errown/internal/reqlog"
)

// routed sets r's context to ctx carrying a fresh Route for the attempts
// of r's call, which a retry may follow, kept in r.route: a peer chooser
// that reads it (package retrypeer) records the peer each attempt goes
// to, and sends a retry elsewhere. With no such chooser in the process
// (reqlog.RoutesRead) r's context is ctx as it is, and r.route nil:
// nobody would record a peer.
func (r *attemptRun) routed(ctx context.Context) {
	r.ctx = ctx
	if reqlog.RoutesRead() {
		r.ctx, r.route = reqlog.NewRouteContext(ctx)
	}
}
