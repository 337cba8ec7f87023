package nethttp_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
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

// The chain of the README on plain net/http: only C, next to the failing
// D, retries; B and A see unclaimed and do not.
func TestChainOnlyDirectCallerRetries(t *testing.T) {
	a, b, c, d := chain(t, retry.ModeEnforce)
	for range _requests {
		r := get(t, a.url)
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("A answered %d %q, want 503", r.status, r.body)
		}
		if got := r.header.Get(_claim); got != "unclaimed" {
			t.Errorf("A's claim: got %q, want unclaimed", got)
		}
		// served 5 (A, B, C, D twice), blind 15 (1+2·(1+2·(1+2·1))),
		// 1 retry, radius 1, blind radius 3.
		if got := r.header.Get(_storm); got != "5,15,1,1,3" {
			t.Errorf("A's storm header: got %q, want 5,15,1,1,3", got)
		}
	}
	want := map[string]int64{"A": _requests, "B": _requests, "C": _requests, "D": 2 * _requests}
	if got := served(a, b, c, d); !reflect.DeepEqual(got, want) {
		t.Errorf("served: got %v, want %v", got, want)
	}
	// What each hop read from its callee's last attempt: D claimed its
	// own failure, C (having retried) and B passed it on unclaimed.
	for _, hop := range []struct {
		n     *node
		claim string
	}{{c, "claimed"}, {b, "unclaimed"}, {a, "unclaimed"}} {
		for i, h := range hop.n.calleeHeaders() {
			if got := h.Get(_claim); got != hop.claim {
				t.Errorf("%s's callee answered request %d with claim %q, want %q", hop.n.name, i, got, hop.claim)
			}
		}
	}
	callee := func(name string) map[string]string { return map[string]string{"callee": name} }
	for _, hop := range []struct {
		n                    *node
		callee               string
		attempts, suppressed int64
	}{{c, "D", _requests, 0}, {b, "C", 0, _requests}, {a, "B", 0, _requests}} {
		if got := hop.n.counter("retry.attempts", callee(hop.callee)); got != hop.attempts {
			t.Errorf("%s: retry.attempts: got %d, want %d", hop.n.name, got, hop.attempts)
		}
		if got := hop.n.counter("retry.suppressed", callee(hop.callee)); got != hop.suppressed {
			t.Errorf("%s: retry.suppressed: got %d, want %d", hop.n.name, got, hop.suppressed)
		}
	}
	if got := d.counter("inbound.claimed", nil); got != 2*_requests {
		t.Errorf("D: inbound.claimed: got %d, want %d", got, 2*_requests)
	}
	for _, n := range []*node{a, b, c} {
		if got := n.counter("inbound.unclaimed", nil); got != _requests {
			t.Errorf("%s: inbound.unclaimed: got %d, want %d", n.name, got, _requests)
		}
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
				if r.status != http.StatusServiceUnavailable {
					t.Fatalf("A answered %d %q, want 503", r.status, r.body)
				}
				headers = append(headers, r.header.Get(_storm))
			}
			got := served(a, b, c, d)
			var total int64
			for name, per := range tt.counted {
				if got[name] != per*_requests {
					t.Errorf("%s served %d, want %d", name, got[name], per*_requests)
				}
				total += got[name]
			}
			t.Logf("%s: served per node %v (%d in all over %d root requests); A's storm header %v", tt.mode, got, total, _requests, headers)

			storms := a.rootStorms(t)
			if len(storms) != _requests {
				t.Fatalf("A recorded %d root storms, want %d: %+v", len(storms), _requests, storms)
			}
			want := tt.want
			want.Procedure, want.Known, want.Failed = _pattern, true, true
			var sum uint64
			for i, s := range storms {
				if s != want {
					t.Errorf("root storm %d: got %+v, want %+v", i, s, want)
				}
				if tt.mode == retry.ModeObserve {
					sum += s.Blind
				} else {
					sum += s.Served
				}
			}
			if int64(sum) != total {
				t.Errorf("the root's figures add up to %d requests, the services counted %d", sum, total)
			}
			for _, n := range []*node{b, c, d} {
				if s := n.rootStorms(t); len(s) != 0 {
					t.Errorf("%s is no root, yet recorded root storms %+v", n.name, s)
				}
			}
			if got := a.counter("storm.prevented", map[string]string{"procedure": _pattern}); got != 10*_requests {
				t.Errorf("A: storm.prevented: got %d, want %d", got, 10*_requests)
			}
		})
	}
}

