package egresslog

import (
	"sync/atomic"

	"github.com/errown/errown/ownership"
)

// Storms sums the Storms of one request's outbound calls, which may run
// concurrently. Calls that did not fail and have nothing to report
// (ownership.One) are not added: the egress log counts them, and Total
// takes that count.
type Storms struct {
	served      atomic.Uint64
	blind       atomic.Uint64
	retries     atomic.Uint64
	radius      atomic.Uint32
	blindRadius atomic.Uint32
	notFailed   atomic.Int64 // added calls that did not fail
	unknown     atomic.Bool
	added       atomic.Bool
}

// Add adds one call's Storm; known is false when it is unknown, failed
// whether the call failed (the egress log counts the others).
func (s *Storms) Add(st ownership.Storm, known, failed bool) {
	s.added.Store(true)
	if !failed {
		s.notFailed.Add(1)
	}
	if !known {
		s.unknown.Store(true)
		return
	}
	if st.Served > ownership.MaxStormServed || st.Blind > ownership.MaxStormServed ||
		s.blind.Add(st.Blind) > ownership.MaxStormServed { // sums of bounded figures: no wrap before this trips
		s.unknown.Store(true)
		return
	}
	s.served.Add(st.Served)
	s.retries.Add(st.Retries)
	atomicMax(&s.radius, uint32(st.Radius))
	atomicMax(&s.blindRadius, uint32(st.BlindRadius))
}

// Added reports whether any call was added.
func (s *Storms) Added() bool { return s.added.Load() }

// Total returns the request's Storm: its own request and its calls, notFailed
// being the egress log's count of calls that did not fail. It returns false
// when a call's Storm was unknown or a figure is out of bounds.
func (s *Storms) Total(notFailed int) (ownership.Storm, bool) {
	if s.unknown.Load() {
		return ownership.Storm{}, false
	}
	quiet := uint64(max(int64(notFailed)-s.notFailed.Load(), 0))
	st := ownership.Storm{
		Served:  1 + quiet + s.served.Load(),
		Blind:   1 + quiet + s.blind.Load(),
		Retries: s.retries.Load(),
	}
	r, br := s.radius.Load(), s.blindRadius.Load()
	if st.Blind > ownership.MaxStormServed || st.Served > st.Blind || r > br || br > ownership.MaxStormRadius {
		return ownership.Storm{}, false
	}
	st.Radius, st.BlindRadius = uint8(r), uint8(br)
	return st, true
}

func atomicMax(a *atomic.Uint32, v uint32) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}
