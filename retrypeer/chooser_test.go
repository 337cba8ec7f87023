package retrypeer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
