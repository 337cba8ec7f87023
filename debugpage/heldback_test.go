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

// TestHTMLSaysWhenHedgesStarvedRetries: the budget view says so when the
// budget refused retries of failures it would have had room for without
// the hedges' withdrawals, and not otherwise.
func TestHTMLSaysWhenHedgesStarvedRetries(t *testing.T) {
	budget := func(hedges, starved int64) retry.BudgetView {
		return retry.BudgetView{Callee: "inventory", Requests: 1000, Retries: 110, Hedges: hedges, Refused: 30, StarvedByHedges: starved,
			Allowed: 110, Ratio: 0.1, MinPerSecond: 0, Window: 10 * time.Second}
	}
	tests := []struct {
		name string
		give retry.BudgetView
		want bool
	}{
		{name: "starved", give: budget(55, 12), want: true},
		{name: "hedges, nothing starved", give: budget(55, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, fakeSource{budgets: []retry.BudgetView{tt.give}}, "/debug/errown", nil)
			require.Equal(t, http.StatusOK, rec.Code)
			body := rec.Body.String()
			note := "hedges took what retries of failures needed: 12 retries of failures to inventory refused that the window had room for but for the hedges' 55 withdrawals"
			if tt.want {
				assert.Contains(t, body, note)
			} else {
				assert.NotContains(t, body, "hedges took")
			}
		})
	}
}
