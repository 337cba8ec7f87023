package egress

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/outbound"

	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// callee is what the callee answers a call with and, for state, what an
// inner middleware (the retry middleware's place) reported of it through
// the CallState in the context.
type callee struct {
	res   *transport.Response
	err   error
	state reqlog.Result
}

func withClaim(v string) *transport.Response {
	return withHeader("errown-claim", v)
}

func withHeader(k, v string) *transport.Response {
	return &transport.Response{Headers: transport.NewHeaders().With(k, v)}
}

// appError is a response marked as an application error with code, as
// yarpc hands a Thrift exception to outbound middleware.
func appError(code yarpcerrors.Code, claim string) *transport.Response {
	res := withClaim(claim)
	res.ApplicationError = true
	res.ApplicationErrorMeta = &transport.ApplicationErrorMeta{Code: &code}
	return res
}

func counter(scope tally.TestScope, name string, tags string) int64 {
	c, ok := scope.Snapshot().Counters()[name+"+"+tags]
	if !ok {
		return 0
	}
	return c.Value()
}

func TestCallRecordsEntry(t *testing.T) {
	unavailable := yarpcerrors.UnavailableErrorf("down")
	tests := []struct {
		name      string
		give      callee
		want      calls.Entry
		wantClaim string
	}{
		{
			name: "success",
			give: callee{res: &transport.Response{}},
			want: calls.Entry{Code: yarpcerrors.CodeOK, Attempts: 1},
		},
		{
			name:      "claimed, not retried: RCS false",
			give:      callee{res: withClaim("claimed"), err: unavailable, state: reqlog.Result{Attempts: 1}},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimClaimed, Attempts: 1},
			wantClaim: "claimed",
		},
		{
			name:      "claimed and retried: RCS true",
			give:      callee{res: withClaim("claimed"), err: unavailable, state: reqlog.Result{Attempts: 2}},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimClaimed, Attempts: 2, RCS: true},
			wantClaim: "claimed",
		},
		{
			name:      "unclaimed: RCS true",
			give:      callee{res: withClaim("unclaimed"), err: unavailable},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimUnclaimed, Attempts: 1, RCS: true},
			wantClaim: "unclaimed",
		},
		{
			name:      "garbage claim is missing",
			give:      callee{res: withClaim("UNCLAIMED"), err: unavailable},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Attempts: 1},
			wantClaim: "missing",
		},
		{
			name:      "no response at all is missing",
			give:      callee{err: unavailable},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Attempts: 1},
			wantClaim: "missing",
		},
		{
			name:      "refused by budget: RCS true",
			give:      callee{err: unavailable, state: reqlog.Result{Attempts: 1, Refused: wire.RefusedBudget}},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Attempts: 1, RCS: true, Refused: wire.RefusedBudget},
			wantClaim: "missing",
		},
		{
			name:      "unclaimed, the retry suppressed with attempts left: declined",
			give:      callee{res: withClaim("unclaimed"), err: unavailable, state: reqlog.Result{Attempts: 1, Declined: wire.DeclineUnclaimed}},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimUnclaimed, Attempts: 1, RCS: true, Declined: wire.DeclineUnclaimed},
			wantClaim: "unclaimed",
		},
		{
			name:      "failed on the policy's last attempt: declined",
			give:      callee{res: withClaim("claimed"), err: unavailable, state: reqlog.Result{Attempts: 2, Declined: wire.DeclineAttemptLimit}},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimClaimed, Attempts: 2, RCS: true, Declined: wire.DeclineAttemptLimit},
			wantClaim: "claimed",
		},
		{
			name:      "not retryable by nature: RCS true",
			give:      callee{err: yarpcerrors.InvalidArgumentErrorf("bad")},
			want:      calls.Entry{Code: yarpcerrors.CodeInvalidArgument, Class: wire.ClassAnswer, Attempts: 1, RCS: true},
			wantClaim: "answer",
		},
		{
			name:      "pushback without a retry policy: RCS true",
			give:      callee{res: withHeader("errown-no-retry", "true"), err: unavailable},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Attempts: 1, RCS: true, Refused: wire.RefusedPushback},
			wantClaim: "missing",
		},
		{
			name:      "not found is an answer, not a failure",
			give:      callee{res: withClaim("claimed"), err: yarpcerrors.NotFoundErrorf("no such user")},
			want:      calls.Entry{Code: yarpcerrors.CodeNotFound, Class: wire.ClassAnswer, Claim: ownership.ClaimClaimed, Attempts: 1, RCS: true},
			wantClaim: "answer",
		},
		{
			name:      "application error with a server-fault code is a failure",
			give:      callee{res: appError(yarpcerrors.CodeUnavailable, "claimed")},
			want:      calls.Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimClaimed, Attempts: 1},
			wantClaim: "claimed",
		},
		{
			name:      "application error with a client-fault code is an answer",
			give:      callee{res: appError(yarpcerrors.CodeNotFound, "claimed")},
			want:      calls.Entry{Code: yarpcerrors.CodeNotFound, Class: wire.ClassAnswer, Claim: ownership.ClaimClaimed, Attempts: 1, RCS: true},
			wantClaim: "answer",
		},
		{
			name:      "application error without a code is an answer",
			give:      callee{res: &transport.Response{ApplicationError: true, Headers: transport.NewHeaders()}},
			want:      calls.Entry{Code: yarpcerrors.CodeOK, Class: wire.ClassAnswer, Attempts: 1, RCS: true},
			wantClaim: "answer",
		},
		{
			name:      "plain error is unknown",
			give:      callee{err: assert.AnError},
			want:      calls.Entry{Code: yarpcerrors.CodeUnknown, Class: wire.ClassFailure, Attempts: 1},
			wantClaim: "missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scope := tally.NewTestScope("", nil)
			mw, err := New(outbound.Config{}, WithSinks(obs.Sinks{Scope: scope}), WithInner(stateSetter{tt.give.state}))
			require.NoError(t, err)
			logs, err := reqlog.NewMap(reqlog.Config{})
			require.NoError(t, err)
			log := logs.Open("checkout")
			ctx := reqlog.NewContext(context.Background(), log)
			req := &transport.Request{Service: "payments", Procedure: "charge"}

			out := outboundtest.New(outboundtest.Answer(tt.give.res, tt.give.err))
			res, err := mw.Call(ctx, req, out)
			assert.Same(t, tt.give.res, res, "response passed through")
			assert.Equal(t, tt.give.err, err, "error passed through")

			want := tt.want
			want.Edge = ownership.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "charge"}
			wantKept, wantCounts := logged(want)
			assert.Equal(t, wantKept, log.Egress.Close(nil))
			assert.Equal(t, wantCounts, log.Egress.Counts())
			assert.Equal(t, int64(1), counter(scope, "egress.calls", ""))
			switch tt.wantClaim {
			case "":
			case "answer":
				assert.Equal(t, int64(1), counter(scope, "egress.answers", ""))
			default:
				assert.Equal(t, int64(1), counter(scope, "egress.failures", "claim="+tt.wantClaim))
			}
		})
	}
}

