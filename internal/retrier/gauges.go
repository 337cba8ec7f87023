package retrier

import "github.com/uber-go/tally/v4"

// _gaugeBudgetLeft is the retry budget left per callee: the retries its
// window allows now less those spent.
const _gaugeBudgetLeft = "budget_left"

// budgetGauges registers retry.budget_left, tagged callee, for every callee
// with a policy.
func budgetGauges(scope tally.Scope, callees map[string]*callee) map[string]tally.Gauge {
	out := make(map[string]tally.Gauge, len(callees))
	for name := range callees {
		out[name] = scope.SubScope(_subScope).Tagged(map[string]string{_tagCallee: name}).Gauge(_gaugeBudgetLeft)
	}
	return out
}

// UpdateGauges sets every callee's retry.budget_left from its budget,
// leaving a disabled budget's alone. errown's gauge ticker calls it, off
// the request path.
func (m *Middleware) UpdateGauges() {
	for _, b := range m.Budgets() {
		if gauge, ok := m.budgetLeft[b.Callee]; ok && !b.Disabled {
			gauge.Update(b.Allowed - float64(b.Retries))
		}
	}
}
