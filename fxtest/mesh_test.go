package fxtest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/fxtest"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc/yarpcerrors"
)

// retryTo is an errown config retrying each callee once, with no budget
// or backoff to speak of.
func retryTo(callees ...string) *errown.Config {
	cfg := &errown.Config{}
	cfg.Retry.Budget.Ratio = 1
	for _, c := range callees {
		cfg.Retry.Policies = append(cfg.Retry.Policies, retry.PolicyConfig{
			Service:        c,
			MaxAttempts:    2,
			InitialBackoff: time.Millisecond,
			MaxBackoff:     time.Millisecond,
			Idempotent:     new(true),
		})
	}
	return cfg
}

// fakeTB records what a Mesh reports; FailNow panics with errFailNow,
// which run recovers.
type fakeTB struct {
	errors   []string
	cleanups []func()
}

var errFailNow = errors.New("FailNow")

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) FailNow()          { panic(errFailNow) }

func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

// run calls fn and reports whether it called FailNow.
func (f *fakeTB) run(fn func()) (failed bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != errFailNow {
				panic(r)
			}
			failed = true
		}
	}()
	fn()
	return false
}

// cleanup runs the cleanups last in, first out, as testing does.
func (f *fakeTB) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	f.cleanups = nil
}

func TestMeshEcho(t *testing.T) {
	for _, tr := range fxtest.Transports {
		t.Run(tr, func(t *testing.T) {
			mesh := fxtest.NewMesh(t)
			b := mesh.Start(fxtest.ServiceConfig{Name: "svc-b", Transport: tr})
			a := mesh.Start(fxtest.ServiceConfig{Name: "svc-a", Transport: tr, Errown: retryTo("svc-b"),
				Callees: []string{"svc-b"}, Handler: fxtest.Forward})

			reply := mesh.Call(context.Background(), "svc-a", []byte("hello"))

			if reply.Err != nil || string(reply.Body) != "hello" || reply.Claim != "" || reply.Code() != yarpcerrors.CodeOK {
				t.Errorf("got %+v, want body hello, no error, no claim", reply)
			}
			if a.Served() != 1 || b.Served() != 1 {
				t.Errorf("served a=%d b=%d, want 1 each", a.Served(), b.Served())
			}
			want := []string{"svc-a->svc-b#1 ok -", "outside->svc-a#1 ok -"}
			if got := attempts(mesh); !reflect.DeepEqual(got, want) {
				t.Errorf("attempts %v, want %v", got, want)
			}
			if a.Name() != "svc-a" || a.Transport() != tr || a.Addr() == "" || a.Dispatcher() == nil || a.Middleware() == nil || b.Middleware() != nil {
				t.Errorf("service accessors: %q %q %q %v %v %v", a.Name(), a.Transport(), a.Addr(), a.Dispatcher(), a.Middleware(), b.Middleware())
			}
			if mesh.Service("svc-a") != a || mesh.Service("svc-x") != nil {
				t.Error("Mesh.Service does not find what was started")
			}
		})
	}
}

func attempts(mesh *fxtest.Mesh) []string {
	var s []string
	for _, a := range mesh.Recorder().Attempts() {
		s = append(s, a.String())
	}
	return s
}

