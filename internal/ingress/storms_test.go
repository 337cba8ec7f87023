package ingress

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// call is one outbound call a handler makes, logged as the egress
// middleware logs it: the entry in the egress log and, when the call failed
// or has something to report, its Storm in the request's Storms.
type call struct {
	entry calls.Entry
	storm wire.Figures
}

// quiet is a call that succeeded with nothing to report: only the egress
// log counts it.
func quiet() call { return call{entry: succeeded("quiet"), storm: wire.KnownFigures(wire.One)} }

// failedWith is a failed call whose Storm was s.
func failedWith(s wire.Storm) call {
	return call{entry: failed("hard", true), storm: wire.KnownFigures(s)}
}

// unknownCall is a failed call whose Storm was unknown (no errown below).
func unknownCall() call { return call{entry: failed("hard", false)} }

// answeredWith is a call that did not fail and still has s to report.
func answeredWith(s wire.Storm) call {
	return call{entry: succeeded("busy"), storm: wire.KnownFigures(s)}
}

// handlerCalling logs calls as the egress middleware does, then returns
// err.
func handlerCalling(err error, calls ...call) handlerFunc {
	return func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		log := reqlog.FromContext(ctx)
		for _, c := range calls {
			if !log.Egress.Append(c.entry) {
				panic("late")
			}
			if c.entry.Failed() || !c.storm.Trivial() {
				log.Egress.AddStorm(c.storm, c.entry.Failed())
			}
		}
		return err
	}
}

// rootRequest is a request from a caller without errown: no attempt
// header.
func rootRequest(procedure string) *transport.Request {
	return &transport.Request{Caller: "a", Service: "b", Procedure: procedure, Transport: "http", Headers: transport.NewHeaders()}
}

// markedRequest is a request from an errown caller, attempt n.
func markedRequest(procedure, attempt string) *transport.Request {
	r := rootRequest(procedure)
	r.Headers = transport.NewHeaders().With("errown-attempt", attempt)
	return r
}

// stormOf returns the storm header of a response, and whether it has one.
func stormOf(resw *transporttest.FakeResponseWriter) (string, bool) {
	return resw.Headers.Get("errown-storm")
}

func TestHandleStormHeader(t *testing.T) {
	retriedBelow := wire.Storm{Served: 8, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 1}
	suppressed := wire.Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}
	notFound := yarpcerrors.CodeNotFound
	unavailable := yarpcerrors.CodeUnavailable
	tests := []struct {
		name string
		give handlerFunc
		want string // "" for no header
		// quiet marks a success that met no storm: it says how much it
		// took only to a caller that marked its request.
		quiet bool
	}{
		{"leaf success: nothing", handlerCalling(nil), "", false},
		{"leaf failure: one", handlerCalling(errBoom), "1,1,0,0,0", false},
		{"leaf answer: one", handlerCalling(yarpcerrors.NotFoundErrorf("no")), "1,1,0,0,0", false},
		{"leaf application error with a server-fault code: one", appErrorHandler(&unavailable), "1,1,0,0,0", false},
		{"leaf application error with a client-fault code: one", appErrorHandler(&notFound), "1,1,0,0,0", false},
		{"two quiet calls, success", handlerCalling(nil, quiet(), quiet()), "3,3,0,0,0", true},
		{"two quiet calls, failure", handlerCalling(errBoom, quiet(), quiet()), "3,3,0,0,0", false},
		{"a call retried below, success", handlerCalling(nil, failedWith(retriedBelow)), "9,9,1,1,1", false},
		{"a call retried below and a quiet one, failure", handlerCalling(errBoom, failedWith(retriedBelow), quiet()), "10,10,1,1,1", false},
		{"a suppressed retry below", handlerCalling(errBoom, failedWith(suppressed)), "10,19,1,1,2", false},
		{"an answered call with a storm and a quiet one", handlerCalling(nil, answeredWith(suppressed), quiet()), "11,20,1,1,2", false},
		{"a failed call of one request", handlerCalling(nil, failedWith(wire.One)), "2,2,0,0,0", true},
		{"an unknown call, success", handlerCalling(nil, quiet(), unknownCall()), "unknown", false},
		{"an unknown call, failure", handlerCalling(errBoom, unknownCall(), failedWith(retriedBelow)), "unknown", false},
		{"63 quiet calls: the largest precomputed", handlerCalling(nil, repeatCalls(63, quiet())...), "64,64,0,0,0", true},
		{"64 quiet calls: past the precomputed", handlerCalling(nil, repeatCalls(64, quiet())...), "65,65,0,0,0", true},
		{"64 quiet calls, failure", handlerCalling(errBoom, repeatCalls(64, quiet())...), "65,65,0,0,0", false},
	}
	for _, tt := range tests {
		for _, req := range []*transport.Request{rootRequest("proc"), markedRequest("proc", "1"), markedRequest("proc", "3")} {
			attempt, _ := req.Headers.Get("errown-attempt")
			t.Run(tt.name+"/attempt="+attempt, func(t *testing.T) {
				e := newEnv(t, inbound.Config{})
				resw := &transporttest.FakeResponseWriter{}
				_ = e.mw.Handle(context.Background(), req, resw, tt.give)
				got, ok := stormOf(resw)
				want := tt.want
				if tt.quiet && attempt == "" {
					want = "" // the steady state: no header
				}
				assert.Equal(t, want != "", ok, "header sent")
				assert.Equal(t, want, got)
				if want != "" && want != wire.StormUnknownValue {
					s := wire.ParseStorm(got)
					require.True(t, s.Known, "%q reads back", got)
					assert.Equal(t, want, wire.FormatStorm(s.Storm))
				}
				assert.Equal(t, int64(0), e.counter("inbound.replaced_headers"), "errown's own header is not the handler's")
			})
		}
	}
}

