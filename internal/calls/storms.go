package calls

import (
	"github.com/errown/errown/internal/wire"
)

// stormSums sums one request's calls' Storms. Quiet successes (wire.One)
// are not added; the egress log counts them for total. Not concurrency
// safe: it lives in a chunk, under the EgressLog's lock.
type stormSums struct {
	served      uint64
	blind       uint64
	retries     uint64
	notFailed   int64 // added calls that did not fail
	radius      uint8
	blindRadius uint8
	unknown     bool
	added       bool
}

// add adds one call's storm Figures, failed if the call failed.
func (s *stormSums) add(f wire.Figures, failed bool) {
	s.added = true
	if !failed {
		s.notFailed++
	}
	if !f.Known || s.unknown {
		s.unknown = true
		return
	}
	st := f.Storm
	if st.Served > wire.MaxStormServed || st.Blind > wire.MaxStormServed ||
		s.blind+st.Blind > wire.MaxStormServed { // sums of bounded figures: no wrap before this trips
		s.unknown = true
		return
	}
	s.served += st.Served
	s.blind += st.Blind
	s.retries += st.Retries
	s.radius = max(s.radius, st.Radius)
	s.blindRadius = max(s.blindRadius, st.BlindRadius)
}

// total returns the request's Storm (itself and its calls, notFailed the
// log's count); unknown if any Storm was, or a figure is out of bounds.
func (s *stormSums) total(notFailed int) wire.Figures {
	if s.unknown {
		return wire.Figures{}
	}
	quiet := uint64(max(int64(notFailed)-s.notFailed, 0))
	st := wire.Storm{
		Served:      1 + quiet + s.served,
		Blind:       1 + quiet + s.blind,
		Retries:     s.retries,
		Radius:      s.radius,
		BlindRadius: s.blindRadius,
	}
	if st.Blind > wire.MaxStormServed || st.Served > st.Blind || st.Radius > st.BlindRadius {
		return wire.Figures{}
	}
	return wire.KnownFigures(st)
}
