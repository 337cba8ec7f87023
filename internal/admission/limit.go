// Package admission holds the inbound admission controller: a limit on
// the requests a service works on at once, learned from each answer
// against the time its caller gave it, with a short queue in front that
// serves first attempts before retries and requests of callers in an
// incident, the newest first, and refuses a request it cannot finish
// within its caller's deadline. A service judges its own time: a request
// waiting for its outbound calls parks its slot (Controller.Park), and
// its answer counts its latency less that wait (Controller.DoneOwn), so
// that only the bottleneck sheds, not every service above it.
//
// The arithmetic that moves the limit (next), holds it while answers
// pause (held) and the refusals (fits) are pure functions of their
// arguments: no clock, no state. The Controller around them reads the
// clock and keeps the state.
package admission

import (
	"math"
	"time"
)

// Tuning of the limit. A request is useful only if its answer reaches its
// caller within the time the caller gave it (its remaining time at
// admission), so the limit settles at the requests the service can
// finish in time, learned from each answer as it comes (DESIGN.md's
// "Capacity and recovery", rules learned from the first attempt): no
// windows, no timer, no standing queue.
const (
	// _initialLimit is the limit before any answer moved it.
	_initialLimit = 8
	// _lateSlack is how much an answer past its deadline may exceed the
	// service time before it is overload (a caller that gave too little
	// time is not).
	_lateSlack = 1.2
	// _jump is how much slower than the service time an answer in time
	// shows that the service itself slowed (a degraded dependency, a
	// slower disk), not a queue.
	_jump = 2
	// _headroom is the share of its remaining time an answer may take
	// for the limit to grow by one on it.
	_headroom = 0.9
	// _minStep is the least the limit grows on an answer in time while
	// it was binding: the probe that finds capacity come back.
	_minStep = 1.0 / 32
	// _serviceWeight is the weight of one answer in the moving service
	// time.
	_serviceWeight = 1.0 / 8
	// _holdMin is the least time without an answer that holds the limit
	// (held): below it, a pause is the scheduler's, not the service's.
	_holdMin = time.Millisecond
)

// estimate is the limit's state between answers.
type estimate struct {
	limit   float64       // requests at once; enforced rounded down
	service time.Duration // the moving latency of answers in time; 0 before the first
	gen     uint32        // cuts so far: an answer admitted before the latest cut does not cut again
	// level is the highest limit enforced that a limit's worth of
	// binding answers in a row proved in time since the service time
	// last jumped (0: none); run counts those answers at the limit
	// enforced; retry is set while the limit regrows to level after a
	// cut below it, until level is proved again.
	level float64
	run   int
	retry bool
	// before is the limit the service time's latest jump scaled down
	// (0: none since the service time came back), to return to when the
	// service time comes back; cut is set once a late answer cut the
	// limit since that jump (or since the first answer): until then an
	// answer that shows no queue grows a binding limit by one a limit's
	// worth of answers, whatever the room.
	before float64
	cut    bool
}

// answer is what one answered request measured.
type answer struct {
	latency   time.Duration // from its admission (its grant, when queued) to its answer
	remaining time.Duration // its caller's time left at admission; 0: no deadline
	inflight  int           // requests served at its admission, itself included
	finished  int           // requests answered between its admission and its answer
	gen       uint32        // estimate.gen at its admission
	binding   bool          // it took the last slot under the limit, or came through the queue
}

// bounds are the limit's floor and ceiling.
type bounds struct{ min, max float64 }

