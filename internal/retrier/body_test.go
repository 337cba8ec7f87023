package retrier

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/release"
	"github.com/errown/errown/retry"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
)

var errRead = errors.New("read broke")

// brokenReader yields s, then fails with errRead.
func brokenReader(s string) io.Reader {
	return io.MultiReader(strings.NewReader(s), errReader{errRead})
}

func TestBufferBody(t *testing.T) {
	tests := []struct {
		name           string
		give           io.Reader
		giveLimit      int
		wantReplayable bool
		wantBody       string // what each attempt's body yields
		wantErr        error  // what reading it ends with
		wantNil        bool   // attempts get a nil body
	}{
		{name: "nil body", give: nil, giveLimit: 4, wantReplayable: true, wantNil: true},
		{name: "empty body", give: strings.NewReader(""), giveLimit: 4, wantReplayable: true},
		{name: "below the cap", give: strings.NewReader("abc"), giveLimit: 4, wantReplayable: true, wantBody: "abc"},
		{name: "at the cap", give: strings.NewReader("abcd"), giveLimit: 4, wantReplayable: true, wantBody: "abcd"},
		{name: "over the cap", give: strings.NewReader("abcde"), giveLimit: 4, wantReplayable: false, wantBody: "abcde"},
		{name: "far over the cap", give: strings.NewReader(strings.Repeat("x", 1000)), giveLimit: 4, wantBody: strings.Repeat("x", 1000)},
		{name: "read error", give: brokenReader("ab"), giveLimit: 4, wantBody: "ab", wantErr: errRead},
		{name: "read error past the cap", give: brokenReader("abcdefg"), giveLimit: 4, wantBody: "abcdefg", wantErr: errRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bufferBody(tt.give, tt.giveLimit)
			a := r.request(&transport.Request{Body: tt.give}, 1, "errown-attempt", "1")

			assert.Equal(t, tt.wantReplayable, r.replayable(), "replayable")
			require.Equal(t, tt.wantNil, a.Body == nil, "nil body")
			got, err := readAll(a.Body)
			assert.Equal(t, tt.wantBody, got, "body")
			assert.ErrorIs(t, err, tt.wantErr, "reading the body")
		})
	}
}

// readAll reads r, which may be nil.
func readAll(r io.Reader) (string, error) {
	if r == nil {
		return "", nil
	}
	b, err := io.ReadAll(r)
	return string(b), err
}

func TestReplayRequest(t *testing.T) {
	caller := transport.NewHeaders().With("X-Trace", "abc")
	give := &transport.Request{Service: "s", Procedure: "p", Headers: caller, Body: strings.NewReader("hello"), BodySize: 99}
	r := bufferBody(give.Body, 10)
	tests := []struct {
		giveAttempt int
		giveValue   string
		wantHeaders map[string]string
	}{
		{giveAttempt: 1, giveValue: "1", wantHeaders: map[string]string{"x-trace": "abc"}},
		{giveAttempt: 2, giveValue: "2", wantHeaders: map[string]string{"x-trace": "abc", "errown-attempt": "2"}},
		{giveAttempt: 3, giveValue: "3", wantHeaders: map[string]string{"x-trace": "abc", "errown-attempt": "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.giveValue, func(t *testing.T) {
			a := r.request(give, tt.giveAttempt, "errown-attempt", tt.giveValue)

			assert.NotSame(t, give, a, "request, want a copy of %+v", give)
			assert.Equal(t, "s", a.Service, "request = %+v, want a copy of %+v", a, give)
			assert.Equal(t, "p", a.Procedure, "request = %+v, want a copy of %+v", a, give)
			body, _ := readAll(a.Body)
			assert.Equal(t, "hello", body, "body")
			assert.Equal(t, 5, a.BodySize, "BodySize")
			assert.Equal(t, tt.wantHeaders, a.Headers.Items(), "headers")
		})
	}
	assert.Equal(t, map[string]string{"x-trace": "abc"}, caller.Items(), "caller headers, want them unchanged")
}

