package errowntest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	testing.TB // what a Mesh does not call
	errors     []string
	cleanups   []func()
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
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			mesh := errowntest.NewMesh(t)
			b := mesh.Start(errowntest.ServiceConfig{Name: "svc-b", Transport: tr})
			a := mesh.Start(errowntest.ServiceConfig{Name: "svc-a", Transport: tr, Errown: retryTo("svc-b"),
				Callees: []string{"svc-b"}, Handler: errowntest.Forward})

			reply := mesh.Call(context.Background(), "svc-a", []byte("hello"))

			assert.NoError(t, reply.Err, "reply %+v", reply)
			assert.Equal(t, "hello", string(reply.Body), "reply body")
			assert.Empty(t, reply.Claim, "reply claim")
			assert.Equal(t, yarpcerrors.CodeOK, reply.Code(), "reply code")
			assert.Equal(t, int64(1), a.Served(), "a served")
			assert.Equal(t, int64(1), b.Served(), "b served")
			assert.Equal(t, []string{"svc-a->svc-b#1 ok -", "outside->svc-a#1 ok -"}, attempts(mesh), "attempts")
			assert.NotEmpty(t, a.Addr(), "a.Addr()")
			assert.NotNil(t, a.Dispatcher(), "a.Dispatcher()")
			assert.NotNil(t, a.Middleware(), "a.Middleware()")
			assert.Nil(t, b.Middleware(), "b.Middleware()")
			assert.Same(t, a, mesh.Service("svc-a"), "Mesh.Service does not find what was started")
			assert.Nil(t, mesh.Service("svc-x"), "Mesh.Service finds what was not started")
		})
	}
}

func attempts(mesh *errowntest.Mesh) []string {
	var s []string
	for _, a := range mesh.Recorder().Attempts() {
		s = append(s, a.String())
	}
	return s
}

// Each hop over its own transport: a (HTTP) → b (gRPC) → c (TChannel),
// c failing.
func TestMeshMixedTransports(t *testing.T) {
	mesh := errowntest.NewMesh(t)
	c := mesh.Start(errowntest.ServiceConfig{Name: "svc-c", Transport: errowntest.TChannel, Errown: retryTo(),
		Handler: errowntest.Fail(yarpcerrors.UnavailableErrorf("c is down"))})
	mesh.Start(errowntest.ServiceConfig{Name: "svc-b", Transport: errowntest.GRPC, Errown: retryTo("svc-c"),
		Callees: []string{"svc-c"}, Handler: errowntest.Forward})
	mesh.Start(errowntest.ServiceConfig{Name: "svc-a", Transport: errowntest.HTTP, Errown: retryTo("svc-b"),
		Callees: []string{"svc-b"}, Handler: errowntest.Forward})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	assert.Equal(t, yarpcerrors.CodeUnavailable, reply.Code(), "reply %+v", reply)
	assert.Equal(t, "unclaimed", reply.Claim, "reply claim")
	assert.Equal(t, "unclaimed", reply.Headers["errown-claim"], "reply errown-claim header")
	want := []string{
		"svc-b->svc-c#1 unavailable claimed",
		"svc-b->svc-c#2 unavailable claimed",
		"svc-a->svc-b#1 unavailable unclaimed",
		"outside->svc-a#1 unavailable unclaimed",
	}
	assert.Equal(t, want, attempts(mesh), "attempts")
	assert.Equal(t, int64(2), c.Served(), "c served")
}

func TestMeshStartInvalid(t *testing.T) {
	tests := []struct {
		name string
		give errowntest.ServiceConfig
		want string
	}{
		{name: "no name", give: errowntest.ServiceConfig{Transport: errowntest.HTTP}, want: "a name is required"},
		{name: "short name", give: errowntest.ServiceConfig{Name: "x", Transport: errowntest.HTTP}, want: "at least two characters"},
		{name: "duplicate", give: errowntest.ServiceConfig{Name: "svc-b", Transport: errowntest.HTTP}, want: "already started"},
		{name: "no transport", give: errowntest.ServiceConfig{Name: "svc-a"}, want: `unknown transport ""`},
		{name: "unknown transport", give: errowntest.ServiceConfig{Name: "svc-a", Transport: "smoke"}, want: `unknown transport "smoke"`},
		{name: "unknown callee", give: errowntest.ServiceConfig{Name: "svc-a", Transport: errowntest.GRPC, Callees: []string{"svc-z"}}, want: `callee "svc-z" is not started`},
		{name: "bad errown config", give: errowntest.ServiceConfig{Name: "svc-a", Transport: errowntest.HTTP, Errown: &errown.Config{InboundConfig: errown.InboundConfig{UnknownEdges: "maybe"}}}, want: "unknownEdges"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeTB{}
			defer ft.cleanup()
			mesh := errowntest.NewMesh(ft)
			mesh.Start(errowntest.ServiceConfig{Name: "svc-b", Transport: errowntest.HTTP})

			failed := ft.run(func() { mesh.Start(tt.give) })

			assert.True(t, failed, "Start must call FailNow")
			require.Len(t, ft.errors, 1, "reported errors")
			assert.Contains(t, ft.errors[0], tt.want, "reported error")
		})
	}
}

