package retrier

import (
	"testing"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/uber-go/tally/v4"
)

func TestMetrics(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMetrics(scope, "users")

	m.calls.Inc(1)
	m.attempts.Inc(2)
	m.suppressed.Inc(3)
	m.denied[wire.RefusedBudget].Inc(5)
	m.denied[wire.RefusedDeadline].Inc(6)
	m.denied[wire.RefusedPushback].Inc(7)
	m.denied[wire.RefusedNotIdempotent].Inc(8)
	m.denied[wire.RefusedCode].Inc(9)
	m.denied[wire.RefusedBodyTooLarge].Inc(4)

	want := map[string]int64{
		"retry.calls+callee=users":                        1,
		"retry.attempts+callee=users":                     2,
		"retry.suppressed+callee=users":                   3,
		"retry.denied+callee=users,reason=budget":         5,
		"retry.denied+callee=users,reason=deadline":       6,
		"retry.denied+callee=users,reason=pushback":       7,
		"retry.denied+callee=users,reason=not-idempotent": 8,
		"retry.denied+callee=users,reason=code":           9,
		"retry.denied+callee=users,reason=body-too-large": 4,
	}
	assert.Equal(t, want, counters(scope), "counters")
}

func TestMetricsAllocatedInNew(t *testing.T) {
	scope := tally.NewTestScope("", nil)

	newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "a", Idempotent: new(true)}, {Service: "a", Procedure: "p", Idempotent: new(true)}, {Service: "b", Idempotent: new(true)}}}, WithSinks(obs.Sinks{Scope: scope}))

	got := make(map[string]bool)
	for k := range scope.Snapshot().Counters() {
		got[k] = true
	}
	want := map[string]bool{}
	for _, callee := range []string{"a", "b"} {
		for _, name := range []string{"retry.calls", "retry.attempts", "retry.suppressed", "retry.would_suppress", "retry.prevented", "retry.foreign_attempts", "retry.would_overload", "retry.late_attempts", "retry.would_budget", "retry.would_suppress_succeeded"} {
			want[name+"+callee="+callee] = true
		}
		for _, reason := range []string{"budget", "deadline", "pushback", "not-idempotent", "code", "body-too-large", "overload",
			"foreign-unclaimed", "foreign-attempts", "foreign-budget", "foreign-deadline", "foreign-pushback", "foreign-code", "foreign-not-idempotent", "foreign-overload"} {
			want["retry.denied+callee="+callee+",reason="+reason] = true
		}
		for _, reason := range []string{"budget", "attempts"} {
			want["retry.starved_by_hedges+callee="+callee+",reason="+reason] = true
		}
	}
	assert.Equal(t, keys(want), keys(got), "counters registered")
	assert.Equal(t, want, got, "counters registered")
}
