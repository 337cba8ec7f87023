package retrier

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/errown/errown/retry"
)

// _overloadWeight is the weight of one attempt in the recent share of
// overloaded attempts (an exponentially weighted mean over about the last
// 1/_overloadWeight attempts).
const _overloadWeight = 1.0 / 64

// _overloadHalfLife is how long the recent share takes to halve with no
// attempt ending: an edge idle after an incident is not held to it.
const _overloadHalfLife = time.Second

// _overloadNil is the share below which the recent share reads as nil.
const _overloadNil = 1e-3

// overload is the limit on one callee's attempts in flight. It is safe for
// concurrent use. On a callee that shows no overload an attempt costs a
// compare-and-swap and an atomic addition (the count in flight, which the
// first cut halves) and five loads.
type overload struct {
	disabled  bool
	min, max  float64
	threshold float64
	elapsed   func() time.Duration // a monotonic clock, for the share's decay

	inflight atomic.Int64
	round    atomic.Uint64 // the cut generation: one cut per round
	limit    atomic.Uint64 // float64 bits
	share    atomic.Uint64 // float64 bits: recent share of overloaded attempts
	updated  atomic.Int64  // elapsed when share was last written
}

func newOverload(cfg retry.OverloadConfig, elapsed func() time.Duration) *overload {
	o := &overload{
		disabled:  cfg.Disabled,
		min:       float64(cfg.MinInFlight),
		max:       float64(cfg.MaxInFlight),
		threshold: cfg.Threshold,
		elapsed:   elapsed,
	}
	o.limit.Store(math.Float64bits(o.max))
	return o
}

// admission is an attempt admitted by overload.admit, to hand to done.
type admission struct {
	round  uint64 // the cut generation it started in
	unheld bool   // sent without a slot (observe mode, over the limit)
}

// unheld returns an admission for an attempt sent over the limit without
// a slot, in observe mode: its outcome still moves the limit.
func (o *overload) unheld() admission {
	return admission{round: o.round.Load(), unheld: true}
}

// admit takes a slot for one attempt and returns it, or false when the
// limit is reached: the attempt must not be sent. A refused attempt takes
// no slot, not even for a moment, so a concurrent attempt never finds the
// count one too high, and a caller that sends a refused attempt down
// another path (SendFirst, then Call's shedding) costs the count nothing.
func (o *overload) admit() (admission, bool) {
	if o.disabled {
		return admission{}, true
	}
	for {
		n := o.inflight.Load()
		if float64(n+1) > o.Limit() && o.Overloaded() {
			return admission{}, false
		}
		if o.inflight.CompareAndSwap(n, n+1) {
			return admission{round: o.round.Load()}, true
		}
	}
}

// abandon gives back the slot of attempt a, which ended with no outcome
// to judge it by: its transport panicked. The limit and the share stay as
// they were.
func (o *overload) abandon(a admission) {
	if o.disabled || a.unheld {
		return
	}
	o.inflight.Add(-1)
}

// done gives back the slot of attempt a, which ended overloaded or not.
func (o *overload) done(a admission, overloaded bool) {
	if o.disabled {
		return
	}
	inflight := float64(o.inflight.Load())
	if !a.unheld {
		inflight = float64(o.inflight.Add(-1) + 1) // this attempt's included
	}
	share := o.observe(overloaded)
	if overloaded {
		if share < o.threshold {
			return
		}
		// One cut per round: an attempt that started before the last cut
		// was answered by it.
		if !o.round.CompareAndSwap(a.round, a.round+1) {
			return
		}
		o.limit.Store(math.Float64bits(max(o.min, min(o.Limit(), inflight)/2)))
		return
	}
	for {
		bits := o.limit.Load()
		l := math.Float64frombits(bits)
		if l >= o.max {
			return
		}
		next := l + 1
		if share > 0 {
			next = l + 1/l
		}
		if o.limit.CompareAndSwap(bits, math.Float64bits(min(o.max, next))) {
			return
		}
	}
}

// observe adds one attempt to the recent share of overloaded attempts and
// returns the share. While the share is nil, an attempt that was not
// overloaded changes nothing.
func (o *overload) observe(overloaded bool) float64 {
	for {
		bits := o.share.Load()
		if bits == 0 && !overloaded {
			return 0
		}
		now := o.elapsed()
		next := o.decayed(math.Float64frombits(bits), now) * (1 - _overloadWeight)
		if overloaded {
			next += _overloadWeight
		}
		if next < _overloadNil {
			next = 0
		}
		if o.share.CompareAndSwap(bits, math.Float64bits(next)) {
			o.updated.Store(int64(now))
			return next
		}
	}
}

// decayed returns the share s, last written at updated, as of now: halved
// for every _overloadHalfLife since.
func (o *overload) decayed(s float64, now time.Duration) float64 {
	if s == 0 {
		return 0
	}
	idle := now - time.Duration(o.updated.Load())
	if idle <= 0 {
		return s
	}
	return s * math.Exp2(-float64(idle)/float64(_overloadHalfLife))
}

// Overloaded reports whether at least the threshold share of recent
// attempts ended overloaded.
func (o *overload) Overloaded() bool {
	if o.disabled {
		return false
	}
	bits := o.share.Load()
	return bits != 0 && o.decayed(math.Float64frombits(bits), o.elapsed()) >= o.threshold
}

// Limit returns the current limit on attempts in flight.
func (o *overload) Limit() float64 { return math.Float64frombits(o.limit.Load()) }
