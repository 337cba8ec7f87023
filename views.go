package errown

import (
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
)

// Budgets returns the retry budget of every callee that has a retry
// policy. With Dependencies and Decisions it is what debugpage shows.
func (m *Middleware) Budgets() []retry.BudgetView {
	return m.retry.Budgets()
}

// Decisions returns the latest claim decisions of the inbound middleware,
// newest first.
func (m *Middleware) Decisions() []inbound.Decision {
	return m.inbound.Decisions()
}

// Storms returns the latest root requests (those whose caller runs no
// errown) that met a storm below, newest first: what debugpage shows as
// "storms seen".
func (m *Middleware) Storms() []inbound.Storm {
	return m.inbound.Storms()
}
