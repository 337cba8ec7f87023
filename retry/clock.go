package retry

import (
	"sync"
	"sync/atomic"
	"time"
)

// _maxTick is the longest the coarse clock waits between two readings of
// the real clock, and _minTick the shortest: a budget whose buckets are
// narrower than 10 × _minTick reads the real clock on every call instead.
// A tick is not free: waking an idle process's goroutine cost about 130µs
// of CPU per tick on a 2-core VM (1.2% of a core at 10ms, 0.14% at
// 100ms), against about 40ns saved per call.
const (
	_maxTick = 100 * time.Millisecond
	_minTick = 10 * time.Millisecond
)

// _clockOff is the coarse reading while no ticker keeps it.
const _clockOff = -1

// coarseTick returns how often the coarse clock of budgets with buckets
// width wide reads the real clock, or 0 when it should not tick at all.
//
// A budget only needs to know which bucket-width interval a call falls in.
// A coarse reading lags the real clock by at most one tick plus however
// late the runtime runs the ticking goroutine, so a call made that soon
// after a bucket boundary is counted in the bucket before: the window
// counted over ends at most that much in the past. The tick is a tenth of
// a bucket (between _minTick and _maxTick), so that lag is at most 10% of
// a bucket, 1% of the window, against the window's own granularity of one
// bucket (10% of it). For the default 10s window (1s buckets) the tick is
// 100ms.
func coarseTick(width time.Duration) time.Duration {
	tick := min(_maxTick, width/10)
	if tick < _minTick {
		return 0
	}
	return tick
}

// ticker returns a channel that receives every d and a func that stops it.
type ticker func(d time.Duration) (<-chan time.Time, func())

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// budgetClock is the time the budgets of one Middleware read: how long since it
// was made. Between Start and Stop a goroutine reads the real clock every
// tick and keeps the reading in an atomic, so that the request path reads
// an int64 rather than the clock; otherwise every read is exact. It is
// safe for concurrent use.
type budgetClock struct {
	now       func() time.Time // nil: the real clock, read with time.Since
	start     time.Time
	tick      time.Duration // 0: never coarse
	newTicker ticker

	coarse atomic.Int64 // elapsed ns at the last tick, or _clockOff

	mu   sync.Mutex // Start and Stop
	stop chan struct{}
	done chan struct{}
}

// newBudgetClock returns a clock on now (nil: the real clock) that, once
// started, reads it every tick (0: never) from newTicker.
func newBudgetClock(now func() time.Time, tick time.Duration, newTicker ticker) *budgetClock {
	c := &budgetClock{now: now, tick: tick, newTicker: newTicker}
	if now == nil {
		c.start = time.Now()
	} else {
		c.start = now()
	}
	c.coarse.Store(_clockOff)
	return c
}

// elapsed returns the time since the clock was made: as of the last tick
// while the clock is started, exact otherwise.
func (c *budgetClock) elapsed() time.Duration {
	if e := c.coarse.Load(); e != _clockOff {
		return time.Duration(e)
	}
	return c.exact()
}

// exact reads the clock: its monotonic reading alone, when it is the real
// one, costs half of time.Now.
func (c *budgetClock) exact() time.Duration {
	if c.now == nil {
		return time.Since(c.start)
	}
	return c.now().Sub(c.start)
}

// read stores the exact reading as the coarse one. A clock stepped back
// before its start (only a test's can) reads as 0, as the budgets'
// epochs never go below 0 anyway.
func (c *budgetClock) read() {
	c.coarse.Store(int64(max(c.exact(), 0)))
}

// Start starts the ticking goroutine, unless it runs or the clock never
// ticks.
func (c *budgetClock) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil || c.tick <= 0 {
		return
	}
	ticks, stopTicker := c.newTicker(c.tick)
	c.read()
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go c.run(ticks, stopTicker, c.stop, c.done)
}

func (c *budgetClock) run(ticks <-chan time.Time, stopTicker func(), stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer stopTicker()
	for {
		select {
		case <-stop:
			return
		case <-ticks:
			c.read()
		}
	}
}

// Stop stops the ticking goroutine, if it runs, and waits for it to
// return; reads are exact again.
func (c *budgetClock) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop == nil {
		return
	}
	close(c.stop)
	<-c.done
	c.stop, c.done = nil, nil
	c.coarse.Store(_clockOff) // after the goroutine's last store
}
