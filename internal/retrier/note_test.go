package retrier

import (
	"context"
	"testing"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// TestBudgetRefundsRetriesThatWork: a retry that succeeds is refunded, so
// a budget binds only on retries that fail: a callee whose failures are
// independent (one bad instance of several, each retry reaching a good
// one) has every failure retried, and a callee failing every call still
// gets at most 1 + ratio of its calls.
func TestBudgetRefundsRetriesThatWork(t *testing.T) {
	tests := []struct {
		name         string
		give         []step // every call's script
		giveMode     retry.Mode
		wantRetries  int64
		wantCounters map[string]int64
	}{
		{
			// With no floor, the first 9 calls' window allows less than
			// one retry: those are cut; refunds keep every later one.
			name:        "retries succeed: none cut once the window allows one",
			give:        []step{fail(errUnavailable), okWith()},
			wantRetries: 91,
		},
		{
			name:        "retries fail: 10% of the calls",
			give:        []step{fail(errUnavailable)},
			wantRetries: 10,
		},
		{
			name:        "observe mode, retries fail: every one sent, the rest counted",
			give:        []step{fail(errUnavailable)},
			giveMode:    retry.ModeObserve,
			wantRetries: 100,
			wantCounters: map[string]int64{
				"retry.would_budget+callee=callee":             90,
				"retry.would_suppress_succeeded+callee=callee": 0,
			},
		},
		{
			name:        "observe mode, retries succeed: only the first 9 would be refused, and are counted lost",
			give:        []step{fail(errUnavailable), okWith()},
			giveMode:    retry.ModeObserve,
			wantRetries: 100,
			wantCounters: map[string]int64{
				"retry.would_budget+callee=callee":             9,
				"retry.would_suppress_succeeded+callee=callee": 9,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scope := tally.NewTestScope("", nil)
			cfg := retry.Config{
				Mode:     tt.giveMode,
				Budget:   retry.BudgetConfig{Ratio: 0.1, NoFloor: true},
				Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}},
			}
			m := newMiddleware(t, cfg, newClock().option(), WithSinks(obs.Sinks{Scope: scope}))
			for range 100 {
				var state CallState
				_, _ = m.Call(WithCallState(context.Background(), &state), req("callee", "get", "x"), newOutbound(tt.give...))
			}
			got := counters(scope)
			assert.Equal(t, tt.wantRetries, got["retry.attempts+callee=callee"], "retries sent: %v", got)
			for k, v := range tt.wantCounters {
				assert.Equal(t, v, got[k], k)
			}
		})
	}
}

// TestObserveCountsWhatEnforceWouldLose: in observe mode, a call kept
// alive by a retry enforce mode would have refused (here the budget's)
// is counted in retry.would_suppress_succeeded.
func TestObserveCountsWhatEnforceWouldLose(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	cfg := retry.Config{
		Mode:     retry.ModeObserve,
		Budget:   retry.BudgetConfig{Ratio: 0.1, NoFloor: true},
		Policies: []retry.PolicyConfig{{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}},
	}
	m := newMiddleware(t, cfg, newClock().option(), WithSinks(obs.Sinks{Scope: scope}))
	// Each call: two failures, then a success; the first retry fails (not
	// refunded), so the budget runs dry and enforce would refuse.
	for range 20 {
		var state CallState
		_, err := m.Call(WithCallState(context.Background(), &state), req("callee", "get", "x"),
			newOutbound(fail(errUnavailable), fail(errUnavailable), okWith()))
		assert.NoError(t, err, "observe mode sends every retry the policy asks for")
	}
	got := counters(scope)
	assert.Equal(t, int64(40), got["retry.attempts+callee=callee"])
	// 20 calls allow 2 failed retries of the 40 asked for.
	assert.Equal(t, int64(38), got["retry.would_budget+callee=callee"], "%v", got)
	assert.Equal(t, int64(20), got["retry.would_suppress_succeeded+callee=callee"], "every call had a retry enforce would have refused, and succeeded: %v", got)
}

// TestBudgetKeepsRetriesTheirCallerCancelled: a retry whose caller gave
// up on it (a hedger above cancels this hop's call once another attempt
// wins) ends with an answer, cancelled, not a failure; it is no retry
// that worked and may well have reached the callee, so its withdrawal is
// not refunded: a callee failing every call still gets at most 1 + ratio
// of its calls. (Before, it was refunded as a success: every call from
// the tenth on had its retry, 91 in 100.)
func TestBudgetKeepsRetriesTheirCallerCancelled(t *testing.T) {
	for _, mode := range []retry.Mode{retry.ModeEnforce, retry.ModeObserve} {
		t.Run(string(mode), func(t *testing.T) {
			scope := tally.NewTestScope("", nil)
			cfg := retry.Config{
				Mode:     mode,
				Budget:   retry.BudgetConfig{Ratio: 0.1, NoFloor: true},
				Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}},
			}
			m := newMiddleware(t, cfg, newClock().option(), WithSinks(obs.Sinks{Scope: scope}))
			var reached int
			for range 100 {
				ctx, cancel := context.WithCancel(context.Background())
				var state CallState
				// The retry reaches the callee, then its caller cancels
				// the call and the transport fails it so.
				abandon := func(context.Context, *transport.Request) (*transport.Response, error) {
					reached++
					cancel()
					return nil, yarpcerrors.CancelledErrorf("call cancelled by its caller")
				}
				_, err := m.Call(WithCallState(ctx, &state), req("callee", "get", "x"), newOutbound(fail(errUnavailable), abandon))
				cancel()
				assert.Error(t, err)
			}
			got := counters(scope)
			want := int64(10)
			if mode == retry.ModeObserve {
				want = 100 // observe mode sends every retry; the budget counts them all
				assert.Equal(t, int64(90), got["retry.would_budget+callee=callee"], "%v", got)
				assert.Zero(t, got["retry.would_suppress_succeeded+callee=callee"], "no cancelled call was kept alive: %v", got)
			}
			assert.Equal(t, want, got["retry.attempts+callee=callee"], "retries sent: %v", got)
			assert.Equal(t, int(want), reached, "retries that reached the callee")
		})
	}
}
