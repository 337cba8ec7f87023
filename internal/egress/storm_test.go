package egress

import (
	"context"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// headers returns a response carrying key, value pairs.
func headers(kv ...string) *transport.Response {
	h := transport.NewHeaders()
	for i := 0; i+1 < len(kv); i += 2 {
		h = h.With(kv[i], kv[i+1])
	}
	return &transport.Response{Headers: h}
}

// trackedContext returns a context carrying a fresh request log, for
// procedure "p", as the inbound middleware serves a request.
func trackedContext() (context.Context, *reqlog.Log) {
	n := &reqlog.Node{Context: context.Background(), Log: reqlog.Log{Procedure: "p"}}
	return n, &n.Log
}

// markedContext is trackedContext for a request that came marked: its
// caller is in an incident, so its calls are marked too.
func markedContext() (context.Context, *reqlog.Log) {
	ctx, log := trackedContext()
	log.SetMarked()
	return ctx, log
}

func TestCallMarksFirstAttempt(t *testing.T) {
	tests := []struct {
		name         string
		cfg          outbound.Config
		give         transport.Headers
		wantItems    map[string]string
		wantOriginal map[string]string
	}{
		{
			name:         "no headers",
			give:         transport.Headers{},
			wantItems:    map[string]string{"errown-attempt": "1"},
			wantOriginal: map[string]string{"errown-attempt": "1"},
		},
		{
			name:         "empty headers",
			give:         transport.NewHeaders(),
			wantItems:    map[string]string{"errown-attempt": "1"},
			wantOriginal: map[string]string{"errown-attempt": "1"},
		},
		{
			name:         "the caller's headers kept, in their case",
			give:         transport.NewHeaders().With("X-Trace", "abc").With("baggage", "v"),
			wantItems:    map[string]string{"x-trace": "abc", "baggage": "v", "errown-attempt": "1"},
			wantOriginal: map[string]string{"X-Trace": "abc", "baggage": "v", "errown-attempt": "1"},
		},
		{
			name:         "a caller's attempt header replaced",
			give:         transport.NewHeaders().With("errown-attempt", "5").With("x-trace", "abc"),
			wantItems:    map[string]string{"x-trace": "abc", "errown-attempt": "1"},
			wantOriginal: map[string]string{"x-trace": "abc", "errown-attempt": "1"},
		},
		{
			name:         "a caller's attempt header in another case replaced",
			give:         transport.NewHeaders().With("Errown-Attempt", "5"),
			wantItems:    map[string]string{"errown-attempt": "1"},
			wantOriginal: map[string]string{"errown-attempt": "1"},
		},
		{
			name:         "a custom attempt header",
			cfg:          outbound.Config{Headers: ownership.Headers{Attempt: "x-try"}},
			give:         transport.NewHeaders().With("errown-attempt", "5").With("X-Try", "4"),
			wantItems:    map[string]string{"errown-attempt": "5", "x-try": "1"},
			wantOriginal: map[string]string{"errown-attempt": "5", "x-try": "1"},
		},
		{
			name: "many headers",
			give: transport.HeadersFromMap(map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8", "i": "9"}),
			wantItems: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8", "i": "9",
				"errown-attempt": "1"},
			wantOriginal: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8", "i": "9",
				"errown-attempt": "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw, err := New(tt.cfg)
			require.NoError(t, err)
			ctx, _ := markedContext()
			callerItems := maps.Clone(tt.give.Items())
			callerOriginal := maps.Clone(tt.give.OriginalItems())
			callerLen := tt.give.Len()
			req := &transport.Request{Service: "payments", Procedure: "charge", Caller: "shop", Encoding: "json", Body: strings.NewReader("x"), BodySize: 1, Headers: tt.give}
			out := outboundtest.New()

			_, err = mw.Call(ctx, req, out)
			require.NoError(t, err)

			require.Len(t, out.Requests(), 1)
			got := out.Requests()[0]
			assert.Equal(t, tt.wantItems, got.Headers)
			assert.Equal(t, tt.wantOriginal, got.OriginalHeaders)
			assert.NotSame(t, req, got.Req, "the transport gets a copy")
			assert.Equal(t, "payments", got.Service)
			assert.Equal(t, "charge", got.Procedure)

			assert.Equal(t, callerLen, req.Headers.Len(), "the caller's headers unchanged")
			assert.Equal(t, callerItems, req.Headers.Items())
			assert.Equal(t, callerOriginal, req.Headers.OriginalItems())
			assert.Equal(t, callerLen, tt.give.Len())
			assert.Equal(t, callerItems, tt.give.Items())
			assert.Equal(t, "payments", req.Service)
			assert.Equal(t, "json", string(req.Encoding))
			assert.Equal(t, 1, req.BodySize)
		})
	}
}

