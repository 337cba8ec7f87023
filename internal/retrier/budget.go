package retrier

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/errown/errown/retry"
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
	return float64(retries+1) <= budgetAllowance(requests, ratio, minPerSecond, window)+_budgetSlack
}

// budgetAllowance is how many retries a window holding requests original
// requests allows.
func budgetAllowance(requests int64, ratio, minPerSecond float64, window time.Duration) float64 {
	return ratio*float64(requests) + minPerSecond*window.Seconds()
}

// _budgetBuckets is how many time buckets a budget's window is cut into: the
// window slides one bucket at a time.
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

// budget is the retry budget of one callee service: it counts original
// requests and retries over a sliding window of time buckets and allows a
// retry while BudgetAllows does. It is safe for concurrent use.
//
// Every call deposits, so deposit takes no lock while its bucket is
// current: it adds to the bucket atomically. Emptying a bucket for a new
// interval, and withdrawing, happen under mu.
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

// newBudget returns a budget for cfg, which must have its defaults applied,
// on clock.
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

// budgetWidth is the width of one bucket of a budget over window.
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

// tryWithdraw counts one retry and returns true when the budget has room
// for it; otherwise it counts nothing and returns false.
func (b *budget) tryWithdraw() bool {
	_, ok, _ := b.withdraw()
	return ok
}

// withdraw is tryWithdraw, also returning the epoch of the bucket the
// retry was counted in, for refund, and, when it has no room, whether the
// hedges' withdrawals in the window took what the retry needed: without
// them it would have fit (retry.starved_by_hedges).
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

// withdrawHedge counts one hedge (an attempt sent while another of its
// call is under way, with no failure to justify it) as a retry and
// returns the epoch of its bucket, for refundHedge, and true, when the
// budget has room for it and the hedges' withdrawals in the window stay
// within half of what the window allows (_hedgeShare): the other half is
// left to the retries of failures, which hedges never starve. Otherwise
// it counts nothing and returns false.
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

// _hedgeShare is the share of a budget's allowance that hedges may
// withdraw: the rest is for the retries of failures alone.
const _hedgeShare = 0.5

// HedgeAllows reports whether one more hedge fits a budget that has seen
// requests original requests and hedges hedges in its window: hedges+1
// must not exceed _hedgeShare of what BudgetAllows allows in all.
func HedgeAllows(requests, hedges int64, ratio, minPerSecond float64, window time.Duration) bool {
	return float64(hedges+1) <= _hedgeShare*budgetAllowance(requests, ratio, minPerSecond, window)+_budgetSlack
}

// refundHedge takes back a hedge withdrawn in epoch's bucket
// (withdrawHedge) whose call succeeded, as refund does a retry's.
func (b *budget) refundHedge(epoch int64) { b.takeBack(epoch, true, true) }

// refund takes back a retry withdrawn in epoch's bucket (withdraw) that
// succeeded: a retry that works is evidence of an independent failure,
// not of a storm, and the budget bounds only the retries that fail. A
// bucket that has left the window since keeps nothing to refund. A
// plain budget refunds nothing.
func (b *budget) refund(epoch int64) { b.takeBack(epoch, false, true) }

// unsent takes back a retry withdrawn in epoch's bucket (withdraw) that
// was sent nowhere (the retry of a shed offered no other instance): it
// is no retry, so even a plain budget takes it back, and it is not
// counted as one that succeeded.
func (b *budget) unsent(epoch int64) { b.takeBack(epoch, false, false) }

// takeBack takes back one withdrawal from epoch's bucket, a hedge's
// (counted among the retries too) when hedge is set, if the bucket is
// still epoch's and holds one, counting it refunded when refunded is
// set. A plain budget refunds nothing, but takes back what was sent
// nowhere.
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

// current returns the bucket of now, and the counts of the window. b.mu
// must be held.
func (b *budget) current() (cur *budgetBucket, w windowCounts) {
	e := b.epoch()
	cur = b.bucket(e)
	return cur, b.sum(e)
}

// tryWithdrawBlind takes a retry errown suppressed from the budget's blind
// twin, which sees the same requests and both the real retries and the
// suppressed ones: whether a hop blind to claims would have had the budget
// for it. The real budget is untouched.
//
// The twin grants by chance, drawn with draw (uniform in [0, 1)), so that
// the twins of a chain's hops, which see the same requests, decide each
// request independently: at fixed turns (every tenth request at a 10%
// ratio) they would grant on the same requests and compound replays of
// replays far beyond what budgets allow. Within a band of 1/(2·ratio)
// retries either side of an empty budget the chance is the ratio: when
// every call wants a retry, grants average the budget's share, and the
// budget drifts neither way. Above the band the chance grows linearly, to
// certainty at 1/ratio retries left: when few calls want one, every one
// is granted, as the blind hop's budget would. Below the band the twin
// grants nothing.
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

// epoch returns the bucket-width interval of now, or the latest one seen
// if the clock stepped back (or a coarse reading lagged an exact one, or
// another goroutine's).
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

// bucket returns the bucket of epoch e, emptied if it last counted an
// older interval. A bucket already counting a newer one (another goroutine
// read the clock later) is left alone. b.mu must be held.
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

// sum returns the counts of the buckets inside the window at epoch e.
// b.mu must be held.
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