func repeatCalls(n int, c call) []call {
	out := make([]call, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// TestHandleQuietHeadersEveryCount: every quiet count, precomputed or not,
// says exactly how many requests the subtree served.
func TestHandleQuietHeadersEveryCount(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	for n := 0; n <= _quietStorms+2; n++ {
		resw := &transporttest.FakeResponseWriter{}
		require.NoError(t, e.mw.Handle(context.Background(), markedRequest("proc", "1"), resw, handlerCalling(nil, repeatCalls(n, quiet())...)))
		got, ok := stormOf(resw)
		if n == 0 {
			assert.False(t, ok, "a leaf's success sends nothing")
			continue
		}
		want := strconv.Itoa(n+1) + "," + strconv.Itoa(n+1) + ",0,0,0"
		assert.Equal(t, want, got, "%d quiet calls", n)
	}
}

func TestHandleStormCustomHeader(t *testing.T) {
	e := newEnv(t, inbound.Config{Headers: ownership.Headers{Storm: "x-storm", Attempt: "x-try"}})
	resw := &transporttest.FakeResponseWriter{}
	req := rootRequest("proc")
	req.Headers = req.Headers.With("x-try", "1")
	require.Error(t, e.mw.Handle(context.Background(), req, resw, handlerCalling(errBoom, failedWith(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}))))
	got, _ := resw.Headers.Get("x-storm")
	assert.Equal(t, "3,3,1,1,1", got)
	_, ok := stormOf(resw)
	assert.False(t, ok, "only the configured header")
	assert.Empty(t, e.mw.Storms(), "marked by the configured attempt header: not a root")

	resw = &transporttest.FakeResponseWriter{}
	req = rootRequest("proc")
	req.Headers = req.Headers.With("errown-attempt", "1") // not this service's attempt header
	require.Error(t, e.mw.Handle(context.Background(), req, resw, handlerCalling(errBoom, failedWith(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}))))
	assert.Len(t, e.mw.Storms(), 1, "a root")
}

