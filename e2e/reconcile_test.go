package e2e_test

import (
	"sync"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/yarpcerrors"
)

// _reconcileRoots is how many root requests the reconciliation sends,
// _reconcileInFlight of them at a time: more than the default budget's
// floor (10 a second over 10s) lets retry, so that it binds.
const (
	_reconcileRoots    = 300
	_reconcileInFlight = 4
)

// counter returns the service's counter name with tags, 0 when never
// incremented.
func (n *stormNode) counter(name string, tags map[string]string) int64 {
	if c, ok := n.scope.Snapshot().Counters()[tally.KeyForPrefixedStringMap(name, tags)]; ok {
		return c.Value()
	}
	return 0
}

// lost returns the service's errown.inbound.failed_after_denied by reason,
// the reasons with a count only.
func (n *stormNode) lost() map[string]int64 {
	out := map[string]int64{}
	for _, c := range n.scope.Snapshot().Counters() {
		if c.Name() == "errown.inbound.failed_after_denied" && c.Value() != 0 {
			out[c.Tags()["reason"]] = c.Value()
		}
	}
	return out
}

// The counters add up against what was served, with the callee down: A→B→C
// over real dispatchers, C failing every call with unavailable, a policy
// of two attempts on every edge, errown everywhere; _reconcileRoots root
// requests at A. Every root request fails, and the counters say where each
// was lost and what each cost, by these identities (derived below):
//
//   - served: A and B serve one request per root, C one per root plus B's
//     retries: C = N + B's retry.attempts{callee=C}.
//   - lost, at the hop that declined: B retried C until its policy's
//     attempt limit or the budget refused, so B's
//     failed_after_denied{attempt-limit} = B's retries and
//     {budget} = N - B's retries: N in all. B unclaims (its retry criteria
//     hold), and A, whose policy had an attempt left, suppresses: A's
//     failed_after_denied{unclaimed} = N = A's retry.suppressed{callee=B}.
//     Each hop counts what it declined: the root's own figure is what
//     users lost there (N of N), the hops' figures are not to be summed.
//   - storm, at the root A: storm.retries = B's retries (figures travel up
//     on every error); storm.prevented = A's retry.prevented{callee=B} (B
//     suppressed nothing); storm.requests is the roots that met a storm,
//     a retry spent below (B's: radius 1) or one errown suppressed that
//     the blind world would have sent (A's, its budget's twin allowing),
//     so it is N without a budget and less than N when the budget binds:
//     a root whose retries the budget refused in both worlds met no storm,
//     served exactly 3 requests and prevented none. So the served requests
//     reconcile as Σ storm.Served over the recorded roots + 3 × (N -
//     storm.requests) = A + B + C.
//
// The first root request goes alone: it is the incident's onset (its
// calls go unmarked, and B records it as a root of its own); the rest
// come marked, and A alone records them.
func TestStormCountersReconcile(t *testing.T) {
	tests := []struct {
		name   string
		budget retry.BudgetConfig
		// wantBudgetBinds: the budget refused some of B's retries, so
		// some roots met no storm.
		wantBudgetBinds bool
	}{
		{name: "default budget", budget: retry.BudgetConfig{}, wantBudgetBinds: true},
		{name: "no budget", budget: retry.BudgetConfig{Disabled: true}, wantBudgetBinds: false},
	}
	for _, tr := range []string{errowntest.HTTP, errowntest.GRPC} {
		for _, tt := range tests {
			t.Run(tr+"/"+tt.name, func(t *testing.T) {
				mesh := errowntest.NewMesh(t)
				nodes := map[string]*stormNode{_a: newStormNode(), _b: newStormNode(), _c: newStormNode()}
				start := func(name string, h errowntest.Handler, callees ...string) {
					cfg := &errown.Config{Retry: errown.RetryConfig{Budget: tt.budget, Policies: policies(callees...)}}
					mesh.Start(errowntest.ServiceConfig{
						Name: name, Transport: tr, Errown: cfg, ErrownOptions: nodes[name].options(),
						Callees: callees, Handler: h,
					})
				}
				start(_c, fail(_c))
				start(_b, errowntest.Forward, _c)
				start(_a, errowntest.Forward, _b)

				failed := sendRoots(t, mesh, _reconcileRoots, _reconcileInFlight)
				assert.Equal(t, _reconcileRoots, failed, "root requests that failed unavailable and unclaimed")

				const n = _reconcileRoots
				a, b := nodes[_a], nodes[_b]
				served := servedBy(mesh, _a, _b, _c)
				retriesB := b.retryCounter("attempts", _c)
				assert.Equal(t, map[string]int64{_a: n, _b: n, _c: n + retriesB}, served, "served: C's are the roots and B's retries (%d)", retriesB)
				assert.Zero(t, a.retryCounter("attempts", _b), "A's retries of B")

				// Lost, at the hop that declined.
				assert.Equal(t, map[string]int64{"unclaimed": n}, a.lost(), "A's failed_after_denied: every root, suppressed with an attempt left")
				assert.Equal(t, int64(n), a.retryCounter("suppressed", _b), "A's retry.suppressed")
				wantB := map[string]int64{"attempt-limit": retriesB, "budget": n - retriesB}
				for reason, v := range wantB {
					if v == 0 {
						delete(wantB, reason)
					}
				}
				assert.Equal(t, wantB, b.lost(), "B's failed_after_denied: its retries, then the budget's refusals, N in all")
				assert.Equal(t, n-retriesB, b.counter("errown.retry.denied", map[string]string{"callee": _c, "reason": "budget"}), "B's retry.denied{budget}")
				assert.Equal(t, tt.wantBudgetBinds, retriesB < n, "B's budget bound: %d retries of %d failed calls", retriesB, n)

				// The root's storm figures.
				root := a.rootMetrics()
				hooked := a.hooked()
				assert.Zero(t, root.Unknown, "A's storm.unknown")
				assert.Equal(t, retriesB, root.Retries, "A's storm.retries: B's retries")
				assert.Equal(t, a.retryCounter("prevented", _b), root.Prevented, "A's storm.prevented: A's own retry.prevented (B suppressed nothing)")
				assert.Zero(t, b.retryCounter("prevented", _c), "B's retry.prevented")
				assert.Equal(t, retriesB, root.Radius[1], "A's roots of radius 1: those B retried")
				assert.Equal(t, int64(len(hooked)), root.Requests, "A's storm.requests: the roots its hook saw")
				assert.Equal(t, root.Requests, root.Radius[0]+root.Radius[1], "A's storm.requests: its radius histogram")
				assert.Equal(t, !tt.wantBudgetBinds, root.Requests == n, "A's storm.requests %d of %d roots: all of them unless the budget bound", root.Requests, n)
				var stormServed, stormPrevented uint64
				for _, s := range hooked {
					assert.True(t, s.Known && s.Failed, "A's root storm %+v: known and failed", s)
					stormServed += s.Served
					stormPrevented += s.Prevented
				}
				assert.Equal(t, uint64(root.Prevented), stormPrevented, "A's storm.prevented: the hooked roots' sum")
				quiet := uint64(n - root.Requests) // roots that met no storm: A, B and C once each
				assert.Equal(t, sum(served), stormServed+3*quiet, "served in all: the stormy roots' figures and 3 per quiet root")
				t.Logf("%d roots failed; served A %d, B %d, C %d; lost at A %v, at B %v; storm.requests %d, retries %d, prevented %d",
					failed, served[_a], served[_b], served[_c], a.lost(), b.lost(), root.Requests, root.Retries, root.Prevented)
			})
		}
	}
}

// sendRoots sends n root requests to A, the first alone and then inFlight
// at a time, and returns how many failed unavailable and unclaimed.
func sendRoots(t *testing.T, mesh *errowntest.Mesh, n, inFlight int) int {
	t.Helper()
	isLost := func(r errowntest.Reply) bool {
		return r.Code() == yarpcerrors.CodeUnavailable && r.Claim == _unclaimed
	}
	first := mesh.Call(callCtx(t), _a, []byte("down"))
	require.True(t, isLost(first), "the first root request: code %v, claim %q (%v)", first.Code(), first.Claim, first.Err)
	var (
		mu     sync.Mutex
		failed = 1
		wg     sync.WaitGroup
		next   = make(chan struct{})
	)
	for range inFlight {
		wg.Go(func() {
			for range next {
				r := mesh.Call(callCtx(t), _a, []byte("down"))
				if isLost(r) {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	for range n - 1 {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	return failed
}
