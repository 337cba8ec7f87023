package depmem

import (
	"sync"
	"sync/atomic"
	"time"
)

// _maxTick is the longest the coarse clock waits between two readings of
// the real clock, and _minTick the shortest: a memory whose buckets are
// narrower than 10 × _minTick reads the real clock every time instead, as
// a faster ticker would cost more than it saves.
const (
	_maxTick = 100 * time.Millisecond
	_minTick = time.Millisecond
)

// _clockOff is the coarse reading while no goroutine keeps it.
const _clockOff = -1

// coarseTick returns how often the coarse clock of a memory with buckets
// width wide reads the real clock, or 0 when it should not tick at all.
//
// The memory only needs to know which time slice an observation or a read
// falls in. A coarse reading lags the real clock by at most one tick plus
// however late the runtime runs the ticking goroutine, so an observation
// made that soon after a slice's start is counted in the slice before,
// and a bucket leaves the window that much later: at most 10% of a bucket
// with the tick at most a tenth of one. With the default window (10
// minutes in 10 buckets) the tick is 100ms, 0.17% of a bucket.
func coarseTick(width time.Duration) time.Duration {
	tick := min(_maxTick, width/10)
	if tick < _minTick {
		return 0
	}
	return tick
}

// clock is the time a Memory reads, in nanoseconds since the Unix epoch.
// Between start and stop a goroutine reads the real clock every tick and
// keeps the reading in an atomic, so that the request path (Observe,
// Kind) loads an int64 rather than reading the clock; otherwise every
// reading is exact. A test's clock (withClock) is always read exactly. It
// is safe for concurrent use.
type clock struct {
	now        func() time.Time // nil: the real clock
	start      time.Time        // the real clock at creation, with its monotonic reading
	startNanos int64            // start as nanoseconds since the epoch
	tick       time.Duration    // 0: never coarse

	coarse atomic.Int64 // the reading at the last tick, or _clockOff

	mu   sync.Mutex // start and stop
	stop chan struct{}
	done chan struct{}
}

// newClock returns a clock on now (nil: the real clock) for a memory
// with buckets width wide.
func newClock(now func() time.Time, width time.Duration) *clock {
	c := &clock{now: now}
	if now == nil {
		c.start = time.Now()
		c.startNanos = c.start.UnixNano()
		c.tick = coarseTick(width)
	}
	c.coarse.Store(_clockOff)
	return c
}

// nanos returns the time: as of the last tick while the clock is started,
// exact otherwise.
func (c *clock) nanos() int64 {
	if n := c.coarse.Load(); n != _clockOff {
		return n
	}
	return c.exact()
}

// exact reads the clock. The real clock is read as its time at creation
// plus its monotonic reading since, which costs half of time.Now: the
// memory's time follows the monotonic clock, not steps of the wall
// clock, while the process runs.
func (c *clock) exact() int64 {
	if c.now == nil {
		return c.startNanos + int64(time.Since(c.start))
	}
	return c.now().UnixNano()
}

// begin starts the ticking goroutine, unless it runs or the clock never
// ticks.
func (c *clock) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil || c.tick <= 0 {
		return
	}
	t := time.NewTicker(c.tick)
	c.coarse.Store(c.exact())
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go c.run(t, c.stop, c.done)
}

func (c *clock) run(t *time.Ticker, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			c.coarse.Store(c.exact())
		}
	}
}

// end stops the ticking goroutine, if it runs, and waits for it to
// return; readings are exact again.
func (c *clock) end() {
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