func TestHeadersWith(t *testing.T) {
	tests := []struct {
		name         string
		give         transport.Headers
		wantItems    map[string]string
		wantOriginal map[string]string
	}{
		{
			name:         "empty",
			give:         transport.NewHeaders(),
			wantItems:    map[string]string{"k": "v"},
			wantOriginal: map[string]string{"k": "v"},
		},
		{
			name:         "original case kept",
			give:         transport.NewHeaders().With("X-Trace", "abc"),
			wantItems:    map[string]string{"x-trace": "abc", "k": "v"},
			wantOriginal: map[string]string{"X-Trace": "abc", "k": "v"},
		},
		{
			name:         "the key alone",
			give:         transport.NewHeaders().With("k", "1"),
			wantItems:    map[string]string{"k": "v"},
			wantOriginal: map[string]string{"k": "v"},
		},
		{
			name:         "the key alone, in two cases",
			give:         transport.NewHeaders().With("K", "1").With("k", "2"),
			wantItems:    map[string]string{"k": "v"},
			wantOriginal: map[string]string{"k": "v"},
		},
		{
			name:         "replaces the key in any case",
			give:         transport.NewHeaders().With("K", "old").With("a", "b"),
			wantItems:    map[string]string{"a": "b", "k": "v"},
			wantOriginal: map[string]string{"a": "b", "k": "v"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.give.Items())

			got := headersWith(tt.give, "k", "v")

			assert.Equal(t, tt.wantItems, got.Items(), "items")
			assert.Equal(t, tt.wantOriginal, got.OriginalItems(), "original items")
			assert.Equal(t, before, tt.give.Items(), "given headers changed")
		})
	}
}

func TestHeadersWithCaseCollision(t *testing.T) {
	// Original keys differing only in case share one canonical entry, and
	// which original wins there is up to map order: the copy keeps the
	// canonical value whatever the order.
	give := transport.NewHeaders().With("Foo", "1").With("FOO", "2")

	for range 20 {
		got := headersWith(give, "k", "v")
		require.Equal(t, map[string]string{"foo": "2", "k": "v"}, got.Items(), "items")
	}
}

func TestReleaseWith(t *testing.T) {
	tests := []struct {
		name       string
		give       *transport.Response
		wantAtOnce bool // cancelled before the body is closed
	}{
		{name: "nil response", give: nil, wantAtOnce: true},
		{name: "no body", give: &transport.Response{}, wantAtOnce: true},
		{name: "body", give: &transport.Response{Body: io.NopCloser(strings.NewReader("x"))}, wantAtOnce: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			release.With(tt.give, cancel)
			assert.Equal(t, tt.wantAtOnce, ctx.Err() != nil, "cancelled at once")
			closeBody(tt.give)
			assert.Error(t, ctx.Err(), "not cancelled after the body was closed")
		})
	}
}

// closeBody closes res's body if it has one.
func closeBody(res *transport.Response) {
	if res != nil && res.Body != nil {
		_ = res.Body.Close()
	}
}

func TestReleaseWithoutCancel(t *testing.T) {
	body := io.NopCloser(strings.NewReader("x"))
	res := &transport.Response{Body: body}

	release.With(res, nil)

	assert.True(t, res.Body == body, "body = %v, want it untouched without a cancel func", res.Body)
}

func TestDiscard(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	body := outboundtest.NewBody(context.Background(), "x")

	discard(&transport.Response{Body: body}, cancel)
	discard(nil, nil) // nothing to do, no panic

	assert.True(t, body.Closed(), "body closed")
	assert.Error(t, ctx.Err(), "cancelled")
}

// partlyRead is a bytes.Reader over "skip:hello" with "skip:" already read.
func partlyRead() io.Reader {
	r := bytes.NewReader([]byte("skip:hello"))
	_, _ = r.Read(make([]byte, len("skip:")))
	return r
}

