package retrier

import (
	"bytes"
	"context"

	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// First is a call's first attempt as sendFirst sent it, for continueFirst to
// take on from. It lives in its caller's frame: nothing keeps it once
// continueFirst returns.
type First struct {
	// run is the call as the attempt loop takes it on (its callee, nil
	// for none with a policy, and its policy, nil for none; with a
	// policy that retries, its body, orig, context and Route).
	run   attemptRun
	adm   admission
	sent  sentAttempt
	code  yarpcerrors.Code
	class ownership.Class
	end   ending
}

// sendFirst sends the first attempt of a call in the steady state (the
// egress middleware sends it unmarked: no incident) on the direct path
// (nothing between errown's retry middleware and the transport but the
// innermost step), doing for that attempt what Call, the policy path and
// the innermost step would, without a CallState to record it in: the
// steady state's call succeeds, with nothing to report, and needs none.
//
// It reports sent false, having sent and counted nothing, when the call
// needs the full path from its start (Call): a per-attempt timeout, a
// body that must be read to be replayed, or the callee's limit on
// attempts in flight reached. Otherwise it returns what came back and, in
// done, whether the call ended there: a success whose response carries no
// storm figures, of which the egress middleware records only that it did
// not fail. A call sent but not done goes on in continueFirst with f.
func (m *Middleware) sendFirst(ctx context.Context, req *transport.Request, out transport.UnaryOutbound, f *First) (_ *transport.Response, sent, done bool, _ error) {
	r := &f.run
	r.c = m.callees[req.Service]
	if c := r.c; c != nil {
		r.p = c.policy(req.Procedure)
		if p := r.p; p != nil {
			if p.attemptTimeout > 0 {
				return nil, false, false, nil
			}
			if p.maxAttempts > 1 && p.idempotent && !readsInPlace(req.Body) {
				return nil, false, false, nil
			}
		}
		// Call sheds a call the limit holds back, or lets it go in
		// observe mode; refused here, it took no slot.
		var ok bool
		if f.adm, ok = c.overload.admit(req.Procedure); !ok {
			return nil, false, false, nil
		}
		c.budget.deposit()
		c.metrics.calls.Inc(1)
	}
	if r.p != nil && r.p.maxAttempts > 1 {
		m.forRetries(r, ctx, req) // as Call does
		ctx = r.ctx
	}
	res, err := callHeld(ctx, req, out, r.c, f.adm)
	f.code, f.class = wire.AttemptResult(ctx, res, err, m.hdr.Code)
	if f.class == ownership.ClassOK && (res == nil || !hasHeader(res.Headers, m.hdr.Storm)) {
		// Storm One: the innermost step would fold it and record nothing
		// else; a retry loop would return it as it is.
		if r.c != nil {
			r.c.overload.done(f.adm, false)
		}
		return res, true, true, err
	}
	f.sent = sentAttempt{res: res, err: err}
	f.end = attemptEnding(ctx, err, f.code)
	return res, true, false, err
}

// continueFirst goes on with the call whose first attempt sendFirst sent
// (and did not end) to sink's Out, on the direct path, recording in
// sink's State what Call would have, its first attempt included, and
// sending any retry through Out, as Run does on the direct path. It
// returns the call's last response and error.
func (m *Middleware) continueFirst(ctx context.Context, req *transport.Request, sink *Sink, f *First) (*transport.Response, error) {
	state, r := &sink.State, &f.run
	if r.route == nil {
		r.ctx = ctx // no Route: the retries go in ctx as it is
	}
	r.out, r.state = m.hop(sink), state
	// The first attempt left the process and is no longer under way:
	// recorded as the innermost step records each.
	state.attempt(1)
	state.mu.Lock()
	state.depart(req, &verdict{seen: true, sent: true})
	state.mu.Unlock()
	res, err := m.attempted(req, r.c, f.adm, f.end, f.sent.res, f.sent.err, f.code, f.class, state)
	return m.resume(r, sentAttempt{res: res, err: err, ctx: r.ctx})
}

// readsInPlace reports whether bufferBody keeps body for replay without
// reading it (replay.inPlace).
func readsInPlace(body any) bool {
	switch body.(type) {
	case nil, *bytes.Reader, *bytes.Buffer:
		return true
	}
	return false
}

// hasHeader reports whether h has the canonical key k.
func hasHeader(h transport.Headers, k string) bool {
	_, ok := h.Items()[k]
	return ok
}
