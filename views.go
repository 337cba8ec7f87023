package errown

import (
	"cmp"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
)

// Status is what errown knows and did, as of one reading: what debugpage
// renders, and what a test or an operator's tool may read. Each list is
// empty, never nil.
type Status struct {
	// Modes is the mode errown runs in, enforce or observe, and the retry
	// policies whose own mode overrides it: what the start log and the
	// gauge errown.mode show.
	Modes retry.Modes
	// Dependencies is what errown knows of every edge: declared ones,
	// then learned ones, each with its kind, ratio, samples and source.
	Dependencies []depmem.EdgeView
	// Budgets is the retry budget of every callee that has a retry
	// policy.
	Budgets []retry.BudgetView
	// Decisions are the latest claim decisions of the inbound middleware,
	// newest first, each time stamped to within 100ms; the repeats of one
	// decision within one such reading are listed once.
	Decisions []inbound.Decision
	// Storms are the latest 64 root requests (those whose caller runs no
	// errown) that met a storm below, newest first, repeats listed once
	// as in Decisions.
	Storms []inbound.Storm
	// Losses are errown.inbound.failed_after_denied by reason,
	// errown.storm.prevented and errown.storm.requests since start.
	Losses inbound.Losses
	// Instances are the instances of each callee with a retry policy that
	// failed calls another instance then served (at most 16 per callee,
	// newest first), as a retrypeer chooser lets errown see them; without
	// retrypeer there are none.
	Instances []retry.InstanceView
	// InFlight is how many requests errown tracks in flight: zero once
	// every request it served has returned.
	InFlight int
}

// Introspect returns errown's Status now, as yarpc's Dispatcher.Introspect
// returns the dispatcher's.
func (m *Middleware) Introspect() Status {
	losses := m.inbound.Losses()
	losses.Lost = orEmpty(losses.Lost)
	return Status{
		Modes:        m.modes(),
		Dependencies: orEmpty(m.kinds.Edges()),
		Budgets:      orEmpty(m.retry.Budgets()),
		Decisions:    orEmpty(m.inbound.Decisions()),
		Storms:       orEmpty(m.inbound.Storms()),
		Losses:       losses,
		Instances:    orEmpty(m.retry.Instances()),
		InFlight:     m.inbound.InFlight(),
	}
}

// modes returns the mode errown runs in and the policies overriding it.
func (m *Middleware) modes() retry.Modes {
	_, _, re := m.cfg.sections()
	return modesOf(re)
}

// modesOf returns the modes c runs calls in.
func modesOf(c retry.Config) retry.Modes {
	top := cmp.Or(c.Mode, retry.DefaultConfig().Mode)
	out := retry.Modes{Mode: top, Overrides: []retry.ModeOverride{}}
	for _, p := range c.Policies {
		if p.Mode != "" && p.Mode != top {
			out.Overrides = append(out.Overrides, retry.ModeOverride{Service: p.Service, Procedure: p.Procedure, Mode: p.Mode})
		}
	}
	return out
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
