package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/defaults"
	ewire "github.com/errown/errown/internal/wire"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Storm telemetry end to end: the errown-storm response header travelling
// up real dispatchers over HTTP, gRPC and TChannel, and the root storms
// (requests without errown's attempt header) each service records.
//
// In the steady state nothing of errown's is on the wire: a call goes
// unmarked unless the request it is made for came marked or its caller
// procedure is in an incident (one of its calls failed, was retried or
// refused a retry, or met a storm below, within the incident window), and
// a success answers an unmarked call with figures only when they are
// stormy. So the first failing root request of a scenario (the incident's
// onset) goes unmarked down the chain: every hop below records a root
// storm of its own subtree for it, and the root's storm has Onset set.
// The requests after it are marked, and their figures exact.

// _stormRoots is how many root requests each storm scenario sends.
const _stormRoots = 3

// stormConfig is an errown config with a policy of two attempts, tiny
// backoff and idempotent for each callee, the budget disabled (every
// wanted retry allowed, in both worlds), in mode.
func stormConfig(mode retry.Mode, callees ...string) *errown.Config {
	cfg := withRetries(callees...)
	cfg.Retry.Budget = retry.BudgetConfig{Disabled: true}
	cfg.Mode = mode
	return cfg
}

// policyObserveConfig is stormConfig in enforce mode with every policy in
// observe mode: the per-policy switch rather than the service's.
func policyObserveConfig(callees ...string) *errown.Config {
	cfg := stormConfig("", callees...)
	for i := range cfg.Retry.Policies {
		cfg.Retry.Policies[i].Mode = retry.ModeObserve
	}
	return cfg
}

// stormNode is what a service of a storm scenario reports besides its
// requests: its metrics and the root storms its hook saw.
type stormNode struct {
	scope tally.TestScope
	mu    sync.Mutex
	hooks []inbound.Storm
}

func newStormNode() *stormNode {
	return &stormNode{scope: tally.NewTestScope("", nil)}
}

// options are the errown options that report to n.
func (n *stormNode) options() []errown.Option {
	return []errown.Option{errown.WithScope(n.scope), errown.WithStormHook(n.hook)}
}

func (n *stormNode) hook(s inbound.Storm) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hooks = append(n.hooks, s)
}

// hooked returns the root storms the hook saw, oldest first.
func (n *stormNode) hooked() []inbound.Storm {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.hooks)
}

// stormCounts is a service's root storm metrics for Procedure (scope
// errown.storm, tagged procedure): the counters, and the histograms'
// non-empty buckets by upper bound.
type stormCounts struct {
	Requests, Unknown, Prevented, Retries int64
	Radius, BlindRadius                   map[float64]int64
}

func (n *stormNode) rootMetrics() stormCounts {
	return n.rootMetricsOf(errowntest.Procedure)
}

// rootMetricsOf is rootMetrics for procedure.
func (n *stormNode) rootMetricsOf(procedure string) stormCounts {
	snap := n.scope.Snapshot()
	tags := map[string]string{"procedure": procedure}
	counter := func(name string) int64 {
		if c, ok := snap.Counters()[tally.KeyForPrefixedStringMap("errown.storm."+name, tags)]; ok {
			return c.Value()
		}
		return 0
	}
	histogram := func(name string) map[float64]int64 {
		buckets := map[float64]int64{}
		if h, ok := snap.Histograms()[tally.KeyForPrefixedStringMap("errown.storm."+name, tags)]; ok {
			for bound, v := range h.Values() {
				if v != 0 {
					buckets[bound] = v
				}
			}
		}
		return buckets
	}
	return stormCounts{
		Requests:    counter("requests"),
		Unknown:     counter("unknown"),
		Prevented:   counter("prevented"),
		Retries:     counter("retries"),
		Radius:      histogram("radius"),
		BlindRadius: histogram("blind_radius"),
	}
}

// retryCounter returns the service's retry counter name for callee.
func (n *stormNode) retryCounter(name, callee string) int64 {
	key := tally.KeyForPrefixedStringMap("errown.retry."+name, map[string]string{"callee": callee})
	if c, ok := n.scope.Snapshot().Counters()[key]; ok {
		return c.Value()
	}
	return 0
}

// rootStorm is the root storm of Procedure with the given figures, its
// Time aside (see figures).
func rootStorm(known, failed bool, served, blind, retries uint64, radius, blindRadius int) inbound.Storm {
	s := inbound.Storm{Procedure: errowntest.Procedure, Known: known, Failed: failed}
	if known {
		s.Served, s.Blind, s.Prevented, s.Retries = served, blind, blind-served, retries
		s.Radius, s.BlindRadius = radius, blindRadius
	}
	return s
}

// atOnset is s recorded at an incident's onset: one of its request's calls
// went out unmarked.
func atOnset(s inbound.Storm) inbound.Storm {
	s.Onset = true
	return s
}

