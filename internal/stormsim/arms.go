package stormsim

import (
	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc/api/peer"
)

// Arm is one of the mechanisms the capacity scenario compares, as a user
// would choose among them: a Policy at every hop and what the arm adds
// to it. A new mechanism is an arm of its own; errown's own options (its
// recovery configuration, say) are an errown arm with Errown set.
type Arm struct {
	// Name names the arm in output.
	Name string
	// Policy is the policy of every hop.
	Policy Policy
	// Attempts is the attempts per call at every hop, the first one
	// included; 0 for the scenario's (2).
	Attempts int
	// Mode is errown's mode under the ownership policies.
	Mode retry.Mode
	// Throttle adds client-side adaptive throttling at every hop (see
	// Options.Throttle).
	Throttle *Throttle
	// Errown changes the errown.Config of every node that runs errown
	// (see Options.Errown).
	Errown func(*errown.Config)
	// Chooser wraps the peer chooser of every caller of a node of
	// several instances (see Options.Chooser).
	Chooser func(peer.Chooser) peer.Chooser
	// Failsafe retries with failsafe-go at every hop instead of errown's
	// retry middleware (see Options.Failsafe); the arm's Policy is
	// PolicyNaive.
	Failsafe *Failsafe
	// NoQueue gives every node of finite capacity a fixed limit of its
	// workers in flight and no queue (see Options.NoQueue): an oracle,
	// not a mechanism a user could run without knowing the capacity.
	NoQueue bool
}

// apply returns o run under the arm.
func (a Arm) apply(o Options) Options {
	o.Policy, o.Mode, o.Throttle, o.Errown = a.Policy, a.Mode, a.Throttle, a.Errown
	o.Chooser, o.Failsafe, o.NoQueue = a.Chooser, a.Failsafe, a.NoQueue
	if a.Attempts != 0 {
		o.Attempts = a.Attempts
	}
	return o
}

// Names of CapacityArms.
const (
	ArmNone          = "no retries"
	ArmRetries       = "every hop retries"
	ArmBudget        = "10% budget"
	ArmThrottle      = "adaptive throttling"
	ArmErrown        = "errown"
	ArmErrownObserve = "errown observe"
	ArmOracle        = "fixed limit"
)

// CapacityArms returns the arms of the capacity scenario, in the order it
// runs them: no retries; every hop retrying blind (2 attempts); a 10%
// budget at every hop; client-side adaptive throttling at every hop (K =
// 2, a 2s window) over the same 10% budget, as the SRE book pairs them;
// failsafe-go at every hop, its retry policy, budget and adaptive limiter
// on the client side and its adaptive limiter on the server side too;
// errown (enforce); errown in observe mode; and the oracle errown's
// admission is judged against: errown without admission, its retries as
// errown's, in front of a constrained node that holds as many requests as
// it has workers and refuses the rest at once (it knows its capacity).
// The budgets (10% of the requests, no floor) count over retry's default
// 10s window.
func CapacityArms() []Arm {
	return []Arm{
		{Name: ArmNone, Policy: PolicyNaive, Attempts: 1},
		{Name: ArmRetries, Policy: PolicyNaive},
		{Name: ArmBudget, Policy: PolicyBudget},
		{Name: ArmThrottle, Policy: PolicyBudget, Throttle: &Throttle{}},
		{Name: ArmFailsafe, Policy: PolicyNaive, Failsafe: &Failsafe{Server: true}},
		{Name: ArmErrown, Policy: PolicyOwnership, Errown: admissionAt(inbound.AdmissionEnforce)},
		{Name: ArmErrownObserve, Policy: PolicyOwnership, Mode: retry.ModeObserve, Errown: admissionAt(inbound.AdmissionObserve)},
		{Name: ArmOracle, Policy: PolicyOwnership, NoQueue: true, Errown: admissionAt(inbound.AdmissionDisabled)},
	}
}

// ArmNames returns the names of arms, in order.
func ArmNames(arms []Arm) []string {
	names := make([]string, len(arms))
	for i, a := range arms {
		names[i] = a.Name
	}
	return names
}

// admissionAt returns an Errown func that runs the inbound admission in
// mode at every service.
func admissionAt(mode inbound.AdmissionMode) func(*errown.Config) {
	return func(c *errown.Config) { c.Admission.Mode = mode }
}
