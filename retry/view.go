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
	// counted in the current window: the retries that did not succeed,
	// since one that succeeds is refunded.
	Requests int64 `json:"requests"`
	Retries  int64 `json:"retries"`
	// Hedges is the part of Retries that hedges withdrew: attempts an
	// application's middleware sent while another attempt of the same
	// call was under way, whose calls have not succeeded (a call that
	// succeeds gives its hedges back). Hedges may take at most half of
	// Allowed; the rest is the retries' of failures.
	Hedges int64 `json:"hedges,omitempty"`
	// Succeeded is the retries in the window that succeeded (refunded),
	// Refused the retries the budget had no room for (in observe mode,
	// would have had none: they were sent). Refusals while retries
	// succeed are retries the budget held back that were working.
	Succeeded int64 `json:"succeeded"`
	Refused   int64 `json:"refused"`
	// StarvedByHedges is the part of Refused that hedges starved: retries
	// the window would have had room for without the hedges' withdrawals
	// (retry.starved_by_hedges, reason budget).
	StarvedByHedges int64 `json:"starvedByHedges,omitempty"`
	// Allowed is how many retries the window allows:
	// Ratio × Requests + MinPerSecond × Window.
	Allowed      float64       `json:"allowed"`
	Ratio        float64       `json:"ratio"`
	MinPerSecond float64       `json:"minPerSecond"`
	Window       time.Duration `json:"window"`
}

// InstanceView is one instance (peer) of a callee that failed calls
// another instance of the same callee then served, as errown's retry
// middleware saw it through a peer chooser that records each attempt's
// peer (package retrypeer), for operators: where a partial failure is.
type InstanceView struct {
	// Callee is the callee service, Peer the instance's identifier as
	// its peer list names it (an address, say).
	Callee string `json:"callee"`
	Peer   string `json:"peer"`
	// Failed is how many calls the instance failed (or answered later
	// than a hedge) that another instance then served, since it was
	// first listed.
	Failed int64 `json:"failed"`
	// Last is when it last did.
	Last time.Time `json:"last"`
}
