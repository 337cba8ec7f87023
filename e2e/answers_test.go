package e2e_test

import (
	"context"
	"maps"
	"sync/atomic"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/yarpcerrors"
)

// servedBy returns how many requests each of nodes has served so far.
func servedBy(mesh *errowntest.Mesh, nodes ...string) map[string]int64 {
	served := make(map[string]int64, len(nodes))
	for _, n := range nodes {
		served[n] = mesh.Service(n).Served()
	}
	return served
}

// servedSince returns what each node served since before.
func servedSince(mesh *errowntest.Mesh, before map[string]int64) map[string]int64 {
	delta := make(map[string]int64, len(before))
	for n, b := range before {
		delta[n] = mesh.Service(n).Served() - b
	}
	return delta
}

// edge is the edge a node of a mesh has to its callee service.
func edge(callee string) ownership.Edge {
	return ownership.Edge{CallerProcedure: errowntest.Procedure, Service: callee, Procedure: errowntest.Procedure}
}

// outageSwitch is a Handler that answers not-found until it is switched
// down, then fails with unavailable.
type outageSwitch struct {
	down atomic.Bool
}

func (s *outageSwitch) handle(context.Context, *errowntest.Client, []byte) ([]byte, error) {
	if s.down.Load() {
		return nil, yarpcerrors.UnavailableErrorf("down")
	}
	return nil, yarpcerrors.NotFoundErrorf("no such thing")
}

// A→B→C→D, a policy of two attempts on every edge, every node learning
// its dependencies from ten callee failures on. D first answers not-found
// to 100 requests, every node passing the answer up as it is; then D goes
// down for 40.
//
// Not-found is D's answer, not its failure: nobody retries it (D serves
// one request per root request), and no node counts it as a failure of
// its callee, so no edge is learned at all, let alone as fail-open.
// Learning fail-open edges from answers (each caller "survived" its
// callee's error) would make every node claim the outage as coincidental
// when it comes, and every hop would retry: 8 requests to D per root
// request. Here, from the first outage request on, only C (D's direct
// caller) retries, B and A see C's error unclaimed, and D serves exactly 2
// requests per root request; the edges then learn fail-close from the
// outage itself.
func TestNotFoundThenOutage(t *testing.T) {
	const (
		answers    = 100
		outage     = 40
		minSamples = 10
	)
	nodes := []string{_a, _b, _c, _d}
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			learning := func(callees ...string) *errown.Config {
				cfg := withRetries(callees...)
				cfg.Memory = depmem.Config{MinSamples: minSamples}
				return cfg
			}
			d := new(outageSwitch)
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _d, Transport: tr, Errown: learning(), Handler: d.handle})
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Errown: learning(_d), Callees: []string{_d}, Handler: errowntest.Forward})
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tr, Errown: learning(_c), Callees: []string{_c}, Handler: errowntest.Forward})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tr, Errown: learning(_b), Callees: []string{_b}, Handler: errowntest.Forward})

			phase := func(name string, n int, code yarpcerrors.Code, claim string, served map[string]int64) {
				t.Helper()
				var wrongReply, wrongServed int
				for i := range n {
					before := servedBy(mesh, nodes...)
					r := mesh.Call(callCtx(t), _a, nil)
					// Only the first wrong one of each is told; the count after.
					if r.Code() != code || r.Claim != claim {
						if wrongReply++; wrongReply == 1 {
							assert.Equal(t, code, r.Code(), "%s request %d: outside caller's code (claim %q, %v)", name, i, r.Claim, r.Err)
							assert.Equal(t, claim, r.Claim, "%s request %d: outside caller's claim (code %v, %v)", name, i, r.Code(), r.Err)
						}
					}
					if got := servedSince(mesh, before); !maps.Equal(got, served) {
						if wrongServed++; wrongServed == 1 {
							assert.Equal(t, served, got, "%s request %d: served", name, i)
						}
					}
				}
				assert.Zero(t, wrongReply+wrongServed, "%s: %d of %d replies and %d of %d served counts wrong", name, wrongReply, n, wrongServed, n)
			}

			// Not-found is an answer: nobody fails, nobody retries, and
			// every node's error is its own.
			phase("not-found", answers, yarpcerrors.CodeNotFound, _claimed, map[string]int64{_a: 1, _b: 1, _c: 1, _d: 1})
			for _, n := range []string{_a, _b, _c} {
				for _, v := range mesh.Service(n).Middleware().Introspect().Dependencies {
					assert.NotEqual(t, ownership.KindFailOpen, v.Kind, "after %d not-found answers %s learned %+v; want no callee failure on any edge", answers, n, v)
					assert.Zero(t, v.CalleeFailures, "after %d not-found answers %s learned %+v; want no callee failure on any edge", answers, n, v)
					assert.Zero(t, v.JointFailures, "after %d not-found answers %s learned %+v; want no callee failure on any edge", answers, n, v)
				}
			}

			d.down.Store(true)
			// Only C, D's direct caller, retries.
			phase("outage", outage, _unavail, _unclaimed, map[string]int64{_a: 1, _b: 1, _c: 1, _d: 2})
			// The outage is all each edge has seen fail, and every caller
			// failed with it.
			for _, n := range []struct{ caller, callee string }{{_a, _b}, {_b, _c}, {_c, _d}} {
				want := depmem.EdgeView{
					Edge: edge(n.callee), Kind: ownership.KindFailClose, Ratio: 1,
					CalleeFailures: outage, JointFailures: outage, Source: depmem.SourceLocal,
				}
				got := mesh.Service(n.caller).Middleware().Introspect().Dependencies
				if assert.Len(t, got, 1, "after the outage %s knows %+v, want [%+v]", n.caller, got, want) {
					assert.Equal(t, want, got[0], "after the outage %s knows", n.caller)
				}
			}
		})
	}
}
