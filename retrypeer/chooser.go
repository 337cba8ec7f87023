package retrypeer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/reqlog"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
)

// _extraChoices is how many more times Choose asks the inner chooser for
// a peer when it offers one to skip. Under concurrency each choice may
// land on a used peer again, about one time in three with one of three
// peers used: with 8 more, (1/3)^9, one retry in 20000 goes back. Only a
// retry, or a call offered a peer to pass over, pays them.
const _extraChoices = 8

// _maxPasses is how many peers a Chooser remembers to pass over at once
// (see Chooser): a callee's instances are a few to some tens; evidence
// about more peers than this (a list of thousands, churning) is dropped
// rather than held without bound.
const _maxPasses = 64

// Chooser is a peer.Chooser that sends a retry of a call errown's retry
// middleware sends to a peer its earlier attempts did not go to, when
// the inner chooser offers one, and passes over, once, a peer that
// failed a call another peer then served. It is safe for concurrent use.
type Chooser struct {
	inner peer.Chooser

	// passes are the peers to pass over the next time the inner chooser
	// offers one of them for a call errown's retry middleware sends;
	// npasses is len(passes), read without the lock.
	mu      sync.Mutex
	passes  map[string]struct{}
	npasses atomic.Int32
	// witness is givePass, made once: the route's witness of every call.
	witness func(string)
}

var (
	_ peer.Chooser = (*Chooser)(nil)
	_ peer.List    = (*Chooser)(nil)
)

// New returns a Chooser that chooses through inner.
func New(inner peer.Chooser) *Chooser {
	reqlog.ReadRoutes() // errown's retry middleware gives each call it may retry a Route from now on
	c := &Chooser{inner: inner, passes: make(map[string]struct{})}
	c.witness = c.givePass
	return c
}

// Choose implements peer.Chooser. For a call whose context carries
// errown's route, it records the peer chosen for the attempt, and asks
// the inner chooser again, up to eight more times, when the peer offered
// is one an earlier attempt of the call went to, or one to pass over,
// releasing each choice it skips (its onFinish, with no error). When
// every peer offered was skipped, the attempt goes to the first one
// offered that the call's earlier attempts did not reach, else to the
// first that the call does not avoid (calls.Route.Avoided: one that shed
// it), else to the first one offered; but the retry of an instance's shed
// (calls.Route's SetStrict) then fails with calls.ErrNoOtherPeer, which
// the retry middleware turns back into the shed's answer.
//
// A peer is passed over once, by the next such call it is offered to, for
// each call it failed that another peer then served: a failure of that
// instance, not of the callee. Without it a round robin gives the failing
// instance's turns that retries skip to first attempts (with one of three
// instances failing, three eighths of first attempts instead of a third;
// passed over, about a quarter). Nothing waits on a clock: the instance
// gets its share again as soon as it serves.
func (c *Chooser) Choose(ctx context.Context, req *transport.Request) (peer.Peer, func(error), error) {
	p, onFinish, err := c.inner.Choose(ctx, req)
	route := reqlog.RouteFromContext(ctx)
	if err != nil || route == nil {
		return p, onFinish, err
	}
	if c.acceptable(route, p.Identifier()) {
		return c.chosen(route, p, onFinish)
	}
	// Hold the choices skipped until another is made, so that a list
	// counting pending requests moves away from them, then release them.
	var held [_extraChoices + 1]func(error)
	n := 0
	defer func() {
		for _, done := range held[:n] {
			done(nil)
		}
	}()
	// fallback is the first choice the call's earlier attempts did not
	// reach, else the first one not avoided (an instance that shed the
	// call: calls.Route.Avoided), else the first choice; fallback's
	// onFinish is held[fb].
	fallback, fb, rank := p, 0, fallbackRank(route, p.Identifier())
	held[n] = onFinish
	n++
	for range _extraChoices {
		q, qDone, err := c.inner.Choose(ctx, req)
		if err != nil {
			break // keep the fallback
		}
		id := q.Identifier()
		if c.acceptable(route, id) {
			return c.chosen(route, q, qDone)
		}
		if r := fallbackRank(route, id); r < rank {
			fallback, fb, rank = q, n, r
		}
		held[n] = qDone
		n++
	}
	if route.Strict() && rank > 0 {
		// The retry of an instance's shed, offered only peers the call
		// went to: it goes nowhere rather than back to the instance
		// that shed it (the deferred release frees every choice held).
		return nil, nil, calls.ErrNoOtherPeer
	}
	done := held[fb]
	held[fb] = held[n-1]
	n--
	return c.chosen(route, fallback, done)
}

// fallbackRank ranks peer id as a fallback for a call on route: 0 for
// one no earlier attempt of the call went to, 1 for one that is not
// avoided (calls.Route.Avoided), 2 for one that is.
func fallbackRank(route *calls.Route, id string) int {
	switch {
	case !route.Used(id):
		return 0
	case !route.Avoided(id):
		return 1
	}
	return 2
}

// acceptable reports whether a call on route may go to peer id: no
// earlier attempt of the call went to it, and it is not to be passed
// over (acceptable takes its pass).
func (c *Chooser) acceptable(route *calls.Route, id string) bool {
	return !route.Used(id) && !c.takePass(id)
}

// chosen records p on route as the peer of the call's attempt, with the
// Chooser as the route's witness (so that once the call is served, the
// peers its earlier attempts went to are passed over), and returns it.
func (c *Chooser) chosen(route *calls.Route, p peer.Peer, onFinish func(error)) (peer.Peer, func(error), error) {
	route.Record(p.Identifier())
	route.Witness(c.witness)
	return p, onFinish, nil
}

// givePass has the next call offered peer id pass it over.
func (c *Chooser) givePass(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.passes) >= _maxPasses {
		return
	}
	c.passes[id] = struct{}{}
	c.npasses.Store(int32(len(c.passes)))
}

// takePass reports whether peer id is to be passed over, and if so
// takes its pass.
func (c *Chooser) takePass(id string) bool {
	if c.npasses.Load() == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.passes[id]; !ok {
		return false
	}
	delete(c.passes, id)
	c.npasses.Store(int32(len(c.passes)))
	return true
}

// Start starts the inner chooser.
func (c *Chooser) Start() error { return c.inner.Start() }

// Stop stops the inner chooser.
func (c *Chooser) Stop() error { return c.inner.Stop() }

// IsRunning reports whether the inner chooser is running.
func (c *Chooser) IsRunning() bool { return c.inner.IsRunning() }

// Update passes updates on to the inner chooser, which must be a
// peer.List (yarpc's lists are), so that a Chooser can be bound to a peer
// list updater in the inner list's place (peer.Bind).
func (c *Chooser) Update(updates peer.ListUpdates) error {
	l, ok := c.inner.(peer.List)
	if !ok {
		return fmt.Errorf("retrypeer: the inner chooser %T is not a peer.List: bind the inner list instead", c.inner)
	}
	return l.Update(updates)
}
