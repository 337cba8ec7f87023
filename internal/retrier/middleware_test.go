package retrier

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func policies(ps ...retry.PolicyConfig) retry.Config {
	return retry.Config{Policies: ps}
}

func req(service, procedure, body string) *transport.Request {
	return &transport.Request{Service: service, Procedure: procedure, Body: strings.NewReader(body), BodySize: len(body)}
}

var (
	errUnavailable = yarpcerrors.UnavailableErrorf("callee down")
	errInvalid     = yarpcerrors.InvalidArgumentErrorf("bad request")
	errExhausted   = yarpcerrors.ResourceExhaustedErrorf("overloaded")

	codeUnavailable = yarpcerrors.CodeUnavailable
	codeNotFound    = yarpcerrors.CodeNotFound
)

func TestMiddlewareCall(t *testing.T) {
	const (
		calls      = "retry.calls+callee=callee"
		attempts   = "retry.attempts+callee=callee"
		suppressed = "retry.suppressed+callee=callee"
		tooLarge   = "retry.denied+callee=callee,reason=body-too-large"
		notIdem    = "retry.denied+callee=callee,reason=not-idempotent"
		notListed  = "retry.denied+callee=callee,reason=code"
		budget     = "retry.denied+callee=callee,reason=budget"
		deadline   = "retry.denied+callee=callee,reason=deadline"
		pushback   = "retry.denied+callee=callee,reason=pushback"
	)
	tests := []struct {
		name         string
		give         retry.Config
		giveReq      *transport.Request
		giveScript   []step
		giveDeadline time.Duration // of the call's ctx
		want         reqlog.CallState
		wantCode     yarpcerrors.Code
		wantBodies   []string // body each attempt sent
		wantAttempt  []string // attempt header each attempt sent
		wantSleeps   int
		wantCounters map[string]int64
	}{
		{
			name:         "no policy: one attempt, no header",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("other", "get", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{},
		},
		{
			name:         "missing claim: retried once, body replayed",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "claimed: retried once",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable, "errown-claim", "claimed"), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "garbage claim counts as missing: retried",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable, "errown-claim", "Unclaimed"), fail(errUnavailable)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "unclaimed: suppressed",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable, "errown-claim", "unclaimed")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, suppressed: 1},
		},
		{
			name:         "non-retryable code: one attempt",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errInvalid)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1},
			wantCode:     yarpcerrors.CodeInvalidArgument,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1},
		},
		{
			name:         "plain Go error is unknown: retried",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errors.New("boom")), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "custom retryable codes: unavailable not among them, refused",
			give:         policies(retry.PolicyConfig{Service: "callee", RetryableCodes: []string{"resource-exhausted"}, Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedCode},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, notListed: 1},
		},
		{
			name:         "custom retryable codes: resource-exhausted retried",
			give:         policies(retry.PolicyConfig{Service: "callee", RetryableCodes: []string{"Resource-Exhausted"}, Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errExhausted), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "pushback: refused",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable, "errown-no-retry", "true")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedPushback},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, pushback: 1},
		},
		{
			name:         "pushback on the last attempt: nothing refused",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable), fail(errUnavailable, "errown-no-retry", "true")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "no-retry header other than true: retried",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable, "errown-no-retry", "false"), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "attempts exhausted: last error returned",
			give:         policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable), fail(errUnavailable), fail(errExhausted)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 3},
			wantCode:     yarpcerrors.CodeResourceExhausted,
			wantBodies:   []string{"hello", "hello", "hello"},
			wantAttempt:  []string{"", "2", "3"},
			wantSleeps:   2,
			wantCounters: map[string]int64{calls: 1, attempts: 2},
		},
		{
			name:         "deadline too short: refused, no sleep",
			give:         policies(retry.PolicyConfig{Service: "callee", MinRemaining: 2 * time.Second, Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: time.Second,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedDeadline},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, deadline: 1},
		},
		{
			name: "deadline shorter than min remaining plus backoff: refused",
			give: policies(retry.PolicyConfig{Service: "callee", MinRemaining: 600 * time.Millisecond,
				InitialBackoff: 2 * time.Second, MaxBackoff: 2 * time.Second, Idempotent: new(true)}), // backoff 1s at u=0.5
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: 1500 * time.Millisecond,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedDeadline},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, deadline: 1},
		},
		{
			name:         "application error with a server-fault code: retried",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{appError(&codeUnavailable, "errown-claim", "claimed"), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "application error unclaimed: suppressed",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{appError(&codeUnavailable, "errown-claim", "unclaimed")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1},
			wantCode:     yarpcerrors.CodeOK, // the exception is the encoding's to decode
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, suppressed: 1},
		},
		{
			name:         "application error with a client-fault code: an answer, not retried",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{appError(&codeNotFound)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1},
		},
		{
			name:         "application error without a code: an answer, not retried",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{appError(nil)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1},
		},
		{
			name:         "resource exhausted, not in the default codes: refused for its code",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errExhausted)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedCode},
			wantCode:     yarpcerrors.CodeResourceExhausted,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, notListed: 1},
		},
		{
			name:         "pushback with a policy: refused",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable, "errown-no-retry", "true")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedPushback},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, pushback: 1},
		},
		{
			// 1.5s left after the first attempt: a whole attempt of 1s,
			// the backoff (5ms at u=0.5) and minRemaining (600ms) do not fit.
			name:         "whole attempt does not fit the deadline: refused",
			give:         policies(retry.PolicyConfig{Service: "callee", AttemptTimeout: time.Second, MinRemaining: 600 * time.Millisecond, Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: 1500 * time.Millisecond,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedDeadline},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, deadline: 1},
		},
		{
			name:         "whole attempt fits the deadline: retried",
			give:         policies(retry.PolicyConfig{Service: "callee", AttemptTimeout: time.Second, MinRemaining: 400 * time.Millisecond, Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable), succeed("ok")},
			giveDeadline: 1500 * time.Millisecond,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "budget without room: refused",
			give:         retry.Config{Budget: retry.BudgetConfig{Ratio: 0.1, NoFloor: true}, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}},
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedBudget},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, budget: 1},
		},
		{
			name:         "budget disabled: allowed",
			give:         retry.Config{Budget: retry.BudgetConfig{Ratio: 0.1, NoFloor: true, Disabled: true}, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}},
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "body over maxBodyBytes: sent once, whole",
			give:         retry.Config{MaxBodyBytes: 4, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}},
			giveReq:      req("callee", "get", "hello world"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedBodyTooLarge},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello world"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, tooLarge: 1},
		},
		{
			name:         "body of exactly maxBodyBytes: replayed",
			give:         retry.Config{MaxBodyBytes: 5, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}},
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name:         "not idempotent: one attempt, refused",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(false)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1, Refused: ownership.RefusedNotIdempotent},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, notIdem: 1},
		},
		{
			name:         "maxAttempts 1: one attempt",
			give:         policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 1, Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1},
		},
		{
			name: "procedure policy wins: forbids what the service allows",
			give: policies(
				retry.PolicyConfig{Service: "callee", MaxAttempts: 3, Idempotent: new(true)},
				retry.PolicyConfig{Service: "callee", Procedure: "get", MaxAttempts: 1, Idempotent: new(true)},
			),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1},
		},
		{
			name: "procedure policy wins: allows what the service forbids",
			give: policies(
				retry.PolicyConfig{Service: "callee", Idempotent: new(false)},
				retry.PolicyConfig{Service: "callee", Procedure: "get", Idempotent: new(true)},
			),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 2},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1},
		},
		{
			name: "service policy covers other procedures",
			give: policies(
				retry.PolicyConfig{Service: "callee", MaxAttempts: 3, Idempotent: new(true)},
				retry.PolicyConfig{Service: "callee", Procedure: "get", MaxAttempts: 1, Idempotent: new(true)},
			),
			giveReq:      req("callee", "put", "hello"),
			giveScript:   []step{fail(errUnavailable), fail(errUnavailable), succeed("ok")},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 3},
			wantCode:     yarpcerrors.CodeOK,
			wantBodies:   []string{"hello", "hello", "hello"},
			wantAttempt:  []string{"", "2", "3"},
			wantSleeps:   2,
			wantCounters: map[string]int64{calls: 1, attempts: 2},
		},
		{
			name:         "only a procedure policy: other procedures never retried",
			give:         policies(retry.PolicyConfig{Service: "callee", Procedure: "get", Idempotent: new(true)}),
			giveReq:      req("callee", "put", "hello"),
			giveScript:   []step{fail(errUnavailable)},
			giveDeadline: time.Minute,
			want:         reqlog.CallState{Attempts: 1},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			scope := tally.NewTestScope("", nil)
			m := newMiddleware(t, tt.give, clock.option(), fixedRand(0.5), WithSinks(obs.Sinks{Scope: scope}))
			out := newOutbound(tt.giveScript...)
			// The same request for the Sink call below, read before Call
			// reads it.
			body := make([]byte, tt.giveReq.Body.(*strings.Reader).Size())
			_, _ = tt.giveReq.Body.(*strings.Reader).ReadAt(body, 0)
			again := req(tt.giveReq.Service, tt.giveReq.Procedure, string(body))

			state := &reqlog.CallState{}
			ctx, cancel := context.WithDeadline(reqlog.WithCallState(context.Background(), state), clock.Now().Add(tt.giveDeadline))
			defer cancel()

			_, err := m.Call(ctx, tt.giveReq, out)

			if got := yarpcerrors.FromError(err).Code(); got != tt.wantCode {
				t.Errorf("code = %v, want %v (err %v)", got, tt.wantCode, err)
			}
			if got := (reqlog.CallState{Attempts: state.Attempts, Refused: state.Refused}); got != tt.want {
				t.Errorf("state = %+v, want %+v", *state, tt.want)
			}

			// Under errown's egress middleware, which hands it a Sink, Call
			// reports the same state and answer there.
			cclock := newClock()
			counted := newMiddleware(t, tt.give, cclock.option(), fixedRand(0.5))
			cctx, ccancel := context.WithDeadline(context.Background(), cclock.Now().Add(tt.giveDeadline))
			defer ccancel()
			sink := &reqlog.Sink{Out: newOutbound(tt.giveScript...)}
			_, cerr := counted.Call(cctx, again, sink)
			if got := (reqlog.CallState{Attempts: sink.State.Attempts, Refused: sink.State.Refused}); got != tt.want {
				t.Errorf("Sink state = %+v, want %+v", sink.State, tt.want)
			}
			if c := yarpcerrors.FromError(cerr).Code(); c != tt.wantCode {
				t.Errorf("through a Sink, code = %v, want %v (err %v)", c, tt.wantCode, cerr)
			}

			var bodies, attemptHeaders []string
			for _, s := range out.requests() {
				bodies = append(bodies, s.Body)
				attemptHeaders = append(attemptHeaders, s.Headers["errown-attempt"])
			}
			if !slices.Equal(bodies, tt.wantBodies) {
				t.Errorf("bodies sent = %q, want %q", bodies, tt.wantBodies)
			}
			if !slices.Equal(attemptHeaders, tt.wantAttempt) {
				t.Errorf("attempt headers sent = %q, want %q", attemptHeaders, tt.wantAttempt)
			}
			if got := len(clock.Sleeps()); got != tt.wantSleeps {
				t.Errorf("sleeps = %d, want %d", got, tt.wantSleeps)
			}
			if got := counters(scope); !maps.Equal(got, tt.wantCounters) {
				t.Errorf("counters = %v, want %v", got, tt.wantCounters)
			}
		})
	}
}

