package egress

import (
	"sync/atomic"
	"time"

	"github.com/errown/errown/internal/procmap"
	"github.com/errown/errown/ownership"
)

// _maxIncidentEdges bounds the edges incidents keeps a time for; past it,
// the rest share one. Caller procedures are inbound procedures, which a
// router bounds, but an adapter's (nethttp's "METHOD /path") is whatever
// a client sends.
const _maxIncidentEdges = 1024

// incidents remembers, per edge (a caller procedure's calls to one callee
// procedure), when a call last met an incident: a failure, a retry, a
// refusal, or storm figures worth a root's record. For a window after
// one, the edge's calls carry errown's attempt mark, so their callee
// sends its figures and knows it is no root. The steady state (no incident
// in the window) sends no errown header, and a healthy edge stays in it
// while another edge of its procedure fails. It is safe for concurrent
// use; the steady state reads one word.
type incidents struct {
	window int64 // ns
	now    func() time.Time

	// latest is the latest incident of any edge, in ns since the Unix epoch
	// (0: none within the window). Without one, no edge is looked up and no
	// clock read: the first call to find the window over resets it to 0.
	latest atomic.Int64

	// byEdge holds each edge's latest incident, as latest; past the bound,
	// the rest share one.
	byEdge *procmap.Map[ownership.Edge, *atomic.Int64]
}

// _otherEdges is the key of the time the edges past the bound share.
var _otherEdges = ownership.Edge{}

func newIncidents(window time.Duration, now func() time.Time) *incidents {
	return &incidents{
		window: int64(window),
		now:    now,
		byEdge: procmap.New(_maxIncidentEdges, _otherEdges, func(ownership.Edge) *atomic.Int64 { return new(atomic.Int64) }),
	}
}

// hotAt reports whether a call on edge met an incident within the
// window, also returning edge's time when it looked it up (nil if not,
// or none), so record need not look it up again.
func (s *incidents) hotAt(edge ownership.Edge) (bool, *atomic.Int64) {
	now, ok := s.recent()
	if !ok {
		return false, nil
	}
	t, ok := s.byEdge.Peek(edge)
	if !ok {
		return false, nil
	}
	return s.within(t.Load(), now), t
}

// any reports whether a call on any edge met an incident in the window.
func (s *incidents) any() bool {
	_, ok := s.recent()
	return ok
}

// recent reports whether the latest incident of any edge is within the
// window, and the time it read (the steady state reads no clock). The
// first to find it past the window resets latest to 0, unless an incident
// moved it meanwhile.
func (s *incidents) recent() (now int64, ok bool) {
	latest := s.latest.Load()
	if latest == 0 {
		return 0, false
	}
	now = s.now().UnixNano()
	if s.within(latest, now) {
		return now, true
	}
	s.latest.CompareAndSwap(latest, 0)
	return now, false
}

// within reports whether an incident at t (0: none) is in the window at now.
func (s *incidents) within(t, now int64) bool { return t != 0 && now-t <= s.window }

// record notes an incident on a call on edge, now. A time is written only
// when it moves forward: on errown's coarse clock an outage's failures
// within one tick write nothing, so the cores serving them do not fight
// over the word every call reads (latest). Two racing records may leave
// the earlier time, one tick back. t, if not nil, is edge's time from
// hotAt.
func (s *incidents) record(edge ownership.Edge, t *atomic.Int64) {
	now := s.now().UnixNano()
	if t == nil {
		t = s.byEdge.Get(edge)
	}
	if t.Load() < now {
		t.Store(now)
	}
	if s.latest.Load() < now {
		s.latest.Store(now)
	}
}
