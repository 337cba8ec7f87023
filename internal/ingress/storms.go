package ingress

import (
	"sync/atomic"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/procmap"
	"github.com/errown/errown/internal/wire"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
)

// stormSignature identifies st, whose procedure hashes to ph (procedureHash),
// for ring.addNew.
func stormSignature(st *inbound.Storm, ph uint64) uint64 {
	flags := uint64(st.Radius)<<16 | uint64(st.BlindRadius)<<2
	if st.Known {
		flags |= 1
	}
	if st.Failed {
		flags |= 2
	}
	if st.Onset {
		flags |= 1 << 24
	}
	return signature(ph, signatureWords{uint64(st.Time.UnixNano()), st.Served, st.Blind, st.Prevented, st.Retries, flags})
}

func newStorm(t time.Time, procedure string, f wire.Figures, failed bool) inbound.Storm {
	out := inbound.Storm{Time: t, Procedure: procedure, Known: f.Known, Failed: failed}
	if f.Known {
		s := f.Storm
		out.Served, out.Blind, out.Prevented, out.Retries = s.Served, s.Blind, s.Prevented(), s.Retries
		out.Radius, out.BlindRadius = int(s.Radius), int(s.BlindRadius)
	}
	return out
}

// _otherProcedure tags the storm metrics of root procedures beyond the
// bound.
const _otherProcedure = "_other"

// _radiusBuckets are the storm radius histograms' fixed buckets.
var _radiusBuckets = tally.ValueBuckets{0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50}

// _recentStorms is how many root storms a Middleware remembers for
// operators.
const _recentStorms = _ringSize

// storms keeps per-root-procedure storm metrics and the latest root
// storms. Only stormy requests reach it, taking no shared lock: metrics
// come from a copy-on-add read-only map (internal/procmap), storms go to
// a ring.
type storms struct {
	scope tally.Scope
	hook  func(inbound.Storm)

	byProc *procmap.Map[string, *stormMetrics]
	// last is the metrics last recorded in: an outage's roots are mostly
	// one procedure.
	last atomic.Pointer[stormMetrics]

	recent ring[inbound.Storm]

	// requests and prevented total storm.requests and storm.prevented
	// since start, for Losses.
	requests, prevented atomic.Uint64
}

type stormMetrics struct {
	procedure   string // as tagged: _otherProcedure past the limit
	requests    tally.Counter
	unknown     tally.Counter
	prevented   tally.Counter
	retries     tally.Counter
	radius      tally.Histogram
	blindRadius tally.Histogram
}

func newStorms(scope tally.Scope, limit int, hook func(inbound.Storm)) *storms {
	s := &storms{scope: scope.SubScope("storm"), hook: hook}
	s.byProc = procmap.New(limit, _otherProcedure, s.newMetrics)
	return s
}

// newMetrics returns the metrics of root procedure procedure, as tagged.
func (s *storms) newMetrics(procedure string) *stormMetrics {
	sc := s.scope.Tagged(map[string]string{"procedure": procedure})
	return &stormMetrics{
		procedure:   procedure,
		requests:    sc.Counter("requests"),
		unknown:     sc.Counter("unknown"),
		prevented:   sc.Counter("prevented"),
		retries:     sc.Counter("retries"),
		radius:      sc.Histogram("radius", _radiusBuckets),
		blindRadius: sc.Histogram("blind_radius", _radiusBuckets),
	}
}

// record records one root request's storm, its procedure hashing to ph
// (procedureHash).
func (s *storms) record(st inbound.Storm, ph uint64) {
	m := s.last.Load()
	if m == nil || m.procedure != st.Procedure {
		m = s.byProc.Get(st.Procedure) // or the metrics the procedures past the limit share
		s.last.Store(m)
	}
	s.recent.addNew(st, stormSignature(&st, ph))

	m.requests.Inc(1)
	s.requests.Add(1)
	if !st.Known {
		m.unknown.Inc(1)
	} else {
		m.prevented.Inc(int64(st.Prevented))
		s.prevented.Add(st.Prevented)
		m.retries.Inc(int64(st.Retries))
		m.radius.RecordValue(float64(st.Radius))
		m.blindRadius.RecordValue(float64(st.BlindRadius))
	}
	if s.hook != nil {
		s.hook(st)
	}
}

// list returns the latest root storms, newest first; one still being
// written is left out.
func (s *storms) list() []inbound.Storm {
	out := make([]inbound.Storm, 0, s.recent.held())
	s.recent.each(func(st inbound.Storm) { out = append(out, st) })
	return out
}

// _quietStorms bounds the storm headers prebuilt for a subtree that
// served n requests (index n) with no retry or prevention, all known: a
// leaf's error, or a common success, sent without allocating.
const _quietStorms = 64

func quietStormHeaders(name string) []transport.Headers {
	hs := make([]transport.Headers, _quietStorms+1)
	for n := 1; n <= _quietStorms; n++ {
		hs[n] = transport.NewHeaders().With(name, wire.FormatStorm(wire.Storm{Served: uint64(n), Blind: uint64(n)}))
	}
	return hs
}

// stormHeaders returns the headers carrying f's Storm, or
// StormUnknownValue.
func (m *Middleware) stormHeaders(f wire.Figures) transport.Headers {
	s := f.Storm
	switch {
	case !f.Known:
		return m.unknownStorm
	case s.Served == s.Blind && s.Retries == 0 && s.BlindRadius == 0 && s.Served <= _quietStorms:
		return m.quietStorms[s.Served]
	default:
		return transport.NewHeaders().With(m.hdr.Storm, wire.FormatStorm(s))
	}
}