func TestMiddlewareReplaysRewindableBodiesInPlace(t *testing.T) {
	// Bodies yarpc's encodings build are not copied: the first attempt is
	// the caller's request itself, later ones read the same bytes again.
	tests := []struct {
		name         string
		give         func() io.Reader
		wantBodies   []string
		wantSizes    []int
		wantInPlace  bool // the first attempt is the caller's request
		wantCounters map[string]int64
	}{
		{
			name:        "bytes.Reader",
			give:        func() io.Reader { return bytes.NewReader([]byte("hello")) },
			wantBodies:  []string{"hello", "hello", "hello"},
			wantSizes:   []int{5, 5, 5},
			wantInPlace: true,
		},
		{
			name:        "bytes.Buffer",
			give:        func() io.Reader { return bytes.NewBufferString("hello") },
			wantBodies:  []string{"hello", "hello", "hello"},
			wantSizes:   []int{5, 5, 5},
			wantInPlace: true,
		},
		{
			name:        "bytes.Reader partly read: the rest is the body",
			give:        partlyRead,
			wantBodies:  []string{"hello", "hello", "hello"},
			wantSizes:   []int{5, 5, 5},
			wantInPlace: true,
		},
		{
			name:        "empty bytes.Buffer",
			give:        func() io.Reader { return new(bytes.Buffer) },
			wantBodies:  []string{"", "", ""},
			wantSizes:   []int{0, 0, 0},
			wantInPlace: true,
		},
		{
			name:         "bytes.Reader over maxBodyBytes: sent once, whole",
			give:         func() io.Reader { return bytes.NewReader([]byte("hello world")) },
			wantBodies:   []string{"hello world"},
			wantSizes:    []int{11},
			wantInPlace:  true,
			wantCounters: map[string]int64{"retry.denied+callee=callee,reason=body-too-large": 1},
		},
		{
			name:        "strings.Reader is copied",
			give:        func() io.Reader { return strings.NewReader("hello") },
			wantBodies:  []string{"hello", "hello", "hello"},
			wantSizes:   []int{5, 5, 5},
			wantInPlace: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scope := tally.NewTestScope("", nil)
			m := newMiddleware(t, retry.Config{MaxBodyBytes: 8, Policies: []retry.PolicyConfig{{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}}},
				newClock().option(), WithSinks(obs.Sinks{Scope: scope}))
			fake := newOutbound(fail(errUnavailable), fail(errUnavailable), succeed("ok"))
			var got []*transport.Request
			out := middleware.ApplyUnaryOutbound(fake, middleware.UnaryOutboundFunc(
				func(ctx context.Context, r *transport.Request, o transport.UnaryOutbound) (*transport.Response, error) {
					got = append(got, r)
					return o.Call(ctx, r)
				}))
			body := tt.give()
			give := &transport.Request{Service: "callee", Procedure: "get", Body: body, BodySize: body.(interface{ Len() int }).Len()}

			_, _ = m.Call(context.Background(), give, out)

			var bodies []string
			var sizes []int
			for _, s := range fake.Requests() {
				bodies = append(bodies, s.Body)
				sizes = append(sizes, s.BodySize)
			}
			assert.Equal(t, tt.wantBodies, bodies, "bodies sent")
			assert.Equal(t, tt.wantSizes, sizes, "body sizes sent")
			if assert.NotEmpty(t, got, "attempts") {
				assert.Equal(t, tt.wantInPlace, got[0] == give, "first attempt is the caller's request")
			}
			for i, r := range got[1:] {
				assert.NotSame(t, give, r, "attempt %d is the caller's request, want a copy", i+2)
			}
			const tooLarge = "retry.denied+callee=callee,reason=body-too-large"
			assert.Equal(t, tt.wantCounters[tooLarge], counters(scope)[tooLarge], "denied for body-too-large")
		})
	}
}

