package nethttp_test

import (
	"net/http"
	"testing"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// _requests is how many root requests each chain scenario sends.
const _requests = 3

// chain starts A→B→C→D, plain net/http services each running errown
// (Handler and Transport) in mode, each with a policy of two attempts for
// its callee; D fails every request with 503.
func chain(t *testing.T, mode retry.Mode) (a, b, c, d *node) {
	d = startNode(t, nodeConfig{name: "D", errown: true, mode: mode, fail: http.StatusServiceUnavailable})
	c = startNode(t, nodeConfig{name: "C", errown: true, mode: mode, policy: true, callee: d})
	b = startNode(t, nodeConfig{name: "B", errown: true, mode: mode, policy: true, callee: c})
	a = startNode(t, nodeConfig{name: "A", errown: true, mode: mode, policy: true, callee: b})
	return a, b, c, d
}

// The chain of docs/lab.md on plain net/http: only C, next to the failing
// D, retries; B and A see unclaimed and do not.
func TestChainOnlyDirectCallerRetries(t *testing.T) {
	a, b, c, d := chain(t, retry.ModeEnforce)
	for range _requests {
		r := get(t, a.url)
		require.Equal(t, http.StatusServiceUnavailable, r.status, "A answered %d %q", r.status, r.body)
		assert.Equal(t, "unclaimed", r.header.Get(_claim), "A's claim")
		// served 5 (A, B, C, D twice), blind 15 (1+2·(1+2·(1+2·1))),
		// 1 retry, radius 1, blind radius 3.
		assert.Equal(t, "5,15,1,1,3", r.header.Get(_storm), "A's storm header")
	}
	want := map[string]int64{"A": _requests, "B": _requests, "C": _requests, "D": 2 * _requests}
	assert.Equal(t, want, served(a, b, c, d), "served")
	// What each hop read from its callee's last attempt: D claimed its
	// own failure, C (having retried) and B passed it on unclaimed.
	for _, hop := range []struct {
		n     *node
		claim string
	}{{c, "claimed"}, {b, "unclaimed"}, {a, "unclaimed"}} {
		for i, h := range hop.n.calleeHeaders() {
			assert.Equal(t, hop.claim, h.Get(_claim), "%s's callee answered request %d with claim", hop.n.name, i)
		}
	}
	callee := func(name string) map[string]string { return map[string]string{"callee": name} }
	for _, hop := range []struct {
		n                    *node
		callee               string
		attempts, suppressed int64
	}{{c, "D", _requests, 0}, {b, "C", 0, _requests}, {a, "B", 0, _requests}} {
		assert.Equal(t, hop.attempts, hop.n.counter("retry.attempts", callee(hop.callee)), "%s: retry.attempts", hop.n.name)
		assert.Equal(t, hop.suppressed, hop.n.counter("retry.suppressed", callee(hop.callee)), "%s: retry.suppressed", hop.n.name)
	}
	assert.Equal(t, int64(2*_requests), d.counter("inbound.claimed", nil), "D: inbound.claimed")
	for _, n := range []*node{a, b, c} {
		assert.Equal(t, int64(_requests), n.counter("inbound.unclaimed", nil), "%s: inbound.unclaimed", n.name)
	}
}

// Storm telemetry on the net/http chain: the root's figures are what the
// services counted. In enforce mode A's served figure is the requests the
// four services served; in observe mode errown retries blind, every hop
// retries, and A's blind figure is what they served, the same 15 the
// enforce run computed without sending them.
func TestChainStormFigures(t *testing.T) {
	tests := []struct {
		mode retry.Mode
		// want is the storm of every root request; counted is what the
		// services served per root request.
		want    inbound.Storm
		counted map[string]int64
	}{
		{
			mode:    retry.ModeEnforce,
			want:    inbound.Storm{Served: 5, Blind: 15, Prevented: 10, Retries: 1, Radius: 1, BlindRadius: 3},
			counted: map[string]int64{"A": 1, "B": 1, "C": 1, "D": 2},
		},
		{
			// Observe mode swaps the worlds: Blind is what happened,
			// Served what enforce mode would have done.
			mode:    retry.ModeObserve,
			want:    inbound.Storm{Served: 5, Blind: 15, Prevented: 10, Retries: 1, Radius: 1, BlindRadius: 3},
			counted: map[string]int64{"A": 1, "B": 2, "C": 4, "D": 8},
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			a, b, c, d := chain(t, tt.mode)
			var headers []string
			for range _requests {
				r := get(t, a.url)
				require.Equal(t, http.StatusServiceUnavailable, r.status, "A answered %d %q", r.status, r.body)
				headers = append(headers, r.header.Get(_storm))
			}
			got := served(a, b, c, d)
			var total int64
			for name, per := range tt.counted {
				assert.Equal(t, per*_requests, got[name], "%s served", name)
				total += got[name]
			}
			t.Logf("%s: served per node %v (%d in all over %d root requests); A's storm header %v", tt.mode, got, total, _requests, headers)

			storms := a.rootStorms(t)
			require.Len(t, storms, _requests, "A's root storms: %+v", storms)
			want := tt.want
			want.Procedure, want.Known, want.Failed = _pattern, true, true
			var sum uint64
			for i, s := range storms {
				// The first root request is the incident's onset: A's
				// call went unmarked. Its figures, carried by failures,
				// stay exact.
				w := want
				w.Onset = i == 0
				assert.Equal(t, w, s, "root storm %d", i)
				if tt.mode == retry.ModeObserve {
					sum += s.Blind
				} else {
					sum += s.Served
				}
			}
			assert.Equal(t, total, int64(sum), "the root's figures add up to %d requests, the services counted %d", sum, total)
			// At the onset B and C, whose first requests came unmarked,
			// were roots too, each of its own subtree (B: 4 served, 7
			// blind; C: 3 and 3); once in the incident every call is
			// marked and only A is a root.
			onset := func(served, blind, retries uint64, radius, blindRadius int) []inbound.Storm {
				return []inbound.Storm{{
					Procedure: _pattern, Known: true, Failed: true, Onset: true,
					Served: served, Blind: blind, Prevented: blind - served, Retries: retries,
					Radius: radius, BlindRadius: blindRadius,
				}}
			}
			assert.Equal(t, onset(4, 7, 1, 1, 2), b.rootStorms(t), "B's root storms: the onset's only")
			assert.Equal(t, onset(3, 3, 1, 1, 1), c.rootStorms(t), "C's root storms: the onset's only")
			assert.Empty(t, d.rootStorms(t), "D is no root, yet recorded root storms")
			assert.Equal(t, int64(10*_requests), a.counter("storm.prevented", map[string]string{"procedure": _pattern}), "A: storm.prevented")
		})
	}
}