// figures returns storms without their Time, after checking each has one.
func figures(t *testing.T, storms []inbound.Storm) []inbound.Storm {
	t.Helper()
	out := make([]inbound.Storm, len(storms))
	for i, s := range storms {
		assert.False(t, s.Time.IsZero(), "root storm %d has no time: %+v", i, s)
		s.Time = time.Time{}
		out[i] = s
	}
	return out
}

// assertRootStorms checks a service's root storms, as its hook saw them
// (oldest first) and as Middleware.Storms lists them (newest first: the
// hook's in reverse, Time included, a repeat of the storm before it at
// the same reading of the clock listed once), against want, oldest first.
func assertRootStorms(t *testing.T, name string, mw *errown.Middleware, n *stormNode, want []inbound.Storm) {
	t.Helper()
	hooked := n.hooked()
	// slices.Equal first: none wanted is nil, none seen an empty list.
	if got := figures(t, hooked); !slices.Equal(got, want) {
		assert.Equal(t, want, got, "%s's storm hook saw", name)
	}
	listed := mw.Introspect().Storms
	newestFirst := slices.Compact(slices.Clone(hooked))
	slices.Reverse(newestFirst)
	if !slices.Equal(listed, newestFirst) {
		assert.Equal(t, newestFirst, listed, "%s's Storms(), want what the hook saw, newest first", name)
	}
}

func formatStorms(storms []inbound.Storm) string {
	if len(storms) == 0 {
		return "(none)"
	}
	lines := make([]string, len(storms))
	for i, s := range storms {
		lines[i] = fmt.Sprintf("%+v", s)
	}
	return strings.Join(lines, "\n\t")
}

// wireAttempt is one attempt on the wire, as a wireTap saw it.
type wireAttempt struct {
	Caller, Service string
	// Attempt is the request's errown-attempt header, "-" when absent.
	Attempt string
	Code    yarpcerrors.Code
	// Storm is the response's errown-storm header, "-" when absent.
	Storm string
}

// String returns "caller->service#attempt code storm".
func (a wireAttempt) String() string {
	return fmt.Sprintf("%s->%s#%s %v %s", a.Caller, a.Service, a.Attempt, a.Code, a.Storm)
}

// wire formats one expected attempt as wireAttempt.String.
func wire(caller, callee, attempt string, code yarpcerrors.Code, storm string) string {
	return wireAttempt{Caller: caller, Service: callee, Attempt: attempt, Code: code, Storm: storm}.String()
}

// wireTap is an outbound middleware that records the attempt header each
// attempt went out with and the storm header its response came back with,
// as the transport gave them: put inside errown's (and any retry)
// middleware, it sees every attempt. It is safe for concurrent use.
type wireTap struct {
	mu       sync.Mutex
	attempts []wireAttempt
}

var _ middleware.UnaryOutbound = (*wireTap)(nil)

func (w *wireTap) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	a := wireAttempt{Caller: req.Caller, Service: req.Service, Attempt: "-", Storm: "-"}
	if v, ok := req.Headers.Get(defaults.AttemptHeader); ok {
		a.Attempt = v
	}
	res, err := out.Call(ctx, req)
	a.Code = yarpcerrors.FromError(err).Code()
	if res != nil {
		if v, ok := res.Headers.Get(defaults.StormHeader); ok {
			a.Storm = v
		}
	}
	w.mu.Lock()
	w.attempts = append(w.attempts, a)
	w.mu.Unlock()
	return res, err
}

// take returns the attempts recorded since the last take, formatted, in
// the order they ended.
func (w *wireTap) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := make([]string, len(w.attempts))
	for i, a := range w.attempts {
		s[i] = a.String()
	}
	w.attempts = nil
	return s
}

// replyStorm is the storm header of a reply from outside, "-" when absent.
func replyStorm(r errowntest.Reply) string {
	if v, ok := r.Headers[defaults.StormHeader]; ok {
		return v
	}
	return "-"
}

// retryOnce is a plain retry library, with no errown anywhere: it sends
// every call again once when it fails, whatever the response says, and
// sets no header of its own (unlike errown's retry middleware, which
// numbers its retries in errown-attempt).
type retryOnce struct{}

var _ middleware.UnaryOutbound = retryOnce{}

func (retryOnce) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
	}
	send := func() (*transport.Response, error) {
		r := *req
		r.Body, r.BodySize = bytes.NewReader(body), len(body)
		return out.Call(ctx, &r)
	}
	res, err := send()
	if err == nil {
		return res, nil
	}
	if res != nil && res.Body != nil {
		_ = res.Body.Close()
	}
	return send()
}

// swallow is a Handler that calls each callee and succeeds whatever they
// return: a fail-open (soft) dependency.
func swallow(ctx context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
	for _, s := range c.Callees() {
		_, _ = c.Call(ctx, s, body)
	}
	return body, nil
}