func TestHandleOwnsStormHeader(t *testing.T) {
	// A handler that sets or forwards a storm header (copying its callee's
	// response headers, say) never gets it onto the response.
	setting := func(name string, err error) handlerFunc {
		return func(_ context.Context, _ *transport.Request, resw transport.ResponseWriter) error {
			resw.AddHeaders(transport.NewHeaders().With(name, "999,999,0,0,0").With("x-app", "kept"))
			return err
		}
	}
	tests := []struct {
		name string
		give handlerFunc
		want string
	}{
		{"success: dropped", setting("errown-storm", nil), ""},
		{"success, another case: dropped", setting("Errown-Storm", nil), ""},
		{"failure: errown's replaces it", setting("errown-storm", errBoom), "1,1,0,0,0"},
		{"failure, another case: errown's replaces it", setting("ERROWN-STORM", errBoom), "1,1,0,0,0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, inbound.Config{})
			resw := &transporttest.FakeResponseWriter{}
			_ = e.mw.Handle(context.Background(), rootRequest("proc"), resw, tt.give)
			got, ok := stormOf(resw)
			assert.Equal(t, tt.want != "", ok)
			assert.Equal(t, tt.want, got)
			for k := range resw.Headers.OriginalItems() {
				if transport.CanonicalizeHeaderKey(k) == "errown-storm" {
					assert.Equal(t, "errown-storm", k, "only errown's own, under its own name")
				}
			}
			app, _ := resw.Headers.Get("x-app")
			assert.Equal(t, "kept", app, "other headers pass")
			assert.Equal(t, int64(1), e.counter("inbound.replaced_headers"))
		})
	}

	// Untracked (over the in-flight bound): still dropped.
	e := newEnv(t, inbound.Config{Ingress: inbound.IngressConfig{MaxInFlight: 1}})
	held := e.mw.logs.Open("other")
	defer e.mw.logs.Remove(held)
	resw := &transporttest.FakeResponseWriter{}
	_ = e.mw.Handle(context.Background(), rootRequest("proc"), resw, setting("errown-storm", nil))
	v, ok := resw.Headers.Get("errown-storm")
	assert.True(t, ok && v == wire.StormUnknownValue, "untracked: the handler's dropped, errown's unknown sent, got %q", v)
	assert.Equal(t, int64(1), e.counter("inbound.untracked"))
}

// stormCounter returns the storm counter name of procedure.
func (e env) stormCounter(name, procedure string) int64 {
	c, ok := e.scope.Snapshot().Counters()["storm."+name+"+procedure="+procedure]
	if !ok {
		return -1 // no series
	}
	return c.Value()
}

// stormHistogram returns the non-empty buckets of a storm histogram of
// procedure, by upper bound, or nil when there is no series.
func (e env) stormHistogram(name, procedure string) map[float64]int64 {
	h, ok := e.scope.Snapshot().Histograms()["storm."+name+"+procedure="+procedure]
	if !ok {
		return nil
	}
	out := map[float64]int64{}
	for k, v := range h.Values() {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func TestHandleRecordsRoots(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	suppressed := wire.Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}
	retried := wire.Storm{Served: 8, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 1}
	tests := []struct {
		name string
		req  *transport.Request
		give handlerFunc
		want []inbound.Storm // nil: not recorded
	}{
		{
			name: "a root that met a suppressed retry",
			req:  rootRequest("checkout"),
			give: handlerCalling(errBoom, failedWith(suppressed)),
			want: []inbound.Storm{{Time: at, Procedure: "checkout", Known: true, Failed: true, Served: 10, Blind: 19, Prevented: 9, Retries: 1, Radius: 1, BlindRadius: 2}},
		},
		{
			name: "a root that met a retry and succeeded",
			req:  rootRequest("checkout"),
			give: handlerCalling(nil, failedWith(retried), quiet()),
			want: []inbound.Storm{{Time: at, Procedure: "checkout", Known: true, Served: 10, Blind: 10, Retries: 1, Radius: 1, BlindRadius: 1}},
		},
		{
			name: "a root whose figures are unknown",
			req:  rootRequest("checkout"),
			give: handlerCalling(errBoom, unknownCall(), failedWith(suppressed)),
			want: []inbound.Storm{{Time: at, Procedure: "checkout", Failed: true}},
		},
		{
			name: "a root that answered: not failed",
			req:  rootRequest("checkout"),
			give: handlerCalling(yarpcerrors.NotFoundErrorf("no"), failedWith(retried)),
			want: []inbound.Storm{{Time: at, Procedure: "checkout", Known: true, Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1}},
		},
		{
			name: "a root whose attempt header is garbage",
			req:  markedRequest("checkout", "first"),
			give: handlerCalling(errBoom, failedWith(retried)),
			want: []inbound.Storm{{Time: at, Procedure: "checkout", Known: true, Failed: true, Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1}},
		},
		{
			name: "a root whose attempt header is out of range",
			req:  markedRequest("checkout", "0"),
			give: handlerCalling(errBoom, failedWith(retried)),
			want: []inbound.Storm{{Time: at, Procedure: "checkout", Known: true, Failed: true, Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1}},
		},
		{
			name: "a root with quiet calls only: no storm",
			req:  rootRequest("checkout"),
			give: handlerCalling(errBoom, quiet(), quiet(), failedWith(wire.One)),
		},
		{
			name: "a leaf root: no storm",
			req:  rootRequest("checkout"),
			give: handlerCalling(errBoom),
		},
		{
			name: "a first attempt from an errown caller: not a root",
			req:  markedRequest("checkout", "1"),
			give: handlerCalling(errBoom, failedWith(suppressed)),
		},
		{
			name: "a retry from an errown caller: not a root",
			req:  markedRequest("checkout", "2"),
			give: handlerCalling(errBoom, unknownCall()),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hooked []inbound.Storm
			e := newEnv(t, inbound.Config{}, WithStormHook(func(s inbound.Storm) { hooked = append(hooked, s) }))
			e.mw.now = func() time.Time { return at }
			_ = e.mw.Handle(context.Background(), tt.req, &transporttest.FakeResponseWriter{}, tt.give)
			if tt.want == nil {
				assert.Empty(t, e.mw.Storms())
				assert.Empty(t, hooked)
				assert.Equal(t, int64(-1), e.stormCounter("requests", "checkout"), "no series")
				return
			}
			assert.Equal(t, tt.want, e.mw.Storms())
			assert.Equal(t, tt.want, hooked, "the hook sees what is recorded")
		})
	}
}