// Start registers two cleanups per service, the service's own (its
// dispatcher, then its errown) and the outside caller's; run in reverse
// they stop everything cleanly.
func TestMeshCleanup(t *testing.T) {
	ft := &fakeTB{}
	mesh := errowntest.NewMesh(ft)
	mesh.Start(errowntest.ServiceConfig{Name: "svc-b", Transport: errowntest.TChannel})
	mesh.Start(errowntest.ServiceConfig{Name: "svc-a", Transport: errowntest.GRPC, Errown: &errown.Config{}, Callees: []string{"svc-b"}, Handler: errowntest.Forward})
	require.NoError(t, mesh.Call(context.Background(), "svc-a", []byte("x")).Err, "call")
	assert.Len(t, ft.cleanups, 4, "cleanups")
	ft.cleanup()
	assert.Empty(t, ft.errors, "stopping")
}

func TestMeshUnknownService(t *testing.T) {
	ft := &fakeTB{}
	mesh := errowntest.NewMesh(ft)

	reply := mesh.Call(context.Background(), "svc-x", nil)
	failed := ft.run(func() { mesh.OutboundConfig("svc-x") })

	assert.Equal(t, yarpcerrors.CodeInvalidArgument, reply.Code(), "Call: got %v", reply.Err)
	assert.True(t, failed, "OutboundConfig must call FailNow")
	assert.Len(t, ft.errors, 1, "OutboundConfig: reported errors")
}

func TestMeshRenamedHeaders(t *testing.T) {
	mesh := errowntest.NewMesh(t, errowntest.WithRecorderConfig(errowntest.RecorderConfig{ClaimHeader: "x-claim", AttemptHeader: "x-attempt"}))
	cfg := &errown.Config{Headers: ownership.Headers{Claim: "x-claim", Attempt: "x-attempt"}}
	mesh.Start(errowntest.ServiceConfig{Name: "svc-a", Transport: errowntest.HTTP, Errown: cfg,
		Handler: errowntest.Fail(yarpcerrors.InternalErrorf("oops"))})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	assert.Equal(t, "claimed", reply.Claim, "claim (headers %v)", reply.Headers)
}

func TestClientCallsOnlyCallees(t *testing.T) {
	mesh := errowntest.NewMesh(t)
	mesh.Start(errowntest.ServiceConfig{Name: "svc-b", Transport: errowntest.HTTP})
	mesh.Start(errowntest.ServiceConfig{Name: "svc-a", Transport: errowntest.HTTP, Callees: []string{"svc-b"},
		Handler: func(ctx context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
			if !reflect.DeepEqual(c.Callees(), []string{"svc-b"}) {
				return nil, yarpcerrors.InternalErrorf("svc-a's client calls %v", c.Callees())
			}
			return c.Call(ctx, "svc-c", body)
		}})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	assert.Equal(t, yarpcerrors.CodeInvalidArgument, reply.Code(), "got %v", reply.Err)
	assert.ErrorContains(t, reply.Err, `"svc-a" does not call "svc-c"`)
}

func TestFailCallsEveryCallee(t *testing.T) {
	mesh := errowntest.NewMesh(t)
	c := mesh.Start(errowntest.ServiceConfig{Name: "svc-c", Transport: errowntest.HTTP, Handler: errowntest.Fail(yarpcerrors.AbortedErrorf("c"))})
	b := mesh.Start(errowntest.ServiceConfig{Name: "svc-b", Transport: errowntest.HTTP})
	mesh.Start(errowntest.ServiceConfig{Name: "svc-a", Transport: errowntest.HTTP, Callees: []string{"svc-c", "svc-b"},
		Handler: errowntest.Fail(yarpcerrors.DataLossErrorf("a"))})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	assert.Equal(t, yarpcerrors.CodeDataLoss, reply.Code(), "got %v", reply.Err)
	assert.Equal(t, int64(1), c.Served(), "c served")
	assert.Equal(t, int64(1), b.Served(), "b served")
	assert.Panics(t, func() { errowntest.Fail(nil) }, "Fail(nil)")
}

func TestForwardStopsAtFirstError(t *testing.T) {
	mesh := errowntest.NewMesh(t)
	c := mesh.Start(errowntest.ServiceConfig{Name: "svc-c", Transport: errowntest.GRPC})
	b := mesh.Start(errowntest.ServiceConfig{Name: "svc-b", Transport: errowntest.GRPC, Handler: errowntest.Fail(yarpcerrors.NotFoundErrorf("b"))})
	mesh.Start(errowntest.ServiceConfig{Name: "svc-a", Transport: errowntest.GRPC, Callees: []string{"svc-b", "svc-c"}, Handler: errowntest.Forward})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	assert.Equal(t, yarpcerrors.CodeNotFound, reply.Code(), "got %v", reply.Err)
	assert.Equal(t, int64(1), b.Served(), "b served once")
	assert.Equal(t, int64(0), c.Served(), "c served never")
}

// errowntest's transport names are the ones the mesh's nodes start on.
func TestTransportsAreTestmesh(t *testing.T) {
	assert.Equal(t, testmesh.Transports, _transports)
}

// _transports is every transport a Mesh supports.
var _transports = []string{errowntest.HTTP, errowntest.GRPC, errowntest.TChannel}