func TestMiddlewareWithoutCallState(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}), newClock().option())
	out := newOutbound(fail(errUnavailable), succeed("ok"))

	res, err := m.Call(context.Background(), req("callee", "get", "hello"), out)

	if err != nil || res == nil {
		t.Fatalf("Call = %v, %v; want a response", res, err)
	}
	if got := len(out.requests()); got != 2 {
		t.Errorf("attempts = %d, want 2", got)
	}
}

func TestMiddlewareNoPolicyPassesThrough(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}))
	body := strings.NewReader("hello")
	give := &transport.Request{Service: "other", Procedure: "get", Body: body, BodySize: 5}
	wantRes := &transport.Response{Headers: transport.NewHeaders().With("errown-claim", "claimed")}
	var gotReq *transport.Request
	out := middleware.ApplyUnaryOutbound(newOutbound(), middleware.UnaryOutboundFunc(
		func(_ context.Context, r *transport.Request, _ transport.UnaryOutbound) (*transport.Response, error) {
			gotReq = r
			return wantRes, errUnavailable
		}))

	res, err := m.Call(context.Background(), give, out)

	if gotReq != give {
		t.Errorf("outbound got request %p, want the caller's %p untouched", gotReq, give)
	}
	if res != wantRes || err != errUnavailable {
		t.Errorf("Call = %p, %v; want %p, %v untouched", res, err, wantRes, errUnavailable)
	}
	if body.Len() != 5 {
		t.Errorf("body was read (%d bytes left), want it left to the transport", body.Len())
	}
}

