package errowntest_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

var (
	_down     = yarpcerrors.UnavailableErrorf("down")
	_notFound = yarpcerrors.NotFoundErrorf("no such order")
	_internal = yarpcerrors.InternalErrorf("bad order")
)

// A handler under test, using only errown's exported helpers.
type handlerFunc func(ctx context.Context) error

// Each handler ends the same way with NewRequestContext and End as under
// errown's own inbound middleware: errowntest decides as errown does.
func TestRequestEndsAsInboundDecides(t *testing.T) {
	tests := []struct {
		name  string
		kinds map[string]ownership.EdgeKind
		give  handlerFunc
		want  errowntest.Outcome // Claim and NoRetry; the rest is checked below
	}{
		{
			name: "success",
			give: func(context.Context) error { return nil },
			want: errowntest.Outcome{Claim: ownership.ClaimMissing},
		},
		{
			name: "own failure",
			give: func(context.Context) error { return _down },
			want: errowntest.Outcome{Claim: ownership.ClaimClaimed},
		},
		{
			name: "a dependency failed, nobody retried it",
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "db", _down, false)
				return _down
			},
			want: errowntest.Outcome{Claim: ownership.ClaimClaimed},
		},
		{
			name: "a dependency failed, the handler retried it",
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "db", _down, true)
				return _down
			},
			want: errowntest.Outcome{Claim: ownership.ClaimUnclaimed},
		},
		{
			name:  "a retried failure on a fail-open edge is coincidental",
			kinds: map[string]ownership.EdgeKind{"cache": ownership.KindFailOpen},
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "cache", _down, true)
				return _down
			},
			want: errowntest.Outcome{Claim: ownership.ClaimClaimed},
		},
		{
			name:  "a retried failure on a fail-close edge",
			kinds: map[string]ownership.EdgeKind{"db": ownership.KindFailClose},
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "db", nil, false)
				outbound.Record(ctx, "db", _down, true)
				return _down
			},
			want: errowntest.Outcome{Claim: ownership.ClaimUnclaimed},
		},
		{
			name: "DoNotRetry on a failure",
			give: func(ctx context.Context) error {
				inbound.DoNotRetry(ctx)
				return _down
			},
			want: errowntest.Outcome{Claim: ownership.ClaimClaimed, NoRetry: true},
		},
		{
			name: "DoNotRetry on a success sends nothing",
			give: func(ctx context.Context) error {
				inbound.DoNotRetry(ctx)
				return nil
			},
			want: errowntest.Outcome{Claim: ownership.ClaimMissing},
		},
		{
			name: "CallerFault",
			give: func(ctx context.Context) error {
				inbound.CallerFault(ctx)
				return _internal
			},
			want: errowntest.Outcome{Claim: ownership.ClaimClaimed},
		},
		{
			name: "an answer after a retried failure",
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "db", _down, true)
				return _notFound
			},
			want: errowntest.Outcome{Claim: ownership.ClaimUnclaimed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []errowntest.RequestOption
			for service, kind := range tt.kinds {
				opts = append(opts, errowntest.WithEdgeKind(service, kind))
			}
			ctx, req := errowntest.NewRequestContext(t, "orders::create", opts...)
			got := req.End(tt.give(ctx))

			assert.Equal(t, tt.want.Claim, got.Claim, "errowntest: claim")
			assert.Equal(t, tt.want.NoRetry, got.NoRetry, "errowntest: no-retry")
			claim, noRetry := serveUnderInbound(t, tt.kinds, tt.give)
			assert.Equal(t, claim, got.Claim, "errowntest: claim, against errown's inbound middleware")
			assert.Equal(t, noRetry, got.NoRetry, "errowntest: no-retry, against errown's inbound middleware")
		})
	}
}

// serveUnderInbound serves h under errown's inbound middleware, its edges
// of kinds, and returns the claim and no-retry headers it answered with.
func serveUnderInbound(t *testing.T, kinds map[string]ownership.EdgeKind, h handlerFunc) (ownership.Claim, bool) {
	t.Helper()
	learner, err := memory.NewStatic(nil, kindsOf(kinds))
	require.NoError(t, err)
	mw, err := ingress.New(inbound.Config{}, ingress.WithLearner(learner))
	require.NoError(t, err)
	w := &responseWriter{headers: transport.NewHeaders()}
	req := &transport.Request{Caller: "web", Service: "orders", Procedure: "orders::create", Transport: "http"}
	_ = mw.Handle(context.Background(), req, w, unaryHandler(h))
	claim := wire.ParseClaim(w.headers.Items()[defaults.ClaimHeader])
	return claim, wire.ParseNoRetry(w.headers.Items()[defaults.NoRetryHeader])
}

