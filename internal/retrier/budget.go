package retrier

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/errown/errown/retry"
)

// _budgetSlack absorbs float rounding in BudgetAllows, so a budget of
// exactly n retries (ratio 0.3 of 10 requests is 2.9999999999999996)
// allows n.
const _budgetSlack = 1e-9

// BudgetAllows reports whether one more retry fits a window that has seen
// requests originals and retries retries: retries+1 must not exceed
// ratio × requests + minPerSecond × window (in seconds).
func BudgetAllows(requests, retries int64, ratio, minPerSecond float64, window time.Duration) bool {
	return float64(retries+1) <= budgetAllowance(requests, ratio, minPerSecond, window)+_budgetSlack
}

// budgetAllowance is how many retries a window of requests allows.
func budgetAllowance(requests int64, ratio, minPerSecond float64, window time.Duration) float64 {
	return ratio*float64(requests) + minPerSecond*window.Seconds()
}

// _budgetBuckets is how many buckets a budget's window slides by.
const _budgetBuckets = 10

type budgetBucket struct {
	epoch    atomic.Int64 // which bucket-width interval since start this counts
	requests atomic.Int64
	retries  int64 // budget.mu, hedges included
	hedges   int64 // budget.mu: of retries, those hedges withdrew (withdrawHedge)
	blind    int64 // budget.mu: retries only the blind world made (suppressed ones)
	refunded int64 // budget.mu: retries that succeeded, given back (refund)
	refused  int64 // budget.mu: retries the budget had no room for
	starved  int64 // budget.mu: of refused, retries the hedges took the room of (withdraw)
}

// budget is one callee service's retry budget: original requests and
// retries over a sliding window of buckets; a retry is allowed while
// BudgetAllows. It is safe for concurrent use: deposit (every call) adds
// atomically without locking while its bucket is current; emptying a
// bucket and withdrawing happen under mu.
type budget struct {
	disabled     bool
	plain        bool // refunds nothing (PlainBudget)
	ratio        float64
	minPerSecond float64
	window       time.Duration
	width        time.Duration // of one bucket
	clock        *budgetClock

	last    atomic.Int64 // latest epoch seen; the clock never steps back past it
	mu      sync.Mutex
	buckets [_budgetBuckets]budgetBucket
}

// newBudget returns a budget for cfg (defaults applied) on clock.
func newBudget(cfg retry.BudgetConfig, clock *budgetClock) *budget {
	return &budget{
		disabled:     cfg.Disabled,
		ratio:        cfg.Ratio,
		minPerSecond: cfg.MinPerSecond,
		window:       cfg.Window,
		width:        budgetWidth(cfg.Window),
		clock:        clock,
	}
}

// budgetWidth is the width of one bucket of a window.
func budgetWidth(window time.Duration) time.Duration {
	return max(window/_budgetBuckets, 1)
}

// deposit counts one original request.
func (b *budget) deposit() {
	if b.disabled {
		return
	}
	e := b.epoch()
	bk := &b.buckets[e%_budgetBuckets]
	if bk.epoch.Load() != e {
		b.mu.Lock()
		bk = b.bucket(e)
		b.mu.Unlock()
	}
	bk.requests.Add(1)
}

// tryWithdraw counts one retry if the budget has room, and reports
// whether it did.
func (b *budget) tryWithdraw() bool {
	_, ok, _ := b.withdraw()
	return ok
}