// logged returns what the egress log keeps of the one call e, and its
// counts: a failure is kept, any other call only counted.
func logged(e calls.Entry) ([]calls.Entry, calls.Counts) {
	if e.Failed() {
		return []calls.Entry{e}, calls.Counts{Stored: 1}
	}
	return nil, calls.Counts{NotFailed: 1}
}

func TestCallUntrackedAndLate(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	mw, err := New(outbound.Config{}, WithSinks(obs.Sinks{Scope: scope}))
	require.NoError(t, err)
	out := outboundtest.New(outboundtest.Answer(nil, yarpcerrors.UnavailableErrorf("down")))
	req := &transport.Request{Service: "payments", Procedure: "charge"}

	_, err = mw.Call(context.Background(), req, out)
	assert.Error(t, err)
	assert.Equal(t, int64(1), counter(scope, "egress.untracked", ""))

	logs, err := reqlog.NewMap(reqlog.Config{})
	require.NoError(t, err)
	log := logs.Open("checkout")
	ctx := reqlog.NewContext(context.Background(), log)
	log.Egress.Close(nil) // the request finished
	logs.Remove(log)
	_, err = mw.Call(ctx, req, out)
	assert.Error(t, err)
	assert.Equal(t, int64(1), counter(scope, "egress.late", ""))
	assert.Equal(t, 0, log.Egress.Len())
}

