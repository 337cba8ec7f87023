package grpcgo_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/yarpcerrors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// _roots is how many root requests each chain scenario sends.
const _roots = 3

// chain is A→B→C→D, D failing unavailable, each hop's errown retrying its
// callee once.
type chain struct{ a, b, c, d *node }

func (ch chain) nodes() []*node { return []*node{ch.a, ch.b, ch.c, ch.d} }

// grpcChain starts the chain of grpc-go services.
func grpcChain(t *testing.T, mode retry.Mode) chain {
	cfg := func(callee string) *errown.Config {
		c := retrying(callee)
		c.Mode = mode
		return c
	}
	d := startGRPC(t, nodeConfig{name: _d, errown: noPolicy(), work: failWith(codes.Unavailable)})
	c := startGRPC(t, nodeConfig{name: _c, errown: cfg(_d), callee: d})
	b := startGRPC(t, nodeConfig{name: _b, errown: cfg(_c), callee: c})
	a := startGRPC(t, nodeConfig{name: _a, errown: cfg(_b), callee: b})
	return chain{a, b, c, d}
}

// mixedChain starts A (grpc-go) → B (yarpc) → C (grpc-go) → D (yarpc):
// both directions, twice each.
func mixedChain(t *testing.T) chain {
	d := startYARPC(t, nodeConfig{name: _d, errown: noPolicy(), work: func(context.Context) error {
		return yarpcerrors.UnavailableErrorf("down")
	}})
	c := startGRPC(t, nodeConfig{name: _c, errown: retrying(_d), callee: d})
	b := startYARPC(t, nodeConfig{name: _b, errown: retrying(_c), callee: c})
	a := startGRPC(t, nodeConfig{name: _a, errown: retrying(_b), callee: b})
	return chain{a, b, c, d}
}

func TestChain(t *testing.T) {
	// errown: only C retries D; B sees C's error unclaimed and A sees B's.
	// Blind to claims every hop would have retried: D 8, C 4, B 2.
	enforced := map[string]int64{_a: 1, _b: 1, _c: 1, _d: 2}
	blind := map[string]int64{_a: 1, _b: 2, _c: 4, _d: 8}
	for _, tt := range []struct {
		name   string
		start  func(*testing.T) chain
		served map[string]int64
	}{
		{"grpc-go", func(t *testing.T) chain { return grpcChain(t, retry.ModeEnforce) }, enforced},
		{"grpc-go/observe", func(t *testing.T) chain { return grpcChain(t, retry.ModeObserve) }, blind},
		{"mixed", mixedChain, enforced},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ch := tt.start(t)
			for i := range _roots {
				before := served(ch.nodes()...)
				r := callRoot(t, ch.a)
				got := served(ch.nodes()...)
				for k := range got {
					got[k] -= before[k]
				}
				assert.Equal(t, tt.served, got, "root request %d: served", i)
				assert.Equal(t, codes.Unavailable, r.code, "root request %d: root code (trailer %v)", i, r.trailer)
				assert.Equal(t, _unclaimed, r.get(_claimHeader), "root request %d: root claim (trailer %v)", i, r.trailer)
				// Served 5 (A, B, C, D twice), 15 blind (1+2+4+8), one
				// retry, radius 1, blind radius 3.
				assert.Equal(t, "5,15,1,1,3", r.get(_stormHeader), "root request %d: storm", i)
			}

			// Storm telemetry at the root equals the counts: 5 served,
			// 10 prevented. The first root request is the incident's
			// onset: A, B and C sent their first calls unmarked (no
			// incident yet), so B and C, whose first requests came
			// unmarked, each recorded a root storm of their own subtree's
			// figures (B: 4 served, 7 blind; C: 3 and 3), and A's storm
			// is at the onset. Once in the incident every call is marked:
			// the later root requests' storms are A's alone.
			want := append([]inbound.Storm{atOnset(rootStorm(true, true, 5, 15, 1, 1, 3))},
				slices.Repeat([]inbound.Storm{rootStorm(true, true, 5, 15, 1, 1, 3)}, _roots-1)...)
			assert.Equal(t, want, ch.a.rootStorms(), "A's root storms")
			assert.Equal(t, []inbound.Storm{atOnset(rootStorm(true, true, 4, 7, 1, 1, 2))}, ch.b.rootStorms(), "B's root storms: the onset's only")
			assert.Equal(t, []inbound.Storm{atOnset(rootStorm(true, true, 3, 3, 1, 1, 1))}, ch.c.rootStorms(), "C's root storms: the onset's only")
			assert.Empty(t, ch.d.rootStorms(), "%s is no root but reported storms", ch.d.name)
			proc := map[string]string{"procedure": _procedure}
			for name, want := range map[string]int64{"requests": _roots, "prevented": 10 * _roots, "retries": _roots, "unknown": 0} {
				assert.Equal(t, want, ch.a.counter("storm."+name, proc), "A's errown.storm.%s", name)
			}

			// What each hop's errown saw of its callee's claim.
			suppressed := "suppressed"
			if tt.name == "grpc-go/observe" {
				suppressed = "would_suppress"
			}
			// Each request a hop served made one logical call.
			for _, h := range []struct {
				caller *node
				callee string
				claim  string
				name   string
			}{
				{ch.a, _b, _unclaimed, suppressed},
				{ch.b, _c, _unclaimed, suppressed},
				{ch.c, _d, _claimed, "attempts"},
			} {
				want := _roots * tt.served[h.caller.name]
				assert.Equal(t, want, h.caller.counter("egress.failures", map[string]string{"claim": h.claim}), "%s: failed calls with claim %s", h.caller.name, h.claim)
				assert.Equal(t, want, h.caller.counter("retry."+h.name, map[string]string{"callee": h.callee}), "%s: retry.%s{callee=%s}", h.caller.name, h.name, h.callee)
			}
			for _, n := range ch.nodes() {
				assert.Zero(t, n.mw.Introspect().InFlight, "%s: requests still tracked", n.name)
			}
		})
	}
}

