package retrier

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		want         reqlog.Result
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
			want:         reqlog.Result{Attempts: 1},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 2, Declined: wire.DeclineAttemptLimit},
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
			want:         reqlog.Result{Attempts: 1, Declined: wire.DeclineUnclaimed},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, suppressed: 1},
		},
		{
			name:         "unclaimed on the last attempt: the attempt limit, not the unclaim",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable), fail(errUnavailable, "errown-claim", "unclaimed")},
			giveDeadline: time.Minute,
			want:         reqlog.Result{Attempts: 2, Declined: wire.DeclineAttemptLimit},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello", "hello"},
			wantAttempt:  []string{"", "2"},
			wantSleeps:   1,
			wantCounters: map[string]int64{calls: 1, attempts: 1, suppressed: 1},
		},
		{
			name:         "unclaimed, a code the policy does not retry: suppressed, nothing declined",
			give:         policies(retry.PolicyConfig{Service: "callee", RetryableCodes: []string{"resource-exhausted"}, Idempotent: new(true)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable, "errown-claim", "unclaimed")},
			giveDeadline: time.Minute,
			want:         reqlog.Result{Attempts: 1},
			wantCode:     yarpcerrors.CodeUnavailable,
			wantBodies:   []string{"hello"},
			wantAttempt:  []string{""},
			wantCounters: map[string]int64{calls: 1, suppressed: 1},
		},
		{
			name:         "unclaimed, not idempotent: suppressed, nothing declined",
			give:         policies(retry.PolicyConfig{Service: "callee", Idempotent: new(false)}),
			giveReq:      req("callee", "get", "hello"),
			giveScript:   []step{fail(errUnavailable, "errown-claim", "unclaimed")},
			giveDeadline: time.Minute,
			want:         reqlog.Result{Attempts: 1},
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
			want:         reqlog.Result{Attempts: 1},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedCode},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedPushback},
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
			want:         reqlog.Result{Attempts: 2, Declined: wire.DeclineAttemptLimit},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 3, Declined: wire.DeclineAttemptLimit},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedDeadline},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedDeadline},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 1, Declined: wire.DeclineUnclaimed},
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
			want:         reqlog.Result{Attempts: 1},
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
			want:         reqlog.Result{Attempts: 1},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedCode},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedPushback},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedDeadline},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedBudget},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedBodyTooLarge},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedNotIdempotent},
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
			want:         reqlog.Result{Attempts: 1},
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
			want:         reqlog.Result{Attempts: 1},
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
			want:         reqlog.Result{Attempts: 2},
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
			want:         reqlog.Result{Attempts: 3},
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
			want:         reqlog.Result{Attempts: 1},
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

			state := &CallState{}
			ctx, cancel := context.WithDeadline(WithCallState(context.Background(), state), clock.Now().Add(tt.giveDeadline))
			defer cancel()

			_, err := m.Call(ctx, tt.giveReq, out)

			assert.Equal(t, tt.wantCode, yarpcerrors.FromError(err).Code(), "code (err %v)", err)
			assert.Equal(t, tt.want, reqlog.Result{Attempts: state.Attempts, Refused: state.Refused, Declined: state.Declined}, "state = %+v", state.Result)

			// Under errown's egress middleware, which hands it a Sink, Call
			// reports the same state and answer there.
			cclock := newClock()
			counted := newMiddleware(t, tt.give, cclock.option(), fixedRand(0.5))
			cctx, ccancel := context.WithDeadline(context.Background(), cclock.Now().Add(tt.giveDeadline))
			defer ccancel()
			sink := &Sink{Out: newOutbound(tt.giveScript...)}
			_, cerr := counted.Call(cctx, again, sink)
			assert.Equal(t, tt.want, reqlog.Result{Attempts: sink.State.Attempts, Refused: sink.State.Refused, Declined: sink.State.Declined}, "Sink state = %+v", sink.State.Result)
			assert.Equal(t, tt.wantCode, yarpcerrors.FromError(cerr).Code(), "through a Sink, code (err %v)", cerr)

			var bodies, attemptHeaders []string
			for _, s := range out.Requests() {
				bodies = append(bodies, s.Body)
				attemptHeaders = append(attemptHeaders, s.Headers["errown-attempt"])
			}
			assert.Equal(t, tt.wantBodies, bodies, "bodies sent")
			assert.Equal(t, tt.wantAttempt, attemptHeaders, "attempt headers sent")
			assert.Len(t, clock.Sleeps(), tt.wantSleeps, "sleeps")
			assert.Equal(t, tt.wantCounters, counters(scope), "counters")
		})
	}
}