// stormChain is A→B→C→D, D failing every request with unavailable after
// calling nothing, every hop with a policy of two attempts (idempotent)
// for its callee, the budget disabled, errown everywhere, each service
// built by cfg and reporting to its stormNode, a wireTap inside errown on
// every hop.
type stormChain struct {
	mesh  *errowntest.Mesh
	tap   *wireTap
	nodes map[string]*stormNode
}

func startStormChain(t *testing.T, tr string, cfg func(callees ...string) *errown.Config) *stormChain {
	c := &stormChain{mesh: errowntest.NewMesh(t), tap: new(wireTap), nodes: make(map[string]*stormNode)}
	start := func(name string, h errowntest.Handler, callees ...string) {
		n := newStormNode()
		c.nodes[name] = n
		c.mesh.Start(errowntest.ServiceConfig{
			Name: name, Transport: tr, Errown: cfg(callees...), ErrownOptions: n.options(),
			ExtraOutbound: c.tap, Callees: callees, Handler: h,
		})
	}
	start(_d, fail(_d))
	start(_c, errowntest.Forward, _d)
	start(_b, errowntest.Forward, _c)
	start(_a, errowntest.Forward, _b)
	return c
}

// sum returns the requests served in total.
func sum(served map[string]int64) uint64 {
	var n int64
	for _, v := range served {
		n += v
	}
	return uint64(n)
}

// A→B→C→D, D fails every request with unavailable and calls nothing;
// every hop has a policy of two idempotent attempts, no budget, errown
// everywhere, enforce mode. Per root request at A, by hand:
//
//   - D fails on its own and claims: "1,1,0,0,0" (served,blind,retries,
//     radius,blindRadius).
//   - C retries D once (claimed): D serves 2. C's call: 2 served, 2 blind,
//     1 retry, radius 1 (C spent a retry), blind radius 1. C's subtree,
//     its own request included: "3,3,1,1,1"; C unclaims.
//   - B sees unclaimed and does not retry: the suppressed retry would have
//     replayed C's blind subtree, 3 requests. B's call: served 3, blind
//     3+3 = 6, radius 1, blind radius 1+1 = 2 (B would have spent a retry
//     above C's). B's subtree: "4,7,1,1,2"; B unclaims.
//   - A likewise: served 4, blind 7+7 = 14, blind radius 3. A's subtree:
//     "5,15,1,1,3".
//
// So the root (A: the outside caller runs no errown) records served 5 =
// 1 (A) + 1 (B) + 1 (C) + 2 (D), which the services count; blind 15 =
// 1 + 2(1 + 2(1 + 2)), the chain blind to claims where B serves 2, C 4
// and D 8 (1+2+4+8); retries 1; radius 1; blind radius 3; prevented
// 15-5 = 10, which the hops' own retry.prevented counters split as A 7
// (B's blind subtree) + B 3 (C's) + C 0.
//
// The first root request is the incident's onset: no hop has seen a
// failure yet, so every first attempt goes unmarked (only C's retry of D
// carries "2"), and B and C each record it as a root storm of their own
// subtree, C "3,3,1,1,1" and B "4,7,1,1,2", both at the onset, as is A's.
// The figures travelling up are the same (failures carry them). Every
// request after it carries errown-attempt (A's procedure is in an
// incident, and B and C serve marked requests): only A records their
// root storms.
func TestStormChainEnforce(t *testing.T) {
	onsetRoot := []string{
		wire(_c, _d, "-", _unavail, "1,1,0,0,0"),
		wire(_c, _d, "2", _unavail, "1,1,0,0,0"),
		wire(_b, _c, "-", _unavail, "3,3,1,1,1"),
		wire(_a, _b, "-", _unavail, "4,7,1,1,2"),
	}
	perRoot := []string{
		wire(_c, _d, "1", _unavail, "1,1,0,0,0"),
		wire(_c, _d, "2", _unavail, "1,1,0,0,0"),
		wire(_b, _c, "1", _unavail, "3,3,1,1,1"),
		wire(_a, _b, "1", _unavail, "4,7,1,1,2"),
	}
	served := map[string]int64{_a: 1, _b: 1, _c: 1, _d: 2}
	root := rootStorm(true, true, 5, 15, 1, 1, 3)
	bOnset := rootStorm(true, true, 4, 7, 1, 1, 2)
	cOnset := rootStorm(true, true, 3, 3, 1, 1, 1)
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			chain := startStormChain(t, tr, func(callees ...string) *errown.Config { return stormConfig(retry.ModeEnforce, callees...) })
			mesh := chain.mesh

			for i := range _stormRoots {
				before := servedBy(mesh, _a, _b, _c, _d)
				reply := mesh.Call(callCtx(t), _a, []byte("storm"))
				assert.Equal(t, _unavail, reply.Code(), "root request %d: outside caller's code (claim %q, %v)", i, reply.Claim, reply.Err)
				assert.Equal(t, _unclaimed, reply.Claim, "root request %d: outside caller's claim (code %v, %v)", i, reply.Code(), reply.Err)
				got := servedSince(mesh, before)
				assert.Equal(t, served, got, "root request %d: served", i)
				assert.Equal(t, root.Served, sum(got), "root request %d: the services served in all, the root storm says", i)
				wantWire := perRoot
				if i == 0 {
					wantWire = onsetRoot
				}
				assert.Equal(t, wantWire, chain.tap.take(), "root request %d: on the wire", i)
				assert.Equal(t, "5,15,1,1,3", replyStorm(reply), "root request %d: A's reply's storm (headers %v)", i, reply.Headers)
			}

			assertRootStorms(t, _a, mesh.Service(_a).Middleware(), chain.nodes[_a],
				append([]inbound.Storm{atOnset(root)}, slices.Repeat([]inbound.Storm{root}, _stormRoots-1)...))
			assertRootStorms(t, _b, mesh.Service(_b).Middleware(), chain.nodes[_b], []inbound.Storm{atOnset(bOnset)})
			assertRootStorms(t, _c, mesh.Service(_c).Middleware(), chain.nodes[_c], []inbound.Storm{atOnset(cOnset)})
			assertRootStorms(t, _d, mesh.Service(_d).Middleware(), chain.nodes[_d], nil)
			wantMetrics := stormCounts{
				Requests: _stormRoots, Prevented: 10 * _stormRoots, Retries: _stormRoots,
				Radius: map[float64]int64{1: _stormRoots}, BlindRadius: map[float64]int64{3: _stormRoots},
			}
			assert.Equal(t, wantMetrics, chain.nodes[_a].rootMetrics(), "A's errown.storm metrics")
			wantB := stormCounts{
				Requests: 1, Prevented: 3, Retries: 1,
				Radius: map[float64]int64{1: 1}, BlindRadius: map[float64]int64{2: 1},
			}
			assert.Equal(t, wantB, chain.nodes[_b].rootMetrics(), "B's errown.storm metrics: the onset request")
			wantC := stormCounts{
				Requests: 1, Retries: 1,
				Radius: map[float64]int64{1: 1}, BlindRadius: map[float64]int64{1: 1},
			}
			assert.Equal(t, wantC, chain.nodes[_c].rootMetrics(), "C's errown.storm metrics: the onset request")
			assert.Equal(t, stormCounts{Radius: map[float64]int64{}, BlindRadius: map[float64]int64{}}, chain.nodes[_d].rootMetrics(), "D's errown.storm metrics")
			// Each hop counts what its own suppressions prevented: the
			// root's figure, split along the chain.
			for _, h := range []struct {
				caller, callee        string
				suppressed, prevented int64
			}{
				{_a, _b, 1, 7},
				{_b, _c, 1, 3},
				{_c, _d, 0, 0},
			} {
				n := chain.nodes[h.caller]
				got := [2]int64{n.retryCounter("suppressed", h.callee), n.retryCounter("prevented", h.callee)}
				want := [2]int64{h.suppressed * _stormRoots, h.prevented * _stormRoots}
				assert.Equal(t, want, got, "%s's retry.suppressed and retry.prevented for %s", h.caller, h.callee)
			}
		})
	}
}

