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
		w := c.budget.inWindow()
		succeeded, refused, starved := c.budget.outcomes()
		b := c.budget
		out = append(out, retry.BudgetView{
			Callee:          name,
			Disabled:        b.disabled,
			Requests:        w.requests,
			Retries:         w.retries,
			Hedges:          w.hedges,
			Succeeded:       succeeded,
			Refused:         refused,
			StarvedByHedges: starved,
			Allowed:         budgetAllowance(w.requests, b.ratio, b.minPerSecond, b.window),
			Ratio:           b.ratio,
			MinPerSecond:    b.minPerSecond,
			Window:          b.window,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Callee < out[j].Callee })
	return out
}

// inWindow returns the counts of the window now.
func (b *budget) inWindow() windowCounts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sum(b.epoch())
}

// outcomes returns the window's refunded retries, the refused ones, and
// of those the ones hedges took the room of.
func (b *budget) outcomes() (succeeded, refused, starved int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.epoch()
	for i := range b.buckets {
		bk := &b.buckets[i]
		if e-bk.epoch.Load() < _budgetBuckets {
			succeeded += bk.refunded
			refused += bk.refused
			starved += bk.starved
		}
	}
	return succeeded, refused, starved
}