// next returns the estimate after answer a:
//
//   - An answer past its deadline and slower than _lateSlack times the
//     service time is overload: the limit falls to the requests that
//     were served at its admission, itself excluded (those did not finish
//     in time together), or, if lower, to what the service answered in
//     the time its caller gave it (Little's law: a.finished+1 answers in
//     its latency, after a queue longer than _jump times the service
//     time: after a long queue this is the count to fall to in one step,
//     not one less per round trip; after a short one it counts fewer
//     answers than workers); once per cut: answers admitted before the
//     latest cut do not cut again. A late answer _jump times slower than
//     the service time keeps the limit to come back to, as the jump does
//     (below).
//   - An answer in time _jump times slower than the service time, having
//     taken over 1/_jump of its caller's time, is a service that slowed
//     far enough to threaten deadlines: the limit scales by the ratio
//     (Little's law at the same throughput), not below the requests that
//     answered in time beside it, and the service time jumps to its
//     latency; a cut if the limit enforced falls, and nothing proved
//     of the service before stays: the limit it sets is the level,
//     tentative (see below). A slow answer far within its
//     caller's time (a long tail) only moves the service time.
//   - An answer in time while the limit was binding grows the limit by
//     the room its remaining time left, clamp(_headroom·remaining/latency
//     − 1, _minStep, 1), divided by the limit: by one a limit's worth of
//     answers when a request could have waited behind it and still be in
//     time, by _minStep when not (the probe for capacity come back).
//     Below the level a limit's worth of binding answers in a row
//     proved in time (the service's workers, as a rule), it grows by one
//     a limit's worth of answers whatever the room: a late answer on a
//     loaded machine (a late timer) that cut it comes back within a few
//     answers, not a probe's second. A level tried again that does not
//     hold (a late answer admitted with as many served; the jump's,
//     before it is proved) falls by one, so
//     that a level proved by chance (3 where 2 is right: a third request
//     waits behind a worker, sometimes not long) does not draw the limit
//     back above the workers. Until a late answer cuts the limit after
//     the service time jumped, an answer that shows no queue (within
//     _lateSlack of the service time) grows it by one a limit's worth of
//     answers too: the jump's limit is the requests served at one
//     answer's admission, often fewer than the workers, and the probe
//     would take a second or more to find each one left idle.
//   - Until the first cut, and while the service time has not jumped
//     (slow start), the limit is _initialLimit, a guess: a binding answer
//     in time grows it by the room itself, not divided by the limit, so
//     that it doubles a round trip, and a service that starts under more
//     requests at once than the guess (a deploy, a failover) finds them
//     rather than shedding while it grows one a limit's worth at a time.
//
// Answers in time move the service time, at once when twice as quick;
// nothing else does, so that a queue's latency never becomes the service
// time that refuses requests. The service time coming back at once from
// a jump brings back the limit the jump scaled down, by the same ratio:
// the service is quick again, and a limit left at the slow service's
// would shed what the service can now serve until it regrew one a
// limit's worth of answers at a time.
func next(e estimate, a answer, b bounds) estimate {
	lat := max(a.latency, time.Microsecond)
	late := a.remaining > 0 && lat > a.remaining
	switch {
	case late:
		if a.gen == e.gen && (e.service == 0 || float64(lat) > _lateSlack*float64(e.service)) {
			queue := float64(lat) > _jump*float64(e.service)
			if queue && e.before == 0 && e.service > 0 {
				// The service may have slowed (the jump, late): the limit
				// to come back to when it is quick again.
				e.before = e.limit
			}
			cut := min(e.limit, float64(a.inflight-1))
			if a.finished > 0 && queue {
				// Little's law: the service answered a.finished requests
				// and this one in lat, so about
				// (a.finished+1)·remaining/lat in the time this caller
				// gave it. Only after a queue longer than a service time:
				// with fewer answers than workers it counts too few.
				cut = min(cut, math.Ceil(float64(a.finished+1)*float64(a.remaining)/float64(lat)))
			}
			e.limit = bound(math.Floor(cut), b)
			e.gen++
			e.cut = true
			if e.retry && float64(a.inflight) >= e.level {
				// The level, tried again, did not hold: one less.
				e.level--
			}
			e.retry = e.limit < e.level
		}
		e.run = 0
		return e
	case e.service > 0 && float64(lat) > _jump*float64(e.service) && _jump*lat > a.remaining && a.remaining > 0:
		l := bound(max(e.limit*float64(e.service)/float64(lat), min(e.limit, float64(max(a.inflight, a.finished+1)))), b)
		if math.Floor(l) < math.Floor(e.limit) {
			e.gen++ // a cut: the answers admitted before it do not cut again
		}
		if e.before == 0 {
			e.before = e.limit
		}
		e.limit, e.service = l, lat
		// A new service: nothing proved; the limit it sets is the level
		// to come back to, until a late answer there refutes it.
		e.level, e.run, e.retry, e.cut = math.Floor(l), 0, true, false
		return e
	}
	switch {
	case e.service == 0:
		e.service = lat
	case _jump*float64(lat) < float64(e.service):
		if e.before > e.limit {
			// The service came back from its jump: the limit the jump
			// scaled down comes back with it, by the same ratio, the
			// level to try with it.
			l := bound(min(e.before, e.limit*float64(e.service)/float64(lat)), b)
			e.level, e.run, e.retry, e.cut = math.Floor(l), 0, true, false
			e.limit = l
		}
		e.before = 0
		e.service = lat
	default:
		e.service += time.Duration(_serviceWeight * float64(lat-e.service))
	}
	if !a.binding {
		return e
	}
	f := math.Floor(e.limit)
	if float64(a.inflight) >= f {
		e.run++
		if e.run >= int(f) && f >= e.level {
			e.level, e.retry = f, false
		}
	}
	s := step(a.remaining, lat, e.service)
	switch {
	case f < e.level:
		s = 1 // back to the level proved, one per limit's worth of answers
	case !e.cut && float64(lat) <= _lateSlack*float64(e.service):
		// No queue, and no late answer since the service time jumped:
		// the workers are not all found yet.
		s = 1
	}
	grow := s / e.limit
	if e.gen == 0 && e.before == 0 {
		// Slow start: nothing has cut the limit and the service has not
		// slowed since it started, so the limit is the initial guess,
		// not what the service was found to finish in time: it grows by
		// the room itself, doubling a round trip, so that a service
		// that starts busy is not shed while it finds its concurrency.
		grow = s
	}
	e.limit = bound(e.limit+grow, b)
	if math.Floor(e.limit) != f {
		e.run = 0
	}
	return e
}