// Each hop over its own transport: a (HTTP) → b (gRPC) → c (TChannel),
// c failing.
func TestMeshMixedTransports(t *testing.T) {
	mesh := fxtest.NewMesh(t)
	c := mesh.Start(fxtest.ServiceConfig{Name: "svc-c", Transport: fxtest.TChannel, Errown: retryTo(),
		Handler: fxtest.Fail(yarpcerrors.UnavailableErrorf("c is down"))})
	mesh.Start(fxtest.ServiceConfig{Name: "svc-b", Transport: fxtest.GRPC, Errown: retryTo("svc-c"),
		Callees: []string{"svc-c"}, Handler: fxtest.Forward})
	mesh.Start(fxtest.ServiceConfig{Name: "svc-a", Transport: fxtest.HTTP, Errown: retryTo("svc-b"),
		Callees: []string{"svc-b"}, Handler: fxtest.Forward})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	if reply.Code() != yarpcerrors.CodeUnavailable || reply.Claim != "unclaimed" || reply.Headers["errown-claim"] != "unclaimed" {
		t.Errorf("got %+v, want unavailable, unclaimed", reply)
	}
	want := []string{
		"svc-b->svc-c#1 unavailable claimed",
		"svc-b->svc-c#2 unavailable claimed",
		"svc-a->svc-b#1 unavailable unclaimed",
		"outside->svc-a#1 unavailable unclaimed",
	}
	if got := attempts(mesh); !reflect.DeepEqual(got, want) {
		t.Errorf("attempts\n got %v\nwant %v", got, want)
	}
	if c.Served() != 2 {
		t.Errorf("c served %d, want 2", c.Served())
	}
}

func TestMeshStartInvalid(t *testing.T) {
	tests := []struct {
		name string
		give fxtest.ServiceConfig
		want string
	}{
		{name: "no name", give: fxtest.ServiceConfig{Transport: fxtest.HTTP}, want: "a name is required"},
		{name: "short name", give: fxtest.ServiceConfig{Name: "x", Transport: fxtest.HTTP}, want: "at least two characters"},
		{name: "duplicate", give: fxtest.ServiceConfig{Name: "svc-b", Transport: fxtest.HTTP}, want: "already started"},
		{name: "no transport", give: fxtest.ServiceConfig{Name: "svc-a"}, want: `unknown transport ""`},
		{name: "unknown transport", give: fxtest.ServiceConfig{Name: "svc-a", Transport: "smoke"}, want: `unknown transport "smoke"`},
		{name: "unknown callee", give: fxtest.ServiceConfig{Name: "svc-a", Transport: fxtest.GRPC, Callees: []string{"svc-z"}}, want: `callee "svc-z" is not started`},
		{name: "bad errown config", give: fxtest.ServiceConfig{Name: "svc-a", Transport: fxtest.HTTP, Errown: &errown.Config{UnknownEdges: "maybe"}}, want: "unknownEdges"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeTB{}
			defer ft.cleanup()
			mesh := fxtest.NewMesh(ft)
			mesh.Start(fxtest.ServiceConfig{Name: "svc-b", Transport: fxtest.HTTP})

			failed := ft.run(func() { mesh.Start(tt.give) })

			if !failed || len(ft.errors) != 1 || !strings.Contains(ft.errors[0], tt.want) {
				t.Errorf("failed=%v errors=%q, want a failure mentioning %q", failed, ft.errors, tt.want)
			}
		})
	}
}

// Start registers two cleanups per service, its dispatcher's and the
// outside caller's, and one more with errown; run in reverse they stop
// everything cleanly.
func TestMeshCleanup(t *testing.T) {
	ft := &fakeTB{}
	mesh := fxtest.NewMesh(ft)
	mesh.Start(fxtest.ServiceConfig{Name: "svc-b", Transport: fxtest.TChannel})
	mesh.Start(fxtest.ServiceConfig{Name: "svc-a", Transport: fxtest.GRPC, Errown: &errown.Config{}, Callees: []string{"svc-b"}, Handler: fxtest.Forward})
	if reply := mesh.Call(context.Background(), "svc-a", []byte("x")); reply.Err != nil {
		t.Fatalf("call: %v", reply.Err)
	}
	if got := len(ft.cleanups); got != 5 {
		t.Errorf("%d cleanups, want 5", got)
	}
	ft.cleanup()
	if len(ft.errors) != 0 {
		t.Errorf("stopping: %q", ft.errors)
	}
}

func TestMeshUnknownService(t *testing.T) {
	ft := &fakeTB{}
	mesh := fxtest.NewMesh(ft)

	reply := mesh.Call(context.Background(), "svc-x", nil)
	failed := ft.run(func() { mesh.OutboundConfig("svc-x") })

	if reply.Code() != yarpcerrors.CodeInvalidArgument {
		t.Errorf("Call: got %v, want invalid-argument", reply.Err)
	}
	if !failed || len(ft.errors) != 1 {
		t.Errorf("OutboundConfig: failed=%v errors=%q, want one failure", failed, ft.errors)
	}
}

