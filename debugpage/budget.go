package debugpage

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/errown/errown/retry"
)

// Budget is one callee's retry budget as the page shows it: a
// retry.BudgetView whose JSON is written for people and scripts alike. The
// window is a Go duration string ("10s"), and a disabled budget, which
// counts nothing and allows every retry a policy wants, is
// {"callee": "...", "disabled": true}, with no ratio, floor, window or
// counts that would read as limits.
type Budget retry.BudgetView

// budgetJSON is a Budget in JSON: the view's own fields and tags, its
// window as a duration string.
type budgetJSON struct {
	retry.BudgetView
	Window string `json:"window"`
}

// disabledBudgetJSON is a disabled Budget in JSON.
type disabledBudgetJSON struct {
	Callee   string `json:"callee"`
	Disabled bool   `json:"disabled"`
}

// MarshalJSON writes b with its window as a duration string, or, when b
// is disabled, only its callee and "disabled": true.
func (b Budget) MarshalJSON() ([]byte, error) {
	if b.Disabled {
		return json.Marshal(disabledBudgetJSON{Callee: b.Callee, Disabled: true})
	}
	return json.Marshal(budgetJSON{BudgetView: retry.BudgetView(b), Window: b.Window.String()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Budget) UnmarshalJSON(data []byte) error {
	var j budgetJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	if j.Disabled {
		*b = Budget{Callee: j.Callee, Disabled: true}
		return nil
	}
	window, err := time.ParseDuration(j.Window)
	if err != nil {
		return fmt.Errorf("budget %q: window: %w", j.Callee, err)
	}
	j.BudgetView.Window = window
	*b = Budget(j.BudgetView)
	return nil
}

// budgetsOf returns the page's view of views, never nil.
func budgetsOf(views []retry.BudgetView) []Budget {
	out := make([]Budget, 0, len(views))
	for _, v := range views {
		out = append(out, Budget(v))
	}
	return out
}

// heldBackWorking reports whether budget b refused retries in its
// window while the callee's retries were working: at least as many of
// them succeeded as failed. The budget bounds the retries that fail, so
// a refusal then means the failures are independent and the budget is
// too small for them.
func heldBackWorking(b Budget) bool {
	return !b.Disabled && b.Refused > 0 && b.Succeeded > 0 && b.Succeeded >= b.Retries
}
