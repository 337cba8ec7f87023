package retrier

import (
	"context"

	"github.com/errown/errown/internal/release"
	"github.com/errown/errown/internal/wire"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// First is a call's first attempt as sendFirst sent it, for
// continueFirst to take on from. It lives in its caller's frame: nothing
// keeps it once continueFirst returns.
type First struct {
	// run is the call as the attempt loop takes it on (start).
	run   attemptRun
	adm   admission
	sent  sentAttempt
	shed  *Outcome // when the callee's limit on attempts in flight shed it
	code  yarpcerrors.Code
	class wire.Class
	end   ending
}

// sendFirst sends the first attempt of a call on the direct path
// (nothing between errown's retry middleware and the transport but the
// innermost step), doing for that attempt what call and the innermost
// step would, without a CallState to record it in: the steady state's
// call succeeds, with nothing to report, and needs none. It returns what
// came back and, in done, whether the call ended there: a success whose
// response carries no storm figures, of which the egress middleware
// records only that it did not fail. A call not done goes on in
// continueFirst with f, which records its first attempt: sent, or shed
// by the callee's limit on attempts in flight.
func (m *Middleware) sendFirst(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, f *First) (_ *transport.Response, done bool, _ error) {
	r := &f.run
	m.start(r, ctx, req)
	a := sentAttempt{ctx: r.ctx}
	if r.p != nil && r.p.attemptTimeout > 0 {
		a.ctx, a.cancel = withAttemptTimeout(r.ctx, r.p.attemptTimeout) // also bounded by ctx's own deadline
	}
	attempt := m.attemptRequest(r, 1, 0)
	var admitted bool
	if f.adm, admitted = m.admit(r.c, attempt); !admitted {
		f.shed = m.shed(attempt, r.c)
		a.err = f.shed.Err
		f.sent = a
		return nil, false, a.err
	}
	a.res, a.err = callHeld(a.ctx, attempt, out, r.c, f.adm)
	f.code, f.class = wire.AttemptResult(a.ctx, a.res, a.err, m.hdr.Code)
	if f.class == wire.ClassOK && (a.res == nil || !hasHeader(a.res.Headers, m.hdr.Storm)) {
		// Storm One: the innermost step would fold it and record nothing
		// else; a retry loop would return it as it is.
		if r.c != nil {
			r.c.overload.done(f.adm, false)
		}
		release.With(a.res, a.cancel)
		return a.res, true, a.err
	}
	f.sent, f.end = a, attemptEnding(a.ctx, a.err, f.code)
	return a.res, false, a.err
}

// continueFirst goes on with the call whose first attempt sendFirst sent
// (and did not end) to out, on the direct path: it makes sink (fresh) the
// call's, its State on errown's first attempt, records there what call
// would have, that attempt included, and sends any retry through out. It
// returns the call's last response and error.
func (m *Middleware) continueFirst(req *transport.Request, out transport.UnaryOutbound, sink *Sink, f *First) (*transport.Response, error) {
	*sink = Sink{Out: out, State: CallState{direct: true, ErrownAttempt: 1}}
	state, r, a := &sink.State, &f.run, f.sent
	r.out, r.state = out, state
	// The first attempt, shed or sent and no longer under way: recorded
	// as the innermost step records each.
	state.lock()
	v := verdict{shed: f.shed}
	if f.shed != nil {
		v.decided.refused = wire.RefusedOverload
	}
	state.depart(req, &v)
	state.unlock()
	if f.shed == nil {
		a.res, a.err = m.attempted(req, r.c, f.adm, f.end, a.res, a.err, f.code, f.class, state)
	}
	return m.resume(r, a)
}

// hasHeader reports whether h has the canonical key k.
func hasHeader(h transport.Headers, k string) bool {
	_, ok := h.Items()[k]
	return ok
}
