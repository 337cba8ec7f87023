package retrier

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// TestSendFirstAsCall: sendFirst, then continueFirst for a call it did not
// end, does what Call does on the direct path with a Sink: the same
// attempts sent, the same response and error, the same metrics, the same
// state of the call, and the same slots taken from the callee's overload
// limit. A call sendFirst ends (done) is one Call records as one attempt
// that succeeded with nothing to report.
func TestSendFirstAsCall(t *testing.T) {
	idempotent := func(extra ...func(*retry.PolicyConfig)) retry.Config {
		p := retry.PolicyConfig{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond}
		for _, f := range extra {
			f(&p)
		}
		return retry.Config{Policies: []retry.PolicyConfig{p}}
	}
	readerBody := func() io.Reader { return bytes.NewReader([]byte("payload")) }
	bufferBody := func() io.Reader { return bytes.NewBufferString("payload") }
	stringBody := func() io.Reader { return strings.NewReader("payload") }
	tests := []struct {
		name     string
		cfg      retry.Config
		body     func() io.Reader
		script   []step
		wantDone bool
	}{
		{
			name:   "no policy: success",
			body:   stringBody,
			script: []step{succeed("ok")},
			// Nothing to replay: any body goes as it is.
			wantDone: true,
		},
		{
			name:   "no policy: failure",
			body:   stringBody,
			script: []step{fail(errUnavailable, "errown-claim", "claimed")},
		},
		{
			name:     "policy: success",
			cfg:      idempotent(),
			body:     readerBody,
			script:   []step{succeed("ok")},
			wantDone: true,
		},
		{
			name:   "policy: success with storm figures",
			cfg:    idempotent(),
			body:   readerBody,
			script: []step{withHeaders(succeed("ok"), "errown-storm", "3,4,1,1,1")},
		},
		{
			name:   "policy: success with unknown storm figures",
			cfg:    idempotent(),
			body:   readerBody,
			script: []step{withHeaders(succeed("ok"), "errown-storm", "unknown")},
		},
		{
			name:   "policy: claimed failure, retried",
			cfg:    idempotent(),
			body:   readerBody,
			script: []step{fail(errUnavailable, "errown-claim", "claimed"), succeed("ok")},
		},
		{
			name:   "policy: claimed failure, retried, buffer body",
			cfg:    idempotent(),
			body:   bufferBody,
			script: []step{fail(errUnavailable, "errown-claim", "claimed"), succeed("ok")},
		},
		{
			name:   "policy: claimed failure, retried, no body",
			cfg:    idempotent(),
			script: []step{fail(errUnavailable, "errown-claim", "claimed"), succeed("ok")},
		},
		{
			name:   "policy: failures past the attempts",
			cfg:    idempotent(func(p *retry.PolicyConfig) { p.MaxAttempts = 3 }),
			body:   readerBody,
			script: []step{fail(errUnavailable, "errown-claim", "claimed")},
		},
		{
			name:   "policy: unclaimed failure, suppressed",
			cfg:    idempotent(),
			body:   readerBody,
			script: []step{fail(errUnavailable, "errown-claim", "unclaimed", "errown-storm", "2,4,1,1,2")},
		},
		{
			name:   "policy in observe mode: unclaimed failure, retried",
			cfg:    idempotent(func(p *retry.PolicyConfig) { p.Mode = retry.ModeObserve }),
			body:   readerBody,
			script: []step{fail(errUnavailable, "errown-claim", "unclaimed"), succeed("ok")},
		},
		{
			name:   "policy: pushback",
			cfg:    idempotent(),
			body:   readerBody,
			script: []step{fail(errExhausted, "errown-claim", "claimed", "errown-no-retry", "1")},
		},
		{
			name:   "policy: answer",
			cfg:    idempotent(),
			body:   readerBody,
			script: []step{appError(nil)},
		},
		{
			name:   "policy: code not retried",
			cfg:    idempotent(),
			body:   readerBody,
			script: []step{fail(errInvalid)},
		},
		{
			name: "policy, not idempotent: failure refused",
			cfg: retry.Config{Policies: []retry.PolicyConfig{
				{Service: "callee", Idempotent: new(false), InitialBackoff: time.Nanosecond},
			}},
			body:   stringBody, // not read: never replayed
			script: []step{fail(errUnavailable, "errown-claim", "claimed")},
		},
		{
			name:   "policy of one attempt: failure",
			cfg:    idempotent(func(p *retry.PolicyConfig) { p.MaxAttempts = 1 }),
			body:   stringBody,
			script: []step{fail(errUnavailable, "errown-claim", "claimed")},
		},
		{
			name: "a policy for another procedure only: success",
			cfg: retry.Config{Policies: []retry.PolicyConfig{
				{Service: "callee", Procedure: "other", Idempotent: new(true), InitialBackoff: time.Nanosecond},
			}},
			body:     stringBody,
			script:   []step{succeed("ok")},
			wantDone: true,
		},
		{
			name: "a policy for another procedure only: overloaded failure",
			cfg: retry.Config{Policies: []retry.PolicyConfig{
				{Service: "callee", Procedure: "other", Idempotent: new(true), InitialBackoff: time.Nanosecond},
			}},
			body:   stringBody,
			script: []step{fail(errExhausted, "errown-claim", "claimed")},
		},
		{
			name: "policy: retried twice, storm figures on the success",
			cfg:  idempotent(func(p *retry.PolicyConfig) { p.MaxAttempts = 4 }),
			body: bufferBody,
			script: []step{
				fail(errUnavailable, "errown-claim", "claimed"),
				fail(errExhausted, "errown-claim", "claimed"),
				withHeaders(succeed("ok"), "errown-storm", "3,4,1,1,1"),
			},
		},
		{
			name:   "policy with an attempt timeout: not sent",
			cfg:    idempotent(func(p *retry.PolicyConfig) { p.AttemptTimeout = time.Second }),
			body:   readerBody,
			script: []step{fail(errUnavailable, "errown-claim", "claimed"), succeed("ok")},
		},
		{
			name:   "policy, a body read to be replayed: not sent",
			cfg:    idempotent(),
			body:   stringBody,
			script: []step{fail(errUnavailable, "errown-claim", "claimed"), succeed("ok")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			request := func() *transport.Request {
				r := &transport.Request{Service: "callee", Procedure: "get"}
				if tt.body != nil {
					r.Body = tt.body()
					r.BodySize = len("payload")
				}
				return r
			}
			call := newFirstRun(t, tt.cfg, tt.script)
			first := newFirstRun(t, tt.cfg, tt.script)

			callSink := &Sink{Out: call.out, State: CallState{direct: true}}
			callRes, callErr := call.m.Call(context.Background(), request(), callSink)

			var f First
			req := request()
			res, done, err := first.m.sendFirst(context.Background(), req, first.out, &f)
			require.Equal(t, tt.wantDone, done, "done")
			sink := new(Sink) // continueFirst makes it the call's
			if !done {
				res, err = first.m.continueFirst(req, first.out, sink, &f)
			} else {
				st := &callSink.State
				assert.Equal(t, 1, st.Attempts, "Call's attempts of a call SendFirst ends")
				assert.Equal(t, wire.ClassOK, st.Class, "Call's class of a call SendFirst ends")
				assert.True(t, st.Storm.Trivial(), "Call's storm of a call SendFirst ends: %+v", st.Storm.Storm())
			}

			assert.Equal(t, coarse(call.out.Requests()), coarse(first.out.Requests()), "attempts sent")
			assert.Equal(t, yarpcerrors.FromError(callErr).Code(), yarpcerrors.FromError(err).Code(), "error: Call %v, SendFirst %v", callErr, err)
			assert.Equal(t, readBody(t, callRes), readBody(t, res), "response body")
			assert.Equal(t, counters(call.scope), counters(first.scope), "metrics")
			if !done {
				assert.Equal(t, snapshot(&callSink.State), snapshot(&sink.State), "the call's state")
			}
			for svc, c := range call.m.callees {
				assert.Equal(t, c.overload.inflight.Load(), first.m.callees[svc].overload.inflight.Load(), "attempts in flight")
				assert.Equal(t, c.overload.Limit(), first.m.callees[svc].overload.Limit(), "overload limit")
			}
		})
	}
}

