package retrier

import (
	"time"

	"github.com/errown/errown/internal/coarseclock"
)

// _minTick is the shortest tick of the budgets' coarse clock: a budget
// whose buckets are narrower than 10 × _minTick reads the real clock on
// every call instead, as a faster ticker would cost more than it saves.
const _minTick = 10 * time.Millisecond

// budgetClock is the time the budgets of one Middleware read: how long since
// it was made, coarse between Start and Stop (internal/coarseclock).
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

// coarseTick returns how often the coarse clock of budgets with buckets
// width wide reads the real clock, or 0 when it should not tick at all.
// For the default 10s window (1s buckets) it is 100ms: a call counted at
// most 10% of a bucket late, 1% of the window.
func coarseTick(width time.Duration) time.Duration {
	return coarseclock.Tick(width, _minTick)
}