func TestCallMarkedRequestIsTheCallersOtherwise(t *testing.T) {
	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	ctx, _ := markedContext()
	body := strings.NewReader("body")
	req := &transport.Request{
		Caller: "shop", Service: "payments", Procedure: "charge", Encoding: "proto",
		Transport: "grpc", ShardKey: "s", RoutingKey: "rk", RoutingDelegate: "rd", CallerProcedure: "checkout",
		Body: body, BodySize: 4, Headers: transport.NewHeaders().With("x", "y"),
	}
	out := outboundtest.New(outboundtest.Answer(&transport.Response{}, nil))
	_, err = mw.Call(ctx, req, out)
	require.NoError(t, err)
	require.Equal(t, 1, out.Calls())
	got := out.Requests()[0].Shallow
	want := *req
	want.Headers = got.Headers // checked elsewhere
	assert.Equal(t, want, got, "every field but the headers is the caller's")
	assert.Same(t, body, got.Body.(*strings.Reader))
}

// funcOutbound answers with its function and records nothing: the
// allocation test counts errown's allocations alone, which a recording
// outbound (outboundtest's) would add to.
type funcOutbound struct {
	transport.UnaryOutbound // not called
	call                    func(context.Context, *transport.Request) (*transport.Response, error)
}

func (o *funcOutbound) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	return o.call(ctx, req)
}

func TestCallUntrackedIsNotMarked(t *testing.T) {
	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	req := &transport.Request{Service: "payments", Procedure: "charge", Headers: transport.NewHeaders().With("x-trace", "abc")}
	out := outboundtest.New()

	_, err = mw.Call(context.Background(), req, out)
	require.NoError(t, err)

	require.Len(t, out.Requests(), 1)
	assert.Same(t, req, out.Requests()[0].Req, "the caller's request as it is")
	assert.Equal(t, map[string]string{"x-trace": "abc"}, out.Requests()[0].Headers)
}

func TestCallMarksWithRetryInside(t *testing.T) {
	r, err := retrier.New(retry.Config{Policies: []retry.PolicyConfig{{Service: "payments", MaxAttempts: 3, InitialBackoff: time.Nanosecond, Idempotent: new(true)}}})
	require.NoError(t, err)
	mw, err := New(outbound.Config{}, WithInner(r))
	require.NoError(t, err)
	ctx, _ := markedContext()
	h := transport.NewHeaders().With("X-Trace", "abc").With("errown-attempt", "9")
	req := &transport.Request{Service: "payments", Procedure: "charge", Headers: h}
	down := yarpcerrors.UnavailableErrorf("down")
	out := outboundtest.New(outboundtest.Answer(headers(), down), outboundtest.Answer(headers(), down), outboundtest.Answer(&transport.Response{}, nil))

	_, err = mw.Call(ctx, req, out)
	require.NoError(t, err)

	require.Len(t, out.Requests(), 3)
	for i, want := range []string{"1", "2", "3"} {
		assert.Equal(t, map[string]string{"x-trace": "abc", "errown-attempt": want}, out.Requests()[i].Headers, "attempt %d", i+1)
	}
	assert.Equal(t, map[string]string{"x-trace": "abc", "errown-attempt": "9"}, h.Items(), "the caller's headers unchanged")
	assert.Equal(t, map[string]string{"X-Trace": "abc", "errown-attempt": "9"}, h.OriginalItems())
	assert.Equal(t, 2, h.Len())
}

