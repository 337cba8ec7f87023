package admission

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Priority is how a request ranks under pressure: retries and requests of
// callers in an incident are shed before first attempts.
type Priority uint8

// Priorities, highest first.
const (
	PriorityFirst    Priority = iota // a first attempt, or a root
	PriorityIncident                 // a caller in an incident sent it (errown's attempt mark)
	PriorityRetry                    // a retry: attempt 2 or later
)

// Reasons of a shed: the values of inbound.shed's reason tag.
const (
	ReasonQueueFull = "queue_full" // the limit reached and the queue full of first attempts
	ReasonRetry     = "retry"      // a retry, under pressure
	ReasonIncident  = "incident"   // a request of a caller in an incident, under pressure
	ReasonDeadline  = "deadline"   // its deadline is shorter than its expected wait and service
	ReasonAbandoned = "abandoned"  // its caller went while it was queued
)

// Reasons lists every reason, for metrics made ahead.
var Reasons = []string{ReasonQueueFull, ReasonRetry, ReasonIncident, ReasonDeadline, ReasonAbandoned}

func (p Priority) reason() string {
	switch p {
	case PriorityRetry:
		return ReasonRetry
	case PriorityIncident:
		return ReasonIncident
	default:
		return ReasonQueueFull
	}
}

// Config configures a Controller.
type Config struct {
	// Observe admits every request, and reports what enforce would shed.
	Observe bool
	// MaxQueue bounds the requests waiting for a worker; at least 1.
	MaxQueue int
	// MinLimit and MaxLimit bound the limit; MinLimit at least 1.
	MinLimit, MaxLimit int
	// Now is the clock, monotonic; nil: time.Now.
	Now func() time.Time
	// OnWindow, when set, is called as each window closes with the new
	// limit and the requests then queued: for gauges.
	OnWindow func(limit float64, queued int)
}

// Controller admits requests: an adaptive limit on those served at once,
// a short queue in front. It is safe for concurrent use. On the steady
// path (under the limit, nobody queued) a request costs a
// compare-and-swap to enter and an atomic addition to leave; one request
// in _sampleEvery also reads the clock twice and adds its latency to the
// window, and a request with a deadline reads the clock once to check it
// (reused when sampled).
type Controller struct {
	observe  bool
	maxQueue int
	bounds   bounds
	now      func() time.Time
	epoch    time.Time
	onWindow func(float64, int)

	// state packs the requests served (its low 32 bits) and a count of
	// arrivals (the high ones, wrapping), so that one compare-and-swap
	// both takes a slot and says whether to sample the latency.
	state      atomic.Uint64
	limit      atomic.Int64 // ceil(est.limit)
	waiting    atomic.Int64 // len(high)+len(low)
	acc        atomic.Uint64
	timedAcc   atomic.Uint64 // the window's sampled requests with a deadline: packed as acc, their remaining time
	late       atomic.Int64  // the window's sampled requests answered past their deadline
	windowEnd  atomic.Int64  // since epoch
	service    atomic.Int64  // est.floor, the expected service time
	measuredAt atomic.Int64  // since epoch, when service was measured

	mu          sync.Mutex // est, the window's start
	est         estimate
	windowStart time.Duration

	qmu       sync.Mutex
	high, low []*waiter
}

// _inflight masks the requests served in Controller.state; _arrival is
// one arrival; one arrival in _sampleEvery has its latency sampled on the
// steady path.
const (
	_inflight    = 1<<32 - 1
	_arrival     = 1 << 32
	_sampleEvery = 8
)

// inflight returns the requests served.
func (c *Controller) inflight() int64 { return int64(c.state.Load() & _inflight) }

// take takes a slot, arrival counted.
func (c *Controller) take() { c.state.Add(_arrival | 1) }

// give gives a slot back.
func (c *Controller) give() { c.state.Add(^uint64(0)) }

