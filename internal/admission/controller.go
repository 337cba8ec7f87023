package admission

import (
	"context"
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
	ReasonLevel     = "level"      // a root new here, under pressure, with no slot its key's hash may take (AdmitRoot)
)

// Reasons lists every reason, for metrics made ahead.
var Reasons = []string{ReasonQueueFull, ReasonRetry, ReasonIncident, ReasonDeadline, ReasonAbandoned, ReasonLevel}

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
	// Observe admits every request and reports what enforce would shed.
	Observe bool
	// MaxQueue bounds the requests waiting for a worker; at least 1.
	MaxQueue int
	// MinLimit and MaxLimit bound the limit; MinLimit at least 1.
	MinLimit, MaxLimit int
	// Now is the clock, monotonic; nil: time.Now.
	Now func() time.Time
	// OnLimit, if set, is called as the enforced limit changes, with the
	// new limit and the requests queued: for gauges.
	OnLimit func(limit float64, queued int)
}

// Controller admits requests: an adaptive limit on those served at once,
// a short queue in front. It is safe for concurrent use. On the steady
// path (under half the limit, nobody queued) a request costs a
// compare-and-swap to enter and an atomic add to leave; one in
// _sampleEvery, and every one once half the limit is in use, also reads
// the clock twice and moves the limit on its answer (under a mutex). A
// request with a deadline reads the clock once to check it while another
// is served, and with that reading watches for a pause in the answers
// (watch, held): at most a store per answer.
type Controller struct {
	observe  bool
	maxQueue int
	bounds   bounds
	now      func() time.Time
	onLimit  func(float64, int)

	// state packs the requests served (low 32 bits) and a wrapping count of
	// arrivals (high bits): one compare-and-swap takes a slot and says
	// whether to sample the latency.
	state   atomic.Uint64
	limit   atomic.Int64  // floor(est.limit)
	waiting atomic.Int64  // len(high)+len(low)
	service atomic.Int64  // est.service
	gen     atomic.Uint32 // est.gen
	level   atomic.Uint64 // root keys hashing above it are shed under pressure (AdmitRoot)
	roots   recentRoots   // whether roots visit more than once, and those started (AdmitRoot)
	// mark packs the answers so far (finished, high 32 bits) and the time in
	// µs since base (low bits, never 0; 0: no mark) when an admission saw
	// requests served and no answer since; hold is the limit held (held)
	// while answers paused, until the next measured answer (0: none).
	base       time.Time
	mark, hold atomic.Uint64

	mu  sync.Mutex // est
	est estimate

	qmu       sync.Mutex
	high, low []*waiter
}

// _inflight masks the requests served in Controller.state; _arrival is
// one arrival; on the steady path one arrival in _sampleEvery is sampled.
const (
	_inflight    = 1<<32 - 1
	_arrival     = 1 << 32
	_sampleEvery = 8
)

// inflight returns the requests served.
func (c *Controller) inflight() int64 { return int64(c.state.Load() & _inflight) }

// give gives a slot back.
func (c *Controller) give() { c.state.Add(^uint64(0)) }

type waiter struct {
	ch       chan string // "" granted; else the reason it was shed
	prio     Priority
	deadline time.Time // zero: none
	ticket   Ticket    // set before "" is sent on ch
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
		onLimit:  cfg.OnLimit,
	}
	c.base = now()
	c.est.limit = bound(_initialLimit, c.bounds)
	c.limit.Store(int64(c.est.limit))
	c.level.Store(_levelAll)
	return c
}

// Ticket is an admitted request, to hand to Done.
type Ticket struct {
	start     time.Time     // zero: its answer is not measured
	remaining time.Duration // its caller's time left at start; 0: no deadline
	inflight  uint32        // requests served at its admission, itself included
	finished  uint32        // requests answered before its admission (wrapping)
	gen       uint32        // the limit's cuts at its admission
	binding   bool          // it took the last slot, or came through the queue
}

