package retrier

import (
	"testing"
	"time"

	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/require"
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
		require.True(t, (m == nil) != (err == nil), "New = %v, %v; want exactly one", m, err)
		if err != nil {
			return
		}
		// What is accepted is within the documented bounds.
		d := withDefaults(cfg)
		// Comparisons written out, not GreaterOrEqual: NaN must fail them.
		require.True(t, d.Budget.Ratio >= 0 && d.Budget.Ratio <= 1000, "accepted budget %+v: ratio", d.Budget)
		require.True(t, d.Budget.MinPerSecond >= 0, "accepted budget %+v: minPerSecond", d.Budget)
		require.False(t, d.Budget.NoFloor && d.Budget.MinPerSecond != 0, "accepted budget %+v: a floor with noFloor", d.Budget)
		require.Positive(t, d.Budget.Window, "accepted budget %+v: window", d.Budget)
		for _, p := range d.Policies {
			require.GreaterOrEqual(t, p.MaxAttempts, 1, "accepted policy %+v: maxAttempts", p)
			require.LessOrEqual(t, p.MaxAttempts, 10, "accepted policy %+v: maxAttempts", p)
			require.NotEmpty(t, p.Service, "accepted policy %+v: service", p)
			require.NotNil(t, p.Idempotent, "accepted policy %+v: idempotent", p)
			require.GreaterOrEqual(t, p.InitialBackoff, time.Duration(0), "accepted policy %+v: initialBackoff", p)
			require.GreaterOrEqual(t, p.MaxBackoff, p.InitialBackoff, "accepted policy %+v: maxBackoff", p)
			require.GreaterOrEqual(t, p.AttemptTimeout, time.Duration(0), "accepted policy %+v: attemptTimeout", p)
			require.GreaterOrEqual(t, p.MinRemaining, time.Duration(0), "accepted policy %+v: minRemaining", p)
		}
	})
}