// TestCallMarkPoolHoldsNothing: a pooled marked request carries nothing
// of the call before, whatever the order of calls.
func TestCallMarkPoolHoldsNothing(t *testing.T) {
	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	ctx, _ := markedContext()
	out := outboundtest.New()
	for i := range 20 {
		k := "x-call-" + strconv.Itoa(i)
		_, err := mw.Call(ctx, &transport.Request{Service: "s", Headers: transport.NewHeaders().With(k, "v")}, out)
		require.NoError(t, err)
		_, err = mw.Call(ctx, &transport.Request{Service: "s"}, out)
		require.NoError(t, err)
	}
	for i, s := range out.Requests() {
		if i%2 == 0 {
			assert.Equal(t, map[string]string{"x-call-" + strconv.Itoa(i/2): "v", "errown-attempt": "1"}, s.Headers, "call %d", i)
		} else {
			assert.Equal(t, map[string]string{"errown-attempt": "1"}, s.Headers, "call %d", i)
		}
	}
}

// TestCallMarkConcurrent: concurrent calls each send their own headers,
// never another's (run with -race).
func TestCallMarkConcurrent(t *testing.T) {
	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	ctx, log := markedContext()
	const goroutines, perG = 16, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me := strconv.Itoa(g)
			out := outboundtest.New(func(context.Context, *transport.Request) (*transport.Response, error) {
				return headers("errown-storm", "2,2,0,0,0"), nil
			})
			for range perG {
				h := transport.NewHeaders().With("x-g", me)
				_, err := mw.Call(ctx, &transport.Request{Service: "s", Headers: h}, out)
				assert.NoError(t, err)
				assert.Equal(t, 1, h.Len(), "caller headers changed: %v", h.Items())
			}
			want := map[string]string{"x-g": me, "errown-attempt": "1"}
			for _, r := range out.Requests() {
				assert.Equal(t, want, r.Headers, "goroutine %s sent", me)
			}
		}()
	}
	wg.Wait()
	counts := log.Egress.Counts()
	st := log.Egress.StormTotal(counts.NotFailed)
	const n = goroutines * perG
	assert.Equal(t, wire.KnownFigures(wire.Storm{Served: 1 + 2*n, Blind: 1 + 2*n}), st)
}