func TestMiddlewareWithoutCallState(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}), newClock().option())
	out := newOutbound(fail(errUnavailable), succeed("ok"))

	res, err := m.Call(context.Background(), req("callee", "get", "hello"), out)

	require.NoError(t, err, "Call, want a response")
	require.NotNil(t, res, "Call, want a response")
	assert.Len(t, out.Requests(), 2, "attempts")
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

	assert.Same(t, give, gotReq, "outbound got request, want the caller's untouched")
	assert.Same(t, wantRes, res, "Call's response, want the outbound's untouched")
	assert.True(t, err == errUnavailable, "Call = %v, want %v untouched", err, errUnavailable)
	assert.Equal(t, 5, body.Len(), "body was read (bytes left), want it left to the transport")
}

func TestMiddlewareReplaysBodyByteForByte(t *testing.T) {
	give := make([]byte, 64<<10)
	for i := range give {
		give[i] = byte(i * 7)
	}
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}), newClock().option())
	out := newOutbound(fail(errUnavailable), fail(errUnavailable), succeed("ok"))
	r := &transport.Request{Service: "callee", Procedure: "get", Body: bytes.NewReader(give), BodySize: len(give)}

	_, err := m.Call(context.Background(), r, out)
	require.NoError(t, err, "Call")

	for i, s := range out.Requests() {
		assert.Equal(t, string(give), s.Body, "attempt %d sent %d bytes, want the %d bytes given", i+1, len(s.Body), len(give))
		assert.Equal(t, len(give), s.BodySize, "attempt %d BodySize", i+1)
	}
}

func TestMiddlewareNilBodyStaysNil(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}), newClock().option())
	out := newOutbound(fail(errUnavailable), succeed("ok"))

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, out)
	require.NoError(t, err, "Call")

	got := out.Requests()
	if assert.Len(t, got, 2, "requests, want two without a body") {
		assert.False(t, got[0].HasBody, "requests = %+v, want two without a body", got)
		assert.False(t, got[1].HasBody, "requests = %+v, want two without a body", got)
	}
}

func TestMiddlewareLargeBodyKeepsBodySize(t *testing.T) {
	m := newMiddleware(t, retry.Config{MaxBodyBytes: 3, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
	out := newOutbound(succeed("ok"))
	r := req("callee", "get", "hello world")

	_, err := m.Call(context.Background(), r, out)
	require.NoError(t, err, "Call")

	got := out.Requests()
	if assert.Len(t, got, 1, "requests, want one with the whole body and BodySize 11") {
		assert.Equal(t, "hello world", got[0].Body, "request's body")
		assert.Equal(t, 11, got[0].BodySize, "request's BodySize")
	}
}

func TestMiddlewareNeverMutatesCallerHeaders(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}), newClock().option())
	out := newOutbound(fail(errUnavailable), fail(errUnavailable), succeed("ok"))
	h := transport.NewHeaders().With("X-Trace", "abc").With("errown-attempt", "7")
	r := req("callee", "get", "hello")
	r.Headers = h

	_, err := m.Call(context.Background(), r, out)
	require.NoError(t, err, "Call")

	wantCaller := map[string]string{"x-trace": "abc", "errown-attempt": "7"}
	assert.Equal(t, wantCaller, h.Items(), "caller headers, want them unchanged")
	assert.Equal(t, wantCaller, r.Headers.Items(), "the request's headers, want them unchanged")
	wantOriginal := map[string]string{"X-Trace": "abc", "errown-attempt": "7"}
	assert.Equal(t, wantOriginal, h.OriginalItems(), "caller original headers, want them unchanged")
	want := []map[string]string{
		{"x-trace": "abc", "errown-attempt": "7"},
		{"x-trace": "abc", "errown-attempt": "2"},
		{"x-trace": "abc", "errown-attempt": "3"},
	}
	got := out.Requests()
	require.Len(t, got, len(want), "attempts")
	for i := range want {
		assert.Equal(t, want[i], got[i].Headers, "attempt %d headers", i+1)
	}
}

