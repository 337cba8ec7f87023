package retrypeer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/reqlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/peer/abstractpeer"
	"go.uber.org/yarpc/peer/pendingheap"
	"go.uber.org/yarpc/peer/roundrobin"
)

// transportOf is a peer.Transport whose peers are always available: what
// yarpc's lists choose among, without connections.
type transportOf struct{}

func (transportOf) RetainPeer(id peer.Identifier, s peer.Subscriber) (peer.Peer, error) {
	p := abstractpeer.NewPeer(abstractpeer.PeerIdentifier(id.Identifier()), transportOf{})
	p.SetStatus(peer.Available)
	return p, nil
}

func (transportOf) ReleasePeer(peer.Identifier, peer.Subscriber) error { return nil }

// startList starts list with n peers "p0".."pN-1" and returns a function
// that stops it.
func startList(t *testing.T, list interface {
	peer.ChooserList
}, n int) {
	t.Helper()
	var ids []peer.Identifier
	for i := range n {
		ids = append(ids, abstractpeer.PeerIdentifier(fmt.Sprintf("p%d", i)))
	}
	require.NoError(t, list.Start())
	t.Cleanup(func() { assert.NoError(t, list.Stop()) })
	require.NoError(t, list.Update(peer.ListUpdates{Additions: ids}))
}

func availableList(t *testing.T, kind string, n int) peer.ChooserList {
	var list peer.ChooserList
	switch kind {
	case "roundrobin":
		list = roundrobin.New(transportOf{})
	default:
		list = pendingheap.New(transportOf{})
	}
	startList(t, list, n)
	return list
}

// choose chooses a peer for ctx and returns its identifier.
func choose(t *testing.T, c peer.Chooser, ctx context.Context) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	p, done, err := c.Choose(ctx, &transport.Request{})
	require.NoError(t, err)
	done(nil)
	return p.Identifier()
}

func TestRetryAvoidsEarlierPeers(t *testing.T) {
	for _, kind := range []string{"roundrobin", "pendingheap"} {
		t.Run(kind, func(t *testing.T) {
			c := New(availableList(t, kind, 3))
			for range 20 {
				ctx, route := reqlog.NewRouteContext(context.Background())
				first := choose(t, c, ctx)
				// Other calls take turns in between, as under concurrency:
				// round robin comes back to first's peer.
				choose(t, c, context.Background())
				choose(t, c, context.Background())
				second := choose(t, c, ctx)
				assert.NotEqual(t, first, second, "the retry went to the peer the first attempt went to")
				third := choose(t, c, ctx)
				assert.NotContains(t, []string{first, second}, third)
				assert.Equal(t, 3, route.Len())
				assert.Equal(t, third, route.Last())
			}
		})
	}
}

func TestPlainListRetriesSamePeer(t *testing.T) {
	// What the wrapper changes: the bare round robin, with two other calls
	// in between, sends the retry to the peer that just failed it.
	list := availableList(t, "roundrobin", 3)
	ctx := context.Background()
	first := choose(t, list, ctx)
	choose(t, list, ctx)
	choose(t, list, ctx)
	assert.Equal(t, first, choose(t, list, ctx))
}

func TestSingleInstanceRetriesItsOne(t *testing.T) {
	c := New(availableList(t, "roundrobin", 1))
	ctx, route := reqlog.NewRouteContext(context.Background())
	assert.Equal(t, "p0", choose(t, c, ctx))
	assert.Equal(t, "p0", choose(t, c, ctx))
	assert.Equal(t, 2, route.Len())
}

func TestSkippedChoicesReleased(t *testing.T) {
	// pendingheap counts pending requests: a skipped choice not released
	// would keep its peer pending for good, and the next calls avoid it.
	list := availableList(t, "pendingheap", 2)
	c := New(list)
	for range 10 {
		ctx, _ := reqlog.NewRouteContext(context.Background())
		choose(t, c, ctx)
		choose(t, c, ctx)
		choose(t, c, ctx) // both used: falls back, skipping choices
	}
	seen := map[string]int{}
	for range 10 {
		seen[choose(t, c, context.Background())]++
	}
	assert.Equal(t, map[string]int{"p0": 5, "p1": 5}, seen)
}

func TestWithoutRouteChoosesAsInner(t *testing.T) {
	c := New(availableList(t, "roundrobin", 3))
	var got []string
	for range 4 {
		got = append(got, choose(t, c, context.Background()))
	}
	assert.Equal(t, got[0], got[3])
	assert.NotEqual(t, got[0], got[1])
}

type notAList struct{ peer.Chooser }

