package errowntest_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// answer is what the callee below the recorder answers every call with.
type answer struct {
	res *transport.Response
	err error
}

// withHeaders returns a response with the given headers, key and value
// alternating.
func withHeaders(kv ...string) *transport.Response {
	h := transport.NewHeaders()
	for i := 0; i+1 < len(kv); i += 2 {
		h = h.With(kv[i], kv[i+1])
	}
	return &transport.Response{Headers: h}
}

func TestRecorderCall(t *testing.T) {
	errDown := yarpcerrors.UnavailableErrorf("down")
	tests := []struct {
		name       string
		giveConfig errowntest.RecorderConfig
		giveReq    transport.Headers
		giveOut    answer
		want       errowntest.Attempt
	}{
		{
			name:    "first attempt, success",
			giveOut: answer{res: &transport.Response{}},
			want:    errowntest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 1, Code: yarpcerrors.CodeOK},
		},
		{
			name:    "second attempt, claimed",
			giveReq: transport.NewHeaders().With("errown-attempt", "2"),
			giveOut: answer{res: withHeaders("errown-claim", "claimed"), err: errDown},
			want:    errowntest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 2, Code: yarpcerrors.CodeUnavailable, Claim: "claimed"},
		},
		{
			name:    "garbage attempt header counts as the first",
			giveReq: transport.NewHeaders().With("errown-attempt", "-3"),
			giveOut: answer{err: errDown},
			want:    errowntest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 1, Code: yarpcerrors.CodeUnavailable},
		},
		{
			name:    "claim recorded as received",
			giveOut: answer{res: withHeaders("errown-claim", "Garbage"), err: errDown},
			want:    errowntest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 1, Code: yarpcerrors.CodeUnavailable, Claim: "Garbage"},
		},
		{
			name:    "plain error is unknown",
			giveOut: answer{err: errors.New("boom")},
			want:    errowntest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 1, Code: yarpcerrors.CodeUnknown},
		},
		{
			name:       "renamed headers",
			giveConfig: errowntest.RecorderConfig{ClaimHeader: "x-claim", AttemptHeader: "x-attempt"},
			giveReq:    transport.NewHeaders().With("errown-attempt", "2").With("X-Attempt", "3"),
			giveOut:    answer{res: withHeaders("x-claim", "unclaimed", "errown-claim", "claimed"), err: errDown},
			want:       errowntest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 3, Code: yarpcerrors.CodeUnavailable, Claim: "unclaimed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := errowntest.NewRecorder(tt.giveConfig)
			req := &transport.Request{Caller: "caller", Service: "callee", Procedure: "proc", Headers: tt.giveReq}

			out := outboundtest.New(outboundtest.Answer(tt.giveOut.res, tt.giveOut.err))
			res, err := r.Call(context.Background(), req, out)

			assert.Same(t, tt.giveOut.res, res, "Call must return the outbound's response")
			assert.True(t, err == tt.giveOut.err, "Call returned error %v; want the outbound's %v", err, tt.giveOut.err)
			assert.Equal(t, []errowntest.Attempt{tt.want}, r.Attempts(), "recorded")
			assert.Equal(t, 1, out.Calls(), "the call went through, once")
		})
	}
}

func TestRecorderEdgeAndReset(t *testing.T) {
	r := errowntest.NewRecorder(errowntest.RecorderConfig{})
	out := outboundtest.New(outboundtest.Answer(&transport.Response{}, nil))
	var wg sync.WaitGroup
	for _, e := range [][2]string{{"a1", "b1"}, {"a1", "c1"}, {"b1", "c1"}, {"a1", "b1"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.Call(context.Background(), &transport.Request{Caller: e[0], Service: e[1]}, out)
		}()
	}
	wg.Wait()

	assert.Len(t, r.Attempts(), 4, "recorded attempts")
	assert.Equal(t, 4, out.Calls(), "calls that went through")
	want := errowntest.Attempt{Caller: "a1", Service: "b1", Attempt: 1, Code: yarpcerrors.CodeOK}
	assert.Equal(t, []errowntest.Attempt{want, want}, r.Edge("a1", "b1"), "Edge(a1, b1)")
	assert.Nil(t, r.Edge("c1", "a1"), "Edge(c1, a1)")
	r.Reset()
	assert.Empty(t, r.Attempts(), "after Reset")
}

func TestAttemptString(t *testing.T) {
	tests := []struct {
		give errowntest.Attempt
		want string
	}{
		{
			give: errowntest.Attempt{Caller: "a1", Service: "b1", Attempt: 2, Code: yarpcerrors.CodeUnavailable, Claim: "claimed"},
			want: "a1->b1#2 unavailable claimed",
		},
		{
			give: errowntest.Attempt{Caller: "a1", Service: "b1", Attempt: 1, Code: yarpcerrors.CodeOK},
			want: "a1->b1#1 ok -",
		},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.String(), "%#v.String()", tt.give)
	}
}