// An outage under a coarse clock: every root request meets the same storm
// at one reading of the clock. The metrics and the hook count each; the
// list keeps the repeats once.
func TestStormRepeatsListedOnce(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	hooked := 0
	e := newEnv(t, inbound.Config{}, WithClock(func() time.Time { return at }), WithStormHook(func(inbound.Storm) { hooked++ }))
	handle := func(h handlerFunc) {
		_ = e.mw.Handle(context.Background(), rootRequest("checkout"), &transporttest.FakeResponseWriter{}, h)
	}
	for range 10 {
		handle(handlerCalling(errBoom, unknownCall()))
	}
	assert.Equal(t, int64(10), e.stormCounter("requests", "checkout"))
	assert.Equal(t, int64(10), e.stormCounter("unknown", "checkout"))
	assert.Equal(t, 10, hooked)
	require.Len(t, e.mw.Storms(), 1, "the repeats of one reading")

	handle(handlerCalling(errBoom, failedWith(wire.Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2})))
	handle(handlerCalling(errBoom, unknownCall()))
	assert.Len(t, e.mw.Storms(), 3, "another storm in between: each kept")
	at = at.Add(time.Millisecond)
	handle(handlerCalling(errBoom, unknownCall()))
	got := e.mw.Storms()
	assert.Len(t, got, 4, "the same storm at another reading")
	assert.Equal(t, at, got[0].Time)
}

