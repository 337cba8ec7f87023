package e2e_test

import (
	"context"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/retry"
	"github.com/errown/errown/retrypeer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// _peerRequests is how many requests the peer tests send B: a round-robin
// list of three sends a first attempt to the bad instance at least once
// in three.
const _peerRequests = 6

// peerMesh starts B → C, C three instances behind yarpc's round-robin
// list wrapped by retrypeer, the first failing every call, B traced by
// ts; it returns B, the bad instance's host:port and a client of B.
func peerMesh(t *testing.T, ts *traces) (*testmesh.Node, string, raw.Client) {
	t.Helper()
	stop := func(n *testmesh.Node) { t.Cleanup(func() { assert.NoError(t, n.Stop(), "stop %s", n.Name()) }) }
	addrs := make([]string, 0, 3)
	for i := range 3 {
		handler := func(context.Context, []byte) ([]byte, error) { return []byte("ok"), nil }
		if i == 0 {
			handler = func(context.Context, []byte) ([]byte, error) {
				return nil, yarpcerrors.UnavailableErrorf("bad instance")
			}
		}
		c, err := testmesh.Start(testmesh.Config{Name: _c, Kind: testmesh.HTTP, Errown: &errown.Config{},
			Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
				d.Register(raw.Procedure("call", handler))
				return nil
			}})
		require.NoError(t, err, "start C %d", i)
		stop(c)
		addrs = append(addrs, c.Addr())
	}
	cfg := &errown.Config{}
	cfg.Retry.Policies = []retry.PolicyConfig{{Service: _c, MaxAttempts: 2, Idempotent: new(true)}}
	b, err := testmesh.Start(testmesh.Config{
		Name: _b, Kind: testmesh.HTTP, Errown: cfg,
		Transport: testmesh.TransportOptions{Tracer: ts.bridge(_b)},
		Callees: []testmesh.Callee{{Name: _c, Kind: testmesh.HTTP, Addrs: addrs,
			Chooser: func(c peer.Chooser) peer.Chooser { return retrypeer.New(c) }}},
		Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			client := raw.New(d.ClientConfig(_c))
			d.Register(raw.Procedure("call", func(ctx context.Context, body []byte) ([]byte, error) {
				return client.Call(ctx, "call", body)
			}))
			return nil
		},
	})
	require.NoError(t, err, "start B")
	stop(b)
	client, err := testmesh.NewClient("peer-client", testmesh.TransportOptions{}, nil,
		testmesh.Callee{Name: _b, Kind: testmesh.HTTP, Addr: b.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, client.Stop()) })
	return b, addrs[0], raw.New(client.ClientConfig(_b))
}

// TestTracePeerOfFailedAttempt: B's retries of C, sent elsewhere by
// retrypeer, each log errown.retry naming the instance whose attempt
// failed: the bad one, as yarpc's peer.Identifier names it.
func TestTracePeerOfFailedAttempt(t *testing.T) {
	ts := newTraces(t)
	_, bad, client := peerMesh(t, ts)
	for i := range _peerRequests {
		_, err := client.Call(callCtx(t), "call", []byte("x"))
		require.NoError(t, err, "request %d: a retry goes to another instance", i)
	}
	ts.await(map[string]int{_b: _peerRequests})
	retries := 0
	for _, s := range ts.spans(_b, trace.SpanKindServer) {
		for _, e := range s.Events() {
			if e.Name != "errown.retry" {
				continue
			}
			retries++
			f := eventFields(e)
			assert.Equal(t, bad, f["errown.peer"], "errown.retry's peer: %v", f)
			assert.Equal(t, "2", f["errown.attempt"], "errown.retry's attempt: %v", f)
		}
	}
	assert.GreaterOrEqual(t, retries, _peerRequests/3, "errown.retry events of %d requests", _peerRequests)
}
