package retrier

import (
	"sort"

	"github.com/errown/errown/retry"
)

// Budgets returns the budget of every callee that has a retry policy,
// sorted by callee.
func (m *Middleware) Budgets() []retry.BudgetView {
	out := make([]retry.BudgetView, 0, len(m.callees))
	for name, c := range m.callees {
		requests, retries := c.budget.counts()
		succeeded, refused := c.budget.outcomes()
		b := c.budget
		out = append(out, retry.BudgetView{
			Callee:       name,
			Disabled:     b.disabled,
			Requests:     requests,
			Retries:      retries,
			Succeeded:    succeeded,
			Refused:      refused,
			Allowed:      budgetAllowance(requests, b.ratio, b.minPerSecond, b.window),
			Ratio:        b.ratio,
			MinPerSecond: b.minPerSecond,
			Window:       b.window,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Callee < out[j].Callee })
	return out
}

// counts returns the requests and retries in the window now.
func (b *budget) counts() (requests, retries int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.sum(b.epoch())
	return w.requests, w.retries
}

// outcomes returns the retries that succeeded (refunded) and the ones
// the budget refused in the window now.
func (b *budget) outcomes() (succeeded, refused int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.epoch()
	for i := range b.buckets {
		bk := &b.buckets[i]
		if e-bk.epoch.Load() < _budgetBuckets {
			succeeded += bk.refunded
			refused += bk.refused
		}
	}
	return succeeded, refused
}
