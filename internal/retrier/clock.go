package retrier

import (
	"time"

	"github.com/errown/errown/internal/coarseclock"
)

// _minTick is the budgets' coarse clock's shortest tick: buckets narrower
// than 10 × _minTick read the real clock, as a faster ticker costs more.
const _minTick = 10 * time.Millisecond

// budgetClock is the time since it was made, read by one Middleware's
// budgets; coarse between Start and Stop (internal/coarseclock).
type budgetClock = coarseclock.Clock

// ticker makes the coarse clock's ticks; tests give their own.
type ticker = coarseclock.Ticker

// realTicker is a time.Ticker.
var realTicker ticker = coarseclock.RealTicker

// newBudgetClock returns a clock on now (nil: the real clock) that, once
// started, reads it every tick (0: never) from newTicker.
func newBudgetClock(now func() time.Time, tick time.Duration, newTicker ticker) *budgetClock {
	return coarseclock.New(now, tick, newTicker)
}

// coarseTick returns the coarse clock's tick for buckets width wide
// (a tenth of a bucket, 1% of the window), or 0 for no ticking.
func coarseTick(width time.Duration) time.Duration {
	return coarseclock.Tick(width, _minTick)
}
