package outbound

import (
	"context"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
)

// Claim returns the callee's claim on the latest failed call to service's
// procedure that the request being served with ctx made, and whether
// there was such a call: a handler that wants to know whether the error it
// got was already retried below (unclaimed) or began at the callee
// (claimed). Calls that succeeded or ended in an answer (not found,
// invalid argument...) are not kept, and neither is anything once the
// request has finished.
func Claim(ctx context.Context, service, procedure string) (ownership.Claim, bool) {
	log := reqlog.FromContext(ctx)
	if log == nil {
		return ownership.ClaimMissing, false
	}
	e, ok := log.Egress.Last(ownership.Edge{CallerProcedure: log.Procedure, Service: service, Procedure: procedure})
	return e.Claim, ok
}

// Record records the outcome of a call to a dependency that is not an RPC
// (a database, a cache, a queue) in the egress log of the request being
// served with ctx, so that ownership and the dependency memory treat it as
// they treat a callee: err's code decides whether it failed (ownership's
// code table; nil is a success), and the edge (the request's procedure to
// dependency) is learned fail-close or fail-open like any other. A failure
// nobody retried, on a correlated edge, keeps the request's error claimed:
// its caller retries the whole request once (at-least-once); set retried
// when the handler already retried the dependency call itself. It reports
// whether the request is tracked and still being served.
func Record(ctx context.Context, dependency string, err error, retried bool) bool {
	log := reqlog.FromContext(ctx)
	if log == nil {
		return false
	}
	e := calls.Entry{
		Edge:     ownership.Edge{CallerProcedure: log.Procedure, Service: dependency},
		Attempts: 1,
	}
	storm := wire.One
	if retried {
		e.Attempts = 2
		storm = wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}
	}
	e.Code, e.Class = wire.Result(err, false, nil)
	if e.Class != wire.ClassOK {
		e.RCS = wire.RetryCriteriaSatisfied(wire.CallOutcome{Attempts: e.Attempts, Code: e.Code})
	}
	// As the egress middleware does: under way while it is recorded, the
	// call with its storm.
	log.CallStarted()
	defer log.CallEnded()
	if e.Failed() || !storm.Trivial() {
		return log.Egress.AppendStorm(e, wire.KnownFigures(storm))
	}
	return log.Egress.Append(e)
}
