package retrier

import (
	"testing"
	"time"

	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBudgets(t *testing.T) {
	m, err := New(retry.Config{
		Budget: retry.BudgetConfig{Ratio: 0.5, MinPerSecond: 1, Window: 10 * time.Second},
		Policies: []retry.PolicyConfig{
			{Service: "b-callee", Idempotent: new(true)},
			{Service: "a-callee", Procedure: "get", Idempotent: new(true)},
		},
	})
	require.NoError(t, err)
	c := m.callees["b-callee"]
	for i := 0; i < 4; i++ {
		c.budget.deposit()
	}
	require.True(t, c.budget.tryWithdraw())
	assert.Equal(t, []retry.BudgetView{
		{Callee: "a-callee", Allowed: 10, Ratio: 0.5, MinPerSecond: 1, Window: 10 * time.Second},
		{Callee: "b-callee", Requests: 4, Retries: 1, Allowed: 12, Ratio: 0.5, MinPerSecond: 1, Window: 10 * time.Second},
	}, m.Budgets())
}