// acc packs a window's samples: their count above _accShift, the sum of
// their latencies in microseconds below.
const (
	_accShift = 44
	_accSum   = 1<<_accShift - 1
)

// _maxRemaining bounds the remaining time a sample adds to timedAcc, so
// that a window of a million answers with far deadlines cannot carry the
// sum into the count: only answers past their deadline read it, beside a
// latency that has outlasted it.
const _maxRemaining = 10 * time.Second

type waiter struct {
	ch       chan string // "" granted; else the reason it was shed
	prio     Priority
	deadline time.Time
	timed    bool
}

// New returns a Controller configured by cfg.
func New(cfg Config) *Controller {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	c := &Controller{
		observe:  cfg.Observe,
		maxQueue: max(1, cfg.MaxQueue),
		bounds:   bounds{min: float64(max(1, cfg.MinLimit)), max: float64(max(1, cfg.MinLimit, cfg.MaxLimit))},
		now:      now,
		epoch:    now(),
		onWindow: cfg.OnWindow,
	}
	c.est.limit = max(c.bounds.min, min(c.bounds.max, _initialLimit))
	c.limit.Store(int64(math.Ceil(c.est.limit)))
	c.windowEnd.Store(int64(_window))
	return c
}

// Ticket is an admitted request, to hand to Done.
type Ticket struct {
	start    time.Time // zero: its latency is not sampled
	deadline time.Time // its caller's, when sampled; zero: none
}

// Admit admits a request of priority p whose caller's deadline is ctx's,
// waiting in the queue when the limit is reached. It returns the ticket
// and true, or the reason it is shed and false; in observe mode it always
// admits, with the reason enforce mode would have shed it ("" none).
//
// Under pressure (half the limit in use) every request's latency is
// sampled, so that the limit follows a service that slowed within a
// window or two.
func (c *Controller) Admit(ctx context.Context, p Priority) (Ticket, string, bool) {
	deadline, timed := ctx.Deadline()
	var start time.Time // read only when needed
	var service time.Duration
	if timed && c.service.Load() > 0 {
		start = c.now()
		service = c.serviceAt(start)
		if !fits(deadline.Sub(start), true, 0, service) {
			return c.refuse(start, ReasonDeadline)
		}
	}
	if !timed {
		deadline = time.Time{}
	}
	if c.waiting.Load() == 0 {
		for {
			v := c.state.Load()
			served, limit := int64(v&_inflight), c.limit.Load()
			if served >= limit {
				break
			}
			if c.state.CompareAndSwap(v, v+_arrival+1) {
				if (v/_arrival)%_sampleEvery != 0 && 2*(served+1) < limit {
					return Ticket{}, "", true
				}
				if start.IsZero() {
					start = c.now()
				}
				return Ticket{start: start, deadline: deadline}, "", true
			}
		}
	}
	if start.IsZero() {
		start = c.now()
	}
	if c.observe {
		return c.observed(start, p, deadline, timed, service)
	}
	return c.queue(ctx, start, p, deadline, timed, service)
}

// refuse sheds a request for reason, or in observe mode admits it.
func (c *Controller) refuse(start time.Time, reason string) (Ticket, string, bool) {
	if c.observe {
		c.take()
		return Ticket{start: start}, reason, true
	}
	return Ticket{}, reason, false
}

// observed admits a request over the limit in observe mode, with the
// reason enforce mode would have shed it: those over the limit stand for
// the queue.
func (c *Controller) observed(start time.Time, p Priority, deadline time.Time, timed bool, service time.Duration) (Ticket, string, bool) {
	limit := c.limit.Load()
	ahead := int(max(0, int64(c.state.Add(_arrival|1)&_inflight)-1-limit)) // as if queued
	reason := ""
	switch {
	case !fits(deadline.Sub(start), timed, expectedWait(ahead+1, float64(limit), service), service):
		reason = ReasonDeadline
	case p != PriorityFirst && ahead >= c.lowRoom():
		reason = p.reason()
	case ahead >= c.maxQueue:
		reason = ReasonQueueFull
	}
	return Ticket{start: start, deadline: timedAt(deadline, timed)}, reason, true
}

