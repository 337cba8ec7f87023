package fxtest_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/errown/errown/fxtest"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
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
// errown's own inbound middleware: fxtest decides as errown does.
func TestRequestEndsAsInboundDecides(t *testing.T) {
	tests := []struct {
		name  string
		kinds map[string]ownership.EdgeKind
		give  handlerFunc
		want  fxtest.Outcome // Claim and NoRetry; the rest is checked below
	}{
		{
			name: "success",
			give: func(context.Context) error { return nil },
			want: fxtest.Outcome{Claim: ownership.ClaimMissing},
		},
		{
			name: "own failure",
			give: func(context.Context) error { return _down },
			want: fxtest.Outcome{Claim: ownership.ClaimClaimed},
		},
		{
			name: "a dependency failed, nobody retried it",
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "db", _down, false)
				return _down
			},
			want: fxtest.Outcome{Claim: ownership.ClaimClaimed},
		},
		{
			name: "a dependency failed, the handler retried it",
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "db", _down, true)
				return _down
			},
			want: fxtest.Outcome{Claim: ownership.ClaimUnclaimed},
		},
		{
			name:  "a retried failure on a fail-open edge is coincidental",
			kinds: map[string]ownership.EdgeKind{"cache": ownership.KindFailOpen},
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "cache", _down, true)
				return _down
			},
			want: fxtest.Outcome{Claim: ownership.ClaimClaimed},
		},
		{
			name:  "a retried failure on a fail-close edge",
			kinds: map[string]ownership.EdgeKind{"db": ownership.KindFailClose},
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "db", nil, false)
				outbound.Record(ctx, "db", _down, true)
				return _down
			},
			want: fxtest.Outcome{Claim: ownership.ClaimUnclaimed},
		},
		{
			name: "DoNotRetry on a failure",
			give: func(ctx context.Context) error {
				inbound.DoNotRetry(ctx)
				return _down
			},
			want: fxtest.Outcome{Claim: ownership.ClaimClaimed, NoRetry: true},
		},
		{
			name: "DoNotRetry on a success sends nothing",
			give: func(ctx context.Context) error {
				inbound.DoNotRetry(ctx)
				return nil
			},
			want: fxtest.Outcome{Claim: ownership.ClaimMissing},
		},
		{
			name: "CallerFault",
			give: func(ctx context.Context) error {
				inbound.CallerFault(ctx)
				return _internal
			},
			want: fxtest.Outcome{Claim: ownership.ClaimClaimed},
		},
		{
			name: "an answer after a retried failure",
			give: func(ctx context.Context) error {
				outbound.Record(ctx, "db", _down, true)
				return _notFound
			},
			want: fxtest.Outcome{Claim: ownership.ClaimUnclaimed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []fxtest.RequestOption
			for service, kind := range tt.kinds {
				opts = append(opts, fxtest.WithEdgeKind(service, kind))
			}
			ctx, req := fxtest.NewRequestContext(t, "orders::create", opts...)
			got := req.End(tt.give(ctx))

			if got.Claim != tt.want.Claim || got.NoRetry != tt.want.NoRetry {
				t.Errorf("fxtest: claim %v, no-retry %v; want %v, %v", got.Claim, got.NoRetry, tt.want.Claim, tt.want.NoRetry)
			}
			claim, noRetry := serveUnderInbound(t, tt.kinds, tt.give)
			if got.Claim != claim || got.NoRetry != noRetry {
				t.Errorf("fxtest: claim %v, no-retry %v; errown's inbound middleware: %v, %v", got.Claim, got.NoRetry, claim, noRetry)
			}
		})
	}
}