// step is how much an answer in time that took lat, of remaining time
// (0: no deadline), grows a binding limit.
func step(remaining, lat, service time.Duration) float64 {
	if remaining == 0 {
		// No deadline to judge by: one more while the answer shows no
		// queue.
		if float64(lat) <= _lateSlack*float64(service) {
			return 1
		}
		return _minStep
	}
	return max(_minStep, min(1, _headroom*float64(remaining)/float64(lat)-1))
}

func bound(l float64, b bounds) float64 { return max(b.min, min(b.max, l)) }

// held returns the limit to enforce while no request has answered for
// age, with requests served all along, under limit enforced, the service
// time service (0: not known): the service time jump's rule (next)
// applied ahead of the first slow answer, age a lower bound on its
// latency. At a trigger's onset the limit is the steady state's, and the
// requests it admits before the first slow answer wait inside the
// service, where nothing can recall them: they miss their deadlines and
// burn its workers. The hold ends at the next measured answer, which
// moves the limit as any answer does; the hold cuts nothing itself: a pause that was
// not the service (a GC pause, a stalled host) queues the requests that
// come for its length, rather than refusing them. A long tail does not
// hold: requests answer beside it.
func held(limit int64, service, age time.Duration, b bounds) int64 {
	if service == 0 || age < _holdMin || float64(age) <= _jump*float64(service) {
		return limit
	}
	return min(limit, int64(bound(math.Floor(float64(limit)*float64(service)/float64(age)), b)))
}

// fits reports whether a request with remaining time before its deadline
// (hasDeadline false: none) can be served in it, the service time known
// (0: not yet, everything fits).
func fits(remaining time.Duration, hasDeadline bool, service time.Duration) bool {
	return !hasDeadline || service == 0 || remaining >= service
}
