package retrier

import (
	"context"

	"github.com/errown/errown/internal/reqlog"
)

// routed sets r's context to ctx carrying a fresh Route (r.route) for a
// peer chooser that reads it (package retrypeer): it records each
// attempt's peer and sends a retry elsewhere. With no such chooser
// (reqlog.RoutesRead) the context is ctx and r.route nil.
func (r *attemptRun) routed(ctx context.Context) {
	r.ctx = ctx
	if reqlog.RoutesRead() {
		r.ctx, r.route = reqlog.NewRouteContext(ctx)
	}
}
