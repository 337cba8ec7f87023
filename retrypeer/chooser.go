package retrypeer

import (
	"context"
	"fmt"

	"github.com/errown/errown/internal/reqlog"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
)

// _extraChoices is how many more times Choose asks the inner chooser for
// a peer when it offers one an earlier attempt of the call went to: a
// round robin moves on at each choice, a pending-aware list away from
// the choices held meanwhile. Under concurrency other calls take turns
// in between, and each choice may land on a used peer again, about one
// time in three with one of three peers used: with 3 more choices,
// (1/3)^4, one retry in 81, would go back to the instance that failed
// it (TestPartialFailure under -race saw 1 to 3 of some 90 retries do
// so); with 8, (1/3)^9, one in 20000. Only a retry pays them, a choice
// costing a lock and a pick.
const _extraChoices = 8

// Chooser is a peer.Chooser that sends a retry of a call errown's retry
// middleware sends to a peer its earlier attempts did not go to, when
// the inner chooser offers one. It is safe for concurrent use.
type Chooser struct {
	inner peer.Chooser
}

var (
	_ peer.Chooser = (*Chooser)(nil)
	_ peer.List    = (*Chooser)(nil)
)

// New returns a Chooser that chooses through inner.
func New(inner peer.Chooser) *Chooser {
	reqlog.ReadRoutes() // errown's retry middleware gives each call it may retry a Route from now on
	return &Chooser{inner: inner}
}

// Choose implements peer.Chooser. For a call whose context carries
// errown's route, it records the peer chosen for the attempt, and, when
// an earlier attempt of the call went to the peer the inner chooser
// offers, asks it again, up to eight more times, releasing each choice it
// skips (its onFinish, with no error, since nothing was sent to it). When
// every peer offered was used before, the attempt goes to the first one
// offered.
func (c *Chooser) Choose(ctx context.Context, req *transport.Request) (peer.Peer, func(error), error) {
	p, onFinish, err := c.inner.Choose(ctx, req)
	route := reqlog.RouteFromContext(ctx)
	if err != nil || route == nil {
		return p, onFinish, err
	}
	if !route.Used(p.Identifier()) {
		route.Record(p.Identifier())
		return p, onFinish, nil
	}
	// Hold the choices skipped until another is made, so that a list
	// counting pending requests moves away from them, then release them.
	var held [_extraChoices]func(error)
	first, firstDone := p, onFinish
	n := 0
	defer func() {
		for _, done := range held[:n] {
			done(nil)
		}
	}()
	for n < _extraChoices {
		q, qDone, err := c.inner.Choose(ctx, req)
		if err != nil {
			break // keep the first choice
		}
		if !route.Used(q.Identifier()) {
			held[n] = firstDone
			n++
			route.Record(q.Identifier())
			return q, qDone, nil
		}
		held[n] = qDone
		n++
	}
	route.Record(first.Identifier())
	return first, firstDone, nil
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