func TestMiddlewareReplaysBodyByteForByte(t *testing.T) {
	give := make([]byte, 64<<10)
	for i := range give {
		give[i] = byte(i * 7)
	}
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}), newClock().option())
	out := newOutbound(fail(errUnavailable), fail(errUnavailable), succeed("ok"))
	r := &transport.Request{Service: "callee", Procedure: "get", Body: bytes.NewReader(give), BodySize: len(give)}

	if _, err := m.Call(context.Background(), r, out); err != nil {
		t.Fatalf("Call: %v", err)
	}

	for i, s := range out.requests() {
		if s.Body != string(give) || s.BodySize != len(give) {
			t.Errorf("attempt %d sent %d bytes (BodySize %d), want the %d bytes given", i+1, len(s.Body), s.BodySize, len(give))
		}
	}
}

func TestMiddlewareNilBodyStaysNil(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}), newClock().option())
	out := newOutbound(fail(errUnavailable), succeed("ok"))

	if _, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, out); err != nil {
		t.Fatalf("Call: %v", err)
	}

	got := out.requests()
	if len(got) != 2 || got[0].HasBody || got[1].HasBody {
		t.Errorf("requests = %+v, want two without a body", got)
	}
}

func TestMiddlewareLargeBodyKeepsBodySize(t *testing.T) {
	m := newMiddleware(t, retry.Config{MaxBodyBytes: 3, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
	out := newOutbound(succeed("ok"))
	r := req("callee", "get", "hello world")

	if _, err := m.Call(context.Background(), r, out); err != nil {
		t.Fatalf("Call: %v", err)
	}

	got := out.requests()
	if len(got) != 1 || got[0].Body != "hello world" || got[0].BodySize != 11 {
		t.Errorf("requests = %+v, want one with the whole body and BodySize 11", got)
	}
}

func TestMiddlewareNeverMutatesCallerHeaders(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}), newClock().option())
	out := newOutbound(fail(errUnavailable), fail(errUnavailable), succeed("ok"))
	h := transport.NewHeaders().With("X-Trace", "abc").With("errown-attempt", "7")
	r := req("callee", "get", "hello")
	r.Headers = h

	if _, err := m.Call(context.Background(), r, out); err != nil {
		t.Fatalf("Call: %v", err)
	}

	wantCaller := map[string]string{"x-trace": "abc", "errown-attempt": "7"}
	if !maps.Equal(h.Items(), wantCaller) || !maps.Equal(r.Headers.Items(), wantCaller) {
		t.Errorf("caller headers = %v, want %v unchanged", h.Items(), wantCaller)
	}
	wantOriginal := map[string]string{"X-Trace": "abc", "errown-attempt": "7"}
	if !maps.Equal(h.OriginalItems(), wantOriginal) {
		t.Errorf("caller original headers = %v, want %v unchanged", h.OriginalItems(), wantOriginal)
	}
	want := []map[string]string{
		{"x-trace": "abc", "errown-attempt": "7"},
		{"x-trace": "abc", "errown-attempt": "2"},
		{"x-trace": "abc", "errown-attempt": "3"},
	}
	got := out.requests()
	if len(got) != len(want) {
		t.Fatalf("attempts = %d, want %d", len(got), len(want))
	}
	for i := range want {
		if !maps.Equal(got[i].Headers, want[i]) {
			t.Errorf("attempt %d headers = %v, want %v", i+1, got[i].Headers, want[i])
		}
	}
}

