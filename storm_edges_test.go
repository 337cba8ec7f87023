package errown_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/ingresslog"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// edgeOut is a transport answering from a script: step i answers
// attempt i, the last step repeating. It records the attempt header each
// request carried.
type edgeOut struct {
	transport.UnaryOutbound
	mu       sync.Mutex
	attempts []string
	script   []func() (*transport.Response, error)
	gate     chan struct{} // if set, every call waits for it
	entered  chan struct{} // if set, closed when the first call arrives
	once     sync.Once
}

func (o *edgeOut) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	if o.entered != nil {
		o.once.Do(func() { close(o.entered) })
	}
	if o.gate != nil {
		<-o.gate
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := req.Headers.Get("errown-attempt")
	if !ok {
		v = "-"
	}
	o.attempts = append(o.attempts, v)
	return o.script[min(len(o.attempts), len(o.script))-1]()
}

func (o *edgeOut) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.attempts...)
}

// claimedFailureThenOK: the callee fails (claiming it) once, then succeeds:
// this hop retries once.
func claimedFailureThenOK() []func() (*transport.Response, error) {
	return []func() (*transport.Response, error){
		func() (*transport.Response, error) {
			return &transport.Response{Headers: transport.NewHeaders().With("errown-claim", "claimed").With("errown-storm", "1,1,0,0,0")},
				yarpcerrors.UnavailableErrorf("down")
		},
		func() (*transport.Response, error) { return &transport.Response{Headers: transport.NewHeaders()}, nil },
	}
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
	mw := edgeErrown(t, errown.Config{InboundConfig: errown.InboundConfig{Ingress: ingresslog.Config{Shards: 1, MaxInFlight: 1}}})
	in, egress := mw.Inbound().Unary, mw.Outbound().Unary
	out := &edgeOut{script: claimedFailureThenOK()}

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
	assert.Equal(t, []string{"1", "2"}, out.seen(), "first attempt marked: the callee is not a root")
	v, ok := resw.Headers.Get("errown-storm")
	assert.True(t, ok && v == "unknown", "an untracked request's success must say unknown, got %q (present %v): the caller reads One", v, ok)
}

// A handler's call made with a fresh context is an orphan: when it fails,
// or is retried and then succeeds, every request in flight gets unknown
// figures, rather than known ones that miss the retry.
func TestStormOrphanRetryMakesUnknown(t *testing.T) {
	mw := edgeErrown(t, errown.Config{})
	in, egress := mw.Inbound().Unary, mw.Outbound().Unary
	out := &edgeOut{script: claimedFailureThenOK()}

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
	assert.Equal(t, []string{"-", "2"}, out.seen())
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
	out := &edgeOut{script: claimedFailureThenOK(), gate: gate, entered: make(chan struct{})}

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
			<-out.entered // the call is under way when the handler returns
			return nil
		}))
	require.NoError(t, err)
	close(gate)
	<-done
	assert.Equal(t, []string{"-", "2"}, out.seen(), "a root's first attempt outside an incident is unmarked; its retry is marked")
	v, ok := resw.Headers.Get("errown-storm")
	assert.False(t, ok, "a root's success with an abandoned call sends a storm header: %q", v)
	assert.Empty(t, mw.Storms(), "a root storm recorded for an abandoned call")
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
	out := &edgeOut{script: []func() (*transport.Response, error){
		func() (*transport.Response, error) {
			return nil, yarpcerrors.CancelledErrorf("client canceled request")
		},
	}}
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
	assert.Empty(t, mw.Storms(), "a root storm recorded for a cancelled call")
}
