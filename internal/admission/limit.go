// Package admission holds the inbound admission controller: an adaptive
// limit on the requests a service works on at once, learned from its own
// latency, with a short queue in front that serves first attempts before
// retries and requests of callers in an incident, and refuses a request
// it cannot finish within its caller's deadline.
//
// The arithmetic that moves the limit (next) and the refusals (fits,
// expectedWait) are pure functions of their arguments: no clock, no
// state. The Controller around them reads the clock and keeps the state.
package admission

import (
	"math"
	"time"
)

// Tuning of the gradient limit. The common case needs no configuration:
// the limit starts at _initialLimit, grows by about its square root per
// window while latency stays within _tolerance of the service's no-load
// latency (its floor), and shrinks by up to half per window as queueing
// delay shows. The floor is the quickest window since the last probe: one
// window in every _probeEvery runs at half the limit, so that the queue
// drains and the floor follows a service whose own service time changed
// (a degraded dependency, a slower disk) within a probe cycle, where a
// long-run mean would follow the queue itself and let the limit drift up.
const (
	// _initialLimit is the limit before any window closed.
	_initialLimit = 20
	// _tolerance is how much a window's latency may exceed the floor
	// before the limit shrinks: service times vary without any queueing.
	_tolerance = 1.5
	// _smoothing is the weight of one window's new limit.
	_smoothing = 0.2
	// _probeEvery is how many windows a probe cycle lasts, the probe
	// included (about a second).
	_probeEvery = 20
	// _window is how long a window lasts at least; _minSamples how many
	// requests it takes at least, up to _maxWindow.
	_window     = 50 * time.Millisecond
	_maxWindow  = time.Second
	_minSamples = 8
	// _lateHeadroom is, after a window with answers past their caller's
	// deadline, the share of its callers' remaining time the window's
	// latency would have taken under the new limit.
	_lateHeadroom = 0.9
)

// estimate is the limit's state between windows.
type estimate struct {
	limit   float64       // requests at once, outside a probe
	floor   time.Duration // the quickest window of this probe cycle; 0 before the first
	short   time.Duration // the latest window's mean latency
	before  float64       // the limit before the latest falls for late answers; 0: none
	windows int           // windows closed
}

// probing reports whether the next window is the probe: run at half the
// limit.
func (e estimate) probing() bool { return e.windows%_probeEvery == _probeEvery-1 }

// enforced returns the limit the next window runs under.
func (e estimate) enforced(b bounds) float64 {
	if e.probing() {
		return max(b.min, e.limit/2)
	}
	return e.limit
}

// window is what one window of requests measured: their mean latency,
// how many requests were in flight when it closed, how many of its
// requests had a deadline (timed) and how many of those were answered
// after it (late), and the mean time those callers gave at admission
// (remaining).
type window struct {
	mean      time.Duration
	inflight  int
	timed     int
	late      int
	remaining time.Duration
}

// bounds are the limit's floor and ceiling.
type bounds struct{ min, max float64 }

// next returns the estimate after window w closed: a gradient on
// queueing delay (the ratio of the floor, with tolerance, to the
// window's latency), applied to the limit with a queue allowance of its
// square root, smoothed and bounded. A window that used less than half
// the limit does not grow it: the limit is not proved. The probe window
// starts a new cycle with its own reading as the floor and does not move
// the limit.
//
// A window with answers past their caller's deadline is wasted work,
// whatever the floor says: the limit falls at once, unsmoothed, to where
// the window's latency would have taken _lateHeadroom of its callers'
// mean remaining time (Little's law at the same throughput), by at least
// half the share of late answers and by half at most; the probe window
// included. The limit it fell from is kept: a later window at the floor
// (a stall of the whole process, not a slower service) that used the
// limit brings it back halfway at once, a window with queueing delay
// forgets it.
func next(e estimate, w window, b bounds) estimate {
	if w.mean <= 0 {
		return e
	}
	probe := e.probing()
	e.windows++
	e.short = w.mean
	if probe || e.floor == 0 || w.mean < e.floor {
		e.floor = w.mean
	}
	if w.late > 0 && w.timed > 0 && w.remaining > 0 {
		f := max(0.5, min(_lateHeadroom*float64(w.remaining)/float64(w.mean), 1-float64(w.late)/float64(2*w.timed)))
		if e.before == 0 {
			e.before = e.limit
		}
		e.limit = max(b.min, min(b.max, e.limit, e.limit*f))
		return e
	}
	if probe {
		return e
	}
	gradient := max(0.5, min(1, _tolerance*float64(e.floor)/float64(w.mean)))
	target := e.limit*gradient + math.Sqrt(e.limit)
	if target > e.limit && float64(w.inflight) < e.limit/2 {
		return e
	}
	if gradient < 1 {
		e.before = 0
	} else if e.before > e.limit {
		// A clean window at the floor after a fall (a stall of the
		// process, not of the service): back halfway at once.
		target = max(target, (e.limit+e.before)/2)
		e.limit = max(b.min, min(b.max, target))
		return e
	}
	e.limit = max(b.min, min(b.max, e.limit*(1-_smoothing)+target*_smoothing))
	return e
}

// expectedWait returns how long a request waits for a worker with ahead
// requests before it in the queue, under limit workers each taking
// service: a worker frees every service/limit on average.
func expectedWait(ahead int, limit float64, service time.Duration) time.Duration {
	if ahead <= 0 || limit <= 0 {
		return 0
	}
	return time.Duration(float64(ahead) * float64(service) / limit)
}

// fits reports whether a request with remaining time before its deadline
// (hasDeadline false: none) can be served: its expected wait and service
// time within it. With no service time known yet, everything fits.
func fits(remaining time.Duration, hasDeadline bool, wait, service time.Duration) bool {
	return !hasDeadline || service == 0 || remaining >= wait+service
}
