package debugpage

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/errown/errown/retry"
)

// Budget is one callee's retry budget as the page shows it, from
// retry.BudgetView. Its JSON is written for people and scripts alike: the
// window is a Go duration string ("10s"), and a disabled budget, which
// counts nothing and allows every retry a policy wants, is
// {"callee": "...", "disabled": true}, with no ratio, floor, window or
// counts that would read as limits.
type Budget struct {
	// Callee is the callee service the budget is kept for.
	Callee string
	// Disabled budgets allow every retry a policy wants.
	Disabled bool
	// Requests and Retries are the original requests and the retries
	// counted in the current window.
	Requests int64
	Retries  int64
	// Allowed is how many retries the window allows:
	// Ratio × Requests + MinPerSecond × Window.
	Allowed      float64
	Ratio        float64
	MinPerSecond float64
	Window       time.Duration
}

// budgetJSON is a Budget in JSON. A disabled budget has only its first
// two fields (disabledBudgetJSON).
type budgetJSON struct {
	Callee       string  `json:"callee"`
	Disabled     bool    `json:"disabled"`
	Requests     int64   `json:"requests"`
	Retries      int64   `json:"retries"`
	Allowed      float64 `json:"allowed"`
	Ratio        float64 `json:"ratio"`
	MinPerSecond float64 `json:"minPerSecond"`
	Window       string  `json:"window"`
}

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
	return json.Marshal(budgetJSON{
		Callee:       b.Callee,
		Requests:     b.Requests,
		Retries:      b.Retries,
		Allowed:      b.Allowed,
		Ratio:        b.Ratio,
		MinPerSecond: b.MinPerSecond,
		Window:       b.Window.String(),
	})
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
	*b = Budget{
		Callee:       j.Callee,
		Requests:     j.Requests,
		Retries:      j.Retries,
		Allowed:      j.Allowed,
		Ratio:        j.Ratio,
		MinPerSecond: j.MinPerSecond,
		Window:       window,
	}
	return nil
}

// budgetsOf returns the page's view of views, never nil.
func budgetsOf(views []retry.BudgetView) []Budget {
	out := make([]Budget, 0, len(views))
	for _, v := range views {
		out = append(out, Budget{
			Callee:       v.Callee,
			Disabled:     v.Disabled,
			Requests:     v.Requests,
			Retries:      v.Retries,
			Allowed:      v.Allowed,
			Ratio:        v.Ratio,
			MinPerSecond: v.MinPerSecond,
			Window:       v.Window,
		})
	}
	return out
}