func TestUpdateNeedsAList(t *testing.T) {
	err := New(notAList{}).Update(peer.ListUpdates{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a peer.List")
}

func TestChooseErrorPassesThrough(t *testing.T) {
	list := roundrobin.New(transportOf{}, roundrobin.FailFast())
	require.NoError(t, list.Start())
	defer func() { assert.NoError(t, list.Stop()) }()
	ctx, route := reqlog.NewRouteContext(context.Background())
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, _, err := New(list).Choose(ctx, &transport.Request{})
	require.Error(t, err)
	assert.Equal(t, 0, route.Len())
	assert.False(t, errors.Is(err, context.Canceled))
}

// TestConcurrentCalls: under calls in flight, with a hedge choosing on
// each call's route once its retry is chosen, retries go to another peer
// than their call's first attempt. Each choice may land on the used peer
// by chance (about 1 in 3 with other calls taking turns), so a retry goes
// back to it about (1/3)^9 of the time: at most a few of the 400 here,
// where the inner list alone sends some 130.
func TestConcurrentCalls(t *testing.T) {
	c := New(availableList(t, "roundrobin", 3))
	var wg sync.WaitGroup
	var same atomic.Int64
	for range 8 {
		wg.Go(func() {
			for range 50 {
				ctx, _ := reqlog.NewRouteContext(context.Background())
				first := choose(t, c, ctx)
				if choose(t, c, ctx) == first {
					same.Add(1)
				}
				var hedge sync.WaitGroup
				hedge.Go(func() { choose(t, c, ctx) })
				hedge.Wait()
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, same.Load(), int64(4), "retries sent to their first attempt's peer")
}

func TestNewTurnsRoutesOn(t *testing.T) {
	// errown's retry middleware gives calls a Route only once a chooser
	// that reads it exists in the process.
	defer reqlog.SetRoutesRead(false)()
	require.False(t, reqlog.RoutesRead())
	New(roundrobin.New(transportOf{}))
	assert.True(t, reqlog.RoutesRead(), "routes read after New")
}

// callOnce makes one call through c as errown's retry middleware would:
// a first attempt, and when the peer fails (failing says which do), a
// retry on the same route; once an attempt is served, it tells the route
// (Served). It returns the peers of its attempts.
func callOnce(t *testing.T, c peer.Chooser, failing func(string) bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ctx, route := reqlog.NewRouteContext(ctx)
	var peers []string
	for range 2 {
		p, done, err := c.Choose(ctx, &transport.Request{})
		require.NoError(t, err)
		id := p.Identifier()
		peers = append(peers, id)
		// yarpc's outbounds tell onFinish transport errors only: an
		// error response is no error to the list.
		done(nil)
		if !failing(id) {
			route.Served(nil)
			return peers
		}
	}
	return peers
}

// TestFailingInstanceGetsFewerFirstAttempts: one of three instances
// failing every call, behind a round robin. Retries avoiding it alone
// leave it its turns, taken by first attempts: sequential calls send
// every other first attempt to it (half the calls pay a retry). Passed
// over once per call it failed and another instance served, it gets a
// quarter of the first attempts.
func TestFailingInstanceGetsFewerFirstAttempts(t *testing.T) {
	for _, kind := range []string{"roundrobin", "pendingheap"} {
		t.Run(kind, func(t *testing.T) {
			c := New(availableList(t, kind, 3))
			const calls = 300
			first := map[string]int{}
			for range calls {
				peers := callOnce(t, c, func(id string) bool { return id == "p0" })
				first[peers[0]]++
				assert.NotEqual(t, "p0", peers[len(peers)-1], "the call's last attempt went to the failing instance: %v", peers)
			}
			t.Logf("first attempts per peer: %v", first)
			assert.LessOrEqual(t, first["p0"], calls/4+1, "first attempts per peer: %v", first)
			assert.Positive(t, first["p0"], "the failing instance gets no first attempt: %v", first)
		})
	}
}

// TestCalleeFailingPassesNoPeer: every instance failing, no retry
// succeeds: no peer is passed over, first attempts go round as the
// inner list sends them.
func TestCalleeFailingPassesNoPeer(t *testing.T) {
	c := New(availableList(t, "roundrobin", 3))
	first := map[string]int{}
	for range 300 {
		peers := callOnce(t, c, func(string) bool { return true })
		require.Len(t, peers, 2)
		assert.NotEqual(t, peers[0], peers[1])
		first[peers[0]]++
	}
	assert.Equal(t, map[string]int{"p0": 100, "p1": 100, "p2": 100}, first, "the inner list's turns, two per call")
	assert.Zero(t, c.npasses.Load())
}

// TestPassOnlyForAnotherPeer: a single instance's retry succeeds on the
// instance that failed the first attempt: no evidence against it, it
// stays chosen.
func TestPassOnlyForAnotherPeer(t *testing.T) {
	c := New(availableList(t, "roundrobin", 1))
	n := 0
	for range 10 {
		peers := callOnce(t, c, func(string) bool { n++; return n%2 == 1 })
		assert.Equal(t, []string{"p0", "p0"}, peers)
	}
	assert.Zero(t, c.npasses.Load())
}

// TestPassesBounded: evidence about more peers than _maxPasses is
// dropped, and a pass is taken once.
func TestPassesBounded(t *testing.T) {
	c := New(availableList(t, "roundrobin", 1))
	for i := range _maxPasses + 10 {
		c.givePass(fmt.Sprintf("p%d", i))
	}
	assert.EqualValues(t, _maxPasses, c.npasses.Load())
	assert.True(t, c.takePass("p1"))
	assert.False(t, c.takePass("p1"), "a pass is taken once")
	assert.False(t, c.takePass(fmt.Sprintf("p%d", _maxPasses+1)), "dropped")
}

// TestStrictRetryNeverGoesBack: the retry of an instance's shed (a
// strict Route) goes to a peer the call's attempts did not reach, or,
// offered none, nowhere: Choose fails with calls.ErrNoOtherPeer, records
// nothing and leaves the Route strict (the retry middleware reads it so),
// every choice it skipped released. A Route that is not strict falls
// back to the peer offered, as before.
func TestStrictRetryNeverGoesBack(t *testing.T) {
	tests := []struct {
		name      string
		kind      string
		peers     int
		strict    bool
		wantErr   bool
		wantOther bool // the retry went to a peer the first attempt did not
	}{
		{name: "strict, one instance: nowhere", kind: "roundrobin", peers: 1, strict: true, wantErr: true},
		{name: "strict, one instance, pending-aware: nowhere", kind: "pendingheap", peers: 1, strict: true, wantErr: true},
		{name: "strict, two instances: the other", kind: "roundrobin", peers: 2, strict: true, wantOther: true},
		{name: "strict, three instances, pending-aware: another", kind: "pendingheap", peers: 3, strict: true, wantOther: true},
		{name: "not strict, one instance: falls back to it", kind: "roundrobin", peers: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := availableList(t, tt.kind, tt.peers)
			c := New(list)
			for range 5 {
				ctx, route := reqlog.NewRouteContext(context.Background())
				first := choose(t, c, ctx)
				route.SetStrict(tt.strict)
				p, done, err := c.Choose(ctx, &transport.Request{})
				if tt.wantErr {
					require.ErrorIs(t, err, calls.ErrNoOtherPeer)
					assert.Nil(t, p)
					assert.Nil(t, done)
				} else {
					require.NoError(t, err)
					done(nil)
				}
				assert.Equal(t, !tt.wantErr, route.Len() == 2, "the retry's peer recorded: %v", route.Peers(nil))
				assert.Equal(t, tt.wantErr, route.Strict(), "strict until a peer is chosen")
				assert.Equal(t, tt.wantOther, route.Last() != first, "the retry's peer: %v", route.Peers(nil))
			}
			// Every choice skipped was released: a pending-aware list
			// still shares the next calls out evenly.
			seen := map[string]int{}
			for range 10 * tt.peers {
				seen[choose(t, c, context.Background())]++
			}
			for id, n := range seen {
				assert.Equal(t, 10, n, "choices of %s", id)
			}
		})
	}
}

// TestStrictRetryWithEveryPeerUsedReleasesItsChoices: the retry of a
// shed whose call already went to every instance goes nowhere, and
// releases every choice it held, the other instance's included: a
// pending-aware list still shares the next calls out evenly.
func TestStrictRetryWithEveryPeerUsedReleasesItsChoices(t *testing.T) {
	list := availableList(t, "pendingheap", 2)
	c := New(list)
	for range 5 {
		ctx, route := reqlog.NewRouteContext(context.Background())
		first := choose(t, c, ctx)
		second := choose(t, c, ctx)
		require.NotEqual(t, first, second, "the call went to both instances")
		route.SetStrict(true)
		_, _, err := c.Choose(ctx, &transport.Request{})
		require.ErrorIs(t, err, calls.ErrNoOtherPeer)
	}
	seen := map[string]int{}
	for range 20 {
		seen[choose(t, c, context.Background())]++
	}
	assert.Equal(t, map[string]int{"p0": 10, "p1": 10}, seen)
}
