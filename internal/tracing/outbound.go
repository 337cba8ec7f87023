package tracing

import (
	"context"
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/yarpc/api/transport"
)

// Decided logs on the span of ctx, the outbound call's context, what the
// retry middleware decided once an attempt failed: errown.retry when it
// retries after wait; errown.retry_refused when it refused a retry the
// error was retryable for (refused is state.Refused before the decision)
// or, in observe mode, the refusal enforce mode would have made for an
// unclaimed error. Each event names the failed attempt's peer when a
// retrypeer chooser recorded it. A retry also sets
// http.request.resend_count on an OpenTelemetry client span of this call.
func Decided(ctx context.Context, req *transport.Request, state *reqlog.Result, refused wire.Refusal, wait time.Duration, retried, observe bool) {
	if !wire.RetryableByNature(state.Code) {
		return
	}
	unclaimed := state.Claim == ownership.ClaimUnclaimed && (!retried || observe)
	refusedNow := state.Refused != refused && state.Refused != wire.RefusedNone
	if !unclaimed && !retried && !refusedNow {
		return // nothing to log: the context's span is not looked up
	}
	s, ok := spanFrom(ctx)
	if !ok {
		return
	}
	switch {
	case unclaimed:
		s.refusal(req, state.Attempts, state.Claim, ReasonUnclaimed, "", lastPeer(state.Route), observe)
	case retried:
		kvs := []attribute.KeyValue{
			attribute.Int(FieldAttempt, state.Attempts+1),
			attribute.String(FieldBackoff, wait.String()),
			attribute.String(FieldCallee, req.Service),
			attribute.String(FieldProcedure, req.Procedure),
			attribute.String(FieldClaim, state.Claim.String()),
		}
		if p := lastPeer(state.Route); p != "" {
			kvs = append(kvs, attribute.String(FieldPeer, p))
		}
		s.event(EventRetry, withMode(observe, kvs...)...)
		if s.client() {
			s.setTags(attribute.Int(TagResendCount, state.Attempts))
		}
	case refusedNow:
		s.refusal(req, state.Attempts, state.Claim, state.Refused.String(), "", lastPeer(state.Route), observe)
	}
}

// Foreign logs on the caller's span that the innermost attempt step
// refused a replay errown did not make, after attempts attempts ended with
// claim, by rule (retry's foreign-... reasons), with the latest attempt's
// peer if ctx's Route recorded one.
func Foreign(ctx context.Context, req *transport.Request, attempts int, claim ownership.Claim, rule string) {
	s, ok := spanFrom(ctx)
	if !ok {
		return
	}
	s.refusal(req, attempts, claim, ReasonForeign, rule, lastPeer(reqlog.RouteFromContext(ctx)), false)
}

// lastPeer returns the peer route's latest attempt went to, or "" when
// route is nil or recorded none (no peer chooser records them).
func lastPeer(route *calls.Route) string {
	if route == nil {
		return ""
	}
	return route.Last()
}

// refusal logs errown.retry_refused, naming peer unless it is "".
func (s span) refusal(req *transport.Request, attempt int, claim ownership.Claim, reason, rule, peer string, observe bool) {
	kvs := []attribute.KeyValue{
		attribute.String(FieldReason, reason),
		attribute.Int(FieldAttempt, attempt),
		attribute.String(FieldCallee, req.Service),
		attribute.String(FieldProcedure, req.Procedure),
		attribute.String(FieldClaim, claim.String()),
	}
	if rule != "" {
		kvs = append(kvs, attribute.String(FieldForeign, rule))
	}
	if peer != "" {
		kvs = append(kvs, attribute.String(FieldPeer, peer))
	}
	s.event(EventRefused, withMode(observe, kvs...)...)
}

// withMode returns kvs, marked errown.mode=observe in observe mode.
func withMode(observe bool, kvs ...attribute.KeyValue) []attribute.KeyValue {
	if observe {
		return append(kvs, attribute.String(FieldMode, ModeObserve))
	}
	return kvs
}