// TestSendFirstHeldBack: a call the callee's overload limit holds back is
// not sent by sendFirst, which takes no slot and counts the call once, as
// Call does; continueFirst records it shed, refused for overload.
func TestSendFirstHeldBack(t *testing.T) {
	r := newFirstRun(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond}},
	}, []step{succeed("ok")})
	c := r.m.callees["callee"]
	for c.overload.Limit() > 1 || !c.overload.Overloaded("get") {
		a, _ := c.overload.admit("get")
		c.overload.done(a, true)
	}
	hold, _ := c.overload.admit("get")
	defer c.overload.done(hold, false)

	var f First
	r0 := req("callee", "get", "x")
	_, done, err := r.m.sendFirst(context.Background(), r0, r.out, &f)

	assert.False(t, done, "done")
	assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code(), "err %v", err)
	assert.Empty(t, r.out.Requests(), "requests sent")
	assert.Equal(t, int64(1), c.overload.inflight.Load(), "attempts in flight: the one held")
	assert.Equal(t, int64(1), counters(r.scope)["retry.calls+callee=callee"], "calls counted")

	sink := new(Sink)
	_, err = r.m.continueFirst(r0, r.out, sink, &f)
	assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code(), "err %v", err)
	assert.Equal(t, 1, sink.State.Attempts, "attempts")
	assert.Equal(t, wire.RefusedOverload, sink.State.Refused, "refused")
	assert.Equal(t, 0, sink.State.Sends.Count, "sent")
	assert.Empty(t, r.out.Requests(), "requests sent")
	assert.Equal(t, int64(1), c.overload.inflight.Load(), "attempts in flight: the one held")
	assert.Equal(t, int64(1), counters(r.scope)["retry.calls+callee=callee"], "calls counted once")
}

