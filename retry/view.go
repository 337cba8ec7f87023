package retry

import (
	"sort"
	"time"
)

// BudgetView is one callee's retry budget as it stands, for operators.
type BudgetView struct {
	// Callee is the callee service the budget is kept for.
	Callee string `json:"callee"`
	// Disabled budgets allow every retry a policy wants.
	Disabled bool `json:"disabled"`
	// Requests and Retries are the original requests and the retries
	// counted in the current window.
	Requests int64 `json:"requests"`
	Retries  int64 `json:"retries"`
	// Allowed is how many retries the window allows:
	// Ratio × Requests + MinPerSecond × Window.
	Allowed      float64       `json:"allowed"`
	Ratio        float64       `json:"ratio"`
	MinPerSecond float64       `json:"minPerSecond"`
	Window       time.Duration `json:"window"`
}

// Budgets returns the budget of every callee that has a retry policy,
// sorted by callee.
func (m *Middleware) Budgets() []BudgetView {
	out := make([]BudgetView, 0, len(m.callees))
	for name, c := range m.callees {
		requests, retries := c.budget.counts()
		b := c.budget
		out = append(out, BudgetView{
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