func TestCallCustomHeader(t *testing.T) {
	mw, err := New(outbound.Config{Headers: ownership.Headers{Claim: "x-owner"}})
	require.NoError(t, err)
	logs, err := reqlog.NewMap(reqlog.Config{})
	require.NoError(t, err)
	log := logs.Open("p")
	out := outboundtest.New(outboundtest.Answer(&transport.Response{Headers: transport.NewHeaders().With("x-owner", "unclaimed").With("errown-claim", "claimed")}, yarpcerrors.InternalErrorf("x")))
	_, _ = mw.Call(reqlog.NewContext(context.Background(), log), &transport.Request{Service: "s"}, out)
	entries := log.Egress.Close(nil)
	require.Len(t, entries, 1)
	assert.Equal(t, ownership.ClaimUnclaimed, entries[0].Claim)
}

func TestConfigValidate(t *testing.T) {
	_, err := New(outbound.Config{Headers: ownership.Headers{Claim: "Bad Header"}})
	assert.ErrorContains(t, err, `claimHeader: must be lower-case letters, digits and '-', got "Bad Header"`)
}

func TestWithInnerRunsInsideEgress(t *testing.T) {
	// The inner middleware sees the call's CallState, as the retry
	// middleware does in a yarpc chain behind the egress middleware, and
	// runs for tracked and untracked calls alike.
	var inner []*retrier.CallState
	mw, err := New(outbound.Config{}, WithInner(middleware.UnaryOutboundFunc(
		func(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
			res, err := out.Call(ctx, req)
			s := retrier.CallStateFromContext(ctx)
			inner = append(inner, s)
			if s != nil {
				s.Result = reqlog.Result{Attempts: 2, Refused: wire.RefusedBudget}
			}
			return res, err
		})))
	require.NoError(t, err)
	logs, err := reqlog.NewMap(reqlog.Config{})
	require.NoError(t, err)
	log := logs.Open("checkout")
	req := &transport.Request{Service: "payments", Procedure: "charge"}
	out := outboundtest.New(outboundtest.Answer(nil, yarpcerrors.UnavailableErrorf("down")))

	_, err = mw.Call(reqlog.NewContext(context.Background(), log), req, out)
	assert.Error(t, err)
	_, err = mw.Call(context.Background(), req, out)
	assert.Error(t, err)

	require.Len(t, inner, 2)
	assert.NotNil(t, inner[0], "a tracked call carries its state")
	assert.NotNil(t, inner[1], "an untracked call carries one too, for the innermost attempt step")
	assert.Equal(t, []calls.Entry{{
		Edge:     ownership.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "charge"},
		Code:     yarpcerrors.CodeUnavailable,
		Class:    wire.ClassFailure,
		Attempts: 2,
		RCS:      true,
		Refused:  wire.RefusedBudget, // as the inner middleware reported
	}}, log.Egress.Close(nil))
}

