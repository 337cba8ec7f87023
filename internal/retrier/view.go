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
		b := c.budget
		out = append(out, retry.BudgetView{
			Callee:       name,
			Disabled:     b.disabled,
			Requests:     requests,
			Retries:      retries,
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
	requests, retries, _ = b.sum(b.epoch())
	return requests, retries
}