func TestMiddlewareCustomAttemptHeader(t *testing.T) {
	m := newMiddleware(t, retry.Config{Headers: ownership.Headers{Attempt: "x-try"}, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
	out := newOutbound(fail(errUnavailable), succeed("ok"))

	if _, err := m.Call(context.Background(), req("callee", "get", "hello"), out); err != nil {
		t.Fatalf("Call: %v", err)
	}

	got := out.requests()
	want := map[string]string{"x-try": "2"}
	if len(got) != 2 || !maps.Equal(got[1].Headers, want) {
		t.Errorf("requests = %+v, want the second with headers %v", got, want)
	}
}

func TestMiddlewareBudgetAcrossCalls(t *testing.T) {
	tests := []struct {
		name        string
		giveCalls   int
		wantRetries int64
	}{
		{name: "10 failing calls", giveCalls: 10, wantRetries: 1},
		{name: "100 failing calls", giveCalls: 100, wantRetries: 10},
		{name: "1000 failing calls", giveCalls: 1000, wantRetries: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			scope := tally.NewTestScope("", nil)
			cfg := retry.Config{
				Budget:   retry.BudgetConfig{Ratio: 0.1, NoFloor: true},
				Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}},
			}
			m := newMiddleware(t, cfg, clock.option(), WithSinks(obs.Sinks{Scope: scope}))
			out := newOutbound(fail(errUnavailable))
			states := make([]reqlog.CallState, tt.giveCalls)
			var refused int64
			for i := range states {
				_, _ = m.Call(reqlog.WithCallState(context.Background(), &states[i]), req("callee", "get", "x"), out)
				refused += int64(min(int(states[i].Refused), 1))
			}

			wantCounters := map[string]int64{
				"retry.calls+callee=callee":                int64(tt.giveCalls),
				"retry.attempts+callee=callee":             tt.wantRetries,
				"retry.denied+callee=callee,reason=budget": int64(tt.giveCalls) - tt.wantRetries,
			}
			if got := counters(scope); !maps.Equal(got, wantCounters) {
				t.Errorf("counters = %v, want %v", got, wantCounters)
			}
			if got := int64(len(out.requests())); got != int64(tt.giveCalls)+tt.wantRetries {
				t.Errorf("requests sent = %d, want %d", got, int64(tt.giveCalls)+tt.wantRetries)
			}
			if refused != int64(tt.giveCalls)-tt.wantRetries {
				t.Errorf("calls refused = %d, want %d", refused, int64(tt.giveCalls)-tt.wantRetries)
			}
			if want := (reqlog.CallState{Attempts: 1, Refused: ownership.RefusedBudget}); states[0].Attempts != want.Attempts || states[0].Refused != want.Refused {
				t.Errorf("first call state = %+v, want %+v", states[0], want)
			}
		})
	}
}

