package coarseclock

import (
	"sync"
	"sync/atomic"
	"time"
)

// MaxTick is the longest a Clock waits between two readings of the real
// clock. A tick is not free: it wakes a goroutine of a process that may
// be idle, a small share of a core at 100ms and ten times that at 10ms
// (figures in bench/README.md).
const MaxTick = 100 * time.Millisecond

// Tick returns how often a Clock read by counts kept in buckets width wide
// reads the real clock: a tenth of a bucket, at most MaxTick, or 0 (never:
// exact readings) when under minTick. A coarse reading lags by at most a
// tick plus the ticking goroutine's scheduling delay, so a count that soon
// after a bucket boundary lands in the bucket before: at most 10% of one.
func Tick(width, minTick time.Duration) time.Duration {
	tick := min(MaxTick, width/10)
	if tick < minTick || tick <= 0 {
		return 0
	}
	return tick
}

// Ticker returns a channel that receives every d and a func that stops it.
type Ticker func(d time.Duration) (<-chan time.Time, func())

// RealTicker is a time.Ticker.
func RealTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// _off is the coarse reading while no goroutine keeps it.
const _off = -1

// Clock reads how long since it was made. It is safe for concurrent use.
type Clock struct {
	now       func() time.Time // nil: the real clock, read with time.Since
	start     time.Time
	tick      time.Duration // 0: never coarse
	newTicker Ticker

	coarse atomic.Int64 // elapsed ns at the last tick, or _off

	mu   sync.Mutex // Start and Stop
	stop chan struct{}
	done chan struct{}
}

// New returns a Clock on now (nil: the real clock) that, once started,
// reads it every tick (0: never) from newTicker (nil: RealTicker).
func New(now func() time.Time, tick time.Duration, newTicker Ticker) *Clock {
	if newTicker == nil {
		newTicker = RealTicker
	}
	c := &Clock{now: now, tick: tick, newTicker: newTicker}
	if now == nil {
		c.start = time.Now()
	} else {
		c.start = now()
	}
	c.coarse.Store(_off)
	return c
}

// Started returns the time the Clock was made.
func (c *Clock) Started() time.Time { return c.start }

// Coarse reports whether readings are coarse: the Clock is started and
// ticks.
func (c *Clock) Coarse() bool { return c.coarse.Load() != _off }

// Elapsed returns the time since the Clock was made: as of the last tick
// while the Clock is started, exact otherwise.
func (c *Clock) Elapsed() time.Duration {
	if e := c.coarse.Load(); e != _off {
		return time.Duration(e)
	}
	return c.exact()
}

// exact reads the clock; the real one's monotonic reading alone costs
// half of time.Now.
func (c *Clock) exact() time.Duration {
	if c.now == nil {
		return time.Since(c.start)
	}
	return c.now().Sub(c.start)
}

// read stores the exact reading as the coarse one. A clock stepped back
// before its start (only a test's can) reads as 0.
func (c *Clock) read() {
	c.coarse.Store(int64(max(c.exact(), 0)))
}

// Start starts the ticking goroutine, unless it runs or the Clock never
// ticks.
func (c *Clock) Start() {
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

func (c *Clock) run(ticks <-chan time.Time, stopTicker func(), stop <-chan struct{}, done chan<- struct{}) {
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
// return; readings are exact again.
func (c *Clock) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop == nil {
		return
	}
	close(c.stop)
	<-c.done
	c.stop, c.done = nil, nil
	c.coarse.Store(_off) // after the goroutine's last store
}