// withdraw is tryWithdraw also returning the retry's bucket epoch, for
// refund, and, with no room, whether it would have fit without the
// window's hedges (retry.starved_by_hedges).
func (b *budget) withdraw() (epoch int64, ok, hedgesTook bool) {
	if b.disabled {
		return 0, true, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, w := b.current()
	if !BudgetAllows(w.requests, w.retries, b.ratio, b.minPerSecond, b.window) {
		cur.refused++
		hedgesTook = w.hedges > 0 && BudgetAllows(w.requests, w.retries-w.hedges, b.ratio, b.minPerSecond, b.window)
		if hedgesTook {
			cur.starved++
		}
		return 0, false, hedgesTook
	}
	cur.retries++
	return cur.epoch.Load(), true, false
}

// withdrawHedge counts one hedge as a retry and returns its bucket epoch
// (for refundHedge) and true, if the budget has room and the window's
// hedges stay within _hedgeShare of the allowance: the rest is kept for
// retries of failures, which hedges never starve. Otherwise it counts
// nothing and returns false.
func (b *budget) withdrawHedge() (epoch int64, ok bool) {
	if b.disabled {
		return 0, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, w := b.current()
	if !BudgetAllows(w.requests, w.retries, b.ratio, b.minPerSecond, b.window) ||
		!HedgeAllows(w.requests, w.hedges, b.ratio, b.minPerSecond, b.window) {
		cur.refused++
		return 0, false
	}
	cur.retries++
	cur.hedges++
	return cur.epoch.Load(), true
}

// _hedgeShare is the share of a budget's allowance hedges may withdraw.
const _hedgeShare = 0.5

// HedgeAllows reports whether one more hedge fits a window of requests
// holding hedges hedges: hedges+1 must not exceed _hedgeShare of the
// allowance.
func HedgeAllows(requests, hedges int64, ratio, minPerSecond float64, window time.Duration) bool {
	return float64(hedges+1) <= _hedgeShare*budgetAllowance(requests, ratio, minPerSecond, window)+_budgetSlack
}

// refundHedge takes back a hedge (withdrawHedge) whose call succeeded.
func (b *budget) refundHedge(epoch int64) { b.takeBack(epoch, true, true) }

// refund takes back a retry (withdraw) that succeeded: a retry that works
// shows an independent failure, not a storm, and the budget bounds only
// failing retries. A bucket that left the window keeps nothing to
// refund; a plain budget refunds nothing.
func (b *budget) refund(epoch int64) { b.takeBack(epoch, false, true) }

// unsent takes back a retry that was sent nowhere (no other instance for
// a shed's retry): it is no retry, so even a plain budget takes it back,
// not counted refunded.
func (b *budget) unsent(epoch int64) { b.takeBack(epoch, false, false) }

// takeBack takes back one withdrawal (a hedge's if hedge) from epoch's
// bucket, if it is still epoch's and holds one, counting it refunded if
// refunded. A plain budget takes back only what was sent nowhere.
func (b *budget) takeBack(epoch int64, hedge, refunded bool) {
	if b.disabled || b.plain && refunded {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := &b.buckets[epoch%_budgetBuckets]
	if bk.epoch.Load() != epoch {
		return
	}
	switch {
	case hedge && bk.hedges > 0:
		bk.hedges--
	case hedge || bk.retries == 0:
		return
	}
	bk.retries--
	if refunded {
		bk.refunded++
	}
}

// windowCounts are a budget's counts over its window.
type windowCounts struct {
	requests, retries, hedges, blind int64
}

// current returns now's bucket and the window's counts. b.mu must be held.
func (b *budget) current() (cur *budgetBucket, w windowCounts) {
	e := b.epoch()
	cur = b.bucket(e)
	return cur, b.sum(e)
}

// tryWithdrawBlind takes a suppressed retry from the budget's blind twin,
// which sees the same requests and both real and suppressed retries: would
// a hop blind to claims have had the budget? The real budget is untouched.
//
// The twin grants by chance (draw, uniform in [0, 1)) so that the twins of
// a chain's hops decide each request independently: fixed turns would
// grant on the same requests and compound replays of replays. Within
// 1/(2·ratio) retries either side of an empty budget the chance is the
// ratio, so grants average the budget's share when every call wants one.
// Above that band it grows linearly to certainty at 1/ratio left; below
// it the twin grants nothing.
func (b *budget) tryWithdrawBlind(draw float64) bool {
	if b.disabled {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, w := b.current()
	left := budgetAllowance(w.requests, b.ratio, b.minPerSecond, b.window) - float64(w.retries+w.blind)
	band := 1 / (2 * b.ratio)
	chance := b.ratio
	if left > band {
		chance += (1 - b.ratio) * min(1, (left-band)/band)
	}
	if left <= -band || draw >= chance {
		return false
	}
	cur.blind++
	return true
}

// epoch returns now's bucket-width interval, or the latest seen if the
// clock read earlier (stepped back, or a lagging coarse reading).
func (b *budget) epoch() int64 {
	e := int64(b.clock.Elapsed() / b.width)
	for {
		last := b.last.Load()
		if e <= last {
			return last
		}
		if b.last.CompareAndSwap(last, e) {
			return e
		}
	}
}

// bucket returns epoch e's bucket, emptied if it counted an older
// interval; one counting a newer interval is left alone. b.mu must be held.
func (b *budget) bucket(e int64) *budgetBucket {
	bk := &b.buckets[e%_budgetBuckets]
	if bk.epoch.Load() < e {
		bk.requests.Store(0)
		bk.retries, bk.hedges = 0, 0
		bk.blind = 0
		bk.refunded, bk.refused, bk.starved = 0, 0, 0
		bk.epoch.Store(e) // last: a lock-free deposit that sees e sees the emptied counts
	}
	return bk
}

// sum returns the window's counts at epoch e. b.mu must be held.
func (b *budget) sum(e int64) (w windowCounts) {
	for i := range b.buckets {
		bk := &b.buckets[i]
		if e-bk.epoch.Load() < _budgetBuckets {
			w.requests += bk.requests.Load()
			w.retries += bk.retries
			w.hedges += bk.hedges
			w.blind += bk.blind
		}
	}
	return w
}
