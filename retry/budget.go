package retry

import (
	"sync"
	"time"
)

// _budgetSlack absorbs float rounding in BudgetAllows, so that a budget of
// exactly n retries (e.g. ratio 0.3 of 10 requests, which float64 computes
// as 2.9999999999999996) allows n.
const _budgetSlack = 1e-9

// BudgetAllows reports whether one more retry fits a budget that has seen
// requests original requests and retries retries in its window: retries+1
// must not exceed ratio × requests + minPerSecond × window (in seconds).
// It is the pure arithmetic behind the stateful budget.
func BudgetAllows(requests, retries int64, ratio, minPerSecond float64, window time.Duration) bool {
	allowed := ratio*float64(requests) + minPerSecond*window.Seconds()
	return float64(retries+1) <= allowed+_budgetSlack
}

// _budgetBuckets is how many time buckets a budget's window is cut into: the
// window slides one bucket at a time.
const _budgetBuckets = 10

type budgetBucket struct {
	epoch    int64 // which bucket-width interval since start this counts
	requests int64
	retries  int64
}

// budget is the retry budget of one callee service: it counts original
// requests and retries over a sliding window of time buckets and allows a
// retry while BudgetAllows does. It is safe for concurrent use.
type budget struct {
	disabled     bool
	ratio        float64
	minPerSecond float64
	window       time.Duration
	width        time.Duration // of one bucket
	now          func() time.Time
	start        time.Time

	mu      sync.Mutex
	last    int64 // latest epoch seen; the clock never steps back past it
	buckets [_budgetBuckets]budgetBucket
}

// newBudget returns a budget for cfg, which must have its defaults applied.
func newBudget(cfg BudgetConfig, now func() time.Time) *budget {
	width := cfg.Window / _budgetBuckets
	if width <= 0 {
		width = 1
	}
	return &budget{
		disabled:     cfg.Disabled,
		ratio:        cfg.Ratio,
		minPerSecond: *cfg.MinPerSecond,
		window:       cfg.Window,
		width:        width,
		now:          now,
		start:        now(),
	}
}

// deposit counts one original request.
func (b *budget) deposit() {
	if b.disabled {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.current().requests++
}

// tryWithdraw counts one retry and returns true when the budget has room
// for it; otherwise it counts nothing and returns false.
func (b *budget) tryWithdraw() bool {
	if b.disabled {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.current()
	var requests, retries int64
	for i := range b.buckets {
		bk := &b.buckets[i]
		if b.last-bk.epoch < _budgetBuckets {
			requests += bk.requests
			retries += bk.retries
		}
	}
	if !BudgetAllows(requests, retries, b.ratio, b.minPerSecond, b.window) {
		return false
	}
	cur.retries++
	return true
}

// current returns the bucket for now, emptied if it last counted an older
// interval. b.mu must be held.
func (b *budget) current() *budgetBucket {
	if e := int64(b.now().Sub(b.start) / b.width); e > b.last {
		b.last = e
	}
	bk := &b.buckets[b.last%_budgetBuckets]
	if bk.epoch != b.last {
		*bk = budgetBucket{epoch: b.last}
	}
	return bk
}
