// Package admission holds the inbound admission controller: a limit on
// the requests a service works on at once, learned from each answer
// against the time its caller gave it, with a short queue in front that
// serves first attempts before retries and requests of callers in an
// incident, the newest first, and refuses a request it cannot finish
// within its caller's deadline. A service judges its own time: a request
// waiting for its outbound calls parks its slot (Controller.Park), and its
// answer counts its latency less that wait (Controller.DoneOwn), so only
// the bottleneck sheds, not every service above it.
//
// The arithmetic (next, held, fits) is pure: no clock, no state. The
// Controller around it reads the clock and keeps the state.
package admission

import (
	"math"
	"time"
)

// Tuning of the limit. An answer is useful only if it reaches its caller
// within the time the caller gave (its remaining time at admission), so
// the limit settles at what the service can finish in time, learned from
// each answer (DESIGN.md's "Capacity and recovery"): no windows, no timer,
// no standing queue.
const (
	// _initialLimit is the limit before any answer moved it.
	_initialLimit = 8
	// _lateSlack is how much a late answer may exceed the service time
	// before it is overload (a caller that gave too little time is not).
	_lateSlack = 1.2
	// _jump is how much slower than the service time an answer in time
	// shows the service itself slowed (a degraded dependency), not a queue.
	_jump = 2
	// _headroom is the share of its remaining time an answer may take for
	// the limit to grow by one on it.
	_headroom = 0.9
	// _minStep is the least a binding limit grows on an answer in time:
	// the probe that finds capacity come back.
	_minStep = 1.0 / 32
	// _serviceWeight is one answer's weight in the moving service time.
	_serviceWeight = 1.0 / 8
	// _holdMin is the least pause in answers that holds the limit (held):
	// shorter pauses are the scheduler's, not the service's.
	_holdMin = time.Millisecond
)

// estimate is the limit's state between answers.
type estimate struct {
	limit   float64       // requests at once; enforced rounded down
	service time.Duration // the moving latency of answers in time; 0 before the first
	gen     uint32        // cuts so far: an answer admitted before the latest cut does not cut again
	// level is the highest enforced limit that a limit's worth of binding
	// answers in a row proved in time since the last jump (0: none); run
	// counts those answers; retry is set while the limit regrows to level
	// after a cut below it, until level is proved again.
	level float64
	run   int
	retry bool
	// before is the limit the latest jump scaled down (0: none since the
	// service time came back), restored when it comes back. cut is set once
	// a late answer cut the limit since that jump (or the first answer);
	// until then an answer showing no queue grows a binding limit by one a
	// limit's worth of answers, whatever the room.
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
//   - Overload: an answer past its deadline and slower than _lateSlack
//     times the service time. The limit falls to the requests served at
//     its admission less itself (they did not finish in time together),
//     or, if lower and after a queue longer than _jump service times, to
//     what the service answered in its caller's time (Little's law:
//     a.finished+1 answers in its latency; in one step, not one less per
//     round trip; after a short queue it counts fewer answers than
//     workers). Once per cut: answers admitted before the latest cut do
//     not cut again. A late answer _jump times slower keeps the limit to
//     come back to, as the jump does.
//   - Jump: an answer in time _jump times slower than the service time
//     that took over 1/_jump of its caller's time: the service slowed
//     enough to threaten deadlines. The limit scales by the ratio
//     (Little's law at the same throughput), not below the requests that
//     answered in time beside it, and the service time jumps to its
//     latency. It is a cut if the enforced limit falls; nothing proved
//     before stays, and the new limit is the level, tentative. A slow
//     answer far within its caller's time (a long tail) only moves the
//     service time.
//   - Growth: an answer in time while the limit was binding grows it by
//     clamp(_headroom·remaining/latency − 1, _minStep, 1) / limit: one a
//     limit's worth of answers when a request could have waited behind it
//     and stayed in time, _minStep when not (the probe for capacity come
//     back). Below the level (as a rule the service's workers) it grows
//     one a limit's worth whatever the room, so a cut by a late answer on
//     a loaded machine (a late timer) comes back within a few answers. A
//     level tried again that does not hold (a late answer admitted with as
//     many served; the jump's, before it is proved) falls by one, so a
//     level proved by chance (3 where 2 is right) does not draw the limit
//     back above the workers. Until a late answer cuts after a jump, an
//     answer showing no queue (within _lateSlack of the service time)
//     also grows it one a limit's worth: the jump's limit is often fewer
//     than the workers, and the probe would take a second or more to find
//     each idle one.
//   - Slow start: until the first cut, and while the service time has not
//     jumped, the limit is the guess _initialLimit: a binding answer in
//     time grows it by the room itself, not divided by the limit, doubling
//     it a round trip, so a service that starts busy (a deploy, a
//     failover) finds its concurrency rather than shedding.
//
// Only answers in time move the service time (at once when twice as
// quick), so a queue's latency never becomes the service time that
// refuses requests. The service time coming back at once from a jump
// restores the limit the jump scaled down, by the same ratio: else the
// limit would shed what the quick service can serve until it regrew.
func next(e estimate, a answer, b bounds) estimate {
	lat := max(a.latency, time.Microsecond)
	late := a.remaining > 0 && lat > a.remaining
	switch {
	case late:
		if a.gen == e.gen && (e.service == 0 || float64(lat) > _lateSlack*float64(e.service)) {
			queue := float64(lat) > _jump*float64(e.service)
			if queue && e.before == 0 && e.service > 0 {
				// Maybe the jump, late: keep the limit to come back to.
				e.before = e.limit
			}
			cut := min(e.limit, float64(a.inflight-1))
			if a.finished > 0 && queue {
				// Little's law, only after a queue (see above).
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
		// A new service: nothing proved; its limit is the level to come
		// back to, until a late answer there refutes it.
		e.level, e.run, e.retry, e.cut = math.Floor(l), 0, true, false
		return e
	}
	switch {
	case e.service == 0:
		e.service = lat
	case _jump*float64(lat) < float64(e.service):
		if e.before > e.limit {
			// Back from the jump: the limit it scaled down comes back
			// by the same ratio, as the level to try.
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
		// No queue, no late answer since the jump: workers left to find.
		s = 1
	}
	grow := s / e.limit
	if e.gen == 0 && e.before == 0 {
		// Slow start: grow by the room itself, doubling a round trip.
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
// age with requests served all along, under limit enforced and service
// time service (0: unknown): the jump's rule (next) applied ahead of the
// first slow answer, age a lower bound on its latency. At a trigger's
// onset the limit is the steady state's, and requests admitted before
// the first slow answer wait inside the service, beyond recall: they miss
// their deadlines and burn its workers. The hold ends at the next
// measured answer, which moves the limit as usual; the hold cuts nothing,
// so a pause that was not the service (a GC pause, a stalled host) queues
// requests for its length rather than refusing them. A long tail does not
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
