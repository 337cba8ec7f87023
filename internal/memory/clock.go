package memory

import (
	"time"

	"github.com/errown/errown/internal/coarseclock"
)

// _minTick is the shortest tick of the memory's coarse clock: a memory
// whose buckets are narrower than 10 × _minTick reads the real clock every
// time instead, as a faster ticker would cost more than it saves.
const _minTick = 10 * time.Millisecond

// clock is the time a Memory reads, in nanoseconds since the Unix epoch:
// coarse between Start and Stop (internal/coarseclock), so that Observe
// and Kind load an int64 rather than read the clock, and following the
// monotonic clock from its creation. A test's clock (withClock) is read
// exactly. With the default window the tick is 100ms, 0.17% of a bucket.
type clock struct {
	*coarseclock.Clock
	startNanos int64
}

// newClock returns a clock on now (nil: the real clock) for a memory with
// buckets width wide.
func newClock(now func() time.Time, width time.Duration) *clock {
	var tick time.Duration
	if now == nil {
		tick = coarseTick(width)
	}
	c := coarseclock.New(now, tick, nil)
	return &clock{Clock: c, startNanos: c.Started().UnixNano()}
}

// coarseTick returns how often the clock of a memory with buckets width
// wide reads the real clock, or 0 when it should not tick at all.
func coarseTick(width time.Duration) time.Duration {
	return coarseclock.Tick(width, _minTick)
}

// nanos returns the time: as of the last tick while the clock is started,
// exact otherwise.
func (c *clock) nanos() int64 {
	return c.startNanos + int64(c.Elapsed())
}