func TestCallFoldsStorm(t *testing.T) {
	down := yarpcerrors.UnavailableErrorf("down")
	tests := []struct {
		name      string
		res       *transport.Response
		err       error
		state     reqlog.Result // what an inner middleware reports
		want      wire.Storm
		wantOK    bool
		wantAdded bool
	}{
		{
			name:   "a quiet success: counted by the egress log, not added",
			res:    &transport.Response{},
			want:   wire.Storm{Served: 2, Blind: 2},
			wantOK: true,
		},
		{
			name:   "a success saying one: not added",
			res:    headers("errown-storm", "1,1,0,0,0"),
			want:   wire.Storm{Served: 2, Blind: 2},
			wantOK: true,
		},
		{
			name:      "a success with a subtree",
			res:       headers("errown-storm", "5,5,0,0,0"),
			want:      wire.Storm{Served: 6, Blind: 6},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "a failure with a storm",
			res:       headers("errown-storm", "9,18,1,1,2", "errown-claim", "unclaimed"),
			err:       down,
			want:      wire.Storm{Served: 10, Blind: 19, Retries: 1, Radius: 1, BlindRadius: 2},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "a leaf failure: one, added",
			res:       headers("errown-storm", "1,1,0,0,0"),
			err:       down,
			want:      wire.Storm{Served: 2, Blind: 2},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "a failure without a storm: unknown",
			err:       down,
			wantAdded: true,
		},
		{
			name:      "a failure with a garbled storm: unknown",
			res:       headers("errown-storm", "9,18,1"),
			err:       down,
			wantAdded: true,
		},
		{
			name:      "a success saying unknown: unknown",
			res:       headers("errown-storm", "unknown"),
			wantAdded: true,
		},
		{
			name:   "an answer with a response but no storm: one",
			res:    &transport.Response{Headers: transport.NewHeaders()},
			err:    yarpcerrors.NotFoundErrorf("no"),
			want:   wire.Storm{Served: 2, Blind: 2},
			wantOK: true,
		},
		{
			name:      "an answer without a response: unknown (cut short before the callee answered)",
			err:       yarpcerrors.CancelledErrorf("gave up"),
			wantAdded: true,
		},
		{
			name:      "an answer with a storm: added, not counted twice",
			res:       headers("errown-storm", "3,7,1,1,2"),
			err:       yarpcerrors.NotFoundErrorf("no"),
			want:      wire.Storm{Served: 4, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 2},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "attempts counted by an inner middleware that did not fold: the response folded once",
			res:       headers("errown-storm", "4,4,0,0,0"),
			err:       down,
			state:     reqlog.Result{Attempts: 2},
			want:      wire.Storm{Served: 5, Blind: 5},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "attempts folded by an inner middleware: its Storm",
			res:       headers("errown-storm", "4,4,0,0,0"),
			err:       down,
			state:     reqlog.Result{Attempts: 2, Storm: folded(wire.Storm{Served: 4, Blind: 4}, wire.Storm{Served: 4, Blind: 4})},
			want:      wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:    true,
			wantAdded: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw, err := New(outbound.Config{}, WithInner(stateSetter{tt.state}))
			require.NoError(t, err)
			ctx, log := trackedContext()
			_, _ = mw.Call(ctx, &transport.Request{Service: "s", Procedure: "p"}, outboundtest.New(outboundtest.Answer(tt.res, tt.err)))

			assert.Equal(t, tt.wantAdded, log.Egress.StormAdded())
			got := log.Egress.StormTotal(log.Egress.Counts().NotFailed)
			assert.Equal(t, tt.wantOK, got.Known, "%+v", got)
			assert.Equal(t, tt.want, got.Storm)
		})
	}
}

// folded returns a StormCall that folded attempts.
func folded(attempts ...wire.Storm) wire.StormCall {
	var c wire.StormCall
	for _, a := range attempts {
		c.Attempt(wire.KnownFigures(a))
	}
	return c
}

// stateSetter is an inner middleware that reports state for every call,
// as a retry middleware further in would.
type stateSetter struct{ state reqlog.Result }

func (s stateSetter) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	res, err := out.Call(ctx, req)
	if st := retrier.CallStateFromContext(ctx); st != nil {
		st.Result = s.state
	}
	return res, err
}

func TestCallFoldsStormWithRetry(t *testing.T) {
	down := yarpcerrors.UnavailableErrorf("down")
	tests := []struct {
		name   string
		mode   retry.Mode
		script []outboundtest.Step
		want   wire.Storm
	}{
		{
			name:   "claimed, retried, succeeded",
			script: []outboundtest.Step{outboundtest.Answer(headers("errown-storm", "4,4,0,0,0", "errown-claim", "claimed"), down), outboundtest.Answer(headers("errown-storm", "4,4,0,0,0"), nil)},
			want:   wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1},
		},
		{
			name:   "unclaimed, suppressed: the blind retry replays it",
			script: []outboundtest.Step{outboundtest.Answer(headers("errown-storm", "9,9,1,1,1", "errown-claim", "unclaimed"), down)},
			want:   wire.Storm{Served: 10, Blind: 19, Retries: 1, Radius: 1, BlindRadius: 2},
		},
		{
			name:   "observe: unclaimed, retried anyway",
			mode:   retry.ModeObserve,
			script: []outboundtest.Step{outboundtest.Answer(headers("errown-storm", "9,9,1,1,1", "errown-claim", "unclaimed"), down)},
			want:   wire.Storm{Served: 10, Blind: 19, Retries: 1, Radius: 1, BlindRadius: 2},
		},
		{
			name:   "a quiet success: nothing to fold",
			script: []outboundtest.Step{outboundtest.Answer(&transport.Response{}, nil)},
			want:   wire.Storm{Served: 2, Blind: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := retrier.New(retry.Config{Mode: tt.mode, Policies: []retry.PolicyConfig{{Service: "s", InitialBackoff: time.Nanosecond, Idempotent: new(true)}}})
			require.NoError(t, err)
			mw, err := New(outbound.Config{}, WithInner(r))
			require.NoError(t, err)
			ctx, log := trackedContext()
			_, _ = mw.Call(ctx, &transport.Request{Service: "s", Procedure: "p"}, outboundtest.New(tt.script...))
			assert.Equal(t, wire.KnownFigures(tt.want), log.Egress.StormTotal(log.Egress.Counts().NotFailed))
		})
	}
}