func TestMiddlewareBudgetSharedPerCallee(t *testing.T) {
	clock := newClock()
	scope := tally.NewTestScope("", nil)
	cfg := retry.Config{
		Budget: retry.BudgetConfig{Ratio: 0.5, NoFloor: true},
		Policies: []retry.PolicyConfig{
			{Service: "callee", Idempotent: new(true)},
			{Service: "callee", Procedure: "put", MaxAttempts: 3, Idempotent: new(true)},
			{Service: "other", Idempotent: new(true)},
		},
	}
	m := newMiddleware(t, cfg, clock.option(), WithSinks(obs.Sinks{Scope: scope}))
	out := newOutbound(fail(errUnavailable))

	// Two calls to different procedures of callee deposit 2: one retry.
	// The first call has only 1 × 0.5 and is refused.
	_, _ = m.Call(context.Background(), req("callee", "get", "x"), out)
	_, _ = m.Call(context.Background(), req("callee", "put", "x"), out)
	// other has its own, empty budget.
	_, _ = m.Call(context.Background(), req("other", "get", "x"), out)

	want := map[string]int64{
		"retry.calls+callee=callee":                2,
		"retry.attempts+callee=callee":             1,
		"retry.denied+callee=callee,reason=budget": 2, // get's retry, then put's second retry
		"retry.calls+callee=other":                 1,
		"retry.denied+callee=other,reason=budget":  1,
	}
	if got := counters(scope); !maps.Equal(got, want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
}

func TestMiddlewareBudgetWindowSlides(t *testing.T) {
	clock := newClock()
	scope := tally.NewTestScope("", nil)
	cfg := retry.Config{
		Budget:   retry.BudgetConfig{Ratio: 1, NoFloor: true, Window: 10 * time.Second},
		Policies: []retry.PolicyConfig{{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}},
	}
	m := newMiddleware(t, cfg, clock.option(), WithSinks(obs.Sinks{Scope: scope}))
	out := newOutbound(fail(errUnavailable))

	// One call: deposit 1, one retry allowed, the second refused.
	_, _ = m.Call(context.Background(), req("callee", "get", "x"), out)
	// A window later, the old counts are gone: the same again.
	clock.Advance(11 * time.Second)
	_, _ = m.Call(context.Background(), req("callee", "get", "x"), out)

	want := map[string]int64{
		"retry.calls+callee=callee":                2,
		"retry.attempts+callee=callee":             2,
		"retry.denied+callee=callee,reason=budget": 2,
	}
	if got := counters(scope); !maps.Equal(got, want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
}

func TestMiddlewareBackoff(t *testing.T) {
	clock := newClock()
	cfg := policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 5, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, Idempotent: new(true)})
	m := newMiddleware(t, cfg, clock.option(), fixedRand(0.5))
	out := newOutbound(fail(errUnavailable))

	_, _ = m.Call(context.Background(), req("callee", "get", "x"), out)

	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}
	if got := clock.Sleeps(); !slices.Equal(got, want) {
		t.Errorf("sleeps = %v, want %v", got, want)
	}
}

