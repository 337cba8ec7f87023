package errown_test

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// claimedFailureThenOK: the callee fails (claiming it) once, then succeeds:
// this hop retries once.
func claimedFailureThenOK() []outboundtest.Step {
	return []outboundtest.Step{
		outboundtest.Fail(yarpcerrors.UnavailableErrorf("down"), "errown-claim", "claimed", "errown-storm", "1,1,0,0,0"),
		outboundtest.Respond(),
	}
}

// gated returns script with each step waiting for gate to close first.
func gated(gate <-chan struct{}, script []outboundtest.Step) []outboundtest.Step {
	steps := make([]outboundtest.Step, len(script))
	for i, s := range script {
		steps[i] = outboundtest.Wait(gate, s)
	}
	return steps
}

func edgeErrown(t *testing.T, cfg errown.Config) *errown.Middleware {
	yes := true
	cfg.Retry = errown.RetryConfig{
		Policies: []retry.PolicyConfig{{Service: "c", MaxAttempts: 2, Idempotent: &yes, InitialBackoff: time.Microsecond}},
	}
	mw, err := errown.New(cfg)
	require.NoError(t, err)
	return mw
}

func edgeReq(attempt string) *transport.Request {
	h := transport.NewHeaders()
	if attempt != "" {
		h = h.With("errown-attempt", attempt)
	}
	return &transport.Request{Caller: "a", Service: "b", Procedure: "p", Transport: "http", Encoding: "raw", Headers: h}
}

func outReq() *transport.Request {
	return &transport.Request{Caller: "b", Service: "c", Procedure: "q", Encoding: "raw", Headers: transport.NewHeaders()}
}

// An errown service over its in-flight bound serves a request untracked.
// Its handler's call is retried at this hop: the success goes back saying
// unknown (not nothing, which the caller would read as wire.One), and
// the callee gets the first attempt marked, so it does not record itself
// as a root.
func TestStormUntrackedRequestUnknown(t *testing.T) {
	mw := edgeErrown(t, errown.Config{InboundConfig: errown.InboundConfig{Ingress: inbound.IngressConfig{Shards: 1, MaxInFlight: 1}}})
	in, egress := mw.Inbound().Unary, mw.Outbound().Unary
	out := outboundtest.New(claimedFailureThenOK()...)

	// Request 1 holds the only slot.
	hold, held := make(chan struct{}), make(chan struct{})
	go func() {
		_ = in.Handle(context.Background(), edgeReq("1"), &transporttest.FakeResponseWriter{},
			edgeHandler(func(context.Context, *transport.Request, transport.ResponseWriter) error {
				close(held)
				<-hold
				return nil
			}))
	}()
	<-held
	defer close(hold)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resw := &transporttest.FakeResponseWriter{}
	err := in.Handle(ctx, edgeReq("1"), resw, edgeHandler(
		func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
			_, err := egress.Call(ctx, outReq(), out)
			return err
		}))
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "2"}, out.Header("errown-attempt"), "first attempt marked: the callee is not a root")
	v, ok := resw.Headers.Get("errown-storm")
	assert.True(t, ok && v == "unknown", "an untracked request's success must say unknown, got %q (present %v): the caller reads One", v, ok)
}

// A handler's call made with a fresh context is an orphan: when it fails,
// or is retried and then succeeds, every request in flight gets unknown
// figures, rather than known ones that miss the retry.
func TestStormOrphanRetryMakesUnknown(t *testing.T) {
	mw := edgeErrown(t, errown.Config{})
	in, egress := mw.Inbound().Unary, mw.Outbound().Unary
	out := outboundtest.New(claimedFailureThenOK()...)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resw := &transporttest.FakeResponseWriter{}
	err := in.Handle(ctx, edgeReq(""), resw, edgeHandler(
		func(_ context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
			fresh, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := egress.Call(fresh, outReq(), out)
			return err
		}))
	require.NoError(t, err)
	assert.Equal(t, []string{"-", "2"}, out.Header("errown-attempt"))
	v, ok := resw.Headers.Get("errown-storm")
	assert.True(t, ok && v == "unknown", "a request in flight while an orphan call was retried must say unknown, got %q (present %v)", v, ok)
}

// A call still under way when the handler returns was abandoned by it
// (fire-and-forget): it counts as the one request it sent, whatever it
// meets later (here a retry, dropped as late), and the request's figures
// stay known. The root's success is the steady state's: no storm header,
// no storm recorded. Its call's first attempt goes unmarked (only its
// retry carries its number).
func TestStormCallUnderWayIsAbandoned(t *testing.T) {
	mw := edgeErrown(t, errown.Config{})
	in, egress := mw.Inbound().Unary, mw.Outbound().Unary
	gate := make(chan struct{})
	out := outboundtest.New(gated(gate, claimedFailureThenOK())...)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resw := &transporttest.FakeResponseWriter{}
	done := make(chan struct{})
	err := in.Handle(ctx, edgeReq(""), resw, edgeHandler(
		func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
			go func() {
				defer close(done)
				_, _ = egress.Call(ctx, outReq(), out)
			}()
			<-out.Arrived(1) // the call is under way when the handler returns
			return nil
		}))
	require.NoError(t, err)
	close(gate)
	<-done
	assert.Equal(t, []string{"-", "2"}, out.Header("errown-attempt"), "a root's first attempt outside an incident is unmarked; its retry is marked")
	v, ok := resw.Headers.Get("errown-storm")
	assert.False(t, ok, "a root's success with an abandoned call sends a storm header: %q", v)
	assert.Empty(t, mw.Introspect().Storms, "a root storm recorded for an abandoned call")
}

type edgeHandler func(context.Context, *transport.Request, transport.ResponseWriter) error

func (f edgeHandler) Handle(ctx context.Context, req *transport.Request, w transport.ResponseWriter) error {
	return f(ctx, req, w)
}

// A call the handler cancels (a hedge's loser, a fan-out's sibling) ends
// in CodeCancelled, an answer, with no response: the handler gave up on
// it, and it counts as the one request it sent. The request's figures
// stay known: a root's success sends no storm header and records no
// storm.
func TestStormCancelledCallIsOneRequest(t *testing.T) {
	mw := edgeErrown(t, errown.Config{})
	in, egress := mw.Inbound().Unary, mw.Outbound().Unary
	out := outboundtest.New(outboundtest.Fail(yarpcerrors.CancelledErrorf("client canceled request")))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resw := &transporttest.FakeResponseWriter{}
	err := in.Handle(ctx, edgeReq(""), resw, edgeHandler(
		func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
			cctx, cancel := context.WithCancel(ctx)
			cancel() // gave up on it (a hedge lost, a sibling failed...)
			_, _ = egress.Call(cctx, outReq(), out)
			return nil
		}))
	require.NoError(t, err)
	v, ok := resw.Headers.Get("errown-storm")
	assert.False(t, ok, "a root's success with a cancelled call sends a storm header: %q", v)
	assert.Empty(t, mw.Introspect().Storms, "a root storm recorded for a cancelled call")
}