func TestHandleStormMetrics(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	for _, give := range []handlerFunc{
		// prevented 9, retries 1, radius 1, blind radius 2
		handlerCalling(errBoom, failedWith(wire.Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2})),
		// prevented 28, retries 3, radius 3, blind radius 3
		handlerCalling(nil, failedWith(wire.Storm{Served: 10, Blind: 38, Retries: 3, Radius: 3, BlindRadius: 3}), quiet()),
		// unknown: counted, no figures
		handlerCalling(errBoom, unknownCall()),
		// no storm: not counted
		handlerCalling(errBoom, quiet()),
	} {
		_ = e.mw.Handle(context.Background(), rootRequest("checkout"), &transporttest.FakeResponseWriter{}, give)
	}
	// Not a root: not counted.
	_ = e.mw.Handle(context.Background(), markedRequest("checkout", "1"), &transporttest.FakeResponseWriter{},
		handlerCalling(errBoom, failedWith(wire.Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2})))
	// Another procedure: its own series.
	_ = e.mw.Handle(context.Background(), rootRequest("browse"), &transporttest.FakeResponseWriter{},
		handlerCalling(nil, failedWith(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1})))

	assert.Equal(t, int64(3), e.stormCounter("requests", "checkout"))
	assert.Equal(t, int64(1), e.stormCounter("unknown", "checkout"))
	assert.Equal(t, int64(9+28), e.stormCounter("prevented", "checkout"))
	assert.Equal(t, int64(1+3), e.stormCounter("retries", "checkout"))
	assert.Equal(t, map[float64]int64{1: 1, 3: 1}, e.stormHistogram("radius", "checkout"))
	assert.Equal(t, map[float64]int64{2: 1, 3: 1}, e.stormHistogram("blind_radius", "checkout"))

	assert.Equal(t, int64(1), e.stormCounter("requests", "browse"))
	assert.Equal(t, int64(0), e.stormCounter("unknown", "browse"))
	assert.Equal(t, int64(0), e.stormCounter("prevented", "browse"))
	assert.Equal(t, int64(1), e.stormCounter("retries", "browse"))
	assert.Equal(t, map[float64]int64{1: 1}, e.stormHistogram("radius", "browse"))
	assert.Equal(t, map[float64]int64{1: 1}, e.stormHistogram("blind_radius", "browse"))
	// Losses sums them over procedures.
	losses := e.mw.Losses()
	assert.Equal(t, uint64(3+1), losses.StormRequests, "Losses: storm.requests over procedures")
	assert.Equal(t, uint64(9+28), losses.Prevented, "Losses: storm.prevented over procedures")

	// Nothing under the inbound scope, nothing untagged.
	for k := range e.scope.Snapshot().Counters() {
		if strings.HasPrefix(k, "storm.") {
			assert.Contains(t, k, "+procedure=", k)
		}
		assert.NotContains(t, k, "inbound.storm", k)
	}
}

func TestHandleStormHistogramBuckets(t *testing.T) {
	// Radii land in the bucket whose upper bound is the smallest at or
	// above them; a radius past the last bound still counts.
	e := newEnv(t, inbound.Config{})
	for _, r := range []uint8{0, 7, 16, 200} {
		s := wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: r, BlindRadius: r}
		if r == 0 {
			s = wire.Storm{Served: 2, Blind: 2, Retries: 1}
		}
		_ = e.mw.Handle(context.Background(), rootRequest("p"), &transporttest.FakeResponseWriter{}, handlerCalling(errBoom, failedWith(s)))
	}
	got := e.stormHistogram("radius", "p")
	assert.Equal(t, int64(1), got[0])
	assert.Equal(t, int64(1), got[8])
	assert.Equal(t, int64(1), got[20])
	var total int64
	for _, v := range got {
		total += v
	}
	assert.Equal(t, int64(4), total)
}

func TestHandleStormProcedureBound(t *testing.T) {
	e := newEnv(t, inbound.Config{MaxRootProcedures: 2})
	stormy := handlerCalling(errBoom, failedWith(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}))
	for _, p := range []string{"a", "b", "c", "a", "d", "b", "e"} {
		_ = e.mw.Handle(context.Background(), rootRequest(p), &transporttest.FakeResponseWriter{}, stormy)
	}
	assert.Equal(t, int64(2), e.stormCounter("requests", "a"))
	assert.Equal(t, int64(2), e.stormCounter("requests", "b"))
	assert.Equal(t, int64(3), e.stormCounter("requests", _otherProcedure), "c, d and e share one series")
	assert.Equal(t, int64(3), e.stormCounter("retries", _otherProcedure))
	for _, p := range []string{"c", "d", "e"} {
		assert.Equal(t, int64(-1), e.stormCounter("requests", p), "no series of its own: %s", p)
	}
	series := 0
	for k := range e.scope.Snapshot().Counters() {
		if strings.HasPrefix(k, "storm.requests+") {
			series++
		}
	}
	assert.Equal(t, 3, series, "two procedures and _other")

	// The ring and the hook keep the real procedure.
	got := e.mw.Storms()
	require.Len(t, got, 7)
	assert.Equal(t, "e", got[0].Procedure)
	assert.Equal(t, "c", got[4].Procedure)
}