// timedAt returns deadline, or the zero time when there is none.
func timedAt(deadline time.Time, timed bool) time.Time {
	if !timed {
		return time.Time{}
	}
	return deadline
}

// lowRoom is how many may be queued when a retry or an incident's request
// still queues: half the queue, the other half kept for first attempts.
func (c *Controller) lowRoom() int { return max(1, c.maxQueue/2) }

// queue puts the request in the queue, unless it can be told at once that
// it would be shed, and waits for a worker or for its caller to go.
func (c *Controller) queue(ctx context.Context, start time.Time, p Priority, deadline time.Time, timed bool, service time.Duration) (Ticket, string, bool) {
	w := &waiter{ch: make(chan string, 1), prio: p, deadline: deadline, timed: timed}
	c.qmu.Lock()
	ahead := len(c.high) + 1
	if p != PriorityFirst {
		ahead += len(c.low)
	}
	if !fits(deadline.Sub(start), timed, expectedWait(ahead, float64(c.limit.Load()), service), service) {
		c.qmu.Unlock()
		return Ticket{}, ReasonDeadline, false
	}
	total := len(c.high) + len(c.low)
	switch {
	case p != PriorityFirst && total >= c.lowRoom():
		c.qmu.Unlock()
		return Ticket{}, p.reason(), false
	case total >= c.maxQueue && len(c.low) == 0:
		c.qmu.Unlock()
		return Ticket{}, ReasonQueueFull, false
	case total >= c.maxQueue:
		// A first attempt takes the place of the latest retry queued.
		last := c.low[len(c.low)-1]
		c.low = c.low[:len(c.low)-1]
		c.waiting.Add(-1)
		last.ch <- last.prio.reason()
	}
	if p == PriorityFirst {
		c.high = append(c.high, w)
	} else {
		c.low = append(c.low, w)
	}
	c.waiting.Add(1)
	c.qmu.Unlock()
	c.dispatch()
	select {
	case r := <-w.ch:
		if r != "" {
			return Ticket{}, r, false
		}
		return Ticket{start: c.now(), deadline: timedAt(deadline, timed)}, "", true
	case <-ctx.Done():
		if !c.remove(w) {
			// Granted or shed as the caller went: give a slot back.
			if r := <-w.ch; r == "" {
				c.release()
			}
		}
		return Ticket{}, ReasonAbandoned, false
	}
}

// remove takes w out of the queue, reporting whether it was there.
func (c *Controller) remove(w *waiter) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	for _, q := range []*[]*waiter{&c.high, &c.low} {
		for i, x := range *q {
			if x == w {
				*q = append((*q)[:i], (*q)[i+1:]...)
				c.waiting.Add(-1)
				return true
			}
		}
	}
	return false
}

// dispatch grants the slots free under the limit to the queued requests,
// first attempts first; one whose deadline would pass before it is
// served is shed instead. Each kind is served in the order it came while
// its queue is short, the latest first once it holds more than the limit
// (adaptive LIFO): a long queue means a service slower than its callers'
// deadlines allow, where the latest request is the one with time left
// for its answer to count, and the earliest ones leave as their callers
// go, with no worker spent on them.
func (c *Controller) dispatch() {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	for len(c.high)+len(c.low) > 0 {
		v := c.state.Load()
		if int64(v&_inflight) >= c.limit.Load() {
			return
		}
		if !c.state.CompareAndSwap(v, v+_arrival+1) {
			continue
		}
		q := &c.low
		if len(c.high) > 0 {
			q = &c.high
		}
		w := take(q, int64(len(*q)) > c.limit.Load())
		c.waiting.Add(-1)
		if now := c.now(); w.timed && !fits(w.deadline.Sub(now), true, 0, c.serviceAt(now)) {
			c.give()
			w.ch <- ReasonDeadline
			continue
		}
		w.ch <- ""
	}
}