func TestMeshRenamedHeaders(t *testing.T) {
	mesh := fxtest.NewMesh(t, fxtest.WithRecorderConfig(fxtest.RecorderConfig{ClaimHeader: "x-claim", AttemptHeader: "x-attempt"}))
	cfg := &errown.Config{Headers: ownership.Headers{Claim: "x-claim", Attempt: "x-attempt"}}
	mesh.Start(fxtest.ServiceConfig{Name: "svc-a", Transport: fxtest.HTTP, Errown: cfg,
		Handler: fxtest.Fail(yarpcerrors.InternalErrorf("oops"))})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	if reply.Claim != "claimed" {
		t.Errorf("claim %q (headers %v), want claimed", reply.Claim, reply.Headers)
	}
}

func TestClientCallsOnlyCallees(t *testing.T) {
	mesh := fxtest.NewMesh(t)
	mesh.Start(fxtest.ServiceConfig{Name: "svc-b", Transport: fxtest.HTTP})
	mesh.Start(fxtest.ServiceConfig{Name: "svc-a", Transport: fxtest.HTTP, Callees: []string{"svc-b"},
		Handler: func(ctx context.Context, c *fxtest.Client, body []byte) ([]byte, error) {
			if c.Service() != "svc-a" || !reflect.DeepEqual(c.Callees(), []string{"svc-b"}) {
				return nil, yarpcerrors.InternalErrorf("client of %q calls %v", c.Service(), c.Callees())
			}
			return c.Call(ctx, "svc-c", body)
		}})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	if reply.Code() != yarpcerrors.CodeInvalidArgument || !strings.Contains(reply.Err.Error(), `"svc-a" does not call "svc-c"`) {
		t.Errorf("got %v, want invalid-argument about svc-c", reply.Err)
	}
}

func TestFailCallsEveryCallee(t *testing.T) {
	mesh := fxtest.NewMesh(t)
	c := mesh.Start(fxtest.ServiceConfig{Name: "svc-c", Transport: fxtest.HTTP, Handler: fxtest.Fail(yarpcerrors.AbortedErrorf("c"))})
	b := mesh.Start(fxtest.ServiceConfig{Name: "svc-b", Transport: fxtest.HTTP})
	mesh.Start(fxtest.ServiceConfig{Name: "svc-a", Transport: fxtest.HTTP, Callees: []string{"svc-c", "svc-b"},
		Handler: fxtest.Fail(yarpcerrors.DataLossErrorf("a"))})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	if reply.Code() != yarpcerrors.CodeDataLoss || c.Served() != 1 || b.Served() != 1 {
		t.Errorf("got %v, served c=%d b=%d; want data-loss, 1 each", reply.Err, c.Served(), b.Served())
	}
	defer func() {
		if recover() == nil {
			t.Error("Fail(nil) did not panic")
		}
	}()
	fxtest.Fail(nil)
}

func TestForwardStopsAtFirstError(t *testing.T) {
	mesh := fxtest.NewMesh(t)
	c := mesh.Start(fxtest.ServiceConfig{Name: "svc-c", Transport: fxtest.GRPC})
	b := mesh.Start(fxtest.ServiceConfig{Name: "svc-b", Transport: fxtest.GRPC, Handler: fxtest.Fail(yarpcerrors.NotFoundErrorf("b"))})
	mesh.Start(fxtest.ServiceConfig{Name: "svc-a", Transport: fxtest.GRPC, Callees: []string{"svc-b", "svc-c"}, Handler: fxtest.Forward})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	if reply.Code() != yarpcerrors.CodeNotFound || b.Served() != 1 || c.Served() != 0 {
		t.Errorf("got %v, served b=%d c=%d; want not-found, b once, c never", reply.Err, b.Served(), c.Served())
	}
}
