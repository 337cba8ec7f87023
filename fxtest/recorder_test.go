package fxtest_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/errown/errown/fxtest"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// fakeOutbound answers every call with res and err.
type fakeOutbound struct {
	res *transport.Response
	err error
}

var _ transport.UnaryOutbound = fakeOutbound{}

func (fakeOutbound) Transports() []transport.Transport { return nil }
func (fakeOutbound) Start() error                      { return nil }
func (fakeOutbound) Stop() error                       { return nil }
func (fakeOutbound) IsRunning() bool                   { return true }

func (o fakeOutbound) Call(context.Context, *transport.Request) (*transport.Response, error) {
	return o.res, o.err
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
		giveConfig fxtest.RecorderConfig
		giveReq    transport.Headers
		giveOut    fakeOutbound
		want       fxtest.Attempt
	}{
		{
			name:    "first attempt, success",
			giveOut: fakeOutbound{res: &transport.Response{}},
			want:    fxtest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 1, Code: yarpcerrors.CodeOK},
		},
		{
			name:    "second attempt, claimed",
			giveReq: transport.NewHeaders().With("errown-attempt", "2"),
			giveOut: fakeOutbound{res: withHeaders("errown-claim", "claimed"), err: errDown},
			want:    fxtest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 2, Code: yarpcerrors.CodeUnavailable, Claim: "claimed"},
		},
		{
			name:    "garbage attempt header counts as the first",
			giveReq: transport.NewHeaders().With("errown-attempt", "-3"),
			giveOut: fakeOutbound{err: errDown},
			want:    fxtest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 1, Code: yarpcerrors.CodeUnavailable},
		},
		{
			name:    "claim recorded as received",
			giveOut: fakeOutbound{res: withHeaders("errown-claim", "Garbage"), err: errDown},
			want:    fxtest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 1, Code: yarpcerrors.CodeUnavailable, Claim: "Garbage"},
		},
		{
			name:    "plain error is unknown",
			giveOut: fakeOutbound{err: errors.New("boom")},
			want:    fxtest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 1, Code: yarpcerrors.CodeUnknown},
		},
		{
			name:       "renamed headers",
			giveConfig: fxtest.RecorderConfig{ClaimHeader: "x-claim", AttemptHeader: "x-attempt"},
			giveReq:    transport.NewHeaders().With("errown-attempt", "2").With("X-Attempt", "3"),
			giveOut:    fakeOutbound{res: withHeaders("x-claim", "unclaimed", "errown-claim", "claimed"), err: errDown},
			want:       fxtest.Attempt{Caller: "caller", Service: "callee", Procedure: "proc", Attempt: 3, Code: yarpcerrors.CodeUnavailable, Claim: "unclaimed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fxtest.NewRecorder(tt.giveConfig)
			req := &transport.Request{Caller: "caller", Service: "callee", Procedure: "proc", Headers: tt.giveReq}

			res, err := r.Call(context.Background(), req, tt.giveOut)

			if res != tt.giveOut.res || err != tt.giveOut.err {
				t.Errorf("Call returned %v, %v; want the outbound's %v, %v", res, err, tt.giveOut.res, tt.giveOut.err)
			}
			if got := r.Attempts(); !reflect.DeepEqual(got, []fxtest.Attempt{tt.want}) {
				t.Errorf("recorded %v, want [%v]", got, tt.want)
			}
		})
	}
}

func TestRecorderEdgeAndReset(t *testing.T) {
	r := fxtest.NewRecorder(fxtest.RecorderConfig{})
	out := fakeOutbound{res: &transport.Response{}}
	var wg sync.WaitGroup
	for _, e := range [][2]string{{"a1", "b1"}, {"a1", "c1"}, {"b1", "c1"}, {"a1", "b1"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.Call(context.Background(), &transport.Request{Caller: e[0], Service: e[1]}, out)
		}()
	}
	wg.Wait()

	if got := len(r.Attempts()); got != 4 {
		t.Errorf("recorded %d attempts, want 4", got)
	}
	want := fxtest.Attempt{Caller: "a1", Service: "b1", Attempt: 1, Code: yarpcerrors.CodeOK}
	if got := r.Edge("a1", "b1"); !reflect.DeepEqual(got, []fxtest.Attempt{want, want}) {
		t.Errorf("Edge(a1, b1) = %v, want two of %v", got, want)
	}
	if got := r.Edge("c1", "a1"); got != nil {
		t.Errorf("Edge(c1, a1) = %v, want nil", got)
	}
	r.Reset()
	if got := r.Attempts(); len(got) != 0 {
		t.Errorf("after Reset: %v, want none", got)
	}
}

func TestAttemptString(t *testing.T) {
	tests := []struct {
		give fxtest.Attempt
		want string
	}{
		{
			give: fxtest.Attempt{Caller: "a1", Service: "b1", Attempt: 2, Code: yarpcerrors.CodeUnavailable, Claim: "claimed"},
			want: "a1->b1#2 unavailable claimed",
		},
		{
			give: fxtest.Attempt{Caller: "a1", Service: "b1", Attempt: 1, Code: yarpcerrors.CodeOK},
			want: "a1->b1#1 ok -",
		},
	}
	for _, tt := range tests {
		if got := tt.give.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.give, got, tt.want)
		}
	}
}
