package e2e_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/retry"
	"github.com/errown/errown/retrypeer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// _observeRequests is each run's requests: one is 0.1 points.
const _observeRequests = 1000

// modeRun is what one run of the observe mesh delivered, and what its
// errown counted.
type modeRun struct {
	availability float64 // share of the outside caller's requests served
	belowRoot    float64 // requests B and the C instances served, per request
	cPerRequest  float64 // requests the C instances served, per request
	counters     map[string]int64
}

// counter returns the sum of the counters named name (tags aside).
func (r modeRun) counter(name string) int64 {
	var n int64
	for k, v := range r.counters {
		if k = strings.TrimPrefix(k, "errown."); k == name || strings.HasPrefix(k, name+"+") {
			n += v
		}
	}
	return n
}

// runMode runs _observeRequests through A → B → C×3 over HTTP, errown on
// every node in mode, two attempts at A and B (B's retries to another
// instance, retrypeer), C instance i failing a call when fails(r, i)
// says so, r the run's random source.
func runMode(t *testing.T, mode retry.Mode, fails func(r *rand.Rand, instance int) bool, seed uint64) modeRun {
	t.Helper()
	var (
		nodes       []*testmesh.Node
		atB, atC    atomic.Int64
		scope       = tally.NewTestScope("", nil)
		mu          sync.Mutex
		r           = rand.New(rand.NewPCG(seed, seed))
		failsLocked = func(i int) bool { mu.Lock(); defer mu.Unlock(); return fails(r, i) }
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
		cfg.Errown = &errown.Config{Mode: mode}
		cfg.ErrownOptions = []errown.Option{errown.WithScope(scope)}
		if policy != nil {
			cfg.Errown.Retry.Policies = []retry.PolicyConfig{*policy}
		}
		n, err := testmesh.Start(cfg)
		require.NoError(t, err, "start %s", cfg.Name)
		nodes = append(nodes, n)
		return n
	}
	addrs := make([]string, 0, _partialInstances)
	for i := range _partialInstances {
		c := start(testmesh.Config{Name: _c, Kind: testmesh.HTTP, Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			d.Register(raw.Procedure("call", func(context.Context, []byte) ([]byte, error) {
				atC.Add(1)
				if failsLocked(i) {
					return nil, yarpcerrors.UnavailableErrorf("this call fails")
				}
				return []byte("ok"), nil
			}))
			return nil
		}}, nil)
		addrs = append(addrs, c.Addr())
	}
	toC := testmesh.Callee{Name: _c, Kind: testmesh.HTTP, Addrs: addrs,
		Chooser: func(c peer.Chooser) peer.Chooser { return retrypeer.New(c) }}
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
	b := start(testmesh.Config{Name: _b, Kind: testmesh.HTTP, Callees: []testmesh.Callee{toC}, Register: forward(_c, &atB)},
		new(partialPolicy(_c, _bAttempt)))
	a := start(testmesh.Config{Name: _a, Kind: testmesh.HTTP,
		Callees: []testmesh.Callee{{Name: _b, Kind: testmesh.HTTP, Addr: b.Addr()}}, Register: forward(_b, nil)},
		new(partialPolicy(_b, _aAttempt)))

	client, err := testmesh.NewClient("observe-client", testmesh.TransportOptions{}, nil,
		testmesh.Callee{Name: _a, Kind: testmesh.HTTP, Addr: a.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, client.Stop()) })
	caller := raw.New(client.ClientConfig(_a))

	var (
		next, served atomic.Int64
		wg           sync.WaitGroup
	)
	for range _partialInFlight {
		wg.Go(func() {
			for next.Add(1) <= _observeRequests {
				ctx, cancel := context.WithTimeout(context.Background(), _partialDeadline)
				if _, err := caller.Call(ctx, "call", []byte("x")); err == nil {
					served.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	counters := map[string]int64{}
	for k, c := range scope.Snapshot().Counters() {
		counters[k] = c.Value()
	}
	return modeRun{
		availability: float64(served.Load()) / _observeRequests,
		belowRoot:    float64(atB.Load()+atC.Load()) / _observeRequests,
		cPerRequest:  float64(atC.Load()) / _observeRequests,
		counters:     counters,
	}
}

// TestObservePredictsEnforce runs the same traffic and failures in
// observe mode, then in enforce mode, and holds observe mode's figures to
// what enforce then did: the users' requests enforce loses are the calls
// observe mode kept alive with a retry enforce would have held back
// (retry.would_suppress_succeeded), and the requests below the root that
// enforce no longer sends are what observe said it would prevent
// (storm.prevented).
func TestObservePredictsEnforce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two meshes per case; not in -short")
	}
	tests := []struct {
		name  string
		fails func(r *rand.Rand, instance int) bool
	}{
		{name: "one C instance of three fails every call", fails: func(_ *rand.Rand, i int) bool { return i == 0 }},
		{name: "every C call fails with probability 0.3", fails: func(r *rand.Rand, _ int) bool { return r.Float64() < 0.3 }},
		{name: "C down", fails: func(*rand.Rand, int) bool { return true }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			observe := runMode(t, retry.ModeObserve, tt.fails, uint64(i+1))
			enforce := runMode(t, retry.ModeEnforce, tt.fails, uint64(i+1))

			predictedLoss := float64(observe.counter("retry.would_suppress_succeeded")) / _observeRequests
			actualLoss := observe.availability - enforce.availability
			predictedBelow := observe.belowRoot - float64(observe.counter("storm.prevented"))/_observeRequests
			t.Logf("%s: observe %.1f%% · %.2f below the root (%.2f at C) · would_suppress_succeeded %d · prevented %d; "+
				"enforce %.1f%% · %.2f below the root (%.2f at C) · prevented %d",
				tt.name, 100*observe.availability, observe.belowRoot, observe.cPerRequest,
				observe.counter("retry.would_suppress_succeeded"), observe.counter("storm.prevented"),
				100*enforce.availability, enforce.belowRoot, enforce.cPerRequest, enforce.counter("storm.prevented"))
			t.Logf("%s: users' loss predicted %.1f points, actual %.1f; requests below the root per request predicted %.2f, actual %.2f",
				tt.name, 100*predictedLoss, 100*actualLoss, predictedBelow, enforce.belowRoot)
			// With 0.3 failing, the loss enforce has and the loss observe
			// predicts, from two runs, differ by about 1.3 points (one
			// standard deviation, 1000 requests): held within 4.5.
			assert.InDelta(t, actualLoss, predictedLoss, 0.045,
				"users' loss: retry.would_suppress_succeeded in observe against what enforce lost")
			// storm.prevented counts the subtrees of suppressed retries;
			// the budget refuses more on top: observe's figure bounds the
			// load enforce keeps from above, and never predicts a rise.
			assert.GreaterOrEqual(t, predictedBelow, enforce.belowRoot-0.05, "requests below the root: observe's prediction bounds enforce's")
			assert.LessOrEqual(t, enforce.belowRoot, observe.belowRoot+0.05, "enforce sends no more below the root than observe")
		})
	}
}