func TestMiddlewareReplaysWhileEarlierAttemptStillReads(t *testing.T) {
	// A transport may still read an attempt's body after the attempt
	// returned (net/http closes bodies in the background): later attempts
	// never share a reader, or a buffer being written, with it. Run with
	// -race.
	tests := []struct {
		name string
		give func([]byte) io.Reader
	}{
		{"bytes.Reader", func(b []byte) io.Reader { return bytes.NewReader(b) }},
		{"bytes.Buffer", func(b []byte) io.Reader { return bytes.NewBuffer(b) }},
		{"strings.Reader", func(b []byte) io.Reader { return strings.NewReader(string(b)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			give := bytes.Repeat([]byte("0123456789"), 1000)
			m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}), newClock().option())
			var lingering sync.WaitGroup
			var mu sync.Mutex
			var read []string
			attempt := 0
			out := middleware.ApplyUnaryOutbound(newOutbound(), middleware.UnaryOutboundFunc(
				func(_ context.Context, r *transport.Request, _ transport.UnaryOutbound) (*transport.Response, error) {
					attempt++
					lingering.Add(1)
					go func() { // reads the body after the attempt returned
						defer lingering.Done()
						var b []byte
						p := make([]byte, 7)
						for {
							n, err := r.Body.Read(p)
							b = append(b, p[:n]...)
							if err != nil {
								break
							}
						}
						mu.Lock()
						read = append(read, string(b))
						mu.Unlock()
					}()
					if attempt < 3 {
						return nil, errUnavailable
					}
					return &transport.Response{}, nil
				}))

			_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get", Body: tt.give(give)}, out)
			lingering.Wait()

			require.NoError(t, err, "Call")
			require.Len(t, read, 3, "attempts read")
			for i, b := range read {
				assert.Equal(t, string(give), b, "attempt %d read %d bytes, want the %d given", i+1, len(b), len(give))
			}
		})
	}
}

func TestMiddlewareRetriesAsTheCallerAsked(t *testing.T) {
	// The first attempt may be the caller's request itself: what
	// middleware below does to it does not leak into the retries.
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}), newClock().option())
	fake := newOutbound(fail(errUnavailable), succeed("ok"))
	var keys []string
	out := middleware.ApplyUnaryOutbound(fake, middleware.UnaryOutboundFunc(
		func(ctx context.Context, r *transport.Request, o transport.UnaryOutbound) (*transport.Response, error) {
			keys = append(keys, r.ShardKey)
			r.ShardKey = "changed below"
			return o.Call(ctx, r)
		}))
	give := &transport.Request{Service: "callee", Procedure: "get", ShardKey: "k", Body: bytes.NewReader([]byte("hello"))}

	_, err := m.Call(context.Background(), give, out)
	require.NoError(t, err, "Call")

	assert.Equal(t, []string{"k", "k"}, keys, "shard keys sent")
}

var _requestSink *transport.Request

func TestRetryRequestAllocations(t *testing.T) {
	// A retry's request is the caller's copied with its own body reader,
	// in one allocation, and its own headers: nothing else is allocated
	// for it.
	body := bufferBody(bytes.NewReader([]byte("hello")), 100)
	orig := &transport.Request{Service: "s", Procedure: "p", Body: bytes.NewReader([]byte("hello")), Headers: transport.NewHeaders().With("x-trace", "abc")}
	got := testing.AllocsPerRun(100, func() { _requestSink = body.request(orig, 2, "errown-attempt", "2") })
	headers := testing.AllocsPerRun(100, func() {
		_requestSink = &transport.Request{Headers: transport.NewHeadersWithCapacity(2).With("x-trace", "abc").With("errown-attempt", "2")}
	})
	assert.Equal(t, headers, got, "allocations of a retry's request, want those of its headers and one for the request and its reader")
	b, err := io.ReadAll(body.request(orig, 2, "errown-attempt", "2").Body)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))
}
