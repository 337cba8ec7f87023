package e2e_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// _lostRequests is how many root requests TestLostCountedOneBadInstance
// sends, _partialInFlight at a time.
const _lostRequests = 300

// TestLostCountedOneBadInstance: the quick start's wiring without
// retrypeer, A → B → C, C three instances behind yarpc's round-robin
// list, one failing every call, a policy of two attempts at A and B and
// the default budget. B's retry goes back to the bad instance now and
// then (a round robin under concurrency), and then A, by errown's rule,
// suppresses its own: the user's request fails. Every such request is
// counted where a retry was declined: at A (the root) as unclaimed, A's
// policy having an attempt left, and at B as its attempt limit or the
// budget's refusal. So A's failed_after_denied is exactly the root
// requests that failed, and B's the failures it answered A with.
func TestLostCountedOneBadInstance(t *testing.T) {
	nodes := map[string]*stormNode{_a: newStormNode(), _b: newStormNode()}
	var started []*testmesh.Node
	t.Cleanup(func() {
		var err error
		for i := len(started) - 1; i >= 0; i-- {
			err = multierr.Append(err, started[i].Stop())
		}
		assert.NoError(t, err, "stop")
	})
	start := func(cfg testmesh.Config) *testmesh.Node {
		t.Helper()
		n, err := testmesh.Start(cfg)
		require.NoError(t, err, "start %s", cfg.Name)
		started = append(started, n)
		return n
	}
	withPolicy := func(name, callee string) (*errown.Config, []errown.Option) {
		cfg := &errown.Config{}
		cfg.Retry.Policies = []retry.PolicyConfig{{Service: callee, MaxAttempts: 2, Idempotent: new(true)}}
		return cfg, nodes[name].options()
	}
	forward := func(callee string) func(*yarpc.Dispatcher, *errown.Middleware) error {
		return func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			client := raw.New(d.ClientConfig(callee))
			d.Register(raw.Procedure("call", func(ctx context.Context, body []byte) ([]byte, error) {
				return client.Call(ctx, "call", body)
			}))
			return nil
		}
	}

	var badServed atomic.Int64
	addrs := make([]string, 0, _partialInstances)
	for i := range _partialInstances {
		handler := func(context.Context, []byte) ([]byte, error) { return []byte("ok"), nil }
		if i == 0 {
			handler = func(context.Context, []byte) ([]byte, error) {
				badServed.Add(1)
				return nil, yarpcerrors.UnavailableErrorf("this instance is bad")
			}
		}
		c := start(testmesh.Config{Name: _c, Kind: testmesh.HTTP, Errown: &errown.Config{},
			Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
				d.Register(raw.Procedure("call", handler))
				return nil
			}})
		addrs = append(addrs, c.Addr())
	}
	cfgB, optsB := withPolicy(_b, _c)
	b := start(testmesh.Config{Name: _b, Kind: testmesh.HTTP, Errown: cfgB, ErrownOptions: optsB,
		Callees: []testmesh.Callee{{Name: _c, Kind: testmesh.HTTP, Addrs: addrs}}, Register: forward(_c)})
	cfgA, optsA := withPolicy(_a, _b)
	a := start(testmesh.Config{Name: _a, Kind: testmesh.HTTP, Errown: cfgA, ErrownOptions: optsA,
		Callees: []testmesh.Callee{{Name: _b, Kind: testmesh.HTTP, Addr: b.Addr()}}, Register: forward(_b)})
	client, err := testmesh.NewClient("lost-client", testmesh.TransportOptions{}, nil,
		testmesh.Callee{Name: _a, Kind: testmesh.HTTP, Addr: a.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, client.Stop()) })
	caller := raw.New(client.ClientConfig(_a))

	var (
		next, failed atomic.Int64
		wg           sync.WaitGroup
	)
	for range _partialInFlight {
		wg.Go(func() {
			for next.Add(1) <= _lostRequests {
				ctx, cancel := context.WithTimeout(context.Background(), _partialDeadline)
				if _, err := caller.Call(ctx, "call", []byte("x")); err != nil {
					failed.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()

	lostA, lostB := nodes[_a].lost(), nodes[_b].lost()
	t.Logf("%d of %d root requests failed; the bad instance served %d; lost at A %v, at B %v; A's storm.prevented %d",
		failed.Load(), _lostRequests, badServed.Load(), lostA, lostB, nodes[_a].rootMetrics().Prevented)
	require.Positive(t, badServed.Load(), "the bad instance served none of %d requests", _lostRequests)
	wantA := map[string]int64{}
	if n := failed.Load(); n > 0 {
		wantA["unclaimed"] = n
	}
	assert.Equal(t, wantA, lostA, "A's failed_after_denied: every root request that failed, suppressed with an attempt left")
	assert.Equal(t, failed.Load(), nodes[_a].counter("errown.inbound.unclaimed", nil), "A's unclaimed errors: the same requests")
	var atB int64
	for _, n := range lostB {
		atB += n
	}
	assert.Equal(t, failed.Load(), atB, "B's failed_after_denied, every reason: the failures it answered A with (%v)", lostB)
	assert.Subset(t, []string{"attempt-limit", "budget"}, keys(lostB), "B's reasons")
}

// keys returns m's keys.
func keys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
