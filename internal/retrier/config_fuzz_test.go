package retrier

import (
	"testing"

	"github.com/errown/errown/retry"
	"gopkg.in/yaml.v2"
)

func FuzzConfig(f *testing.F) {
	f.Add("policies: [{service: s, maxAttempts: 3, idempotent: true}]")
	f.Add("budget: {ratio: 0.1, noFloor: true}\npolicies: [{service: s, idempotent: false}]")
	f.Add("budget: {minPerSecond: 5, noFloor: true}\npolicies: [{service: s}]")
	f.Add("budget: {ratio: -1, window: -1s}\npolicies: [{service: '', retryableCodes: [ok, x]}]")
	f.Add("attemptHeader: Bad Header")
	f.Fuzz(func(t *testing.T, give string) {
		var cfg retry.Config
		if yaml.Unmarshal([]byte(give), &cfg) != nil {
			return
		}
		// Never panics; exactly one of a middleware and an error.
		m, err := New(cfg)
		if (m == nil) == (err == nil) {
			t.Fatalf("New = %v, %v; want exactly one", m, err)
		}
		if err != nil {
			return
		}
		// What is accepted is within the documented bounds.
		d := cfg.WithDefaults()
		if !(d.Budget.Ratio >= 0 && d.Budget.Ratio <= retry.MaxBudgetRatio) || !(d.Budget.MinPerSecond >= 0) || (d.Budget.NoFloor && d.Budget.MinPerSecond != 0) || d.Budget.Window <= 0 {
			t.Fatalf("accepted budget %+v", d.Budget)
		}
		for _, p := range d.Policies {
			if p.MaxAttempts < 1 || p.MaxAttempts > retry.MaxMaxAttempts || p.Service == "" || p.Idempotent == nil ||
				p.InitialBackoff < 0 || p.MaxBackoff < p.InitialBackoff || p.AttemptTimeout < 0 || p.MinRemaining < 0 {
				t.Fatalf("accepted policy %+v", p)
			}
		}
	})
}