func TestWithInnerRetry(t *testing.T) {
	// With errown's retry middleware inside, the egress middleware hands it
	// a Sink: the callee gets the caller's context as it is, and attempts
	// and refusals land in the entry.
	unavailable := yarpcerrors.UnavailableErrorf("down")
	tests := []struct {
		name string
		give *transport.Response
		want calls.Entry
	}{
		{
			name: "retried once",
			give: &transport.Response{Headers: transport.NewHeaders()},
			want: calls.Entry{Attempts: 2, RCS: true, Declined: wire.DeclineAttemptLimit},
		},
		{
			// One attempt and a missing claim: RCS is true only because
			// the refusal reached the entry.
			name: "pushback refused the retry",
			give: &transport.Response{Headers: transport.NewHeaders().With("errown-no-retry", "true")},
			want: calls.Entry{Attempts: 1, RCS: true, Refused: wire.RefusedPushback},
		},
		{
			// The retry middleware read the claim: the entry has it
			// without the egress middleware reading it again.
			name: "unclaimed: suppressed",
			give: withClaim("unclaimed"),
			want: calls.Entry{Attempts: 1, Claim: ownership.ClaimUnclaimed, RCS: true, Declined: wire.DeclineUnclaimed},
		},
		{
			name: "claimed: retried",
			give: withClaim("claimed"),
			want: calls.Entry{Attempts: 2, Claim: ownership.ClaimClaimed, RCS: true, Declined: wire.DeclineAttemptLimit},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := retrier.New(retry.Config{Policies: []retry.PolicyConfig{{Service: "payments", InitialBackoff: time.Nanosecond, Idempotent: new(true)}}})
			require.NoError(t, err)
			mw, err := New(outbound.Config{}, WithInner(r))
			require.NoError(t, err)
			logs, err := reqlog.NewMap(reqlog.Config{})
			require.NoError(t, err)
			log := logs.Open("checkout")
			ctx := reqlog.NewContext(context.Background(), log)
			out := outboundtest.New(outboundtest.Answer(tt.give, unavailable))

			_, err = mw.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"}, out)
			assert.Error(t, err)

			got := out.Requests()
			require.Len(t, got, tt.want.Attempts)
			assert.NotNil(t, retrier.CallStateFromContext(got[0].Ctx), "the attempt's context carries the call's state, for the innermost step")
			assert.Same(t, log, reqlog.FromContext(got[0].Ctx), "and the request's log")
			want := tt.want
			want.Edge = ownership.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "charge"}
			want.Code = yarpcerrors.CodeUnavailable
			want.Class = wire.ClassFailure
			assert.Equal(t, []calls.Entry{want}, log.Egress.Close(nil))
		})
	}
}

// wrappedRetry is application middleware built on errown's retry
// middleware, with a Call of its own.
type wrappedRetry struct {
	*retrier.Middleware
	calls int
}

func (w *wrappedRetry) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	w.calls++
	return w.Middleware.Call(ctx, req, out)
}

func TestWithInnerWrappedRetryKeepsItsCall(t *testing.T) {
	r, err := retrier.New(retry.Config{Policies: []retry.PolicyConfig{{Service: "payments", InitialBackoff: time.Nanosecond, Idempotent: new(true)}}})
	require.NoError(t, err)
	w := &wrappedRetry{Middleware: r}
	mw, err := New(outbound.Config{}, WithInner(w))
	require.NoError(t, err)
	logs, err := reqlog.NewMap(reqlog.Config{})
	require.NoError(t, err)
	log := logs.Open("checkout")
	out := outboundtest.New(outboundtest.Answer(&transport.Response{Headers: transport.NewHeaders()}, yarpcerrors.UnavailableErrorf("down")))

	_, err = mw.Call(reqlog.NewContext(context.Background(), log), &transport.Request{Service: "payments", Procedure: "charge"}, out)
	assert.Error(t, err)
	_, err = mw.Call(context.Background(), &transport.Request{Service: "payments", Procedure: "charge"}, out)
	assert.Error(t, err)

	assert.Equal(t, 2, w.calls, "the wrapper's Call runs for tracked and untracked calls")
	entries := log.Egress.Close(nil)
	require.Len(t, entries, 1)
	assert.Equal(t, 2, entries[0].Attempts, "the state still arrives, through the context")
}

