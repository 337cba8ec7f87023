package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/testmesh"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// _blockBody is the body of the requests that hold the shedding
// instance's one slot and its one place in the queue.
const _blockBody = "block"

// arrivals counts the requests B sent an instance, by body: one body per
// call B's client made.
type arrivals struct {
	mu     sync.Mutex
	byBody map[string]int
}

// counting returns inbound middleware, outside errown's, that counts in
// a each request from B, shed or served.
func (a *arrivals) counting() middleware.UnaryInbound {
	return middleware.UnaryInboundFunc(func(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
		if req.Caller != _b {
			return h.Handle(ctx, req, resw)
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return err
		}
		a.mu.Lock()
		a.byBody[string(body)]++
		a.mu.Unlock()
		r := *req
		r.Body = bytes.NewReader(body)
		return h.Handle(ctx, &r, resw)
	})
}

func (a *arrivals) counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.byBody))
	for k, v := range a.byBody {
		out[k] = v
	}
	return out
}

// startShedding starts an instance of C whose admission enforces a limit
// of one request at once and a queue of one, and fills both with
// requests its handler holds until the test ends: it then sheds every
// request B sends it, deterministically (a first attempt finds the queue
// full of another first attempt; a retry, or a request of a caller in an
// incident, has no room in it). It returns the instance and its counts
// of B's requests.
func startShedding(t *testing.T, kind string, stop func(*testmesh.Node)) (*testmesh.Node, *arrivals) {
	t.Helper()
	started, release := make(chan struct{}, 1), make(chan struct{})
	seen := &arrivals{byBody: map[string]int{}}
	cfg := &errown.Config{}
	cfg.Admission = inbound.AdmissionConfig{Mode: inbound.AdmissionEnforce, MinLimit: 1, MaxLimit: 1, MaxQueue: 1}
	c, err := testmesh.Start(testmesh.Config{Name: _c, Kind: kind, Errown: cfg, OuterInbound: seen.counting(),
		Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			d.Register(raw.Procedure("call", func(_ context.Context, body []byte) ([]byte, error) {
				if string(body) == _blockBody {
					select {
					case started <- struct{}{}:
					default:
					}
					<-release
				}
				return []byte("ok"), nil
			}))
			return nil
		}})
	require.NoError(t, err, "start the shedding C")
	stop(c)

	blocker, err := testmesh.NewClient("blocker", testmesh.TransportOptions{}, nil,
		testmesh.Callee{Name: _c, Kind: kind, Addr: c.Addr()})
	require.NoError(t, err)
	var wg sync.WaitGroup
	shed := make(chan struct{}, 16)
	block := func() {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := raw.New(blocker.ClientConfig(_c)).Call(ctx, "call", []byte(_blockBody))
			if yarpcerrors.FromError(err).Code() == yarpcerrors.CodeResourceExhausted {
				shed <- struct{}{}
			}
		})
	}
	// Cleanups run last first: the held requests are released before C
	// stops, and the blocker's client stops once they returned.
	t.Cleanup(func() {
		close(release)
		wg.Wait()
		assert.NoError(t, blocker.Stop())
	})
	block()
	<-started // the one slot is held
	// Send more until one is shed at once: the queue is then full of
	// the one held before it, and nothing else was sent.
	for full := false; !full; {
		block()
		select {
		case <-shed:
			full = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	return c, seen
}

// TestShedRetriedOnAnotherInstance: B calls C, C's instances behind
// yarpc's round robin wrapped by retrypeer, one of them shedding every
// request (its admission full). B retries each shed once, at once, on
// another instance: every call succeeds, and the shedding instance got
// each call at most once. With the shedding instance alone, B does not
// retry the shed: each call reached it once and failed resource-exhausted.
// Over each of yarpc's transports between B and C.
func TestShedRetriedOnAnotherInstance(t *testing.T) {
	for _, kind := range testmesh.Transports {
		t.Run(kind, func(t *testing.T) { testShedRetriedOnAnotherInstance(t, kind) })
	}
}

func testShedRetriedOnAnotherInstance(t *testing.T, kind string) {
	const calls = 12
	tests := []struct {
		name        string
		others      int // instances of C that serve, beside the shedding one
		wantFail    bool
		wantRetries bool // B's retries are the calls that reached the shedding instance
	}{
		{name: "two instances, one shedding", others: 1, wantRetries: true},
		{name: "the shedding instance alone", others: 0, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stop := func(n *testmesh.Node) { t.Cleanup(func() { assert.NoError(t, n.Stop(), "stop %s", n.Name()) }) }
			shedding, seen := startShedding(t, kind, stop)
			addrs := []string{shedding.Addr()}
			var servedByOthers sync.Map
			for i := range tt.others {
				c, err := testmesh.Start(testmesh.Config{Name: _c, Kind: kind, Errown: &errown.Config{},
					Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
						d.Register(raw.Procedure("call", func(_ context.Context, body []byte) ([]byte, error) {
							servedByOthers.Store(string(body), i)
							return []byte("ok"), nil
						}))
						return nil
					}})
				require.NoError(t, err, "start C %d", i)
				stop(c)
				addrs = append(addrs, c.Addr())
			}
			scope := tally.NewTestScope("", nil)
			_, rc := retrypeerRelay(t, stop, kind, addrs, "shed-client", testmesh.TransportOptions{}, errown.WithScope(scope))

			for i := range calls {
				body := fmt.Sprintf("call-%d", i)
				var headers map[string]string
				res, err := rc.Call(callCtx(t), "call", []byte(body), yarpc.ResponseHeaders(&headers))
				if tt.wantFail {
					require.Error(t, err, "call %d", i)
					assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code(), "call %d: %v", i, err)
					// B's answer is no shed of B's: its own caller, even
					// one with errown and retrypeer, retries it nowhere.
					assert.NotContains(t, headers, defaults.ShedHeader, "call %d: B's answer marked as a shed", i)
					assert.Equal(t, _unclaimed, headers[defaults.ClaimHeader], "call %d: B's answer's claim", i)
					continue
				}
				require.NoError(t, err, "call %d", i)
				assert.Equal(t, "ok", string(res), "call %d", i)
				_, served := servedByOthers.Load(body)
				assert.True(t, served, "call %d served by another instance", i)
			}

			got := seen.counts()
			reached := 0
			for body, n := range got {
				assert.Equal(t, 1, n, "the shedding instance got %s", body)
				reached += n
			}
			assert.NotZero(t, reached, "no call reached the shedding instance: nothing tested")
			if tt.wantFail {
				assert.Equal(t, calls, reached, "every call reached the shedding instance once")
			}
			wantRetries := int64(0)
			if tt.wantRetries {
				wantRetries = int64(reached)
			}
			assert.Equal(t, wantRetries, counterValue(scope, "errown.retry.attempts", map[string]string{"callee": _c}), "B's retries")
		})
	}
}