func TestMiddlewareCustomAttemptHeader(t *testing.T) {
	m := newMiddleware(t, retry.Config{Headers: ownership.Headers{Attempt: "x-try"}, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
	out := newOutbound(fail(errUnavailable), succeed("ok"))

	_, err := m.Call(context.Background(), req("callee", "get", "hello"), out)
	require.NoError(t, err, "Call")

	got := out.Requests()
	want := map[string]string{"x-try": "2"}
	if assert.Len(t, got, 2, "requests = %+v, want the second with headers %v", got, want) {
		assert.Equal(t, want, got[1].Headers, "the second request's headers")
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
			states := make([]CallState, tt.giveCalls)
			var refused int64
			for i := range states {
				_, _ = m.Call(WithCallState(context.Background(), &states[i]), req("callee", "get", "x"), out)
				refused += int64(min(int(states[i].Refused), 1))
			}

			wantCounters := map[string]int64{
				"retry.calls+callee=callee":                int64(tt.giveCalls),
				"retry.attempts+callee=callee":             tt.wantRetries,
				"retry.denied+callee=callee,reason=budget": int64(tt.giveCalls) - tt.wantRetries,
			}
			assert.Equal(t, wantCounters, counters(scope), "counters")
			assert.Equal(t, int64(tt.giveCalls)+tt.wantRetries, int64(len(out.Requests())), "requests sent")
			assert.Equal(t, int64(tt.giveCalls)-tt.wantRetries, refused, "calls refused")
			assert.Equal(t, 1, states[0].Attempts, "first call state = %+v: attempts", states[0].Result)
			assert.Equal(t, wire.RefusedBudget, states[0].Refused, "first call state = %+v: refused", states[0].Result)
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
	assert.Equal(t, want, counters(scope), "counters")
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
	assert.Equal(t, want, counters(scope), "counters")
}

func TestMiddlewareBackoff(t *testing.T) {
	clock := newClock()
	cfg := policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 5, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, Idempotent: new(true)})
	m := newMiddleware(t, cfg, clock.option(), fixedRand(0.5))
	out := newOutbound(fail(errUnavailable))

	_, _ = m.Call(context.Background(), req("callee", "get", "x"), out)

	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}
	assert.Equal(t, want, clock.Sleeps(), "sleeps")
}

func TestMiddlewareCancelDuringBackoff(t *testing.T) {
	// The real sleep, with a backoff far longer than the test.
	cfg := policies(retry.PolicyConfig{Service: "callee", InitialBackoff: time.Minute, MaxBackoff: time.Minute, Idempotent: new(true)})
	m := newMiddleware(t, cfg, fixedRand(0.5))
	out := newOutbound(fail(errUnavailable, "errown-claim", "claimed"))
	state := &CallState{}
	ctx, cancel := context.WithCancel(WithCallState(context.Background(), state))
	timer := time.AfterFunc(5*time.Millisecond, cancel)
	defer timer.Stop()

	start := time.Now()
	res, err := m.Call(ctx, req("callee", "get", "x"), out)

	assert.LessOrEqual(t, time.Since(start), 5*time.Second, "Call's time after cancel, want it to return promptly")
	assert.ErrorIs(t, err, errUnavailable, "err, want the last attempt's")
	v, _ := res.Headers.Get("errown-claim")
	assert.Equal(t, "claimed", v, "response claim, want the last attempt's response")
	assert.Len(t, out.Requests(), 1, "attempts")
	assert.Equal(t, 1, state.Attempts, "attempts in the state")
}

