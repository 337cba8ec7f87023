package memory

import (
	"time"

	"github.com/errown/errown/internal/coarseclock"
)

// _minTick is the coarse clock's shortest tick: buckets narrower than
// 10 × _minTick read the real clock, as a faster ticker costs more.
const _minTick = 10 * time.Millisecond

// clock is a Memory's time in Unix nanoseconds, following the monotonic
// clock from its creation; coarse between Start and Stop
// (internal/coarseclock), so Observe and Kind load an int64. A test's
// clock (withClock) is read exactly. Default tick: 100ms, 0.17% of a bucket.
type clock struct {
	*coarseclock.Clock
	startNanos int64
}

// newClock returns a clock on now (nil: real) for buckets width wide.
func newClock(now func() time.Time, width time.Duration) *clock {
	var tick time.Duration
	if now == nil {
		tick = coarseTick(width)
	}
	c := coarseclock.New(now, tick, nil)
	return &clock{Clock: c, startNanos: c.Started().UnixNano()}
}

// coarseTick returns the tick for buckets width wide, or 0 for none.
func coarseTick(width time.Duration) time.Duration {
	return coarseclock.Tick(width, _minTick)
}

// nanos returns the time: the last tick's while started, else exact.
func (c *clock) nanos() int64 {
	return c.startNanos + int64(c.Elapsed())
}
