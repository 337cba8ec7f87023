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
// newest first, each time stamped to within 100ms. The repeats of one
// decision within one such reading are listed once; the metrics count every one.
func (m *Middleware) Decisions() []inbound.Decision {
	return m.inbound.Decisions()
}

// Storms returns the latest root requests (those whose caller runs no
// errown) that met a storm below, newest first: what debugpage shows as
// "storms seen". As in Decisions, the repeats of one storm within one
// reading of the clock are listed once.
func (m *Middleware) Storms() []inbound.Storm {
	return m.inbound.Storms()
}

// Modes returns the mode errown runs in, enforce or observe, and the
// retry policies whose own mode overrides it: what the start log, the
// gauge errown.mode and debugpage show.
func (m *Middleware) Modes() retry.Modes {
	_, _, re := m.cfg.sections()
	return re.Modes()
}

// Losses returns what this service's failed requests lost where it
// declined a retry (errown.inbound.failed_after_denied by reason), beside
// what errown prevented below its root requests and how many met a storm
// (errown.storm.prevented and errown.storm.requests), since start: what
// debugpage shows beside the storms.
func (m *Middleware) Losses() inbound.Losses {
	return m.inbound.Losses()
}

// Instances returns the instances of each callee with a retry policy that
// failed calls another instance of the callee then served (at most 16 per
// callee, newest first), as a retrypeer chooser around the callee's peer
// list lets errown see them: where a partial failure is. Without
// retrypeer it returns none. debugpage lists them.
func (m *Middleware) Instances() []retry.InstanceView {
	return m.retry.Instances()
}
