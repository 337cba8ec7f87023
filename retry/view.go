package retry

import (
	"time"
)

// BudgetView is one callee's retry budget as it stands, for operators.
type BudgetView struct {
	// Callee is the callee service the budget is kept for.
	Callee string `json:"callee"`
	// Disabled budgets allow every retry a policy wants.
	Disabled bool `json:"disabled"`
	// Requests and Retries are the original requests and the retries
	// counted in the current window.
	Requests int64 `json:"requests"`
	Retries  int64 `json:"retries"`
	// Allowed is how many retries the window allows:
	// Ratio × Requests + MinPerSecond × Window.
	Allowed      float64       `json:"allowed"`
	Ratio        float64       `json:"ratio"`
	MinPerSecond float64       `json:"minPerSecond"`
	Window       time.Duration `json:"window"`
}