// Many root requests at once through the grpc-go chain: each one's
// figures are its own.
func TestChainConcurrent(t *testing.T) {
	const roots = 64
	ch := grpcChain(t, retry.ModeEnforce)
	var wg sync.WaitGroup
	replies := make([]reply, roots)
	for i := range roots {
		wg.Go(func() { replies[i] = callRoot(t, ch.a) })
	}
	wg.Wait()
	for i, r := range replies {
		assert.Equal(t, codes.Unavailable, r.code, "root request %d: code (trailer %v)", i, r.trailer)
		assert.Equal(t, _unclaimed, r.get(_claimHeader), "root request %d: claim (trailer %v)", i, r.trailer)
		assert.Equal(t, "5,15,1,1,3", r.get(_stormHeader), "root request %d: storm (trailer %v)", i, r.trailer)
	}
	want := map[string]int64{_a: roots, _b: roots, _c: roots, _d: 2 * roots}
	assert.Equal(t, want, served(ch.nodes()...), "served")
	proc := map[string]string{"procedure": _procedure}
	assert.Equal(t, int64(10*roots), ch.a.counter("storm.prevented", proc), "A's errown.storm.prevented")
}

// The steady state puts nothing of errown's on the wire: a success in no
// incident, A's with B and C below, goes out unmarked at every hop, and
// comes back without a storm header, even though A's subtree served 3;
// nobody claims anything, and a quiet success is no storm.
func TestQuietSuccess(t *testing.T) {
	var aWire, bWire wireRecorder
	c := startGRPC(t, nodeConfig{name: _c, errown: noPolicy()})
	b := startGRPC(t, nodeConfig{name: _b, errown: retrying(_c), callee: c, dialOptions: []grpc.DialOption{bWire.dialOption()}})
	a := startGRPC(t, nodeConfig{name: _a, errown: retrying(_b), callee: b, dialOptions: []grpc.DialOption{aWire.dialOption()}})
	r := callRoot(t, a)
	assert.Equal(t, codes.OK, r.code, "root code (trailer %v)", r.trailer)
	assert.Equal(t, metadata.MD{}, errownKeys(r.trailer), "errown trailers at the root (trailer %v)", r.trailer)
	assert.Equal(t, map[string]int64{_a: 1, _b: 1, _c: 1}, served(a, b, c), "served")
	for _, w := range []struct {
		name string
		rec  *wireRecorder
	}{{"A→B", &aWire}, {"B→C", &bWire}} {
		sent, trailers := w.rec.recorded()
		assert.Equal(t, []metadata.MD{{}}, sent, "%s: errown metadata sent", w.name)
		assert.Equal(t, []metadata.MD{{}}, trailers, "%s: errown trailers received", w.name)
	}
	for _, n := range []*node{a, b, c} {
		assert.Empty(t, n.rootStorms(), "%s: a quiet success is no storm", n.name)
	}
	assert.Equal(t, int64(1), a.counter("egress.calls", nil), "A's egress.calls")
}