func TestMiddlewareCancelDuringBackoff(t *testing.T) {
	// The real sleep, with a backoff far longer than the test.
	cfg := policies(retry.PolicyConfig{Service: "callee", InitialBackoff: time.Minute, MaxBackoff: time.Minute, Idempotent: new(true)})
	m := newMiddleware(t, cfg, fixedRand(0.5))
	out := newOutbound(fail(errUnavailable, "errown-claim", "claimed"))
	state := &reqlog.CallState{}
	ctx, cancel := context.WithCancel(reqlog.WithCallState(context.Background(), state))
	timer := time.AfterFunc(5*time.Millisecond, cancel)
	defer timer.Stop()

	start := time.Now()
	res, err := m.Call(ctx, req("callee", "get", "x"), out)

	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Call took %v after cancel, want it to return promptly", elapsed)
	}
	if !errors.Is(err, errUnavailable) {
		t.Errorf("err = %v, want the last attempt's %v", err, errUnavailable)
	}
	if v, _ := res.Headers.Get("errown-claim"); v != "claimed" {
		t.Errorf("response claim = %q, want the last attempt's response", v)
	}
	if got := len(out.requests()); got != 1 || state.Attempts != 1 {
		t.Errorf("attempts = %d (state %d), want 1", got, state.Attempts)
	}
}

func TestMiddlewareCancelledCallerNotRetried(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}), newClock().option())
	ctx, cancel := context.WithCancel(context.Background())
	out := newOutbound(func(context.Context) (*transport.Response, error) {
		cancel()
		return nil, errUnavailable
	})

	_, _ = m.Call(ctx, req("callee", "get", "x"), out)

	if got := len(out.requests()); got != 1 {
		t.Errorf("attempts = %d, want 1", got)
	}
}

func TestMiddlewareAttemptTimeout(t *testing.T) {
	tests := []struct {
		name         string
		giveDeadline time.Duration // of the caller's ctx
		want         time.Duration // each attempt's timeout
	}{
		{name: "attempt timeout shorter", giveDeadline: time.Minute, want: 30 * time.Second},
		// A whole second attempt (30s) plus minRemaining fits in 61s.
		{name: "remaining shorter on the retry", giveDeadline: 61 * time.Second, want: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			cfg := policies(retry.PolicyConfig{Service: "callee", AttemptTimeout: 30 * time.Second, Idempotent: new(true)})
			m := newMiddleware(t, cfg, clock.option())
			out := newOutbound(
				func(ctx context.Context) (*transport.Response, error) {
					return &transport.Response{Body: &ctxBody{ctx: ctx, r: strings.NewReader("error")}}, errUnavailable
				},
				succeed("payload"),
			)
			ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(tt.giveDeadline))
			defer cancel()

			res, err := m.Call(ctx, req("callee", "get", "x"), out)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}

			for i, s := range out.requests() {
				// The real clock runs on between setting and reading the
				// deadline.
				if !s.HasDeadline || s.Timeout > tt.want || s.Timeout < tt.want-time.Second {
					t.Errorf("attempt %d timeout = %v (set %v), want about %v", i+1, s.Timeout, s.HasDeadline, tt.want)
				}
			}
			got, err := io.ReadAll(res.Body)
			if err != nil || string(got) != "payload" {
				t.Errorf("reading body after Call = %q, %v; want %q", got, err, "payload")
			}
			if err := res.Body.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			bodies := out.responseBodies()
			if !bodies[0].(*ctxBody).closed.Load() {
				t.Error("failed attempt's response body not closed")
			}
			if !bodies[1].(*ctxBody).closed.Load() {
				t.Error("closing the returned body did not close the transport's")
			}
			if _, err := res.Body.Read(make([]byte, 1)); !errors.Is(err, context.Canceled) {
				t.Errorf("read after Close = %v, want the attempt context cancelled", err)
			}
		})
	}
}

