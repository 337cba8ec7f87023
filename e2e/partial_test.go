package e2e_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/retry"
	"github.com/errown/errown/retrypeer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// The partial-failure mesh: A → B → C, C three instances behind yarpc's
// round-robin peer list, one of them bad, with the 60ms attempt
// timeout at B → C and 4 requests in flight. They hold under -race on a
// loaded 2-core machine (load average near 30, -count 3 twice: errown
// 99.6 to 100% at 1.24 to 1.25 calls at C per request, every hop
// retrying 98.8 to 100% at 1.49 to 1.51). A healthy instance answering
// later than 60ms under -race costs errown (two attempts at C, B's) more
// than every hop retrying (four): the test once ran 150ms and 8 in
// flight for that reason, and would need to again on a slower machine.
const (
	_partialRequests  = 240 // per arm: one request is 0.42 points
	_partialInFlight  = 4   // the issue's
	_partialInstances = 3
	_bAttempt         = 60 * time.Millisecond // B → C's attempt timeout, the issue's
	_aAttempt         = time.Second           // A → B's
	_partialDeadline  = 3 * time.Second       // the outside caller's
)

// partialArm is one way to run the mesh's retries.
type partialArm struct {
	name string
	// errown runs errown on every node, with these policies at A and B
	// and B's retries sent to another instance (retrypeer); else every
	// hop runs retryOnce, its attempts under timeoutEach.
	errown bool
}

// partialResult is what one arm delivered.
type partialResult struct {
	availability float64 // share of the outside caller's requests that succeeded
	cPerRequest  float64 // calls the C instances served, per request
}

// timeoutEach limits each attempt below it to its own timeout, as a
// team's retry library does: under retryOnce (storm_test.go) it makes the
// every-hop-retries arm's attempts time out as errown's policies do. It
// reads a response's body before the attempt's context ends.
type timeoutEach struct{ timeout time.Duration }

func (m timeoutEach) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	actx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	res, err := out.Call(actx, req)
	if res != nil && res.Body != nil {
		b, rerr := io.ReadAll(res.Body)
		_ = res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(b))
		err = multierr.Append(err, rerr)
	}
	return res, err
}

var _ middleware.UnaryOutbound = timeoutEach{}

// partialPolicy is a policy of two attempts, each limited to timeout,
// errown's defaults otherwise.
func partialPolicy(callee string, timeout time.Duration) retry.PolicyConfig {
	return retry.PolicyConfig{Service: callee, MaxAttempts: 2, AttemptTimeout: timeout, Idempotent: new(true)}
}