// The success path carries no claim: errown sends a claim only on errors.
// A success whose subtree served more than its one request says so in the
// storm header; a leaf's success sends nothing at all.
func TestChainSuccessSendsNoClaim(t *testing.T) {
	c := startNode(t, nodeConfig{name: "C", errown: true})
	b := startNode(t, nodeConfig{name: "B", errown: true, policy: true, callee: c})
	a := startNode(t, nodeConfig{name: "A", errown: true, policy: true, callee: b})

	r := get(t, a.url)
	if r.status != http.StatusOK || r.body != "A>B>C" {
		t.Fatalf("A answered %d %q, want 200 A>B>C", r.status, r.body)
	}
	if v, ok := r.header[_claim]; ok {
		t.Errorf("A's success carries a claim %q", v)
	}
	if got := r.header.Get(_storm); got != "3,3,0,0,0" {
		t.Errorf("A's storm header: got %q, want 3,3,0,0,0", got)
	}
	if got := r.header.Get("Content-Length"); got != "5" {
		t.Errorf("Content-Length: got %q, want 5", got)
	}
	for _, hop := range []struct {
		n     *node
		storm string
	}{{a, "2,2,0,0,0"}, {b, ""}} {
		for _, h := range hop.n.calleeHeaders() {
			if v, ok := h[_claim]; ok {
				t.Errorf("%s's callee's success carries a claim %q", hop.n.name, v)
			}
			if got := h.Get(_storm); got != hop.storm {
				t.Errorf("%s's callee's storm header: got %q, want %q", hop.n.name, got, hop.storm)
			}
		}
	}
	if s := a.rootStorms(t); len(s) != 0 {
		t.Errorf("a success recorded root storms: %+v", s)
	}
}

// A callee that runs no errown sends no claim: its caller running errown
// retries once and passes the error on unclaimed, so nobody above
// retries, and the root's figures are unknown.
func TestMissingClaimFromPlainCallee(t *testing.T) {
	c := startNode(t, nodeConfig{name: "C", fail: http.StatusServiceUnavailable}) // no errown
	b := startNode(t, nodeConfig{name: "B", errown: true, policy: true, callee: c})
	a := startNode(t, nodeConfig{name: "A", errown: true, policy: true, callee: b})

	r := get(t, a.url)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("A answered %d %q, want 503", r.status, r.body)
	}
	if got := r.header.Get(_claim); got != "unclaimed" {
		t.Errorf("A's claim: got %q, want unclaimed", got)
	}
	if got := r.header.Get(_storm); got != "unknown" {
		t.Errorf("A's storm header: got %q, want unknown", got)
	}
	want := map[string]int64{"A": 1, "B": 1, "C": 2}
	if got := served(a, b, c); !reflect.DeepEqual(got, want) {
		t.Errorf("served: got %v, want %v", got, want)
	}
	if got := b.counter("egress.failures", map[string]string{"claim": "missing"}); got != 1 {
		t.Errorf("B: egress.failures{claim=missing}: got %d, want 1", got)
	}
	if got := a.counter("egress.failures", map[string]string{"claim": "unclaimed"}); got != 1 {
		t.Errorf("A: egress.failures{claim=unclaimed}: got %d, want 1", got)
	}
	wantStorm := []inbound.Storm{{Procedure: _pattern, Known: false, Failed: true}}
	if got := a.rootStorms(t); !reflect.DeepEqual(got, wantStorm) {
		t.Errorf("A's root storms: got %+v, want %+v", got, wantStorm)
	}
}
