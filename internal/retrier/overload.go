package retrier

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/errown/errown/internal/procmap"
	"github.com/errown/errown/retry"
)

// _overloadWeight is one attempt's weight in the recent share of
// overloaded attempts (an EWMA over about 1/_overloadWeight attempts).
const _overloadWeight = 1.0 / 64

// _overloadHalfLife is how long the share takes to halve with no attempt
// ending, so an idle edge is not held to an old incident.
const _overloadHalfLife = time.Second

// _overloadNil is the share below which the recent share reads as nil.
const _overloadNil = 1e-3

// _maxOverloadProcedures bounds the procedures an overload keeps a share
// for; the rest share one. Adapters' procedures (nethttp's "METHOD /path")
// are unbounded.
const _maxOverloadProcedures = 256

// _otherProcedures keys the share of procedures past the bound.
const _otherProcedures = ""

// overload is the limit on one callee's attempts in flight, one for all
// its procedures; the evidence that holds and cuts it is per procedure
// (the recent share of its attempts that ended overloaded), so one slow
// procedure does not shed a healthy one: an attempt over the limit is
// held back only if its own procedure shows overload. It is safe for
// concurrent use; with no overload an attempt costs a CAS, an atomic add
// and a few loads.
type overload struct {
	disabled  bool
	min, max  float64
	threshold float64
	elapsed   func() time.Duration // a monotonic clock, for the shares' decay

	inflight atomic.Int64
	round    atomic.Uint64 // the cut generation: one cut per round
	limit    atomic.Uint64 // float64 bits

	// all is every procedure's recent share: while it is not nil the
	// limit grows back additively.
	all share
	// byProc holds each procedure's share, made on its first overloaded
	// attempt.
	byProc *procmap.Map[string, *share]
}

// share is a recent share of overloaded attempts: an EWMA over about
// 1/_overloadWeight attempts, halving every _overloadHalfLife idle.
type share struct {
	bits    atomic.Uint64 // float64 bits
	updated atomic.Int64  // elapsed when bits was last written
}

func newOverload(cfg retry.OverloadConfig, elapsed func() time.Duration) *overload {
	o := &overload{
		disabled:  cfg.Disabled,
		min:       float64(cfg.MinInFlight),
		max:       float64(cfg.MaxInFlight),
		threshold: cfg.Threshold,
		elapsed:   elapsed,
		byProc:    procmap.New(_maxOverloadProcedures, _otherProcedures, func(string) *share { return new(share) }),
	}
	o.limit.Store(math.Float64bits(o.max))
	return o
}

// admission is an attempt admitted by overload.admit, to hand to done.
type admission struct {
	round     uint64 // the cut generation it started in
	unheld    bool   // sent without a slot (observe mode, over the limit)
	procedure string // the callee procedure it calls
}

// unheld returns an admission for an attempt sent over the limit without
// a slot (observe mode); its outcome still moves the limit.
func (o *overload) unheld(procedure string) admission {
	return admission{round: o.round.Load(), unheld: true, procedure: procedure}
}

// admit takes a slot for an attempt of procedure, or returns false when
// the limit is reached and procedure shows overload. A refused attempt
// never takes a slot, even briefly, so concurrent attempts never see the
// count too high and a refused attempt sent another way costs nothing.
func (o *overload) admit(procedure string) (admission, bool) {
	if o.disabled {
		return admission{}, true
	}
	for {
		n := o.inflight.Load()
		if float64(n+1) > o.Limit() && o.Overloaded(procedure) {
			return admission{}, false
		}
		if o.inflight.CompareAndSwap(n, n+1) {
			return admission{round: o.round.Load(), procedure: procedure}, true
		}
	}
}

// abandon gives back a's slot when it ended with nothing to judge the
// callee by (panic, cancelled, or timed out on a nearly spent deadline).
// The limit and shares are unchanged.
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
	now := o.elapsed
	all := o.all.observe(overloaded, now)
	var own float64
	if sh, ok := o.byProc.Peek(a.procedure); ok {
		own = sh.observe(overloaded, now)
	} else if overloaded {
		own = o.byProc.Get(a.procedure).observe(true, now)
	}
	if overloaded {
		if own < o.threshold {
			return
		}
		// One cut per round: an attempt started before the last cut
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
		if all > 0 {
			next = l + 1/l
		}
		if o.limit.CompareAndSwap(bits, math.Float64bits(min(o.max, next))) {
			return
		}
	}
}

// observe adds one attempt to the share and returns it. While the share
// is nil, a non-overloaded attempt changes nothing and reads no clock.
func (s *share) observe(overloaded bool, now func() time.Duration) float64 {
	for {
		bits := s.bits.Load()
		if bits == 0 && !overloaded {
			return 0
		}
		t := now()
		next := s.decayed(math.Float64frombits(bits), t) * (1 - _overloadWeight)
		if overloaded {
			next += _overloadWeight
		}
		if next < _overloadNil {
			next = 0
		}
		if s.bits.CompareAndSwap(bits, math.Float64bits(next)) {
			s.updated.Store(int64(t))
			return next
		}
	}
}

// decayed returns v, written at updated, halved per _overloadHalfLife
// since.
func (s *share) decayed(v float64, now time.Duration) float64 {
	if v == 0 {
		return 0
	}
	idle := now - time.Duration(s.updated.Load())
	if idle <= 0 {
		return v
	}
	return v * math.Exp2(-float64(idle)/float64(_overloadHalfLife))
}

// at returns the share as of now.
func (s *share) at(now func() time.Duration) float64 {
	bits := s.bits.Load()
	if bits == 0 {
		return 0
	}
	return s.decayed(math.Float64frombits(bits), now())
}

// Overloaded reports whether at least the threshold share of procedure's
// recent attempts ended overloaded.
func (o *overload) Overloaded(procedure string) bool {
	if o.disabled || o.byProc.Len() == 0 {
		return false
	}
	sh, ok := o.byProc.Peek(procedure)
	return ok && sh.at(o.elapsed) >= o.threshold
}

// Limit returns the current limit on attempts in flight.
func (o *overload) Limit() float64 { return math.Float64frombits(o.limit.Load()) }