// The chain of TestStormChainEnforce in observe mode, on every service
// (errown.Config.Mode) or on every policy (retry.PolicyConfig.Mode):
// every hop retries blind to claims, so D serves 8 per root request (A 1,
// B 2, C 4, D 8: 15 in all, the blind figure), and the root reports the
// same figures as in enforce mode: served 5 (what errown would have
// served), blind 15, prevented 10, what enforce mode prevents.
//
// Every B and C request reports the same subtree as in enforce mode (B
// "4,7,1,1,2", C "3,3,1,1,1"): a hop's observe-mode errown world ends at
// the first unclaimed attempt, and the retries after it count only in the
// blind world. The hops' own retry.prevented counters are per request
// served, though: B serves 2 requests per root in observe mode, each of
// which would prevent 3, so A 7 + B 6 = 13 per root, more than the 10
// enforce mode prevents (B's second request would not exist there). Only
// the root's figure is the counterfactual of the whole call.
//
// The first root request is the incident's onset: its first attempts go
// unmarked until a retry, which always carries its number, reaches a hop
// (A's retry of B, B's of C) and everything below that is marked. So the
// first request B serves and the first C serves come unmarked: each is a
// root storm of its own subtree (B "4,7,1,1,2", C "3,3,1,1,1"), at the
// onset, as is A's. The requests after it are all marked: only A records
// their root storms.
func TestStormChainObserve(t *testing.T) {
	roundC := []string{
		wire(_c, _d, "1", _unavail, "1,1,0,0,0"),
		wire(_c, _d, "2", _unavail, "1,1,0,0,0"),
	}
	roundB := slices.Concat(
		roundC, []string{wire(_b, _c, "1", _unavail, "3,3,1,1,1")},
		roundC, []string{wire(_b, _c, "2", _unavail, "3,3,1,1,1")},
	)
	perRoot := slices.Concat(
		roundB, []string{wire(_a, _b, "1", _unavail, "4,7,1,1,2")},
		roundB, []string{wire(_a, _b, "2", _unavail, "4,7,1,1,2")},
	)
	// At the onset: C's first request (unmarked) calls D unmarked first,
	// B's first request calls C unmarked first; the retries and all below
	// them are marked.
	onsetC := []string{
		wire(_c, _d, "-", _unavail, "1,1,0,0,0"),
		wire(_c, _d, "2", _unavail, "1,1,0,0,0"),
	}
	onsetB := slices.Concat(
		onsetC, []string{wire(_b, _c, "-", _unavail, "3,3,1,1,1")},
		roundC, []string{wire(_b, _c, "2", _unavail, "3,3,1,1,1")},
	)
	onsetRoot := slices.Concat(
		onsetB, []string{wire(_a, _b, "-", _unavail, "4,7,1,1,2")},
		roundB, []string{wire(_a, _b, "2", _unavail, "4,7,1,1,2")},
	)
	served := map[string]int64{_a: 1, _b: 2, _c: 4, _d: 8}
	root := rootStorm(true, true, 5, 15, 1, 1, 3)
	bOnset := rootStorm(true, true, 4, 7, 1, 1, 2)
	cOnset := rootStorm(true, true, 3, 3, 1, 1, 1)
	modes := []struct {
		name string
		cfg  func(callees ...string) *errown.Config
	}{
		{"service", func(callees ...string) *errown.Config { return stormConfig(retry.ModeObserve, callees...) }},
		{"policy", policyObserveConfig},
	}
	for _, tr := range _transports {
		for _, mode := range modes {
			t.Run(tr+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				chain := startStormChain(t, tr, mode.cfg)
				mesh := chain.mesh

				for i := range _stormRoots {
					before := servedBy(mesh, _a, _b, _c, _d)
					reply := mesh.Call(callCtx(t), _a, []byte("storm"))
					assert.Equal(t, _unavail, reply.Code(), "root request %d: outside caller's code (claim %q, %v)", i, reply.Claim, reply.Err)
					assert.Equal(t, _unclaimed, reply.Claim, "root request %d: outside caller's claim (code %v, %v)", i, reply.Code(), reply.Err)
					got := servedSince(mesh, before)
					assert.Equal(t, served, got, "root request %d: served", i)
					assert.Equal(t, root.Blind, sum(got), "root request %d: the services served in all, the root storm's blind figure says", i)
					wantWire := perRoot
					if i == 0 {
						wantWire = onsetRoot
					}
					assert.Equal(t, wantWire, chain.tap.take(), "root request %d: on the wire", i)
					assert.Equal(t, "5,15,1,1,3", replyStorm(reply), "root request %d: A's reply's storm (headers %v)", i, reply.Headers)
				}

				assertRootStorms(t, _a, mesh.Service(_a).Middleware(), chain.nodes[_a],
					append([]inbound.Storm{atOnset(root)}, slices.Repeat([]inbound.Storm{root}, _stormRoots-1)...))
				assertRootStorms(t, _b, mesh.Service(_b).Middleware(), chain.nodes[_b], []inbound.Storm{atOnset(bOnset)})
				assertRootStorms(t, _c, mesh.Service(_c).Middleware(), chain.nodes[_c], []inbound.Storm{atOnset(cOnset)})
				assertRootStorms(t, _d, mesh.Service(_d).Middleware(), chain.nodes[_d], nil)
				wantMetrics := stormCounts{
					Requests: _stormRoots, Prevented: 10 * _stormRoots, Retries: _stormRoots,
					Radius: map[float64]int64{1: _stormRoots}, BlindRadius: map[float64]int64{3: _stormRoots},
				}
				assert.Equal(t, wantMetrics, chain.nodes[_a].rootMetrics(), "A's errown.storm metrics")
				wantB := stormCounts{
					Requests: 1, Prevented: 3, Retries: 1,
					Radius: map[float64]int64{1: 1}, BlindRadius: map[float64]int64{2: 1},
				}
				assert.Equal(t, wantB, chain.nodes[_b].rootMetrics(), "B's errown.storm metrics: its onset request")
				wantC := stormCounts{
					Requests: 1, Retries: 1,
					Radius: map[float64]int64{1: 1}, BlindRadius: map[float64]int64{1: 1},
				}
				assert.Equal(t, wantC, chain.nodes[_c].rootMetrics(), "C's errown.storm metrics: its onset request")
				assert.Equal(t, stormCounts{Radius: map[float64]int64{}, BlindRadius: map[float64]int64{}}, chain.nodes[_d].rootMetrics(), "D's errown.storm metrics")
				for _, h := range []struct {
					caller, callee                       string
					suppressed, wouldSuppress, prevented int64
				}{
					{_a, _b, 0, 1, 7},
					{_b, _c, 0, 2, 6},
					{_c, _d, 0, 0, 0},
				} {
					n := chain.nodes[h.caller]
					got := [3]int64{n.retryCounter("suppressed", h.callee), n.retryCounter("would_suppress", h.callee), n.retryCounter("prevented", h.callee)}
					want := [3]int64{h.suppressed * _stormRoots, h.wouldSuppress * _stormRoots, h.prevented * _stormRoots}
					assert.Equal(t, want, got, "%s's retry.suppressed, retry.would_suppress and retry.prevented for %s", h.caller, h.callee)
				}
			})
		}
	}
}