// TestCallLateChangesNothing: a call that ends after its request closed
// its log changes nothing the request reported (its figures were taken at
// close, with this call under way, hence unknown), and nothing is under
// way once it ended.
func TestCallLateChangesNothing(t *testing.T) {
	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	ctx, log := trackedContext()
	_, counts := log.Egress.CloseCounts(nil) // the request finished
	before := log.Egress.StormTotal(counts.NotFailed)
	_, _ = mw.Call(ctx, &transport.Request{Service: "s"}, outboundtest.New(outboundtest.Answer(headers("errown-storm", "9,18,1,1,2"), yarpcerrors.UnavailableErrorf("down"))))
	assert.Equal(t, wire.KnownFigures(wire.One), before)
	assert.Equal(t, 0, log.Egress.Counts().Total(), "a late call is not in the log")
	assert.False(t, log.CallsUnderWay())
}

func TestRecordAddsStorm(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		retried   bool
		want      wire.Storm
		wantAdded bool
	}{
		{name: "success", want: wire.Storm{Served: 2, Blind: 2}},
		{name: "failure", err: yarpcerrors.UnavailableErrorf("down"), want: wire.Storm{Served: 2, Blind: 2}, wantAdded: true},
		{name: "retried success", retried: true, want: wire.Storm{Served: 3, Blind: 3, Retries: 1, Radius: 1, BlindRadius: 1}, wantAdded: true},
		{name: "retried failure", err: yarpcerrors.UnavailableErrorf("down"), retried: true, want: wire.Storm{Served: 3, Blind: 3, Retries: 1, Radius: 1, BlindRadius: 1}, wantAdded: true},
		{name: "answer", err: yarpcerrors.NotFoundErrorf("no"), want: wire.Storm{Served: 2, Blind: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, log := trackedContext()
			require.True(t, outbound.Record(ctx, "db", tt.err, tt.retried))
			assert.Equal(t, tt.wantAdded, log.Egress.StormAdded())
			assert.Equal(t, wire.KnownFigures(tt.want), log.Egress.StormTotal(log.Egress.Counts().NotFailed))
		})
	}
}

// TestMarkSharesNoMaps: every mark copies the request and its headers
// into maps of its own, never another mark's, so that what a middleware
// below keeps stays as it was sent. (Header names the caller wrote in
// lower case, as canonical: see the report on mixed-case names.)
func TestMarkSharesNoMaps(t *testing.T) {
	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	for _, h := range []transport.Headers{
		{},
		transport.NewHeaders(),
		transport.NewHeaders().With("x-trace", "abc").With("baggage", "v"),
		transport.NewHeaders().With("errown-attempt", "4"),
	} {
		req := &transport.Request{Service: "s", Headers: h}
		first := mw.mark(req, 0)
		want := maps.Clone(first.Headers.Items())
		for range 100 {
			mk := mw.mark(req, 0)
			if v, _ := mk.Headers.Get("errown-attempt"); v != "1" {
				require.Failf(t, "not marked", "marked %v", mk.Headers.Items())
			}
			require.NotSame(t, first, mk, "a mark's request")
			mk.Headers = mk.Headers.With("x-below", "v") // a middleware below writes its own
		}
		assert.Equal(t, want, first.Headers.Items(), "the first mark's headers, after later marks, headers %v", h.Items())
	}
}