// serveUnderInbound serves h under errown's inbound middleware, its edges
// of kinds, and returns the claim and no-retry headers it answered with.
func serveUnderInbound(t *testing.T, kinds map[string]ownership.EdgeKind, h handlerFunc) (ownership.Claim, bool) {
	t.Helper()
	learner, err := memory.NewStatic(nil, kindsOf(kinds))
	if err != nil {
		t.Fatal(err)
	}
	mw, err := ingress.New(inbound.Config{}, ingress.WithLearner(learner))
	if err != nil {
		t.Fatal(err)
	}
	w := &responseWriter{headers: transport.NewHeaders()}
	req := &transport.Request{Caller: "web", Service: "orders", Procedure: "orders::create", Transport: "http"}
	_ = mw.Handle(context.Background(), req, w, unaryHandler(h))
	claim := wire.ParseClaim(w.headers.Items()[ownership.DefaultClaimHeader])
	return claim, wire.ParseNoRetry(w.headers.Items()[ownership.DefaultNoRetryHeader])
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
	ctx, req := fxtest.NewRequestContext(t, "orders::create")
	if !inbound.DoNotRetry(ctx) || !inbound.CallerFault(ctx) || !outbound.Record(ctx, "db", nil, false) {
		t.Fatal("a helper says the context belongs to no tracked request")
	}
	got := req.End(_internal)
	if !got.CallerFault || !got.NoRetry || got.Calls != 1 || len(got.Failures) != 0 {
		t.Errorf("End = %+v, want caller fault, no-retry, one call that did not fail", got)
	}
	if outbound.Record(ctx, "db", _down, false) {
		t.Error("Record after End took the call: the request has finished")
	}
	if again := req.End(nil); again.Claim != ownership.ClaimMissing || again.Calls != 1 {
		t.Errorf("End(nil) after End = %+v, want no claim, the same one call", again)
	}
}

// Called stands in for a call through a fake client: outbound.Claim reads
// the callee's claim, and End counts the failure.
func TestRequestCalled(t *testing.T) {
	ctx, req := fxtest.NewRequestContext(t, "orders::create")
	if _, ok := outbound.Claim(ctx, "payments", "payments::charge"); ok {
		t.Fatal("outbound.Claim found a call before any was made")
	}
	req.Called("payments", "payments::charge", _down, ownership.ClaimUnclaimed)
	claim, ok := outbound.Claim(ctx, "payments", "payments::charge")
	if !ok || claim != ownership.ClaimUnclaimed {
		t.Errorf("outbound.Claim = %v, %v; want unclaimed, true", claim, ok)
	}
	got := req.End(_down)
	if got.Claim != ownership.ClaimUnclaimed {
		t.Errorf("claim %v, want unclaimed: the callee's error was retried below", got.Claim)
	}
	want := fxtest.FailedCall{
		Edge:     ownership.Edge{CallerProcedure: "orders::create", Service: "payments", Procedure: "payments::charge"},
		Code:     yarpcerrors.CodeUnavailable,
		Claim:    ownership.ClaimUnclaimed,
		RCS:      true,
		Attempts: 1,
	}
	if len(got.Failures) != 1 || got.Failures[0] != want {
		t.Errorf("Failures = %+v, want [%+v]", got.Failures, want)
	}
	if req.Called("payments", "payments::charge", nil, ownership.ClaimMissing) {
		t.Error("Called after End was recorded")
	}
}

// Each request context is its own: a parallel test's calls are not seen.
func TestRequestContextsAreSeparate(t *testing.T) {
	ctxA, a := fxtest.NewRequestContext(t, "a")
	_, b := fxtest.NewRequestContext(t, "b")
	outbound.Record(ctxA, "db", _down, false)
	if got := b.End(nil); got.Calls != 0 {
		t.Errorf("b saw %d calls, want 0", got.Calls)
	}
	if got := a.End(nil); got.Calls != 1 {
		t.Errorf("a saw %d calls, want 1", got.Calls)
	}
}

func TestRequestOutsideFxtest(t *testing.T) {
	ctx := context.Background()
	if inbound.DoNotRetry(ctx) || outbound.Record(ctx, "db", nil, false) {
		t.Error("a helper took a context errown does not track: the comparison above would prove nothing")
	}
}
