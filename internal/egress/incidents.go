package egress

import (
	"sync/atomic"
	"time"

	"github.com/errown/errown/internal/procmap"
	"github.com/errown/errown/ownership"
)

// _maxIncidentEdges bounds the edges incidents keeps a time for; past
// it, the others share one. An edge's caller procedure is an inbound
// procedure, which a router bounds, but an adapter's (nethttp's
// "METHOD /path") is whatever a client sends.
const _maxIncidentEdges = 1024

// incidents remembers, per edge (a caller procedure's calls to one
// callee procedure), when one of its calls last met an incident: a
// failure, a retry, a refusal, or storm figures worth a root's record.
// For a window after one, the edge's calls carry errown's attempt mark,
// so that their callee sends its figures and knows it is not a root; the
// steady state (no incident within the window) sends no errown header at
// all, and a healthy edge of a procedure whose other edge fails stays in
// it. It is safe for concurrent use, and the steady state reads one word.
type incidents struct {
	window int64 // ns
	now    func() time.Time

	// latest is the time of the latest incident of any edge, in ns since
	// the Unix epoch: 0, none within the window. A service with no
	// incident within the window looks no edge up and reads no clock:
	// the first call to find the window over sets it back to 0.
	latest atomic.Int64

	// byEdge holds each edge's latest incident, as latest does; past the
	// bound, the others share one.
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

// hot reports whether a call on edge met an incident within the window.
func (s *incidents) hot(edge ownership.Edge) bool {
	hot, _ := s.hotAt(edge)
	return hot
}

// hotAt is hot, also returning edge's time when it looked it up (nil when
// it did not, or edge has none), for record to write without looking it
// up again.
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

// any reports whether a call on any edge met an incident within the
// window.
func (s *incidents) any() bool {
	_, ok := s.recent()
	return ok
}

// recent reports whether the latest incident of any edge is within the
// window, and the time it read: the steady state reads no clock. The
// first to find the latest incident past the window sets latest back to
// 0, unless an incident moved it meanwhile.
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

// within reports whether an incident at t (0: none) is within the window
// at now.
func (s *incidents) within(t, now int64) bool { return t != 0 && now-t <= s.window }

// record notes an incident on a call on edge, now. A time is written
// only when it moves forward: on errown's coarse clock an outage's
// failures within one tick read the same time and write nothing, so that
// the cores serving them do not take turns owning the word every call
// reads (latest). Two records racing can still leave the earlier of
// their times, one tick back. t, when not nil, is edge's time as hotAt
// returned it.
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