// A→B→C→D, D failing, as in TestStormChainEnforce, except that B runs no
// errown: a plain yarpc service whose outbound retries every failed call
// once with a plain retry library (retryOnce), blind to claims and setting
// no header.
//
// B's failure carries no storm header (nor claim), so A's figures are
// unknown: A retries B once (at least once: nothing says B's error is not
// its own) and records each root request as a storm with Known false,
// counted in errown.storm.unknown, with no figure anywhere. Per root
// request A serves 1, B 2, C 4 and D 8.
//
// C's requests come from B without errown-attempt: each is a root of its
// own, and C reports its subtree exactly: C 1 + D 2 = 3 served and blind
// (nobody above C in its view), 1 retry, radius 1, blind radius 1,
// nothing prevented; 4 such roots per root request at A.
//
// The first root request is the incident's onset: A's first attempt goes
// unmarked, and so does C's first call of D (C's procedure has seen no
// failure yet), so A's storm and C's first are at the onset. After it A's
// and C's procedures are in an incident: their first attempts are marked
// (C's requests still come unmarked, through B).
func TestStormUnknownWithoutErrown(t *testing.T) {
	roundC := []string{
		wire(_c, _d, "1", _unavail, "1,1,0,0,0"),
		wire(_c, _d, "2", _unavail, "1,1,0,0,0"),
	}
	roundB := slices.Concat(
		roundC, []string{wire(_b, _c, "-", _unavail, "3,3,1,1,1")},
		roundC, []string{wire(_b, _c, "-", _unavail, "3,3,1,1,1")},
	)
	perRoot := slices.Concat(
		roundB, []string{wire(_a, _b, "1", _unavail, "-")},
		roundB, []string{wire(_a, _b, "2", _unavail, "-")},
	)
	onsetB := slices.Concat(
		[]string{wire(_c, _d, "-", _unavail, "1,1,0,0,0"), wire(_c, _d, "2", _unavail, "1,1,0,0,0")},
		[]string{wire(_b, _c, "-", _unavail, "3,3,1,1,1")},
		roundC, []string{wire(_b, _c, "-", _unavail, "3,3,1,1,1")},
	)
	onsetRoot := slices.Concat(
		onsetB, []string{wire(_a, _b, "-", _unavail, "-")},
		roundB, []string{wire(_a, _b, "2", _unavail, "-")},
	)
	served := map[string]int64{_a: 1, _b: 2, _c: 4, _d: 8}
	aRoot := rootStorm(false, true, 0, 0, 0, 0, 0)
	cRoot := rootStorm(true, true, 3, 3, 1, 1, 1)
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			tap := new(wireTap)
			nodes := map[string]*stormNode{_a: newStormNode(), _c: newStormNode(), _d: newStormNode()}
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{
				Name: _d, Transport: tr, Errown: stormConfig(""), ErrownOptions: nodes[_d].options(),
				ExtraOutbound: tap, Handler: fail(_d),
			})
			mesh.Start(errowntest.ServiceConfig{
				Name: _c, Transport: tr, Errown: stormConfig("", _d), ErrownOptions: nodes[_c].options(),
				ExtraOutbound: tap, Callees: []string{_d}, Handler: errowntest.Forward,
			})
			mesh.Start(errowntest.ServiceConfig{
				Name: _b, Transport: tr, Errown: nil,
				ExtraOutbound: yarpc.UnaryOutboundMiddleware(retryOnce{}, tap), Callees: []string{_c}, Handler: errowntest.Forward,
			})
			mesh.Start(errowntest.ServiceConfig{
				Name: _a, Transport: tr, Errown: stormConfig("", _b), ErrownOptions: nodes[_a].options(),
				ExtraOutbound: tap, Callees: []string{_b}, Handler: errowntest.Forward,
			})

			for i := range _stormRoots {
				before := servedBy(mesh, _a, _b, _c, _d)
				reply := mesh.Call(callCtx(t), _a, []byte("storm"))
				assert.Equal(t, _unavail, reply.Code(), "root request %d: outside caller's code (%v)", i, reply.Err)
				assert.Equal(t, served, servedSince(mesh, before), "root request %d: served", i)
				wantWire := perRoot
				if i == 0 {
					wantWire = onsetRoot
				}
				assert.Equal(t, wantWire, tap.take(), "root request %d: on the wire", i)
				assert.Equal(t, ewire.StormUnknownValue, replyStorm(reply), "root request %d: A's reply's storm (headers %v)", i, reply.Headers)
			}

			assertRootStorms(t, _a, mesh.Service(_a).Middleware(), nodes[_a],
				append([]inbound.Storm{atOnset(aRoot)}, slices.Repeat([]inbound.Storm{aRoot}, _stormRoots-1)...))
			assertRootStorms(t, _c, mesh.Service(_c).Middleware(), nodes[_c],
				append([]inbound.Storm{atOnset(cRoot)}, slices.Repeat([]inbound.Storm{cRoot}, 4*_stormRoots-1)...))
			assertRootStorms(t, _d, mesh.Service(_d).Middleware(), nodes[_d], nil)
			wantA := stormCounts{
				Requests: _stormRoots, Unknown: _stormRoots,
				Radius: map[float64]int64{}, BlindRadius: map[float64]int64{},
			}
			assert.Equal(t, wantA, nodes[_a].rootMetrics(), "A's errown.storm metrics")
			wantC := stormCounts{
				Requests: 4 * _stormRoots, Retries: 4 * _stormRoots,
				Radius: map[float64]int64{1: 4 * _stormRoots}, BlindRadius: map[float64]int64{1: 4 * _stormRoots},
			}
			assert.Equal(t, wantC, nodes[_c].rootMetrics(), "C's errown.storm metrics")
			assert.Zero(t, nodes[_a].retryCounter("prevented", _b), "A's retry.prevented for B: unknown figures prevent nothing")
		})
	}
}

