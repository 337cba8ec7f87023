package e2e_test

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"math/rand/v2"
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
	// hedger, when set, is the application's hedging middleware at B,
	// between the hop's retries (errown's or retryOnce under
	// timeoutEach) and the transport (errown's innermost step).
	hedger *hedging
	// mode is errown's mode on every node: "" enforce.
	mode retry.Mode
}

// partialC is how C's instances serve, over which transport.
type partialC struct {
	kind string // testmesh.HTTP or testmesh.GRPC
	// bad is what C's first instance (every instance, when every is
	// set) does before it answers: an error fails the call.
	bad   func(ctx context.Context) error
	every bool
	// requests is how many requests the outside caller sends: 0 for
	// _partialRequests.
	requests int
	// latency, when set, is how long instance i (0 the bad one) takes
	// before it answers (or bad fails).
	latency func(i int) time.Duration
}

// partialResult is what one arm delivered.
type partialResult struct {
	availability float64 // share of the outside caller's requests that succeeded
	cPerRequest  float64 // calls the C instances served, per request
	bPerRequest  float64 // requests B served, per request
	counters     map[string]int64
}

// counter returns the sum of errown's counters named name ("errown."
// and tags aside).
func (r partialResult) counter(name string) int64 {
	var n int64
	for k, v := range r.counters {
		if k = strings.TrimPrefix(k, "errown."); k == name || strings.HasPrefix(k, name+"+") {
			n += v
		}
	}
	return n
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
// over cs.kind, C's instances serving as cs says, and returns what it
// delivered.
func runPartial(t *testing.T, arm partialArm, cs partialC) partialResult {
	t.Helper()
	var (
		nodes    []*testmesh.Node
		served   atomic.Int64 // by the C instances
		atB      atomic.Int64 // requests B served
		scope    = tally.NewTestScope("", nil)
		requests = cmp.Or(cs.requests, _partialRequests)
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
			cfg.Errown = &errown.Config{Mode: arm.mode}
			cfg.ErrownOptions = []errown.Option{errown.WithScope(scope)}
			if policy != nil {
				cfg.Errown.Retry.Policies = []retry.PolicyConfig{*policy}
			}
		} else if policy != nil {
			cfg.Outbound = yarpc.UnaryOutboundMiddleware(retryOnce{}, timeoutEach{timeout: policy.AttemptTimeout})
		}
		if arm.hedger != nil && cfg.Name == _b {
			cfg.Outbound = yarpc.UnaryOutboundMiddleware(cfg.Outbound, arm.hedger)
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
			if cs.latency != nil {
				wait(ctx, cs.latency(i))
			}
			if i == 0 || cs.every {
				if err := cs.bad(ctx); err != nil {
					return nil, err
				}
			}
			return []byte("ok"), nil
		}
		c := start(testmesh.Config{Name: _c, Kind: cs.kind, Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			d.Register(raw.Procedure("call", handler))
			return nil
		}}, nil)
		addrs = append(addrs, c.Addr())
	}

	toC := testmesh.Callee{Name: _c, Kind: cs.kind, Addrs: addrs}
	if arm.errown {
		toC.Chooser = func(c peer.Chooser) peer.Chooser { return retrypeer.New(c) }
	}
	forward := func(callee string, count *atomic.Int64) func(*yarpc.Dispatcher, *errown.Middleware) error {
		return func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			client := raw.New(d.ClientConfig(callee))
			d.Register(raw.Procedure("call", func(ctx context.Context, body []byte) ([]byte, error) {
				if count != nil {
					count.Add(1)
				}
				return client.Call(ctx, "call", body)
			}))
			return nil
		}
	}
	registerB := forward(_c, &atB)
	b := start(testmesh.Config{Name: _b, Kind: cs.kind, Callees: []testmesh.Callee{toC}, Register: registerB},
		new(partialPolicy(_c, _bAttempt)))
	registerA := forward(_b, nil)
	a := start(testmesh.Config{Name: _a, Kind: cs.kind,
		Callees: []testmesh.Callee{{Name: _b, Kind: cs.kind, Addr: b.Addr()}}, Register: registerA},
		new(partialPolicy(_b, _aAttempt)))

	client, err := testmesh.NewClient("partial-client", testmesh.TransportOptions{}, nil,
		testmesh.Callee{Name: _a, Kind: cs.kind, Addr: a.Addr()})
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
			for next.Add(1) <= int64(requests) {
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
	if arm.hedger != nil {
		require.True(t, arm.hedger.wait(10*time.Second), "%s: B's hedges still under way", arm.name)
		t.Logf("%s: B's hedger sent %d hedges for %d calls", arm.name, arm.hedger.hedges.Load(), arm.hedger.calls.Load())
	}
	failures.Range(func(k, _ any) bool { t.Logf("%s: %v", arm.name, k); return true })
	counters := map[string]int64{}
	for k, c := range scope.Snapshot().Counters() {
		counters[k] = c.Value()
		if c.Value() != 0 && strings.Contains(k, "retry.") {
			t.Logf("%s: %s %d", arm.name, k, c.Value())
		}
	}
	n := float64(requests)
	return partialResult{
		availability: float64(succeeded.Load()) / n,
		cPerRequest:  float64(served.Load()) / n,
		bPerRequest:  float64(atB.Load()) / n,
		counters:     counters,
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
		for _, kind := range []string{testmesh.HTTP, testmesh.GRPC} {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				cs := partialC{kind: kind, bad: tt.bad}
				every := runPartial(t, partialArm{name: "every hop retries"}, cs)
				own := runPartial(t, partialArm{name: "errown", errown: true}, cs)
				t.Logf("%s, %s: every hop retries %.1f%% · %.2f C calls per request; errown %.1f%% · %.2f",
					tt.name, kind, 100*every.availability, every.cPerRequest, 100*own.availability, own.cPerRequest)
				assert.GreaterOrEqual(t, own.availability, every.availability-0.005, "availability: errown against every hop retrying")
				assert.LessOrEqual(t, own.cPerRequest, every.cPerRequest, "C calls per request: errown against every hop retrying")
			})
		}
	}
}