// TestCallCancelledByHandlerIsAbandoned: a sibling call the handler
// cancelled after its own failure explains nothing: it is no failure.
func TestCallCancelledByHandlerIsAbandoned(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	mw, err := New(outbound.Config{}, WithSinks(obs.Sinks{Scope: scope}))
	require.NoError(t, err)
	logs, err := reqlog.NewMap(reqlog.Config{})
	require.NoError(t, err)
	log := logs.Open("checkout")
	ctx, cancel := context.WithCancel(reqlog.NewContext(context.Background(), log))
	cancel()
	_, err = mw.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"}, outboundtest.New(outboundtest.Answer(nil, yarpcerrors.CancelledErrorf("cancelled"))))
	require.Error(t, err)
	assert.Empty(t, log.Egress.Close(nil), "an abandoned call is no failure: counted, not kept")
	assert.Equal(t, calls.Counts{NotFailed: 1}, log.Egress.Counts())
	assert.Equal(t, int64(1), counter(scope, "egress.abandoned", ""))
	assert.Equal(t, int64(0), counter(scope, "egress.failures", "claim=missing"))

	// A deadline is not the handler giving up: the call failed.
	log = logs.Open("checkout")
	dctx, dcancel := context.WithTimeout(reqlog.NewContext(context.Background(), log), 0)
	defer dcancel()
	<-dctx.Done()
	_, _ = mw.Call(dctx, &transport.Request{Service: "payments", Procedure: "charge"}, outboundtest.New(outboundtest.Answer(nil, yarpcerrors.DeadlineExceededErrorf("late"))))
	entries := log.Egress.Close(nil)
	require.Len(t, entries, 1)
	assert.True(t, entries[0].Failed())
}

// fallback is application middleware around errown's retry middleware
// that answers with a default when the call fails.
type fallback struct{ *retrier.Middleware }

func (f fallback) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	if res, err := f.Middleware.Call(ctx, req, out); err == nil {
		return res, nil
	}
	return &transport.Response{Headers: transport.NewHeaders()}, nil
}

// fallbackEgress returns an egress middleware with a fallback around
// errown's retry middleware (a policy for "payments") inside it, and a log
// of a request in flight.
func fallbackEgress(t *testing.T) (*Middleware, *reqlog.Log) {
	r, err := retrier.New(retry.Config{Policies: []retry.PolicyConfig{{Service: "payments", InitialBackoff: time.Nanosecond, Idempotent: new(true)}}})
	require.NoError(t, err)
	mw, err := New(outbound.Config{}, WithInner(fallback{r}))
	require.NoError(t, err)
	logs, err := reqlog.NewMap(reqlog.Config{})
	require.NoError(t, err)
	return mw, logs.Open("checkout")
}

// The retry middleware classified the failure it returned, but the
// middleware between it and the egress middleware turned it into a
// success: the egress middleware logs what reached it, a success.
func TestWithInnerClassifiesWhatReachesIt(t *testing.T) {
	mw, log := fallbackEgress(t)
	out := outboundtest.New(outboundtest.Answer(&transport.Response{Headers: transport.NewHeaders()}, yarpcerrors.UnavailableErrorf("down")))

	_, err := mw.Call(reqlog.NewContext(context.Background(), log), &transport.Request{Service: "payments", Procedure: "charge"}, out)
	require.NoError(t, err)
	entries, counts := log.Egress.CloseCounts(nil)
	assert.Empty(t, entries, "no failure logged")
	assert.Equal(t, calls.Counts{NotFailed: 1}, counts)
}

// A call whose one attempt failed unclaimed had its retries suppressed:
// its storm says so (blind above served) even when a fallback between the
// egress and the retry middleware answered in its place.
func TestSuppressedRetriesReportedThroughFallback(t *testing.T) {
	mw, log := fallbackEgress(t)
	unclaimed, _ := wire.FormatClaim(ownership.ClaimUnclaimed)
	res := &transport.Response{Headers: transport.NewHeaders().With("errown-claim", unclaimed).With("errown-storm", wire.FormatStorm(wire.One))}
	out := outboundtest.New(outboundtest.Answer(res, yarpcerrors.UnavailableErrorf("down")))

	_, err := mw.Call(reqlog.NewContext(context.Background(), log), &transport.Request{Service: "payments", Procedure: "charge"}, out)
	require.NoError(t, err)
	assert.Equal(t, 1, out.Calls(), "unclaimed: not retried")
	_, counts := log.Egress.CloseCounts(nil)
	f := log.Egress.StormTotal(counts.NotFailed)
	require.True(t, f.Known)
	st := f.Storm
	assert.Equal(t, uint64(2), st.Served, "the request and its one call")
	assert.Greater(t, st.Blind, st.Served, "the suppressed retries count in the blind figure: %+v", st)
}