// A→B→C, everything succeeds, a policy on every edge: the steady state,
// in which nothing of errown's is on the wire. No procedure is in an
// incident and no request comes marked, so every call goes without
// errown-attempt, and every success answers its unmarked call without a
// storm header (quiet figures, "2,2,0,0,0" at B and "3,3,0,0,0" at A, are
// sent only to a marked request): not the leaf C's, not B's, not A's to
// the outside caller. Nobody retried or would have, so no root storm is
// recorded anywhere and the errown.storm metrics stay empty.
func TestStormSuccessQuiet(t *testing.T) {
	perRoot := []string{
		wire(_b, _c, "-", yarpcerrors.CodeOK, "-"),
		wire(_a, _b, "-", yarpcerrors.CodeOK, "-"),
	}
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			tap := new(wireTap)
			nodes := map[string]*stormNode{_a: newStormNode(), _b: newStormNode(), _c: newStormNode()}
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Errown: stormConfig(""), ErrownOptions: nodes[_c].options(), ExtraOutbound: tap})
			mesh.Start(errowntest.ServiceConfig{
				Name: _b, Transport: tr, Errown: stormConfig("", _c), ErrownOptions: nodes[_b].options(),
				ExtraOutbound: tap, Callees: []string{_c}, Handler: errowntest.Forward,
			})
			mesh.Start(errowntest.ServiceConfig{
				Name: _a, Transport: tr, Errown: stormConfig("", _b), ErrownOptions: nodes[_a].options(),
				ExtraOutbound: tap, Callees: []string{_b}, Handler: errowntest.Forward,
			})

			for i := range _stormRoots {
				reply := mesh.Call(callCtx(t), _a, []byte("calm"))
				assert.NoError(t, reply.Err, "root request %d: outside caller", i)
				assert.Equal(t, "calm", string(reply.Body), "root request %d: outside caller's body", i)
				assert.Equal(t, perRoot, tap.take(), "root request %d: on the wire, no errown header either way", i)
				assert.Equal(t, "-", replyStorm(reply), "root request %d: A's reply's storm (headers %v)", i, reply.Headers)
				for k := range reply.Headers {
					assert.False(t, strings.HasPrefix(strings.ToLower(k), "errown-"), "root request %d: A's reply carries errown's header %q (headers %v)", i, k, reply.Headers)
				}
			}

			assert.Equal(t, map[string]int64{_a: _stormRoots, _b: _stormRoots, _c: _stormRoots}, servedBy(mesh, _a, _b, _c), "served, want %d each", _stormRoots)
			want := stormCounts{Radius: map[float64]int64{}, BlindRadius: map[float64]int64{}}
			for _, n := range []string{_a, _b, _c} {
				assertRootStorms(t, n, mesh.Service(n).Middleware(), nodes[n], nil)
				assert.Equal(t, want, nodes[n].rootMetrics(), "%s's errown.storm metrics", n)
			}
		})
	}
}