// TestTransportPanicGivesTheSlotBack: an attempt whose transport panics
// gives its overload slot back as the panic goes on up (yarpc recovers
// it above the handler), through SendFirst and through Call alike, so
// that no slot of the callee's limit is kept for good.
func TestTransportPanicGivesTheSlotBack(t *testing.T) {
	cfg := retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond}}}
	panics := func(context.Context, *transport.Request) (*transport.Response, error) { panic("transport panicked") }
	request := func() *transport.Request {
		return &transport.Request{Service: "callee", Procedure: "get", Body: bytes.NewReader([]byte("x")), BodySize: 1}
	}
	for name, send := range map[string]func(t *testing.T, r firstRun){
		"SendFirst": func(t *testing.T, r firstRun) {
			var f First
			_, done, _ := r.m.sendFirst(context.Background(), request(), r.out, &f)
			t.Errorf("sendFirst returned (done %v)", done)
		},
		"Call": func(t *testing.T, r firstRun) {
			_, err := r.m.Call(context.Background(), request(), &Sink{Out: r.out, State: CallState{direct: true}})
			t.Errorf("Call returned (%v)", err)
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newFirstRun(t, cfg, []step{panics})
			assert.PanicsWithValue(t, "transport panicked", func() { send(t, r) })
			c := r.m.callees["callee"]
			assert.Zero(t, c.overload.inflight.Load(), "attempts in flight")
			assert.Len(t, r.out.Requests(), 1, "the attempt was sent")
		})
	}
}

// TestContinueRetriesTheRequestAsGiven: a transport that changes the
// request during the first attempt changes none of the retries, as with
// Call, which builds them from the request as the caller gave it.
func TestContinueRetriesTheRequestAsGiven(t *testing.T) {
	cfg := retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond}}}
	script := changing(fail(errUnavailable, "errown-claim", "claimed"), succeed("ok"))
	call, first := newFirstRun(t, cfg, script), newFirstRun(t, cfg, script)
	request := func() *transport.Request {
		return &transport.Request{Service: "callee", Procedure: "get", Body: bytes.NewReader([]byte("x")), BodySize: 1}
	}

	_, err := call.m.Call(context.Background(), request(), &Sink{Out: call.out, State: CallState{direct: true}})
	require.NoError(t, err, "Call")
	var f First
	req := request()
	_, done, _ := first.m.sendFirst(context.Background(), req, first.out, &f)
	require.False(t, done, "done")
	_, err = first.m.continueFirst(req, first.out, &Sink{}, &f)
	require.NoError(t, err, "Continue")

	want := coarse(call.out.Requests())
	require.Len(t, want, 2, "Call's attempts")
	assert.Equal(t, map[string]string{"errown-attempt": "2"}, want[1].Headers, "Call's retry headers")
	assert.Equal(t, want, coarse(first.out.Requests()), "attempts sent")
}

// changing returns script with each step changing the request it
// answers, as a transport that changes the request it sends.
func changing(script ...step) []step {
	changed := make([]step, len(script))
	for i, s := range script {
		changed[i] = func(ctx context.Context, req *transport.Request) (*transport.Response, error) {
			res, err := s(ctx, req)
			req.ShardKey = "changed"
			req.Headers = transport.NewHeaders().With("x", "y")
			return res, err
		}
	}
	return changed
}

// firstRun is one middleware of TestSendFirstAsCall and what it sends to.
type firstRun struct {
	m     *Middleware
	out   *outboundtest.Outbound
	scope tally.TestScope
}

func newFirstRun(t *testing.T, cfg retry.Config, script []step) firstRun {
	scope := tally.NewTestScope("", nil)
	clock := newClock()
	return firstRun{
		m:     newMiddleware(t, cfg, WithSinks(obs.Sinks{Scope: scope}), clock.option(), fixedRand(0.5)),
		out:   newOutbound(script...),
		scope: scope,
	}
}

// withHeaders answers as s does, with headers (key, value pairs) on its
// response.
func withHeaders(s step, headers ...string) step {
	return func(ctx context.Context, req *transport.Request) (*transport.Response, error) {
		res, err := s(ctx, req)
		h := transport.NewHeaders()
		for i := 0; i+1 < len(headers); i += 2 {
			h = h.With(headers[i], headers[i+1])
		}
		res.Headers = h
		return res, err
	}
}

// readBody returns res's body, read, or "" for none.
func readBody(t *testing.T, res *transport.Response) string {
	t.Helper()
	if res == nil || res.Body == nil {
		return ""
	}
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err, "read the response body")
	require.NoError(t, res.Body.Close(), "close the response body")
	return string(b)
}

// coarse returns sent without what differs between two runs of the same
// call (the request and context handed over, the deadline) and with each
// attempt's time left before its deadline rounded to 100ms: two runs read
// the real clock a moment apart.
func coarse(sent []outboundtest.Request) []outboundtest.Request {
	for i := range sent {
		sent[i].Req, sent[i].Ctx, sent[i].Deadline = nil, nil, time.Time{}
		sent[i].Timeout = sent[i].Timeout.Round(100 * time.Millisecond)
	}
	return sent
}
