package admission

import (
	"context"
	"math"
	"sync"
	"time"
)

// Tuning of the admission level (WeChat's DAGOR, SoCC'18): under
// pressure the requests that carry a root key are admitted only when the
// key's hash is below the level, so that the roots admitted at one visit
// are the ones admitted at the others. The level is the share of roots
// admitted (AdmitRoot).
const (
	// _levelCut is the share of the admitted roots that a refusal of a
	// request the level let through takes off.
	_levelCut = 1.0 / 32
	// _levelStep is what an admission under pressure of a request the
	// level let through adds to the share of roots admitted.
	_levelStep = 1.0 / 512
	// _levelGrow is the factor by which an admission with room (under
	// half the limit in use, nobody queued) grows the share: from the
	// least share to all in about 70 such admissions.
	_levelGrow = 1 + 1.0/16
	// _levelMin is the least share of roots admitted: the level never
	// shuts every root out.
	_levelMin = 1.0 / 64
)

// _reserve is how many of the last slots are kept for the roots
// below the level; _queueShare the share of the level that may queue.
const (
	_reserve    = 1
	_queueShare = 0.5
)

// _levelAll is the level that admits every root: the steady state.
const _levelAll = math.MaxUint64

// Telling a fan-out from a chain: the share of the requests under
// pressure whose root this service saw shortly before (its repeat
// share), below which the level does not apply. A root visiting four
// times repeats three times in four; a chain repeats only on a retry.
const (
	_repeatMin    = 0.25
	_repeatWeight = 1.0 / 64 // of one request in the moving repeat share
	_rootSlots    = 1024     // recent roots kept, by hash
)

// recentRoots tells whether a service sees the same roots more than once:
// the roots of its recent requests under pressure, each in the slot of
// its hash (a later root of the same slot takes it), and the moving share
// of those requests whose root was there.
type recentRoots struct {
	mu     sync.Mutex
	keys   [_rootSlots]uint64
	repeat float64
}

// see records a request of root k, hashing to h, and returns the repeat
// share.
func (r *recentRoots) see(k, h uint64) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := h % _rootSlots
	seen := 0.0
	if r.keys[i] == k {
		seen = 1
	}
	r.keys[i] = k
	r.repeat += _repeatWeight * (seen - r.repeat)
	return r.repeat
}

// AdmitRoot is Admit for a request of the root request whose key is root
// (0: none, as Admit). It admits by root only where roots visit more than
// once: a service that sees a root about once (its repeat share under
// pressure below _repeatMin: a chain) admits its requests as Admit does,
// since there the level would only leave slots idle. Under pressure (half
// the limit in use, or requests queued) and once a request the level let
// through was refused,
// a request whose key hashes above the admission level is shed
// (ReasonLevel) before it takes a slot or a place in the queue, and so
// is every root's, the lowest hashes excepted, for the last slots and
// the queue (see graded): the roots admitted at one visit are the ones
// admitted at the others, at every service that sees them, rather than
// a different sixth of the visits at each. With no slot free, a root's
// request below the level that has less than twice the service time left
// is refused (ReasonDeadline) rather than queued: it would be granted too
// late, and the slot is better left to the next visit of a root
// admitted. A request of an admitted root is not favoured otherwise: a
// retry is still shed before a first attempt. With room, every request
// is admitted as by Admit, and the level grows back.
//
// The level moves on the keyed requests under pressure: a request it let
// through that is refused all the same (or finds no slot and no time to
// wait) cuts the share of roots admitted
// by _levelCut, one admitted grows it by _levelStep; one admitted with
// room grows it by _levelGrow, back to every root within a few dozen
// answers once the pressure is gone.
func (c *Controller) AdmitRoot(ctx context.Context, p Priority, root uint64) (Ticket, string, bool) {
	if root == 0 {
		return c.Admit(ctx, p)
	}
	served, limit, waiting := c.inflight(), c.limit.Load(), c.waiting.Load()
	if 2*(served+1) < limit && waiting == 0 {
		// Room: no pressure, the steady state.
		if c.level.Load() != _levelAll {
			c.moveLevel(levelGrow)
		}
		return c.Admit(ctx, p)
	}
	h := rootHash(root)
	if c.roots.see(root, h) < _repeatMin {
		// This service sees each root about once (a chain, not a
		// fan-out): admitting whole roots would only shed more, and
		// leave slots idle that visits could fill.
		return c.Admit(ctx, p)
	}
	free := limit - served - waiting
	l := c.level.Load()
	if l != _levelAll && h > graded(l, free) {
		return c.refuseRoot(ctx, p, ReasonLevel)
	}
	if free <= 0 && !c.canWait(ctx) {
		// No slot free, and no time to wait for one: refused, as too
		// many roots for the limit.
		c.moveLevel(levelCut)
		return c.refuseRoot(ctx, p, ReasonDeadline)
	}
	t, reason, ok := c.Admit(ctx, p)
	switch {
	case !ok || reason != "":
		// Refused though the level let it through: too many roots for
		// the limit.
		c.moveLevel(levelCut)
	case l != _levelAll:
		c.moveLevel(levelStep)
	}
	return t, reason, ok
}