func TestHandleStormProcedureBoundDefault(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	stormy := handlerCalling(errBoom, failedWith(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}))
	for i := range inbound.DefaultConfig().MaxRootProcedures + 5 {
		_ = e.mw.Handle(context.Background(), rootRequest("p"+strconv.Itoa(i)), &transporttest.FakeResponseWriter{}, stormy)
	}
	assert.Equal(t, int64(1), e.stormCounter("requests", "p"+strconv.Itoa(inbound.DefaultConfig().MaxRootProcedures-1)))
	assert.Equal(t, int64(-1), e.stormCounter("requests", "p"+strconv.Itoa(inbound.DefaultConfig().MaxRootProcedures)))
	assert.Equal(t, int64(5), e.stormCounter("requests", _otherProcedure))
}

func TestStormsNewestFirst(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	assert.Empty(t, e.mw.Storms())
	assert.NotNil(t, e.mw.Storms(), "an empty list, not nil")
	// Request i spends i retries below.
	for i := 1; i <= _recentStorms+5; i++ {
		s := wire.Storm{Served: uint64(i) + 1, Blind: uint64(i) + 1, Retries: uint64(i), Radius: 1, BlindRadius: 1}
		_ = e.mw.Handle(context.Background(), rootRequest("p"), &transporttest.FakeResponseWriter{}, handlerCalling(errBoom, failedWith(s)))
		got := e.mw.Storms()
		require.Len(t, got, min(i, _recentStorms))
		assert.Equal(t, uint64(i), got[0].Retries, "newest first")
	}
	got := e.mw.Storms()
	for j, s := range got {
		assert.Equal(t, uint64(_recentStorms+5-j), s.Retries, "entry %d", j)
	}
	assert.Equal(t, got, e.mw.Storms(), "listing changes nothing")
	got[0].Procedure = "changed"
	assert.Equal(t, "p", e.mw.Storms()[0].Procedure, "a copy")
}

func TestStormsConcurrent(t *testing.T) {
	// Roots recorded from many goroutines while others list: run with
	// -race.
	var hooked sync.Map
	e := newEnv(t, inbound.Config{MaxRootProcedures: 3}, WithStormHook(func(s inbound.Storm) { hooked.Store(s.Procedure+"/"+strconv.FormatUint(s.Retries, 10), true) }))
	const writers, perWriter = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				s := wire.Storm{Served: uint64(i) + 2, Blind: uint64(i) + 2, Retries: uint64(i) + 1, Radius: 1, BlindRadius: 1}
				_ = e.mw.Handle(context.Background(), rootRequest("p"+strconv.Itoa(w)), &transporttest.FakeResponseWriter{}, handlerCalling(errBoom, failedWith(s)))
				assert.LessOrEqual(t, len(e.mw.Storms()), _recentStorms)
			}
		}()
	}
	wg.Wait()
	var total int64
	for k, c := range e.scope.Snapshot().Counters() {
		if strings.HasPrefix(k, "storm.requests+") {
			total += c.Value()
		}
	}
	assert.Equal(t, int64(writers*perWriter), total)
	n := 0
	hooked.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, writers*perWriter, n, "the hook saw every root")
	assert.Len(t, e.mw.Storms(), _recentStorms)
}

// TestNewStorm pins how a root's figures reach operators.
func TestNewStorm(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t,
		inbound.Storm{Time: at, Procedure: "p", Known: true, Failed: true, Served: 11, Blind: 39, Prevented: 28, Retries: 1, Radius: 1, BlindRadius: 3},
		newStorm(at, "p", wire.KnownFigures(wire.Storm{Served: 11, Blind: 39, Retries: 1, Radius: 1, BlindRadius: 3}), true))
	assert.Equal(t,
		inbound.Storm{Time: at, Procedure: "p"},
		newStorm(at, "p", wire.Figures{Storm: wire.Storm{Served: 11, Blind: 39, Retries: 1, Radius: 1, BlindRadius: 3}}, false),
		"unknown: no figures")
}

