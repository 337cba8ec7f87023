package retrier

import (
	"time"

	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/yarpcerrors"
)

// policy is a PolicyConfig compiled for the request path.
type policy struct {
	maxAttempts    int
	retryable      uint64 // bit c set: code c is retryable
	initialBackoff time.Duration
	maxBackoff     time.Duration
	attemptTimeout time.Duration
	minRemaining   time.Duration
	idempotent     bool
	observe        bool // ModeObserve: never suppress
}

// compilePolicy compiles p, which must be valid with its defaults applied.
func compilePolicy(p retry.PolicyConfig, mode retry.Mode) *policy {
	var retryable uint64
	for _, name := range p.RetryableCodes {
		var c yarpcerrors.Code
		if c.UnmarshalText([]byte(name)) == nil && c < 64 {
			retryable |= 1 << c
		}
	}
	return &policy{
		maxAttempts:    p.MaxAttempts,
		retryable:      retryable,
		initialBackoff: p.InitialBackoff,
		maxBackoff:     p.MaxBackoff,
		attemptTimeout: p.AttemptTimeout,
		minRemaining:   p.MinRemaining,
		idempotent:     *p.Idempotent,
		observe:        p.Mode == retry.ModeObserve || p.Mode == "" && mode == retry.ModeObserve,
	}
}

// retryableCode reports whether an error with code c is worth a retry.
func (p *policy) retryableCode(c yarpcerrors.Code) bool {
	return c < 64 && p.retryable&(1<<c) != 0
}

// callee is what the middleware keeps for one callee service that has at
// least one policy: its budget, its metrics and its policies.
type callee struct {
	budget     *budget
	metrics    *metrics
	foreign    *foreignMetrics
	overload   *overload
	instances  *instances         // its instances that failed calls another served
	service    *policy            // the service-wide policy, or nil
	procedures map[string]*policy // exact procedure policies
}

// policy returns the policy for procedure: the exact procedure policy, else
// the service-wide one, else nil.
func (c *callee) policy(procedure string) *policy {
	if p, ok := c.procedures[procedure]; ok {
		return p
	}
	return c.service
}

// compileCallees compiles the policies of cfg, which must be valid with its
// defaults applied, into one callee per service, whose budgets read clock.
func compileCallees(cfg retry.Config, scope tally.Scope, clock *budgetClock) map[string]*callee {
	callees := make(map[string]*callee)
	for _, pc := range cfg.Policies {
		c, ok := callees[pc.Service]
		if !ok {
			c = &callee{
				budget:     newBudget(cfg.Budget, clock),
				metrics:    newMetrics(scope, pc.Service),
				foreign:    newForeignMetrics(scope, pc.Service),
				overload:   newOverload(cfg.Overload, clock.Elapsed),
				procedures: make(map[string]*policy),
			}
			callees[pc.Service] = c
		}
		p := compilePolicy(pc, cfg.Mode)
		if pc.Procedure == "" {
			c.service = p
		} else {
			c.procedures[pc.Procedure] = p
		}
	}
	return callees
}
