package retrier

// retryNote is what one call's attempt loop keeps of its retries: the
// budget withdrawal of the latest, refunded when it succeeds, and, in
// observe mode, whether enforce mode would have held a retry of the call
// back (by the callee's unclaim, its overload or the budget), counted
// when the call then succeeds.
type retryNote struct {
	epoch    int64 // of the latest withdrawal's bucket
	withdrew bool  // the latest retry was withdrawn from the budget
	would    bool  // observe mode sent a retry enforce mode would not have
}

// withdraw withdraws the next retry from c's budget and reports whether
// it may go: in observe mode it always may, a withdrawal the budget
// refuses counted as one enforce mode would have refused
// (retry.would_budget) and not withdrawn, so that the budget counts what
// enforce mode would have sent.
//
// In enforce mode a refusal the hedges' withdrawals caused (without them
// the retry would have fit) counts in retry.starved_by_hedges.
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

// succeeded records that the call's latest attempt did not fail: its
// retry's withdrawal is refunded (a retry that works is not a storm), and
// a call observe mode kept alive with a retry enforce mode would have
// held back is counted (retry.would_suppress_succeeded).
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

// unsent records that the call's latest retry was sent nowhere (no
// instance to take the retry of a shed): its withdrawal is refunded,
// since nothing left the process, and not counted as a retry that
// succeeded.
func (n *retryNote) unsent(c *callee) {
	if n.withdrew {
		c.budget.unsent(n.epoch)
		n.withdrew = false
	}
}

// abandoned records that the call's latest attempt ended cancelled by its
// caller, which gave up on the call: neither a failure nor a success. A
// cancelled attempt may have reached the callee (a hedger's loser is
// cancelled once the winner answers), so its retry's withdrawal is not
// refunded, and observe mode counts no call kept alive.
func (n *retryNote) abandoned() {
	n.withdrew, n.would = false, false
}

// plainBudgets makes the budgets of callees refund nothing when plain
// (PlainBudget).
func plainBudgets(callees map[string]*callee, plain bool) {
	for _, c := range callees {
		c.budget.plain = plain
	}
}