// wait waits for d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// _partialHedge is the delay of B's hedging middleware in the hedger row:
// C answers in 0 to 10ms, so about half of B's attempts are hedged.
const _partialHedge = 5 * time.Millisecond

// TestPartialFailureWithHedger: the application's hedging middleware at
// B (a second attempt after 5ms, the first answer returned, the loser
// cancelled), C answering in 0 to 10ms, one of its three instances
// failing every call, after its latency or at once. errown (retrypeer around B's peer list, B's and A's
// policies of two attempts) with the hedger between its retry middleware
// and its innermost step delivers at least what every hop retrying once
// with the same hedger delivers, less half a point, with no more calls at
// C per request, side by side in one run: the hedges draw nothing from
// what errown's retry of a real failure needs (retry/doc.go, "Hedges").
// Measured under -race on the loaded 2-core machine, 26 runs over both
// cases and transports: every hop retrying 97.5 to 100% at 2.26 to 2.75
// C calls per request, errown 99.6 to 100% at 1.92 to 2.22; in each run
// errown served at least as many requests, with 0.20 to 0.69 fewer C
// calls per request. Before, when a hedge took the policy's second
// attempt and the budget, errown delivered 75.0% at 1.58 over HTTP
// (74.2% at 1.60 over gRPC) against 97.9% (98.3%), the bad instance
// failing after its latency.
func TestPartialFailureWithHedger(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two meshes per transport; not in -short")
	}
	tests := []struct {
		name    string
		latency func(i int) time.Duration
	}{
		{name: "bad-after-its-latency", latency: func(int) time.Duration { return rand.N(10 * time.Millisecond) }},
		// The bad instance fails at once: its failure wins the race
		// when it is the hedge's.
		{name: "bad-at-once", latency: func(i int) time.Duration {
			if i == 0 {
				return 0
			}
			return rand.N(10 * time.Millisecond)
		}},
	}
	for _, tt := range tests {
		for _, kind := range []string{testmesh.HTTP, testmesh.GRPC} {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				cs := partialC{
					kind:    kind,
					latency: tt.latency,
					bad: func(context.Context) error {
						return yarpcerrors.UnavailableErrorf("this instance is bad")
					},
				}
				every := runPartial(t, partialArm{name: "every hop retries + hedger", hedger: &hedging{delay: _partialHedge}}, cs)
				own := runPartial(t, partialArm{name: "errown + hedger", errown: true, hedger: &hedging{delay: _partialHedge}}, cs)
				t.Logf("hedger at B, one bad instance (%s), %s: every hop retries %.1f%% · %.2f C calls per request; errown %.1f%% · %.2f",
					tt.name, kind, 100*every.availability, every.cPerRequest, 100*own.availability, own.cPerRequest)
				assert.GreaterOrEqual(t, own.availability, every.availability-0.005, "availability: errown against every hop retrying, both with the hedger")
				assert.LessOrEqual(t, own.cPerRequest, every.cPerRequest, "C calls per request: errown against every hop retrying, both with the hedger")
			})
		}
	}
}
