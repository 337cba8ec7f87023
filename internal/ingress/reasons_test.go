package ingress

import (
	"context"
	"testing"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// TestUnclaimSaysWhy: an unclaimed decision names why the failed call's
// retry criteria held; a retry the budget refused is no "retried below"
// (nothing retried it), neither on the debug page's decisions nor on the
// claim's reason.
func TestUnclaimSaysWhy(t *testing.T) {
	with := func(f func(*calls.Entry)) calls.Entry {
		e := failed("hard", true)
		f(&e)
		return e
	}
	tests := []struct {
		name        string
		give        calls.Entry
		wantReason  string
		wantRefused string
	}{
		{name: "the callee unclaimed", give: with(func(e *calls.Entry) { e.Claim = ownership.ClaimUnclaimed }), wantReason: ReasonRetriedBelow},
		{name: "retried here", give: with(func(e *calls.Entry) { e.Attempts = 2 }), wantReason: ReasonRetriedHere},
		{name: "the budget refused the retry", give: with(func(e *calls.Entry) { e.Refused = wire.RefusedBudget }), wantReason: ReasonRefusedHere, wantRefused: "budget"},
		{name: "the deadline refused the retry", give: with(func(e *calls.Entry) { e.Refused = wire.RefusedDeadline }), wantReason: ReasonRefusedHere, wantRefused: "deadline"},
		{name: "not retryable", give: with(func(e *calls.Entry) { e.Code = yarpcerrors.CodeDataLoss }), wantReason: ReasonNotRetryable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, inbound.Config{})
			_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerLogging(errBoom, tt.give))
			got := e.mw.Decisions()
			require.Len(t, got, 1)
			assert.Equal(t, "unclaimed", got[0].Claim)
			assert.Equal(t, tt.wantReason, got[0].Reason)
			assert.Equal(t, tt.wantRefused, got[0].RefusedBy)
		})
	}
}

// TestFailedAfterDenied: a request that fails after this hop declined to
// retry one of its calls is counted by the refusal's reason, once per
// request; a request that succeeds, or whose handler's error is an
// answer, is not.
func TestFailedAfterDenied(t *testing.T) {
	refused := func(r wire.Refusal) calls.Entry {
		e := failed("hard", true)
		e.Refused = r
		return e
	}
	declined := func(d wire.Decline) calls.Entry {
		e := failed("hard", true)
		e.Declined = d
		return e
	}
	both := func(r wire.Refusal, d wire.Decline) calls.Entry {
		e := refused(r)
		e.Declined = d
		return e
	}
	abandoned := func(e calls.Entry) calls.Entry {
		e.Abandoned = true
		return e
	}
	tests := []struct {
		name string
		err  error
		give []calls.Entry
		want map[string]int64
	}{
		{name: "budget refusal, request failed", err: errBoom, give: []calls.Entry{refused(wire.RefusedBudget), refused(wire.RefusedBudget)},
			want: map[string]int64{"budget": 1}},
		{name: "two reasons", err: errBoom, give: []calls.Entry{refused(wire.RefusedBudget), refused(wire.RefusedDeadline)},
			want: map[string]int64{"budget": 1, "deadline": 1}},
		{name: "request succeeded", give: []calls.Entry{refused(wire.RefusedBudget)}, want: map[string]int64{"budget": 0}},
		{name: "an answer", err: yarpcerrors.NotFoundErrorf("no"), give: []calls.Entry{refused(wire.RefusedBudget)}, want: map[string]int64{"budget": 0}},
		{name: "nothing refused", err: errBoom, give: []calls.Entry{failed("hard", true)}, want: map[string]int64{"budget": 0, "unclaimed": 0, "attempt-limit": 0}},
		{name: "unclaim suppressed with attempts left", err: errBoom, give: []calls.Entry{declined(wire.DeclineUnclaimed)},
			want: map[string]int64{"unclaimed": 1, "attempt-limit": 0, "budget": 0}},
		{name: "attempt limit", err: errBoom, give: []calls.Entry{declined(wire.DeclineAttemptLimit)},
			want: map[string]int64{"unclaimed": 0, "attempt-limit": 1}},
		{name: "a refusal wins over the call's decline", err: errBoom, give: []calls.Entry{both(wire.RefusedPushback, wire.DeclineAttemptLimit)},
			want: map[string]int64{"pushback": 1, "attempt-limit": 0}},
		{name: "a refusal and a decline on two calls", err: errBoom, give: []calls.Entry{refused(wire.RefusedBudget), declined(wire.DeclineUnclaimed), declined(wire.DeclineUnclaimed)},
			want: map[string]int64{"budget": 1, "unclaimed": 1}},
		{name: "declined, request succeeded", give: []calls.Entry{declined(wire.DeclineUnclaimed)}, want: map[string]int64{"unclaimed": 0}},
		{name: "declined, request answered", err: yarpcerrors.NotFoundErrorf("no"), give: []calls.Entry{declined(wire.DeclineAttemptLimit)}, want: map[string]int64{"attempt-limit": 0}},
		{name: "declined, call abandoned", err: errBoom, give: []calls.Entry{abandoned(declined(wire.DeclineAttemptLimit))}, want: map[string]int64{"attempt-limit": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, inbound.Config{})
			_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerLogging(tt.err, tt.give...))
			counters := e.scope.Snapshot().Counters()
			for reason, want := range tt.want {
				var got int64
				if c, ok := counters["inbound.failed_after_denied+reason="+reason]; ok {
					got = c.Value()
				}
				assert.Equal(t, want, got, reason)
			}
		})
	}
}

// Losses lists failed_after_denied's counts since start, the reasons with
// a request only, refusals first, in their fixed order.
func TestLossesLost(t *testing.T) {
	entry := func(r wire.Refusal, d wire.Decline) calls.Entry {
		e := failed("hard", true)
		e.Refused, e.Declined = r, d
		return e
	}
	tests := []struct {
		name string
		give [][]calls.Entry // each a failed request's calls
		want []inbound.Lost
	}{
		{name: "none", give: nil, want: nil},
		{name: "reasons in order", give: [][]calls.Entry{
			{entry(wire.RefusedNone, wire.DeclineAttemptLimit)},
			{entry(wire.RefusedNone, wire.DeclineUnclaimed)},
			{entry(wire.RefusedNone, wire.DeclineUnclaimed), entry(wire.RefusedBudget, wire.DeclineNone)},
		}, want: []inbound.Lost{{Reason: "budget", Requests: 1}, {Reason: "unclaimed", Requests: 2}, {Reason: "attempt-limit", Requests: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, inbound.Config{})
			for _, calls := range tt.give {
				_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerLogging(errBoom, calls...))
			}
			assert.Equal(t, tt.want, e.mw.Losses().Lost)
		})
	}
}