// TestCallMarkingAllocates: a tracked call, which is marked, allocates
// the marked request, its headers and, with errown's retry middleware
// inside and no direct path, the call's state and the context node that
// carries it to the innermost attempt step: a handful of allocations
// more than the same call untracked, which is not marked, and none that
// grows with the calls made.
func TestCallMarkingAllocates(t *testing.T) {
	r, err := retrier.New(retry.Config{Policies: []retry.PolicyConfig{{Service: "s", Idempotent: new(true)}}})
	require.NoError(t, err)
	mw, err := New(outbound.Config{}, WithInner(r))
	require.NoError(t, err)
	ctx, log := markedContext()
	var sent int
	out := &funcOutbound{call: func(_ context.Context, r *transport.Request) (*transport.Response, error) {
		if v, _ := r.Headers.Get("errown-attempt"); v == "1" {
			sent++
		}
		return nil, nil
	}}
	req := &transport.Request{Service: "s", Procedure: "p", Headers: transport.NewHeaders()}

	untracked := testing.AllocsPerRun(1000, func() { _, _ = mw.Call(context.Background(), req, out) })
	require.Zero(t, sent, "untracked calls are not marked")
	tracked := testing.AllocsPerRun(1000, func() { _, _ = mw.Call(ctx, req, out) })

	assert.Equal(t, 1001, sent, "every tracked call was marked")
	assert.LessOrEqual(t, untracked, 1.0+_routeAllocs, "an untracked call: the context node of its state, and its route")
	assert.LessOrEqual(t, tracked, float64(_markAllocs+_callAllocs+_routeAllocs), "marking allocates: %v tracked, %v untracked", tracked, untracked)
	assert.Equal(t, 1001, log.Egress.Counts().NotFailed, "the tracked calls were tracked")
	assert.Equal(t, 0, req.Headers.Len(), "the caller's headers unchanged")
}

// _markAllocs is what marking a request allocates: the copy, and the
// two maps of its headers with their buckets.
const _markAllocs = 5

// _callAllocs is what a tracked call allocates off the direct path: its
// state, with the Sink and its mutex, and the context node that carries
// it below.
const _callAllocs = 2

// _routeAllocs is what a call its policy may retry allocates besides: the
// context node with the call's route (the peers its attempts went to,
// for package retrypeer), never pooled.
const _routeAllocs = 1

// TestCopyRequestCopiesEveryField: every field of transport.Request but
// its headers reaches the marked request as the caller gave it, so a
// field yarpc adds fails here rather than going missing.
func TestCopyRequestCopiesEveryField(t *testing.T) {
	fill := func(round int) *transport.Request {
		var req transport.Request
		v := reflect.ValueOf(&req).Elem()
		for i := range v.NumField() {
			f, name := v.Field(i), v.Type().Field(i).Name
			switch {
			case name == "Headers":
				f.Set(reflect.ValueOf(transport.NewHeaders().With("x-round", strconv.Itoa(round))))
			case name == "Body":
				f.Set(reflect.ValueOf(strings.NewReader(name + strconv.Itoa(round))))
			case f.Kind() == reflect.String:
				f.SetString(name + "-" + strconv.Itoa(round)) // a new string every round
			case f.Kind() == reflect.Int:
				f.SetInt(int64(100*round + i))
			default:
				require.Failf(t, "a new field", "transport.Request.%s (%s) is new: copyRequest must copy it", name, f.Type())
			}
		}
		return &req
	}
	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	for round := range 3 {
		req := fill(round)
		c := mw.mark(req, 0)
		want := *req
		want.Headers = c.Headers
		assert.Equal(t, want, *c, "round %d", round)
		assert.Equal(t, map[string]string{"x-round": strconv.Itoa(round), "errown-attempt": "1"}, c.Headers.Items())
	}
}
