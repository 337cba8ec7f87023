package retrier

import (
	"context"

	"github.com/errown/errown/internal/release"
	"github.com/errown/errown/internal/wire"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// First is a call's first attempt as sendFirst sent it, for
// continueFirst; it lives in its caller's frame.
type First struct {
	// run is the call as the attempt loop takes it (start).
	run   attemptRun
	adm   admission
	sent  sentAttempt
	shed  *Outcome // when the callee's limit on attempts in flight shed it
	code  yarpcerrors.Code
	class wire.Class
	end   ending
}

// sendFirst sends a call's first attempt on the direct path, doing what
// call and the innermost step would without a CallState: the steady
// state's success needs none. done reports that the call ended there: a
// success without storm figures, of which the egress middleware records
// only that it did not fail. Otherwise continueFirst goes on from f (the
// attempt sent, or shed by the in-flight limit).
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
		// Storm One: nothing to record; a retry loop would return it as
		// it is.
		if r.c != nil {
			r.c.overload.done(f.adm, false)
		}
		release.With(a.res, a.cancel)
		return a.res, true, a.err
	}
	f.sent, f.end = a, attemptEnding(a.ctx, a.err, f.code)
	return a.res, false, a.err
}

// continueFirst goes on, on the direct path, with a call sendFirst did not
// end: sink (fresh) gets the call's State, with the first attempt recorded
// as call would have, and retries go through out. It returns the last
// response and error.
func (m *Middleware) continueFirst(req *transport.Request, out transport.UnaryOutbound, sink *Sink, f *First) (*transport.Response, error) {
	*sink = Sink{Out: out, State: CallState{direct: true, ErrownAttempt: 1}}
	state, r, a := &sink.State, &f.run, f.sent
	r.out, r.state = out, state
	// The first attempt, recorded as the innermost step would.
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