type kindsOf map[string]ownership.EdgeKind

func (k kindsOf) Kind(e ownership.Edge) ownership.EdgeKind { return k[e.Service] }

type unaryHandler handlerFunc

func (h unaryHandler) Handle(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
	return h(ctx)
}

type responseWriter struct {
	bytes.Buffer
	headers transport.Headers
}

func (w *responseWriter) AddHeaders(h transport.Headers) {
	for k, v := range h.Items() {
		w.headers = w.headers.With(k, v)
	}
}

func (w *responseWriter) SetApplicationError() {}

func TestRequestHelpersSeeTheRequest(t *testing.T) {
	ctx, req := errowntest.NewRequestContext(t, "orders::create")
	require.True(t, inbound.DoNotRetry(ctx), "DoNotRetry says the context belongs to no tracked request")
	require.True(t, inbound.CallerFault(ctx), "CallerFault says the context belongs to no tracked request")
	require.True(t, outbound.Record(ctx, "db", nil, false), "Record says the context belongs to no tracked request")
	got := req.End(_internal)
	assert.True(t, got.CallerFault, "End = %+v, want caller fault", got)
	assert.True(t, got.NoRetry, "End = %+v, want no-retry", got)
	assert.Equal(t, 1, got.Calls, "End = %+v, want one call", got)
	assert.Empty(t, got.Failures, "End = %+v, want a call that did not fail", got)
	assert.False(t, outbound.Record(ctx, "db", _down, false), "Record after End took the call: the request has finished")
	again := req.End(nil)
	assert.Equal(t, ownership.ClaimMissing, again.Claim, "End(nil) after End = %+v, want no claim", again)
	assert.Equal(t, 1, again.Calls, "End(nil) after End = %+v, want the same one call", again)
}

// Called stands in for a call through a fake client: outbound.Claim reads
// the callee's claim, and End counts the failure.
func TestRequestCalled(t *testing.T) {
	ctx, req := errowntest.NewRequestContext(t, "orders::create")
	_, ok := outbound.Claim(ctx, "payments", "payments::charge")
	require.False(t, ok, "outbound.Claim found a call before any was made")
	req.Called("payments", "payments::charge", _down, ownership.ClaimUnclaimed)
	claim, ok := outbound.Claim(ctx, "payments", "payments::charge")
	assert.True(t, ok, "outbound.Claim found no call")
	assert.Equal(t, ownership.ClaimUnclaimed, claim, "outbound.Claim")
	got := req.End(_down)
	assert.Equal(t, ownership.ClaimUnclaimed, got.Claim, "claim: the callee's error was retried below")
	want := errowntest.FailedCall{
		Edge:     ownership.Edge{CallerProcedure: "orders::create", Service: "payments", Procedure: "payments::charge"},
		Code:     yarpcerrors.CodeUnavailable,
		Claim:    ownership.ClaimUnclaimed,
		RCS:      true,
		Attempts: 1,
	}
	assert.Equal(t, []errowntest.FailedCall{want}, got.Failures, "Failures")
	assert.False(t, req.Called("payments", "payments::charge", nil, ownership.ClaimMissing), "Called after End was recorded")
}

// Each request context is its own: a parallel test's calls are not seen.
func TestRequestContextsAreSeparate(t *testing.T) {
	ctxA, a := errowntest.NewRequestContext(t, "a")
	_, b := errowntest.NewRequestContext(t, "b")
	outbound.Record(ctxA, "db", _down, false)
	assert.Equal(t, 0, b.End(nil).Calls, "b saw calls")
	assert.Equal(t, 1, a.End(nil).Calls, "a saw calls")
}

func TestRequestOutsideFxtest(t *testing.T) {
	ctx := context.Background()
	assert.False(t, inbound.DoNotRetry(ctx), "DoNotRetry took a context errown does not track: the comparison above would prove nothing")
	assert.False(t, outbound.Record(ctx, "db", nil, false), "Record took a context errown does not track: the comparison above would prove nothing")
}