// A→B→C, C fails every request with unavailable; B's dependency on C is
// soft: B swallows the error and succeeds. A policy on every edge.
//
// C claims, so B (its direct caller) retries it once: C serves 2. B's
// success then carries what it took, "3,3,1,1,1" (B 1 + C 2, one retry,
// radius 1), and A, the root, records a storm that did not fail: served
// 4 = A 1 + B 1 + C 2, blind 4 (nobody suppressed anything), 1 retry,
// radius 1, blind radius 1, nothing prevented.
//
// The first root request is the incident's onset: A's and B's first
// attempts go unmarked (C's retry carries "2"). B's success is stormy (a
// retry spent), so it carries its figures even to A's unmarked call, and
// A's root storm is exact, at the onset; B, serving an unmarked request,
// records it as a root storm of its own subtree, "3,3,1,1,1", at the
// onset too. After it A's procedure is in an incident: A's calls are
// marked, B's requests come marked, and only A records root storms.
func TestStormSoftFailure(t *testing.T) {
	onsetRoot := []string{
		wire(_b, _c, "-", _unavail, "1,1,0,0,0"),
		wire(_b, _c, "2", _unavail, "1,1,0,0,0"),
		wire(_a, _b, "-", yarpcerrors.CodeOK, "3,3,1,1,1"),
	}
	perRoot := []string{
		wire(_b, _c, "1", _unavail, "1,1,0,0,0"),
		wire(_b, _c, "2", _unavail, "1,1,0,0,0"),
		wire(_a, _b, "1", yarpcerrors.CodeOK, "3,3,1,1,1"),
	}
	served := map[string]int64{_a: 1, _b: 1, _c: 2}
	root := rootStorm(true, false, 4, 4, 1, 1, 1)
	bOnset := rootStorm(true, false, 3, 3, 1, 1, 1)
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			tap := new(wireTap)
			nodes := map[string]*stormNode{_a: newStormNode(), _b: newStormNode(), _c: newStormNode()}
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Errown: stormConfig(""), ErrownOptions: nodes[_c].options(), ExtraOutbound: tap, Handler: fail(_c)})
			mesh.Start(errowntest.ServiceConfig{
				Name: _b, Transport: tr, Errown: stormConfig("", _c), ErrownOptions: nodes[_b].options(),
				ExtraOutbound: tap, Callees: []string{_c}, Handler: swallow,
			})
			mesh.Start(errowntest.ServiceConfig{
				Name: _a, Transport: tr, Errown: stormConfig("", _b), ErrownOptions: nodes[_a].options(),
				ExtraOutbound: tap, Callees: []string{_b}, Handler: errowntest.Forward,
			})

			for i := range _stormRoots {
				before := servedBy(mesh, _a, _b, _c)
				reply := mesh.Call(callCtx(t), _a, []byte("soft"))
				assert.NoError(t, reply.Err, "root request %d: outside caller", i)
				assert.Equal(t, "soft", string(reply.Body), "root request %d: outside caller's body", i)
				got := servedSince(mesh, before)
				assert.Equal(t, served, got, "root request %d: served", i)
				assert.Equal(t, root.Served, sum(got), "root request %d: the services served in all, the root storm says", i)
				wantWire := perRoot
				if i == 0 {
					wantWire = onsetRoot
				}
				assert.Equal(t, wantWire, tap.take(), "root request %d: on the wire", i)
				assert.Equal(t, "4,4,1,1,1", replyStorm(reply), "root request %d: A's reply's storm (headers %v)", i, reply.Headers)
			}

			assertRootStorms(t, _a, mesh.Service(_a).Middleware(), nodes[_a],
				append([]inbound.Storm{atOnset(root)}, slices.Repeat([]inbound.Storm{root}, _stormRoots-1)...))
			assertRootStorms(t, _b, mesh.Service(_b).Middleware(), nodes[_b], []inbound.Storm{atOnset(bOnset)})
			assertRootStorms(t, _c, mesh.Service(_c).Middleware(), nodes[_c], nil)
			want := stormCounts{
				Requests: _stormRoots, Retries: _stormRoots,
				Radius: map[float64]int64{1: _stormRoots}, BlindRadius: map[float64]int64{1: _stormRoots},
			}
			assert.Equal(t, want, nodes[_a].rootMetrics(), "A's errown.storm metrics")
			wantB := stormCounts{
				Requests: 1, Retries: 1,
				Radius: map[float64]int64{1: 1}, BlindRadius: map[float64]int64{1: 1},
			}
			assert.Equal(t, wantB, nodes[_b].rootMetrics(), "B's errown.storm metrics: the onset request")
			assert.Equal(t, stormCounts{Radius: map[float64]int64{}, BlindRadius: map[float64]int64{}}, nodes[_c].rootMetrics(), "C's errown.storm metrics")
		})
	}
}