// finished returns the requests answered so far (wrapping), from a
// value of state: those admitted less those served.
func finished(v uint64) uint32 { return uint32(v/_arrival) - uint32(v&_inflight) }

// ticket returns the ticket of a request admitted at start, with the
// caller's deadline (zero: none), state v after its admission.
func (c *Controller) ticket(start, deadline time.Time, v uint64, binding bool) Ticket {
	t := Ticket{start: start, inflight: uint32(v & _inflight), finished: finished(v), gen: c.gen.Load(), binding: binding}
	if !deadline.IsZero() {
		t.remaining = max(time.Nanosecond, deadline.Sub(start))
	}
	return t
}

// Admit admits a request of priority p whose caller's deadline is ctx's,
// queueing it when the limit is reached. It returns the ticket and true,
// or the reason it is shed and false; in observe mode it always admits,
// with the reason enforce mode would have shed it ("" none).
//
// A request with less time left than the service time is refused while
// another is served; with none served it is admitted, so an answer
// measures the service again (no estimate outlives the service it
// measured). Under pressure (half the limit in use) every answer is
// measured. The service time is the requests' own (DoneOwn): what a
// request's callees will take is theirs to judge against the deadline it
// carries to them, so a service above the bottleneck admits what only
// the bottleneck cannot finish, and the bottleneck refuses it. While
// requests are served and none has answered for over _jump service
// times, the limit is held lower until the next measured answer (held):
// a request that finds it reached queues.
func (c *Controller) Admit(ctx context.Context, p Priority) (Ticket, string, bool) {
	deadline, timed := ctx.Deadline()
	if !timed {
		deadline = time.Time{}
	}
	var start time.Time // read only when needed
	var service time.Duration
	if timed {
		service = time.Duration(c.service.Load())
	}
	checked := service == 0 // nothing to check, or checked
	if c.waiting.Load() == 0 {
		for {
			v := c.state.Load()
			served, limit := int64(v&_inflight), c.limit.Load()
			if served >= limit {
				break
			}
			if !checked && served > 0 {
				start, checked = c.now(), true
				if !fits(deadline.Sub(start), true, service) {
					return c.refuse(start, deadline, ReasonDeadline)
				}
			}
			if served > 0 {
				if limit = c.watch(start, v, limit); served >= limit {
					break
				}
			}
			if c.state.CompareAndSwap(v, v+_arrival+1) {
				if (v/_arrival)%_sampleEvery != 0 && 2*(served+1) < limit {
					return Ticket{}, "", true
				}
				if start.IsZero() {
					start = c.now()
					if served > 0 {
						c.watch(start, v, limit) // marks, or holds the next
					}
				}
				return c.ticket(start, deadline, v+_arrival+1, served+1 >= limit), "", true
			}
		}
	}
	if !checked && c.inflight() > 0 {
		start = c.now()
		if !fits(deadline.Sub(start), true, service) {
			return c.refuse(start, deadline, ReasonDeadline)
		}
	}
	if c.observe {
		if start.IsZero() {
			start = c.now()
		}
		return c.observed(start, p, deadline)
	}
	return c.queue(ctx, p, deadline)
}

// _markEvery is the least time between two marks (watch): a busy service
// answers more often, and a store per answer on the steady path would
// cost as much as the admission itself (BenchmarkControllerSteady). A
// pause is seen at most that much later, against _holdMin.
const _markEvery = 250 * time.Microsecond