// The success path carries no claim: errown sends a claim only on errors.
// In the steady state (no incident) nothing of errown's is on the wire at
// all: no attempt header on the requests, no storm header on the
// successes, though A's subtree served 3. A caller in an incident marks
// its request: then a success whose subtree served more than its one
// request says so in the storm header, and a leaf's success sends
// nothing at all.
func TestChainSuccessSendsNoClaim(t *testing.T) {
	c := startNode(t, nodeConfig{name: "C", errown: true})
	b := startNode(t, nodeConfig{name: "B", errown: true, policy: true, callee: c})
	a := startNode(t, nodeConfig{name: "A", errown: true, policy: true, callee: b})

	// The steady state.
	r := get(t, a.url)
	require.Equal(t, http.StatusOK, r.status, "A answered %d %q", r.status, r.body)
	require.Equal(t, "A>B>C", r.body, "A answered %d %q", r.status, r.body)
	assert.Equal(t, http.Header{}, errownHeaders(r.header), "A's success carries errown headers")
	assert.Equal(t, "5", r.header.Get("Content-Length"), "Content-Length")
	for _, n := range []*node{a, b} {
		hs := n.calleeHeaders()
		require.Len(t, hs, 1, "%s's callee's responses", n.name)
		assert.Equal(t, http.Header{}, errownHeaders(hs[0]), "%s's callee's success carries errown headers", n.name)
	}
	for _, n := range []*node{b, c} {
		hs := n.requestHeaders()
		require.Len(t, hs, 1, "%s's requests", n.name)
		assert.Equal(t, http.Header{}, errownHeaders(hs[0]), "%s's request carries errown headers", n.name)
	}

	// The root's caller in an incident: its request is marked, and so
	// are A's and B's calls.
	r = do(t, http.MethodGet, a.url+_path, nil, http.Header{_attempt: {"1"}})
	require.Equal(t, http.StatusOK, r.status, "marked: A answered %d %q", r.status, r.body)
	require.Equal(t, "A>B>C", r.body, "marked: A answered %d %q", r.status, r.body)
	assert.NotContains(t, r.header, _claim, "marked: A's success carries a claim %q", r.header.Get(_claim))
	assert.Equal(t, "3,3,0,0,0", r.header.Get(_storm), "marked: A's storm header")
	for _, hop := range []struct {
		n     *node
		storm string
	}{{a, "2,2,0,0,0"}, {b, ""}} {
		hs := hop.n.calleeHeaders()
		require.Len(t, hs, 2, "%s's callee's responses", hop.n.name)
		assert.NotContains(t, hs[1], _claim, "marked: %s's callee's success carries a claim %q", hop.n.name, hs[1].Get(_claim))
		assert.Equal(t, hop.storm, hs[1].Get(_storm), "marked: %s's callee's storm header", hop.n.name)
	}
	for _, n := range []*node{b, c} {
		hs := n.requestHeaders()
		require.Len(t, hs, 2, "%s's requests", n.name)
		assert.Equal(t, "1", hs[1].Get(_attempt), "marked: %s's request's attempt header", n.name)
	}
	for _, n := range []*node{a, b, c} {
		assert.Empty(t, n.rootStorms(t), "%s: a success recorded root storms", n.name)
	}
}

