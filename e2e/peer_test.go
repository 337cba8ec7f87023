package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/debugpage"
	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/retry"
	"github.com/errown/errown/retrypeer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/x/introspection"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// _peerRequests is how many requests TestTracePeerOfFailedAttempt sends
// B: a round-robin list of three, once its peers are connected, sends a
// first attempt to the bad instance about once in three.
const _peerRequests = 30

// _peerInstances is how many instances of C the peer tests run.
const _peerInstances = 3

// peerMesh starts B → C, C three instances behind yarpc's round-robin
// list wrapped by retrypeer, the first bad ones failing every call, B
// traced by ts; it returns B, the instances' host:ports, a client of B
// and the count of calls the bad instances served.
func peerMesh(t *testing.T, ts *traces, bad int) (*testmesh.Node, []string, raw.Client, *atomic.Int64) {
	t.Helper()
	stop := func(n *testmesh.Node) { t.Cleanup(func() { assert.NoError(t, n.Stop(), "stop %s", n.Name()) }) }
	var badServed atomic.Int64
	addrs := make([]string, 0, _peerInstances)
	for i := range _peerInstances {
		handler := func(context.Context, []byte) ([]byte, error) { return []byte("ok"), nil }
		if i < bad {
			handler = func(context.Context, []byte) ([]byte, error) {
				badServed.Add(1)
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
	b, client := retrypeerRelay(t, stop, testmesh.HTTP, addrs, "peer-client", testmesh.TransportOptions{Tracer: ts.bridge(_b)})
	return b, addrs, client, &badServed
}

// retrypeerRelay starts B, whose procedure "call" calls C's with the
// same body, C's instances at addrs (of kind) behind yarpc's round-robin
// list wrapped by retrypeer, B's policy for C 2 attempts, idempotent,
// B's transport given tr and errown opts; and a client named name of B,
// once B's list has every instance available (a gRPC peer connects after
// B starts: a retry that must go to another instance would find none).
// stop registers each for the test's end.
func retrypeerRelay(t *testing.T, stop func(*testmesh.Node), kind string, addrs []string, name string, tr testmesh.TransportOptions, opts ...errown.Option) (*testmesh.Node, raw.Client) {
	t.Helper()
	cfg := &errown.Config{}
	cfg.Retry.Policies = []retry.PolicyConfig{{Service: _c, MaxAttempts: 2, Idempotent: new(true)}}
	var list introspection.IntrospectableChooser
	b, err := testmesh.Start(testmesh.Config{
		Name: _b, Kind: testmesh.HTTP, Errown: cfg, ErrownOptions: opts, Transport: tr,
		Callees: []testmesh.Callee{{Name: _c, Kind: kind, Addrs: addrs,
			Chooser: func(c peer.Chooser) peer.Chooser {
				list, _ = c.(introspection.IntrospectableChooser)
				return retrypeer.New(c)
			}}},
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
	require.NotNil(t, list, "B's peer list cannot say which instances are available")
	require.Eventually(t, func() bool {
		available := 0
		for _, p := range list.Introspect().Peers {
			if strings.HasPrefix(p.State, peer.Available.String()) {
				available++
			}
		}
		return available == len(addrs)
	}, 10*time.Second, 5*time.Millisecond, "B's instances of C available")
	client, err := testmesh.NewClient(name, testmesh.TransportOptions{}, nil,
		testmesh.Callee{Name: _b, Kind: testmesh.HTTP, Addr: b.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, client.Stop()) })
	return b, raw.New(client.ClientConfig(_b))
}

// TestTracePeerOfFailedAttempt: B's retries of C, sent elsewhere by
// retrypeer, each log errown.retry naming the instance whose attempt
// failed: the bad one, as yarpc's peer.Identifier names it.
func TestTracePeerOfFailedAttempt(t *testing.T) {
	ts := newTraces(t)
	_, addrs, client, badServed := peerMesh(t, ts, 1)
	bad := addrs[0]
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
	require.Positive(t, badServed.Load(), "of %d requests, none went to the bad instance", _peerRequests)
	assert.Equal(t, int(badServed.Load()), retries, "errown.retry events: one per call the bad instance failed")
}

// TestDebugPagePeersOfDecision: every instance of C failing, B's call
// fails after its retry, which retrypeer sent to another instance; B's
// debug page lists, on its decision, the two instances the call's
// attempts went to, in order.
func TestDebugPagePeersOfDecision(t *testing.T) {
	b, addrs, client, _ := peerMesh(t, newTraces(t), _peerInstances)
	_, err := client.Call(callCtx(t), "call", []byte("x"))
	require.Error(t, err, "every instance of C fails")

	page := debugpage.Handler(b.Middleware(), _b)
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/errown?format=json", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var p debugpage.Page
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p), "the page's JSON")
	require.Len(t, p.Decisions, 1, "B's decisions: %+v", p.Decisions)
	d := p.Decisions[0]
	assert.Equal(t, ingress.ReasonRetriedHere, d.Reason, "B's decision: %+v", d)
	require.Len(t, d.Peers, 1, "the decision's calls with peers: %+v", d)
	assert.Equal(t, _c, d.Peers[0].Service)
	assert.Equal(t, "call", d.Peers[0].Procedure)
	peers := d.Peers[0].Peers
	require.Len(t, peers, 2, "one peer per attempt: %v", peers)
	assert.NotEqual(t, peers[0], peers[1], "the retry went to another instance: %v", peers)
	for _, p := range peers {
		assert.Contains(t, addrs, p, "a peer of the call: %v", peers)
	}

	rec = httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/errown", nil))
	assert.Contains(t, rec.Body.String(), _c+"::call attempts went to "+peers[0]+", "+peers[1], "the HTML page's decision")
}

// TestDebugPageBadInstance: one instance of C of three failing every call,
// retrypeer around B's round-robin list; every request is served (a retry
// goes to another instance), and B's debug page lists the bad instance,
// and only it, with each call it failed that another instance served.
func TestDebugPageBadInstance(t *testing.T) {
	b, addrs, client, badServed := peerMesh(t, newTraces(t), 1)
	for i := range _peerRequests {
		_, err := client.Call(callCtx(t), "call", []byte("x"))
		require.NoError(t, err, "request %d: a retry goes to another instance", i)
	}
	require.Positive(t, badServed.Load(), "of %d requests, none went to the bad instance", _peerRequests)

	page := debugpage.Handler(b.Middleware(), _b)
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/errown?format=json", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var p debugpage.Page
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p), "the page's JSON")
	require.Len(t, p.Instances, 1, "B's instances: %+v", p.Instances)
	got := p.Instances[0]
	assert.Equal(t, _c, got.Callee)
	assert.Equal(t, addrs[0], got.Peer, "the bad instance")
	assert.Equal(t, badServed.Load(), got.Failed, "every call the bad instance failed, another served")
	require.NotNil(t, p.Losses, "B's losses")
	assert.Empty(t, p.Losses.Lost, "no request failed: nothing lost")

	rec = httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/errown", nil))
	assert.Contains(t, rec.Body.String(), "<td>"+_c+"</td><td>"+addrs[0]+"</td>", "the HTML page's instance")
}