func TestConfigValidateStorm(t *testing.T) {
	_, err := New(inbound.Config{Headers: ownership.Headers{Storm: "Errown Storm"}})
	assert.ErrorContains(t, err, "stormHeader")
	_, err = New(inbound.Config{MaxRootProcedures: -1})
	assert.ErrorContains(t, err, "maxRootProcedures: must be >= 0, got -1")
	_, err = New(inbound.Config{MaxRootProcedures: 1})
	assert.NoError(t, err)
}

// A long outage on a fake clock: for six hours every root request meets
// a retry below and fails (one with figures unknown in ten), then the
// callee is back and the roots' calls are quiet for an hour. The list of
// storms stays within its bound throughout; once the outage is over no
// storm is recorded or counted, and the list is the one the outage left.
func TestStormsLongOutage(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)
	e := newEnv(t, inbound.Config{}, WithClock(func() time.Time { return at }))
	handle := func(h handlerFunc) {
		_ = e.mw.Handle(context.Background(), rootRequest("checkout"), &transporttest.FakeResponseWriter{}, h)
	}
	retried := failedWith(wire.Storm{Served: 8, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 1})
	const perMinute = 10
	for range 6 * 60 {
		for i := range perMinute {
			if i == 0 {
				handle(handlerCalling(errBoom, unknownCall()))
			} else {
				handle(handlerCalling(errBoom, retried))
			}
			at = at.Add(time.Second)
		}
		require.LessOrEqual(t, len(e.mw.Storms()), _recentStorms)
		at = at.Add(time.Minute - perMinute*time.Second)
	}
	ended := at
	outage := e.mw.Storms()
	require.Len(t, outage, _recentStorms)
	assert.Equal(t, int64(6*60*perMinute), e.stormCounter("requests", "checkout"))
	assert.Equal(t, int64(6*60), e.stormCounter("unknown", "checkout"))
	assert.Equal(t, int64(6*60*(perMinute-1)), e.stormCounter("retries", "checkout"))

	for range 60 {
		for range perMinute {
			handle(handlerCalling(nil, quiet(), quiet()))
		}
		at = at.Add(time.Minute)
	}
	assert.Equal(t, outage, e.mw.Storms(), "no storm recorded once the callee is back")
	for _, st := range e.mw.Storms() {
		assert.True(t, st.Time.Before(ended), "storm at %v, after the outage's end %v", st.Time, ended)
	}
	assert.Equal(t, int64(6*60*perMinute), e.stormCounter("requests", "checkout"), "no storm counted once the callee is back")
}

// TestHandleMarksTheLog: a request that came with errown's attempt mark
// has its log marked, so that its calls are marked too; a root's is not.
func TestHandleMarksTheLog(t *testing.T) {
	for _, tt := range []struct {
		req  *transport.Request
		want bool
	}{
		{rootRequest("proc"), false},
		{markedRequest("proc", "1"), true},
		{markedRequest("proc", "2"), true},
		{markedRequest("proc", "0"), false},
	} {
		e := newEnv(t, inbound.Config{})
		var got bool
		h := handlerFunc(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
			got = reqlog.FromContext(ctx).Marked()
			return nil
		})
		require.NoError(t, e.mw.Handle(context.Background(), tt.req, &transporttest.FakeResponseWriter{}, h))
		assert.Equal(t, tt.want, got, "%v", tt.req.Headers.Items())
	}
}

// TestHandleStormAtTheOnset: a root storm whose request sent a call
// unmarked is recorded as at the incident's onset.
func TestHandleStormAtTheOnset(t *testing.T) {
	retried := wire.Storm{Served: 3, Blind: 3, Retries: 1, Radius: 1, BlindRadius: 1}
	for _, unmarked := range []bool{false, true} {
		e := newEnv(t, inbound.Config{})
		calls := handlerCalling(errBoom, failedWith(retried))
		h := handlerFunc(func(ctx context.Context, req *transport.Request, w transport.ResponseWriter) error {
			if unmarked {
				reqlog.FromContext(ctx).SetUnmarkedCall()
			}
			return calls(ctx, req, w)
		})
		_ = e.mw.Handle(context.Background(), rootRequest("proc"), &transporttest.FakeResponseWriter{}, h)
		storms := e.mw.Storms()
		require.Len(t, storms, 1)
		assert.Equal(t, unmarked, storms[0].Onset)
		assert.Equal(t, uint64(4), storms[0].Served)
	}
}