// refuseRoot sheds a request of a root for reason, or in observe mode
// admits it as Admit does, with reason.
func (c *Controller) refuseRoot(ctx context.Context, p Priority, reason string) (Ticket, string, bool) {
	if c.observe {
		t, _, ok := c.Admit(ctx, p)
		return t, reason, ok
	}
	return Ticket{}, reason, false
}

// canWait reports whether the request of ctx has the time to wait for a
// slot and still be served: a remaining time of at least twice the
// service time (or no deadline, or no service time known). One that has
// not would be granted too late, or refused when a slot frees, and a
// root admitted at its other visits is better served by the slot left
// free for them: when service times near the deadlines, the queue only
// holds what cannot finish.
func (c *Controller) canWait(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	service := time.Duration(c.service.Load())
	return !ok || service == 0 || c.now().Add(2*service).Before(deadline)
}

// levelMove is how a keyed request moves the level.
type levelMove uint8

const (
	levelCut  levelMove = iota // refused, though the level let it through
	levelStep                  // admitted under pressure
	levelGrow                  // admitted with room
)

// moveLevel moves the admission level by m.
func (c *Controller) moveLevel(m levelMove) {
	for {
		old := c.level.Load()
		l := nextLevel(old, m)
		if l == old || c.level.CompareAndSwap(old, l) {
			return
		}
	}
}

// nextLevel returns level l moved by m: the share of roots admitted,
// l/2⁶⁴, cut by _levelCut, grown by _levelStep or by _levelGrow, at
// least _levelMin.
func nextLevel(l uint64, m levelMove) uint64 {
	share := float64(l) / (1 << 64)
	switch m {
	case levelCut:
		share *= 1 - _levelCut
	case levelStep:
		share += _levelStep
	default:
		share = max(share*_levelGrow, share+_levelStep)
	}
	share = max(share, _levelMin)
	if share >= 1 {
		return _levelAll
	}
	return uint64(share * (1 << 64))
}

// rootHash spreads a root key over the uint64s (the finalizer of
// SplitMix64), so that keys minted in sequence, or by a caller that does
// not draw them at random, fall on either side of any level alike. Every
// service hashes a key alike: the roots a level admits at one service
// are, level for level, those it admits at the others.
func rootHash(k uint64) uint64 {
	k ^= k >> 30
	k *= 0xbf58476d1ce4e5b9
	k ^= k >> 27
	k *= 0x94d049bb133111eb
	k ^= k >> 31
	return k
}

// Level returns the share of root requests admitted under pressure: 1
// in the steady state.
func (c *Controller) Level() float64 {
	l := c.level.Load()
	if l == _levelAll {
		return 1
	}
	return float64(l) / (1 << 64)
}

// graded returns level l for a request that finds busy requests served
// or queued under limit: every root while _reserve slots or more are
// free, l for the last slots, a share of l once none is free (for the
// queue), so that the last slots go to the roots of the lowest hashes
// (trunk reservation): a root admitted at one visit finds a slot at the
// next even when the roots above it do not.
func graded(l uint64, free int64) uint64 {
	switch {
	case free > _reserve:
		return _levelAll
	case free > 0:
		return l
	}
	return uint64(float64(l) * _queueShare)
}