// A callee that runs no errown sends no claim: its caller running errown
// retries once and passes the error on unclaimed, so nobody above
// retries, and the root's figures are unknown.
func TestMissingClaimFromPlainCallee(t *testing.T) {
	c := startNode(t, nodeConfig{name: "C", fail: http.StatusServiceUnavailable}) // no errown
	b := startNode(t, nodeConfig{name: "B", errown: true, policy: true, callee: c})
	a := startNode(t, nodeConfig{name: "A", errown: true, policy: true, callee: b})

	// The first root request is the incident's onset, the second is in
	// it: they are served alike.
	for i := range 2 {
		r := get(t, a.url)
		require.Equal(t, http.StatusServiceUnavailable, r.status, "root request %d: A answered %d %q", i, r.status, r.body)
		assert.Equal(t, "unclaimed", r.header.Get(_claim), "root request %d: A's claim", i)
		assert.Equal(t, "unknown", r.header.Get(_storm), "root request %d: A's storm header", i)
	}
	assert.Equal(t, map[string]int64{"A": 2, "B": 2, "C": 4}, served(a, b, c), "served")
	assert.Equal(t, int64(2), b.counter("egress.failures", map[string]string{"claim": "missing"}), "B: egress.failures{claim=missing}")
	assert.Equal(t, int64(2), a.counter("egress.failures", map[string]string{"claim": "unclaimed"}), "A: egress.failures{claim=unclaimed}")
	// At the onset A's call went unmarked, so B's first request was a
	// root too, its figures unknown; after it, only A is a root.
	unknown := inbound.Storm{Procedure: _pattern, Known: false, Failed: true}
	onset := unknown
	onset.Onset = true
	assert.Equal(t, []inbound.Storm{onset, unknown}, a.rootStorms(t), "A's root storms")
	assert.Equal(t, []inbound.Storm{onset}, b.rootStorms(t), "B's root storms: the onset's only")
}
