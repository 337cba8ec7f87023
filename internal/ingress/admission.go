package ingress

import (
	"context"
	"errors"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/admission"
	"github.com/errown/errown/internal/reqlog"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// newAdmission returns cfg's admission controller (nil when disabled) and
// its inbound.shed counters by reason, tagged with the mode.
func newAdmission(cfg inbound.AdmissionConfig, scope tally.Scope, now func() time.Time) (*admission.Controller, map[string]tally.Counter) {
	if cfg.Mode == inbound.AdmissionDisabled {
		return nil, nil
	}
	counts := make(map[string]tally.Counter, len(admission.Reasons))
	for _, r := range admission.Reasons {
		counts[r] = scope.Tagged(map[string]string{"reason": r, "mode": string(cfg.Mode)}).Counter("shed")
	}
	gauges := scope.SubScope("admission")
	limit, queue := gauges.Gauge("limit"), gauges.Gauge("queue")
	ctl := admission.New(admission.Config{
		Observe:  cfg.Mode == inbound.AdmissionObserve,
		MaxQueue: cfg.MaxQueue,
		MinLimit: cfg.MinLimit,
		MaxLimit: cfg.MaxLimit,
		Now:      now,
		OnLimit: func(l float64, q int) {
			limit.Update(l)
			queue.Update(float64(q))
		},
	})
	return ctl, counts
}

// admitted is an admitted request: its ticket, and its Log when tracked
// (its calls park its slot).
type admitted struct {
	ticket admission.Ticket
	log    *reqlog.Log
}

var _ reqlog.Parker = (*admission.Controller)(nil)

// done ends a, judged on its latency less its outbound calls' time
// (reqlog.Log.CallTime), taking back the slot a call left under way
// parked. An untracked request is judged on its whole latency.
func (m *Middleware) done(a *admitted) {
	var callees time.Duration
	if a.log != nil {
		if a.log.EndCalls() {
			m.admission.Unpark()
		}
		callees = a.log.CallTime()
	}
	m.admission.DoneOwn(a.ticket, callees)
}

// priority ranks a request with attempt number n (0: unmarked): retries
// are shed first, then marked requests (callers in an incident).
func priority(n int, marked bool) admission.Priority {
	switch {
	case n > 1:
		return admission.PriorityRetry
	case marked:
		return admission.PriorityIncident
	default:
		return admission.PriorityFirst
	}
}

// shedHeaders returns, per admission reason, claimedNoRetry plus the
// shed header set to the reason.
func shedHeaders(claimedNoRetry transport.Headers, shed string) map[string]transport.Headers {
	out := make(map[string]transport.Headers, len(admission.Reasons))
	for _, r := range admission.Reasons {
		h := transport.NewHeadersWithCapacity(claimedNoRetry.Len() + 1)
		for k, v := range claimedNoRetry.Items() {
			h = h.With(k, v)
		}
		out[r] = h.With(shed, r)
	}
	return out
}

// shed answers a request admission shed: resource-exhausted, claimed,
// with pushback, and marked as this instance's shed, so only its caller
// retries it, once, on another instance (package retrypeer). An edge
// request's answer has no errown header; a queued request whose caller
// went gets its context's error.
func (m *Middleware) shed(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, reason string, edge bool) error {
	if reason == admission.ReasonAbandoned {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return yarpcerrors.DeadlineExceededErrorf("errown: %s dropped from the admission queue: its deadline passed", req.Procedure)
		}
		return yarpcerrors.CancelledErrorf("errown: %s dropped from the admission queue: its caller went", req.Procedure)
	}
	if !edge {
		h, ok := m.sheds[reason]
		if !ok { // a reason shedHeaders did not know: claimed, pushback, unmarked
			h = m.claimedNoRetry
		}
		resw.AddHeaders(h)
		if req.Transport == _tchannel {
			resw.SetApplicationError()
		}
	}
	return yarpcerrors.ResourceExhaustedErrorf("errown: %s shed by %s (inbound.admission, %s)", req.Procedure, req.Service, reason)
}

// AdmissionLimit returns admission's limit on concurrent requests and the
// queue length, or false when admission is disabled.
func (m *Middleware) AdmissionLimit() (limit float64, queued int, ok bool) {
	if m.admission == nil {
		return 0, 0, false
	}
	return m.admission.Limit(), m.admission.Queued(), true
}
