package debugpage

import (
	"net/http"
	"testing"
	"time"

	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTMLSaysWhenTheBudgetHeldBackWorkingRetries: the budget view says
// so when the budget refused retries while the callee's retries mostly
// succeeded (independent failures), and not when they failed (a storm)
// or nothing was refused.
func TestHTMLSaysWhenTheBudgetHeldBackWorkingRetries(t *testing.T) {
	budget := func(retries, succeeded, refused int64) retry.BudgetView {
		return retry.BudgetView{Callee: "inventory", Requests: 1000, Retries: retries, Succeeded: succeeded, Refused: refused,
			Allowed: 200, Ratio: 0.1, MinPerSecond: 10, Window: 10 * time.Second}
	}
	tests := []struct {
		name string
		give retry.BudgetView
		want bool
	}{
		{name: "refused while retries succeed", give: budget(200, 300, 40), want: true},
		{name: "refused while retries fail", give: budget(200, 10, 40)},
		{name: "retries succeed, nothing refused", give: budget(20, 300, 0)},
		{name: "disabled", give: retry.BudgetView{Callee: "inventory", Disabled: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, fakeSource{budgets: []retry.BudgetView{tt.give}}, "/debug/errown", nil)
			require.Equal(t, http.StatusOK, rec.Code)
			body := rec.Body.String()
			note := "held back 40 retries that were working: 300 of the window's retries to inventory succeeded, 200 failed"
			if tt.want {
				assert.Contains(t, body, note)
			} else {
				assert.NotContains(t, body, "held back")
			}
		})
	}
}
