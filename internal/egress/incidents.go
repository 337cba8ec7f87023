package egress

import (
	"sync/atomic"
	"time"

	"github.com/errown/errown/internal/procmap"
)

// _maxIncidentProcedures bounds the caller procedures incidents keeps a
// time for; past it, the others share one. A caller procedure is an
// inbound procedure, which a router bounds, but an adapter's (nethttp's
// "METHOD /path") is whatever a client sends.
const _maxIncidentProcedures = 1024

// incidents remembers, per caller procedure (the inbound procedure a call
// is made for), when one of its calls last met an incident: a failure, a
// retry, a refusal, or storm figures worth a root's record. For a window
// after one, the procedure's calls carry errown's attempt mark, so that
// their callees send their figures and know they are not roots; the
// steady state (no incident within the window) sends no errown header at
// all. It is safe for concurrent use, and the steady state reads one
// word and the clock.
type incidents struct {
	window int64 // ns
	now    func() time.Time

	// latest is the time of the latest incident of any procedure, in ns
	// since the Unix epoch: 0, never. A service with no incident within
	// the window looks no procedure up.
	latest atomic.Int64

	// byProc holds each procedure's latest incident, as latest does; past
	// the bound, the others share one.
	byProc *procmap.Map[*atomic.Int64]
}

// _otherProcedures is the key of the time the procedures past the bound
// share.
const _otherProcedures = ""

func newIncidents(window time.Duration, now func() time.Time) *incidents {
	return &incidents{
		window: int64(window),
		now:    now,
		byProc: procmap.New(_maxIncidentProcedures, _otherProcedures, func(string) *atomic.Int64 { return new(atomic.Int64) }),
	}
}

// hot reports whether a call of procedure met an incident within the
// window.
func (s *incidents) hot(procedure string) bool {
	now, ok := s.recent()
	if !ok {
		return false
	}
	t, ok := s.byProc.Peek(procedure)
	return ok && s.within(t.Load(), now)
}

// any reports whether a call of any procedure met an incident within
// the window.
func (s *incidents) any() bool {
	_, ok := s.recent()
	return ok
}

// recent reports whether the latest incident of any procedure is within
// the window, and the time it read: the steady state reads no clock.
func (s *incidents) recent() (now int64, ok bool) {
	latest := s.latest.Load()
	if latest == 0 {
		return 0, false
	}
	now = s.now().UnixNano()
	return now, s.within(latest, now)
}

// within reports whether an incident at t (0: none) is within the window
// at now.
func (s *incidents) within(t, now int64) bool { return t != 0 && now-t <= s.window }

// record notes an incident on a call of procedure, now. A time is
// written only when it moves forward: on errown's coarse clock an
// outage's failures within one tick read the same time and write
// nothing, so that the cores serving them do not take turns owning the
// word every call reads (latest). Two records racing can still leave the
// earlier of their times, one tick back.
func (s *incidents) record(procedure string) {
	now := s.now().UnixNano()
	if t := s.byProc.Get(procedure); t.Load() < now {
		t.Store(now)
	}
	if s.latest.Load() < now {
		s.latest.Store(now)
	}
}