// watch returns the limit to enforce on a request that finds state v
// under limit enforced: limit, or the limit held (held) until the next
// measured answer. An admission that read the clock (now; zero: it did
// not) with requests served and no mark since the latest answer marks
// the time (at most every _markEvery); one that finds a mark with no
// answer since holds the limit by the time since the mark. An answer not
// measured ends no hold: it does not say whether the service slowed, and
// the queued requests its slot would let in are those the hold keeps out.
func (c *Controller) watch(now time.Time, v uint64, limit int64) int64 {
	if h := int64(c.hold.Load()); h != 0 {
		limit = min(limit, h)
	}
	if now.IsZero() {
		return limit
	}
	f := finished(v)
	at := uint32(now.Sub(c.base)/time.Microsecond) | 1
	m := c.mark.Load()
	if uint32(m) == 0 || uint32(m>>32) != f {
		if uint32(m) == 0 || time.Duration(at-uint32(m))*time.Microsecond >= _markEvery {
			c.mark.Store(uint64(f)<<32 | uint64(at))
		}
		return limit
	}
	age := time.Duration(at-uint32(m)) * time.Microsecond
	if h := held(limit, time.Duration(c.service.Load()), age, c.bounds); h < limit {
		c.hold.Store(uint64(h))
		return h
	}
	return limit
}

// refuse sheds a request for reason, or in observe mode admits it.
func (c *Controller) refuse(start, deadline time.Time, reason string) (Ticket, string, bool) {
	if c.observe {
		v := c.state.Add(_arrival | 1)
		return c.ticket(start, deadline, v, int64(v&_inflight) >= c.limit.Load()), reason, true
	}
	return Ticket{}, reason, false
}

// observed admits a request over the limit in observe mode, with the
// reason enforce mode would have shed it: those over the limit stand for
// the queue.
func (c *Controller) observed(start time.Time, p Priority, deadline time.Time) (Ticket, string, bool) {
	limit := c.limit.Load()
	v := c.state.Add(_arrival | 1)
	ahead := int(max(0, int64(v&_inflight)-1-limit)) // as if queued
	reason := ""
	switch {
	case p != PriorityFirst && ahead >= c.lowRoom():
		reason = p.reason()
	case ahead >= c.maxQueue:
		reason = ReasonQueueFull
	}
	return c.ticket(start, deadline, v, true), reason, true
}

// lowRoom is how many may be queued when a retry or an incident's request
// still queues: half the queue, the other half kept for first attempts.
func (c *Controller) lowRoom() int { return max(1, c.maxQueue/2) }

