package retrier

// retryNote is what a call's attempt loop keeps of its retries: the
// latest withdrawal, refunded if it succeeds, and, in observe mode,
// whether enforce mode would have held a retry back (counted if the call
// then succeeds).
type retryNote struct {
	epoch    int64 // of the latest withdrawal's bucket
	withdrew bool  // the latest retry was withdrawn from the budget
	would    bool  // observe mode sent a retry enforce mode would not have
}

// withdraw withdraws the next retry from c's budget and reports whether
// it may go. Observe mode always lets it go, counting a refusal in
// retry.would_budget without withdrawing, so the budget counts what
// enforce mode would have sent. In enforce mode a refusal caused by the
// hedges counts in retry.starved_by_hedges.
func (n *retryNote) withdraw(c *callee, observe bool) bool {
	epoch, ok, hedgesTook := c.budget.withdraw()
	n.epoch, n.withdrew = epoch, ok
	if ok {
		return true
	}
	if observe {
		c.metrics.wouldBudget.Inc(1)
		n.would = true
		return true
	}
	if hedgesTook {
		c.metrics.starved[starvedBudget].Inc(1)
	}
	return false
}

// succeeded records that the latest attempt did not fail: the retry's
// withdrawal is refunded, and a call observe mode kept alive counts in
// retry.would_suppress_succeeded.
func (n *retryNote) succeeded(c *callee) {
	if n.withdrew {
		c.budget.refund(n.epoch)
		n.withdrew = false
	}
	if n.would {
		c.metrics.wouldSucceeded.Inc(1)
		n.would = false
	}
}

// unsent refunds the latest retry's withdrawal: it was sent nowhere, so
// nothing left the process (not counted as succeeded).
func (n *retryNote) unsent(c *callee) {
	if n.withdrew {
		c.budget.unsent(n.epoch)
		n.withdrew = false
	}
}

// abandoned records that the latest attempt was cancelled by its caller:
// it may have reached the callee (a hedge's loser), so the withdrawal is
// not refunded, and observe mode counts no call kept alive.
func (n *retryNote) abandoned() {
	n.withdrew, n.would = false, false
}

// plainBudgets sets the callees' budgets to refund nothing (PlainBudget).
func plainBudgets(callees map[string]*callee, plain bool) {
	for _, c := range callees {
		c.budget.plain = plain
	}
}