// take takes a waiter from q: the latest when lifo, else the earliest.
func take(q *[]*waiter, lifo bool) *waiter {
	if lifo {
		w := (*q)[len(*q)-1]
		*q = (*q)[:len(*q)-1]
		return w
	}
	w := (*q)[0]
	*q = (*q)[1:]
	return w
}

// _fresh is how long a service time measured is relied on to refuse a
// request for its deadline: requests refused are not measured, so an
// estimate from a slow spell must expire, or it would refuse every
// request after the spell has gone.
const _fresh = _maxWindow + _window

// serviceAt returns the expected service time at now (the quicker of the
// latest two windows' mean latency), 0 when unknown or stale.
func (c *Controller) serviceAt(now time.Time) time.Duration {
	if now.Sub(c.epoch)-time.Duration(c.measuredAt.Load()) > _fresh {
		return 0
	}
	return time.Duration(c.service.Load())
}

// Done ends an admitted request, its latency sampled if it was chosen.
func (c *Controller) Done(t Ticket) {
	if t.start.IsZero() {
		c.release()
		return
	}
	end := c.now()
	us := uint64(max(0, end.Sub(t.start)) / time.Microsecond)
	c.acc.Add(1<<_accShift | min(us, _accSum))
	if !t.deadline.IsZero() {
		rem := uint64(min(_maxRemaining, max(0, t.deadline.Sub(t.start))) / time.Microsecond)
		c.timedAcc.Add(1<<_accShift | rem)
		if end.After(t.deadline) {
			c.late.Add(1)
		}
	}
	if int64(end.Sub(c.epoch)) >= c.windowEnd.Load() {
		c.closeWindow(end.Sub(c.epoch))
	}
	c.release()
}

// release gives a slot back, and to a queued request if any.
func (c *Controller) release() {
	c.give()
	if c.waiting.Load() > 0 {
		c.dispatch()
	}
}

// closeWindow closes the window at t (since the epoch) if it has enough
// samples, or an answer past its deadline, and moves the limit.
func (c *Controller) closeWindow(t time.Duration) {
	if !c.mu.TryLock() {
		return
	}
	defer c.mu.Unlock()
	if int64(t) < c.windowEnd.Load() {
		return
	}
	v := c.acc.Load()
	count := v >> _accShift
	if count < _minSamples && t-c.windowStart < _maxWindow && c.late.Load() == 0 {
		return
	}
	v = c.acc.Swap(0)
	count, sum := v>>_accShift, v&_accSum
	tv := c.timedAcc.Swap(0)
	timed, remaining := tv>>_accShift, tv&_accSum
	late := c.late.Swap(0)
	if count > 0 {
		w := window{mean: time.Duration(sum/count) * time.Microsecond, inflight: int(c.inflight()), timed: int(timed), late: int(late)}
		if timed > 0 {
			w.remaining = time.Duration(remaining/timed) * time.Microsecond
		}
		c.est = next(c.est, w, c.bounds)
		c.limit.Store(int64(math.Ceil(c.est.enforced(c.bounds))))
		c.service.Store(int64(c.est.floor))
		c.measuredAt.Store(int64(t))
	}
	c.windowStart = t
	c.windowEnd.Store(int64(t + _window))
	if c.onWindow != nil {
		c.onWindow(c.est.limit, int(c.waiting.Load()))
	}
}

// Limit returns the current limit on requests served at once.
func (c *Controller) Limit() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.est.limit
}

// Queued returns how many requests wait for a worker.
func (c *Controller) Queued() int { return int(c.waiting.Load()) }

// InFlight returns how many requests are served.
func (c *Controller) InFlight() int { return int(c.inflight()) }
