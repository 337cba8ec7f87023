package admission

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Tuning of the admission level (WeChat's DAGOR, SoCC'18): under pressure
// a request carrying a root key is admitted only when the key's hash is
// below the level, so the roots admitted at one visit are those admitted
// at the others. The level is the share of roots admitted (AdmitRoot).
const (
	// _levelCut is the share of admitted roots a started root's refusal
	// takes off.
	_levelCut = 1.0 / 8
	// _levelStep is what a root started under pressure adds to the share.
	_levelStep = 1.0 / 512
	// _levelGrow is the factor an admission with room (under half the limit
	// in use, nobody queued) grows the share by: from the least share to
	// all in about 70 such admissions.
	_levelGrow = 1 + 1.0/16
	// _levelMin is the least share: the level never shuts every root out.
	_levelMin = 1.0 / 64
)

// _reserve is how many of the last slots are kept for roots already
// admitted and those below the level.
const _reserve = 1

// _levelAll is the level that admits every root: the steady state.
const _levelAll = math.MaxUint64

// Telling a fan-out from a chain: below a repeat share of _repeatMin (the
// share of requests under pressure whose root this service saw shortly
// before) the level does not apply. A root visiting four times repeats
// three times in four; a chain repeats only on a retry.
const (
	_repeatMin    = 0.25
	_repeatWeight = 1.0 / 64 // of one request in the moving repeat share
	_rootSlots    = 1024     // recent roots kept, by hash
)

// recentRoots tells whether a service sees the same roots more than once
// and which it admitted: the roots of recent requests under pressure and
// of admitted ones, each in its hash's slot (a later root takes it), and
// the moving repeat share.
type recentRoots struct {
	mu       sync.Mutex
	keys     [_rootSlots]uint64
	admitted [_rootSlots]atomic.Uint64
	repeat   float64
}

// see records a request of root k, hashing to h, under pressure, and
// returns the repeat share and whether a request of k was admitted before
// (the root started here).
func (r *recentRoots) see(k, h uint64) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := h % _rootSlots
	seen := 0.0
	if r.keys[i] == k {
		seen = 1
	}
	r.keys[i] = k
	r.repeat += _repeatWeight * (seen - r.repeat)
	return r.repeat, r.admitted[i].Load() == k
}

// admit records that a request of root k, hashing to h, was admitted
// (the root started here).
func (r *recentRoots) admit(k, h uint64) {
	r.admitted[h%_rootSlots].Store(k)
}

// AdmitRoot is Admit for a request of the root request whose key is root
// (0: none, as Admit). It admits by root only where roots visit more than
// once: a service whose repeat share under pressure is below _repeatMin
// (a chain) admits as Admit does, since there the level would only leave
// slots idle.
//
// Under pressure (half the limit in use, or requests queued) a root this
// service admitted a request of before (started) is admitted as by Admit,
// last slot and queue included, so a root admitted at one visit is
// admitted at the next, rather than a different sixth of every root's
// visits. A root not started gets only a free slot, the last _reserve ones
// only if its key hashes below the level; otherwise it is shed
// (ReasonLevel) before taking a slot or a place in the queue. With no slot
// free, a started root's request with less than twice the service time
// left is refused (ReasonDeadline) rather than queued too late. A started
// root is not otherwise favoured: a retry is still shed before a first
// attempt. With room, every request is admitted as by Admit, and the level
// grows back.
//
// The level moves on keyed requests under pressure: a started root
// refused (too many roots for the limit) cuts the share by _levelCut; a
// root started under pressure grows it by _levelStep; one admitted with
// room grows it by _levelGrow, back to every root within a few dozen
// answers once the pressure is gone.
func (c *Controller) AdmitRoot(ctx context.Context, p Priority, root uint64) (Ticket, string, bool) {
	if root == 0 {
		return c.Admit(ctx, p)
	}
	served, limit, waiting := c.inflight(), c.limit.Load(), c.waiting.Load()
	if 2*(served+1) < limit && waiting == 0 {
		// Room: no pressure. In the steady state (every root admitted)
		// nothing is recorded until a started root is refused.
		if c.level.Load() == _levelAll {
			return c.Admit(ctx, p)
		}
		c.moveLevel(levelGrow)
		return c.admitRoot(ctx, p, root, rootHash(root))
	}
	h := rootHash(root)
	repeat, started := c.roots.see(root, h)
	if repeat < _repeatMin {
		// Each root seen about once (a chain, not a fan-out): admitting
		// whole roots would only shed more and leave slots idle.
		return c.Admit(ctx, p)
	}
	free := limit - served - waiting
	l := c.level.Load()
	if !started {
		if !admitsNew(l, h, free) {
			return c.refuseRoot(ctx, p, ReasonLevel)
		}
		t, reason, ok := c.admitRoot(ctx, p, root, h)
		if ok && reason == "" && l != _levelAll {
			c.moveLevel(levelStep)
		}
		return t, reason, ok
	}
	if free <= 0 && !c.canWait(ctx) {
		// No slot free, and no time to wait for one.
		c.moveLevel(levelCut)
		return c.refuseRoot(ctx, p, ReasonDeadline)
	}
	t, reason, ok := c.Admit(ctx, p)
	if !ok || reason != "" {
		c.moveLevel(levelCut)
	}
	return t, reason, ok
}

// admitRoot is Admit, recording root (hashing to h) as started once
// admitted.
func (c *Controller) admitRoot(ctx context.Context, p Priority, root, h uint64) (Ticket, string, bool) {
	t, reason, ok := c.Admit(ctx, p)
	if ok && reason == "" {
		c.roots.admit(root, h)
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

// canWait reports whether the request of ctx can wait for a slot and
// still be served: at least twice the service time left (or no deadline,
// or no service time known). Else it would be granted too late, and the
// slot is better left to a root admitted at its other visits: when
// service times near the deadlines, the queue only holds what cannot
// finish.
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

// rootHash spreads a root key over the uint64s (SplitMix64's finalizer),
// so keys minted in sequence or not at random fall on either side of any
// level alike. Every service hashes alike: the roots a level admits at
// one service are those it admits at the others.
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

// admitsNew reports whether a root not started, hashing to h, is admitted
// under pressure at level l with free slots free: any while more than
// _reserve are free, the last ones only below the level, never the queue
// (trunk reservation for started roots and the lowest hashes).
func admitsNew(l, h uint64, free int64) bool {
	switch {
	case free > _reserve:
		return true
	case free > 0:
		return h <= l
	}
	return false
}