// runPartial runs the outside caller's requests through the mesh of arm,
// C's first instance serving with bad, and returns what it delivered.
func runPartial(t *testing.T, arm partialArm, bad func(ctx context.Context) error) partialResult {
	t.Helper()
	var (
		nodes  []*testmesh.Node
		served atomic.Int64 // by the C instances
		scope  = tally.NewTestScope("", nil)
	)
	t.Cleanup(func() {
		var err error
		for i := len(nodes) - 1; i >= 0; i-- {
			err = multierr.Append(err, nodes[i].Stop())
		}
		assert.NoError(t, err, "stop")
	})
	start := func(cfg testmesh.Config, policy *retry.PolicyConfig) *testmesh.Node {
		t.Helper()
		if arm.errown {
			cfg.Errown = &errown.Config{}
			cfg.ErrownOptions = []errown.Option{errown.WithScope(scope)}
			if policy != nil {
				cfg.Errown.Retry.Policies = []retry.PolicyConfig{*policy}
			}
		} else if policy != nil {
			cfg.Outbound = yarpc.UnaryOutboundMiddleware(retryOnce{}, timeoutEach{timeout: policy.AttemptTimeout})
		}
		n, err := testmesh.Start(cfg)
		require.NoError(t, err, "start %s", cfg.Name)
		nodes = append(nodes, n)
		return n
	}

	addrs := make([]string, 0, _partialInstances)
	for i := range _partialInstances {
		handler := func(ctx context.Context, _ []byte) ([]byte, error) {
			served.Add(1)
			return []byte("ok"), nil
		}
		if i == 0 {
			handler = func(ctx context.Context, _ []byte) ([]byte, error) {
				served.Add(1)
				if err := bad(ctx); err != nil {
					return nil, err
				}
				return []byte("ok"), nil
			}
		}
		c := start(testmesh.Config{Name: _c, Kind: testmesh.HTTP, Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			d.Register(raw.Procedure("call", handler))
			return nil
		}}, nil)
		addrs = append(addrs, c.Addr())
	}

	toC := testmesh.Callee{Name: _c, Kind: testmesh.HTTP, Addrs: addrs}
	if arm.errown {
		toC.Chooser = func(c peer.Chooser) peer.Chooser { return retrypeer.New(c) }
	}
	forward := func(callee string) (func(*yarpc.Dispatcher, *errown.Middleware) error, *raw.Client) {
		var client raw.Client
		return func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			client = raw.New(d.ClientConfig(callee))
			d.Register(raw.Procedure("call", func(ctx context.Context, body []byte) ([]byte, error) {
				return client.Call(ctx, "call", body)
			}))
			return nil
		}, &client
	}
	registerB, _ := forward(_c)
	b := start(testmesh.Config{Name: _b, Kind: testmesh.HTTP, Callees: []testmesh.Callee{toC}, Register: registerB},
		new(partialPolicy(_c, _bAttempt)))
	registerA, _ := forward(_b)
	a := start(testmesh.Config{Name: _a, Kind: testmesh.HTTP,
		Callees: []testmesh.Callee{{Name: _b, Kind: testmesh.HTTP, Addr: b.Addr()}}, Register: registerA},
		new(partialPolicy(_b, _aAttempt)))

	client, err := testmesh.NewClient("partial-client", testmesh.TransportOptions{}, nil,
		testmesh.Callee{Name: _a, Kind: testmesh.HTTP, Addr: a.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, client.Stop()) })
	caller := raw.New(client.ClientConfig(_a))

	var (
		next, succeeded atomic.Int64
		wg              sync.WaitGroup
		failures        sync.Map
	)
	for range _partialInFlight {
		wg.Go(func() {
			for next.Add(1) <= _partialRequests {
				ctx, cancel := context.WithTimeout(context.Background(), _partialDeadline)
				if _, err := caller.Call(ctx, "call", []byte("x")); err == nil {
					succeeded.Add(1)
				} else {
					failures.Store(err.Error(), true)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	failures.Range(func(k, _ any) bool { t.Logf("%s: %v", arm.name, k); return true })
	for k, c := range scope.Snapshot().Counters() {
		if c.Value() != 0 && strings.Contains(k, "retry.") {
			t.Logf("%s: %s %d", arm.name, k, c.Value())
		}
	}
	return partialResult{
		availability: float64(succeeded.Load()) / _partialRequests,
		cPerRequest:  float64(served.Load()) / _partialRequests,
	}
}

// TestPartialFailure: one bad instance of C's three must not cost users
// availability: errown, its retries sent to another instance
// (retrypeer) and its defaults otherwise, delivers at least what every
// hop retrying once delivers, less half a point, with no more calls at C
// per request, side by side in one run.
func TestPartialFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two meshes per case; not in -short")
	}
	tests := []struct {
		name string
		bad  func(ctx context.Context) error
	}{
		{name: "one instance fails every call", bad: func(context.Context) error {
			return yarpcerrors.UnavailableErrorf("this instance is bad")
		}},
		{name: "one instance hangs past the attempt timeout", bad: func(ctx context.Context) error {
			select {
			case <-ctx.Done():
			case <-time.After(10 * _bAttempt):
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			every := runPartial(t, partialArm{name: "every hop retries"}, tt.bad)
			own := runPartial(t, partialArm{name: "errown", errown: true}, tt.bad)
			t.Logf("%s: every hop retries %.1f%% · %.2f C calls per request; errown %.1f%% · %.2f",
				tt.name, 100*every.availability, every.cPerRequest, 100*own.availability, own.cPerRequest)
			assert.GreaterOrEqual(t, own.availability, every.availability-0.005, "availability: errown against every hop retrying")
			assert.LessOrEqual(t, own.cPerRequest, every.cPerRequest, "C calls per request: errown against every hop retrying")
		})
	}
}