// queue puts the request in the queue, unless it can be told at once that
// it would be shed, and waits for a worker or for its caller to go.
func (c *Controller) queue(ctx context.Context, p Priority, deadline time.Time) (Ticket, string, bool) {
	w := &waiter{ch: make(chan string, 1), prio: p, deadline: deadline}
	c.qmu.Lock()
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
		return w.ticket, "", true
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

// dispatch grants the free slots under the limit to queued requests,
// first attempts first, the newest first: the newest has time left for its
// answer to count, and the earliest leave as their callers go, with no
// worker spent on them. While another request is served, one with less
// time left than the service time is shed instead: nothing stands in the
// queue that cannot finish in time.
func (c *Controller) dispatch() {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	var now time.Time
	for len(c.high)+len(c.low) > 0 {
		v := c.state.Load()
		served := int64(v & _inflight)
		if served >= c.limit.Load() || served > 0 && served >= c.watch(time.Time{}, v, c.limit.Load()) {
			return
		}
		if !c.state.CompareAndSwap(v, v+_arrival+1) {
			continue
		}
		q := &c.low
		if len(c.high) > 0 {
			q = &c.high
		}
		w := (*q)[len(*q)-1]
		*q = (*q)[:len(*q)-1]
		c.waiting.Add(-1)
		if now.IsZero() {
			now = c.now()
		}
		if served > 0 && !w.deadline.IsZero() && !fits(w.deadline.Sub(now), true, time.Duration(c.service.Load())) {
			c.give()
			w.ch <- ReasonDeadline
			continue
		}
		w.ticket = c.ticket(now, w.deadline, v+_arrival+1, true)
		w.ch <- ""
	}
}

// Measured reports whether the answer of the request admitted with t
// moves the limit (Done reads the clock). An unmeasured request need not
// time its outbound calls (DoneOwn).
func (t Ticket) Measured() bool { return !t.start.IsZero() }

// Done ends an admitted request, moving the limit on its answer if it
// was measured.
func (c *Controller) Done(t Ticket) { c.DoneOwn(t, 0) }

// DoneOwn is Done for a request that waited callees for its outbound
// calls: it is judged on its own time, so only the service whose own work
// is slow (the bottleneck) cuts its limit, not every service above it
// (DESIGN.md's "Capacity and recovery"). See own.
func (c *Controller) DoneOwn(t Ticket, callees time.Duration) {
	if !t.start.IsZero() {
		c.answered(own(t, c.now().Sub(t.start), callees))
	}
	c.release()
}

// own returns the ticket and latency, as its own, of a request admitted
// with t that answered in lat and waited callees for its outbound calls:
// latency and remaining time both less callees. It is late exactly when
// it was, but the service time, the jump and the room are its own.
//
// When callees took at least half its latency, or all its caller's time,
// they decide whether it is in time, not its own work: it answers as one
// without a deadline, which moves the service time and a binding limit
// up, never down. Else a service whose own work is a few microseconds
// beside a callee answering at the deadline would cut on every answer a
// microsecond late. callees is bounded by lat.
func own(t Ticket, lat, callees time.Duration) (Ticket, time.Duration) {
	callees = min(max(callees, 0), lat)
	switch {
	case callees == 0 || t.remaining == 0:
	case 2*callees >= lat || callees >= t.remaining:
		t.remaining = 0
	default:
		t.remaining -= callees
	}
	return t, lat - callees
}

// answered moves the limit on the answer of t, which took lat. An answer
// in time of a request that did not bind does not wait for another
// answer's move: it only moves the service time.
func (c *Controller) answered(t Ticket, lat time.Duration) {
	if !c.mu.TryLock() {
		if !t.binding && (t.remaining == 0 || lat <= t.remaining) {
			return
		}
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	a := answer{
		latency:   lat,
		remaining: t.remaining,
		inflight:  int(t.inflight),
		finished:  int(finished(c.state.Load()) - t.finished),
		gen:       t.gen,
		binding:   t.binding,
	}
	c.est = next(c.est, a, c.bounds)
	if c.hold.Load() != 0 {
		c.hold.Store(0) // the answer moved the limit on what it measured
	}
	if s := int64(c.est.service); s != c.service.Load() {
		c.service.Store(s)
	}
	if c.est.gen != c.gen.Load() {
		c.gen.Store(c.est.gen)
	}
	if l := int64(c.est.limit); l != c.limit.Load() {
		c.limit.Store(l)
		if c.onLimit != nil {
			c.onLimit(c.est.limit, int(c.waiting.Load()))
		}
	}
}

// Park gives an admitted request's slot back while it waits for its
// outbound calls, to a queued request if any: only requests doing their
// own work count against the limit, so a service waiting on a slow callee
// is not the one that sheds. Unpark takes the slot back, over the limit
// if need be (the work is under way). Every Park is followed by one
// Unpark before Done. A parked request counts as neither served nor
// arrived, so Ticket.finished counts answers only.
func (c *Controller) Park() {
	c.state.Add(^uint64(_arrival)) // less one arrival and one served
	if c.mark.Load() != 0 || c.hold.Load() != 0 {
		// Waiting for a callee is not the service's pause (held).
		c.mark.Store(0)
		c.hold.Store(0)
	}
	if c.waiting.Load() > 0 {
		c.dispatch()
	}
}

// Unpark ends what Park began.
func (c *Controller) Unpark() { c.state.Add(_arrival | 1) }

// release gives a slot back, and to a queued request if any.
func (c *Controller) release() {
	c.give()
	if c.waiting.Load() > 0 {
		c.dispatch()
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