func TestMiddlewareAttemptTimeoutWithOneAttempt(t *testing.T) {
	// A policy that never retries still times its one attempt out.
	clock := newClock()
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 1, AttemptTimeout: 30 * time.Second, Idempotent: new(true)}), clock.option())
	out := newOutbound(succeed("payload"))
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Hour))
	defer cancel()

	res, err := m.Call(ctx, req("callee", "get", "x"), out)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	s := out.requests()
	if len(s) != 1 || !s[0].HasDeadline || s[0].Timeout > 30*time.Second || s[0].Timeout < 29*time.Second {
		t.Errorf("attempts = %+v, want one with a timeout of about 30s", s)
	}
	if got, err := io.ReadAll(res.Body); err != nil || string(got) != "payload" {
		t.Errorf("reading body after Call = %q, %v; want %q", got, err, "payload")
	}
	if err := res.Body.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestMiddlewareAttemptTimeoutOnReturnedError(t *testing.T) {
	// A returned error's response body is still readable under its attempt's
	// context (yarpc encodings read application errors from it).
	cfg := policies(retry.PolicyConfig{Service: "callee", AttemptTimeout: time.Minute, RetryableCodes: []string{"internal"}, Idempotent: new(true)})
	m := newMiddleware(t, cfg, newClock().option())
	out := newOutbound(func(ctx context.Context) (*transport.Response, error) {
		return &transport.Response{Body: &ctxBody{ctx: ctx, r: strings.NewReader("details")}}, errInvalid
	})

	res, err := m.Call(context.Background(), req("callee", "get", "x"), out)

	if !errors.Is(err, errInvalid) {
		t.Fatalf("err = %v, want %v", err, errInvalid)
	}
	if got, err := io.ReadAll(res.Body); err != nil || string(got) != "details" {
		t.Errorf("reading body = %q, %v; want %q", got, err, "details")
	}
	_ = res.Body.Close()
}

func TestMiddlewareLogsRefusals(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}), newClock().option(), WithSinks(obs.Sinks{Logger: zap.New(core)}))
	out := newOutbound(fail(errUnavailable, "errown-no-retry", "true"))

	_, _ = m.Call(context.Background(), req("callee", "get", "x"), out)

	want := []observer.LoggedEntry{{
		Entry: zapcore.Entry{Level: zapcore.DebugLevel, Message: "retry refused"},
		Context: []zapcore.Field{
			zap.String("service", "callee"),
			zap.String("procedure", "get"),
			zap.Stringer("reason", ownership.RefusedPushback),
			zap.Int("attempts", 1),
		},
	}}
	got := logs.AllUntimed()
	if len(got) != 1 || got[0].Message != want[0].Message || got[0].Level != want[0].Level ||
		!maps.Equal(got[0].ContextMap(), want[0].ContextMap()) {
		t.Errorf("logs = %+v, want %+v", got, want)
	}
}

func TestMiddlewareConcurrent(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}), newClock().option(), WithSinks(obs.Sinks{Scope: scope}))
	out := newOutbound(fail(errUnavailable))
	const goroutines, calls = 8, 50
	done := make(chan struct{})
	for range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for range calls {
				state := &reqlog.CallState{}
				_, _ = m.Call(reqlog.WithCallState(context.Background(), state), req("callee", "get", "x"), out)
			}
		}()
	}
	for range goroutines {
		<-done
	}

	// Every call either retried once or was denied by the budget, and the
	// budget (default: 0.1 × 400 + 10/s × 10s = 140) held.
	got := counters(scope)
	retries, denied := got["retry.attempts+callee=callee"], got["retry.denied+callee=callee,reason=budget"]
	if got["retry.calls+callee=callee"] != goroutines*calls || retries+denied != goroutines*calls || retries > 140 {
		t.Errorf("counters = %v, want %d calls, each retried or denied, at most 140 retries", got, goroutines*calls)
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	m, err := New(policies(retry.PolicyConfig{}))
	if m != nil || err == nil {
		t.Errorf("New = %v, %v; want an error", m, err)
	}
}