func TestMiddlewareCancelledCallerNotRetried(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}), newClock().option())
	ctx, cancel := context.WithCancel(context.Background())
	out := newOutbound(func(context.Context, *transport.Request) (*transport.Response, error) {
		cancel()
		return nil, errUnavailable
	})

	_, _ = m.Call(ctx, req("callee", "get", "x"), out)

	assert.Len(t, out.Requests(), 1, "attempts")
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
				func(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
					return &transport.Response{Body: outboundtest.NewBody(ctx, "error")}, errUnavailable
				},
				succeed("payload"),
			)
			ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(tt.giveDeadline))
			defer cancel()

			res, err := m.Call(ctx, req("callee", "get", "x"), out)
			require.NoError(t, err, "Call")

			for i, s := range out.Requests() {
				// The real clock runs on between setting and reading the
				// deadline.
				assert.True(t, s.HasDeadline, "attempt %d: no deadline set, want a timeout of about %v", i+1, tt.want)
				assert.LessOrEqual(t, s.Timeout, tt.want, "attempt %d timeout, want about %v", i+1, tt.want)
				assert.GreaterOrEqual(t, s.Timeout, tt.want-time.Second, "attempt %d timeout, want about %v", i+1, tt.want)
			}
			got, err := io.ReadAll(res.Body)
			assert.NoError(t, err, "reading body after Call")
			assert.Equal(t, "payload", string(got), "reading body after Call")
			assert.NoError(t, res.Body.Close(), "Close")
			bodies := out.ResponseBodies()
			assert.True(t, bodies[0].(*outboundtest.Body).Closed(), "failed attempt's response body not closed")
			assert.True(t, bodies[1].(*outboundtest.Body).Closed(), "closing the returned body did not close the transport's")
			_, err = res.Body.Read(make([]byte, 1))
			assert.ErrorIs(t, err, context.Canceled, "read after Close, want the attempt context cancelled")
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
	require.NoError(t, err, "Call")
	s := out.Requests()
	if assert.Len(t, s, 1, "attempts, want one with a timeout of about 30s") {
		assert.True(t, s[0].HasDeadline, "attempt = %+v, want a timeout of about 30s", s[0])
		assert.LessOrEqual(t, s[0].Timeout, 30*time.Second, "attempt's timeout, want about 30s")
		assert.GreaterOrEqual(t, s[0].Timeout, 29*time.Second, "attempt's timeout, want about 30s")
	}
	got, err := io.ReadAll(res.Body)
	assert.NoError(t, err, "reading body after Call")
	assert.Equal(t, "payload", string(got), "reading body after Call")
	assert.NoError(t, res.Body.Close(), "Close")
}

func TestMiddlewareAttemptTimeoutOnReturnedError(t *testing.T) {
	// A returned error's response body is still readable under its attempt's
	// context (yarpc encodings read application errors from it).
	cfg := policies(retry.PolicyConfig{Service: "callee", AttemptTimeout: time.Minute, RetryableCodes: []string{"internal"}, Idempotent: new(true)})
	m := newMiddleware(t, cfg, newClock().option())
	out := newOutbound(func(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
		return &transport.Response{Body: outboundtest.NewBody(ctx, "details")}, errInvalid
	})

	res, err := m.Call(context.Background(), req("callee", "get", "x"), out)

	require.ErrorIs(t, err, errInvalid, "err")
	got, err := io.ReadAll(res.Body)
	assert.NoError(t, err, "reading body")
	assert.Equal(t, "details", string(got), "reading body")
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
			zap.Stringer("reason", wire.RefusedPushback),
			zap.Int("attempts", 1),
		},
	}}
	got := logs.AllUntimed()
	if assert.Len(t, got, 1, "logs = %+v, want %+v", got, want) {
		assert.Equal(t, want[0].Message, got[0].Message, "log message")
		assert.Equal(t, want[0].Level, got[0].Level, "log level")
		assert.Equal(t, want[0].ContextMap(), got[0].ContextMap(), "log fields")
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
				state := &CallState{}
				_, _ = m.Call(WithCallState(context.Background(), state), req("callee", "get", "x"), out)
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
	assert.Equal(t, int64(goroutines*calls), got["retry.calls+callee=callee"], "counters = %v: calls", got)
	assert.Equal(t, int64(goroutines*calls), retries+denied, "counters = %v: each call retried or denied", got)
	assert.LessOrEqual(t, retries, int64(140), "counters = %v: retries, want at most 140", got)
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	m, err := New(policies(retry.PolicyConfig{}))
	assert.Nil(t, m, "New, want no middleware")
	assert.Error(t, err, "New, want an error")
}
