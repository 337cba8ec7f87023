package retrier

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// okWith answers with a success carrying headers, given as key, value
// pairs.
func okWith(headers ...string) step {
	return func(context.Context, *transport.Request) (*transport.Response, error) {
		h := transport.NewHeaders()
		for i := 0; i+1 < len(headers); i += 2 {
			h = h.With(headers[i], headers[i+1])
		}
		return &transport.Response{Headers: h}, nil
	}
}

const (
	_calls      = "retry.calls+callee=callee"
	_attempts   = "retry.attempts+callee=callee"
	_suppressed = "retry.suppressed+callee=callee"
	_would      = "retry.would_suppress+callee=callee"
	_wouldOK    = "retry.would_suppress_succeeded+callee=callee"
	_wouldBudg  = "retry.would_budget+callee=callee"
	_prevented  = "retry.prevented+callee=callee"
	_budget     = "retry.denied+callee=callee,reason=budget"
	_pushback   = "retry.denied+callee=callee,reason=pushback"
)

// Storm headers of the callee in these tests.
const (
	_four      = "4,4,0,0,0"  // a subtree of 4, quiet
	_nine      = "9,9,1,1,1"  // a subtree of 9 that retried once below
	_suppress  = "9,18,1,1,2" // a subtree of 9 whose hop suppressed a retry of 9
	_claimed   = "claimed"
	_unclaimed = "unclaimed"
)

// stormCase is one call through the retry middleware and what its
// StormCall and metrics must say after.
type stormCase struct {
	name          string
	give          retry.Config
	giveBody      string // default "hello"
	script        []step
	wantSent      int
	wantCode      yarpcerrors.Code
	want          wire.Storm
	wantOK        bool
	wantPrevented uint64
	wantStopped   bool
	wantCounters  map[string]int64
}

// run makes the call of tc, through a context CallState and through a
// Sink, and checks both.
func (tc stormCase) run(t *testing.T) {
	t.Helper()
	for _, viaSink := range []bool{false, true} {
		clock := newClock()
		scope := tally.NewTestScope("", nil)
		m := newMiddleware(t, tc.give, clock.option(), fixedRand(0.5), WithSinks(obs.Sinks{Scope: scope}))
		out := newOutbound(tc.script...)
		body := tc.giveBody
		if body == "" {
			body = "hello"
		}
		r := req("callee", "get", body)
		ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Minute))
		var res *transport.Response
		var err error
		var state *CallState
		if viaSink {
			sink := &Sink{Out: out}
			res, err = m.Call(ctx, r, sink)
			state = &sink.State
		} else {
			state = &CallState{}
			res, err = m.Call(WithCallState(ctx, state), r, out)
		}
		cancel()
		code, _ := wire.CallResult(res, err, "errown-code")
		assert.Equal(t, tc.wantCode, code, "sink %v: the last attempt's answer", viaSink)
		assert.Len(t, out.Requests(), tc.wantSent, "sink %v: attempts sent", viaSink)
		assert.Equal(t, tc.wantSent, state.Attempts, "sink %v", viaSink)
		assert.Equal(t, tc.wantSent, state.Storm.Attempts(), "sink %v: every attempt folded", viaSink)
		got := state.Storm.Storm()
		assert.Equal(t, tc.wantOK, got.Known, "sink %v: %+v", viaSink, got)
		assert.Equal(t, tc.want, got.Storm, "sink %v", viaSink)
		assert.Equal(t, tc.wantPrevented, state.Storm.Prevented(), "sink %v", viaSink)
		assert.Equal(t, tc.wantStopped, state.Storm.ErrownStopped(), "sink %v", viaSink)
		assert.Equal(t, tc.wantCounters, counters(scope), "sink %v", viaSink)
	}
}

func TestStormEnforce(t *testing.T) {
	idem := func(p retry.PolicyConfig) retry.Config {
		p.Service = "callee"
		if p.Idempotent == nil {
			p.Idempotent = new(true)
		}
		return retry.Config{Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{p}}
	}
	tests := []stormCase{
		{
			name:         "a success without a storm: one",
			give:         idem(retry.PolicyConfig{}),
			script:       []step{okWith()},
			wantSent:     1,
			want:         wire.One,
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1},
		},
		{
			name:         "claimed, retried, a leaf success",
			give:         idem(retry.PolicyConfig{}),
			script:       []step{fail(errUnavailable, "errown-claim", _claimed, "errown-storm", _four), okWith()},
			wantSent:     2,
			want:         wire.Storm{Served: 5, Blind: 5, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1, _attempts: 1},
		},
		{
			name:          "unclaimed at once: suppressed, two blind retries replay it",
			give:          idem(retry.PolicyConfig{MaxAttempts: 3}),
			script:        []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)},
			wantSent:      1,
			wantCode:      yarpcerrors.CodeUnavailable,
			want:          wire.Storm{Served: 9, Blind: 27, Retries: 1, Radius: 1, BlindRadius: 2},
			wantOK:        true,
			wantPrevented: 18,
			wantCounters:  map[string]int64{_calls: 1, _suppressed: 1, _prevented: 18},
		},
		{
			name: "claimed, then unclaimed: suppressed, one blind retry left",
			give: idem(retry.PolicyConfig{MaxAttempts: 3}),
			script: []step{
				fail(errUnavailable, "errown-claim", _claimed, "errown-storm", _four),
				fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _suppress),
			},
			wantSent:      2,
			wantCode:      yarpcerrors.CodeUnavailable,
			want:          wire.Storm{Served: 13, Blind: 40, Retries: 2, Radius: 2, BlindRadius: 3},
			wantOK:        true,
			wantPrevented: 18,
			wantCounters:  map[string]int64{_calls: 1, _attempts: 1, _suppressed: 1, _prevented: 18},
		},
		{
			name: "unclaimed on the last attempt: suppressed, no blind retry left",
			give: idem(retry.PolicyConfig{MaxAttempts: 2}),
			script: []step{
				fail(errUnavailable, "errown-claim", _claimed, "errown-storm", _four),
				fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine),
			},
			wantSent:     2,
			wantCode:     yarpcerrors.CodeUnavailable,
			want:         wire.Storm{Served: 13, Blind: 13, Retries: 2, Radius: 2, BlindRadius: 2},
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1, _attempts: 1, _suppressed: 1},
		},
		{
			name:         "unclaimed with pushback: a blind hop would not retry either",
			give:         idem(retry.PolicyConfig{MaxAttempts: 3}),
			script:       []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-no-retry", "true", "errown-storm", _nine)},
			wantSent:     1,
			wantCode:     yarpcerrors.CodeUnavailable,
			want:         wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1, _suppressed: 1},
		},
		{
			name:         "unclaimed, not idempotent: no blind retry",
			give:         idem(retry.PolicyConfig{MaxAttempts: 3, Idempotent: new(false)}),
			script:       []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)},
			wantSent:     1,
			wantCode:     yarpcerrors.CodeUnavailable,
			want:         wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1, _suppressed: 1},
		},
		{
			name:         "unclaimed, a code the policy does not retry: no blind retry",
			give:         idem(retry.PolicyConfig{MaxAttempts: 3, RetryableCodes: []string{"resource-exhausted"}}),
			script:       []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)},
			wantSent:     1,
			wantCode:     yarpcerrors.CodeUnavailable,
			want:         wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1, _suppressed: 1},
		},
		{
			name: "unclaimed, a body too large to replay: no blind retry",
			give: func() retry.Config {
				c := idem(retry.PolicyConfig{MaxAttempts: 3})
				c.MaxBodyBytes = 4
				return c
			}(),
			giveBody:     "hello world",
			script:       []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)},
			wantSent:     1,
			wantCode:     yarpcerrors.CodeUnavailable,
			want:         wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1, _suppressed: 1},
		},
		{
			name:         "unclaimed but no failure by nature: an answer, nothing suppressed",
			give:         idem(retry.PolicyConfig{MaxAttempts: 3}),
			script:       []step{fail(errInvalid, "errown-claim", _unclaimed, "errown-storm", _nine)},
			wantSent:     1,
			wantCode:     yarpcerrors.CodeInvalidArgument,
			want:         wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1},
		},
		{
			name:         "unclaimed without a storm: unknown, nothing counted as prevented",
			give:         idem(retry.PolicyConfig{MaxAttempts: 3}),
			script:       []step{fail(errUnavailable, "errown-claim", _unclaimed)},
			wantSent:     1,
			wantCode:     yarpcerrors.CodeUnavailable,
			wantCounters: map[string]int64{_calls: 1, _suppressed: 1},
		},
		{
			name: "a failure without a storm, then a success: unknown",
			give: idem(retry.PolicyConfig{}),
			script: []step{
				fail(errUnavailable),
				okWith("errown-storm", _four),
			},
			wantSent:     2,
			wantCounters: map[string]int64{_calls: 1, _attempts: 1},
		},
		{
			name: "a garbled storm: unknown",
			give: idem(retry.PolicyConfig{}),
			script: []step{
				okWith("errown-storm", "4,4"),
			},
			wantSent:     1,
			wantCounters: map[string]int64{_calls: 1},
		},
		{
			name: "a tiny budget: the blind twin refuses as the real one would",
			give: retry.Config{
				Budget:   retry.BudgetConfig{Ratio: 0.1, NoFloor: true},
				Policies: []retry.PolicyConfig{{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}},
			},
			script:       []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)},
			wantSent:     1,
			wantCode:     yarpcerrors.CodeUnavailable,
			want:         wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1, _suppressed: 1},
		},
		{
			name: "a budget with room: the blind twin grants every retry the policy would make",
			give: retry.Config{
				Budget:   retry.BudgetConfig{Ratio: 2, NoFloor: true},
				Policies: []retry.PolicyConfig{{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}},
			},
			script:        []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)},
			wantSent:      1,
			wantCode:      yarpcerrors.CodeUnavailable,
			want:          wire.Storm{Served: 9, Blind: 27, Retries: 1, Radius: 1, BlindRadius: 2},
			wantOK:        true,
			wantPrevented: 18,
			wantCounters:  map[string]int64{_calls: 1, _suppressed: 1, _prevented: 18},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestStormObserve(t *testing.T) {
	observe := func(p retry.PolicyConfig) retry.Config {
		p.Service = "callee"
		p.Idempotent = new(true)
		return retry.Config{Mode: retry.ModeObserve, Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{p}}
	}
	tests := []stormCase{
		{
			name:          "unclaimed every time: retried up to maxAttempts, would_suppress counted once",
			give:          observe(retry.PolicyConfig{MaxAttempts: 3}),
			script:        []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)},
			wantSent:      3,
			wantCode:      yarpcerrors.CodeUnavailable,
			want:          wire.Storm{Served: 9, Blind: 27, Retries: 1, Radius: 1, BlindRadius: 2},
			wantOK:        true,
			wantPrevented: 18,
			wantStopped:   true,
			wantCounters:  map[string]int64{_calls: 1, _attempts: 2, _would: 1, _prevented: 18},
		},
		{
			name: "unclaimed, then a success: the retry is in the blind world only",
			give: observe(retry.PolicyConfig{MaxAttempts: 3}),
			script: []step{
				fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine),
				okWith("errown-storm", "3,3,0,0,0"),
			},
			wantSent:      2,
			want:          wire.Storm{Served: 9, Blind: 12, Retries: 1, Radius: 1, BlindRadius: 2},
			wantOK:        true,
			wantPrevented: 3,
			wantStopped:   true,
			wantCounters:  map[string]int64{_calls: 1, _attempts: 1, _would: 1, _wouldOK: 1, _prevented: 3},
		},
		{
			name: "claimed, then unclaimed twice: errown would have made two attempts",
			give: observe(retry.PolicyConfig{MaxAttempts: 3}),
			script: []step{
				fail(errUnavailable, "errown-claim", _claimed, "errown-storm", _four),
				fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine),
			},
			wantSent:      3,
			wantCode:      yarpcerrors.CodeUnavailable,
			want:          wire.Storm{Served: 13, Blind: 22, Retries: 2, Radius: 2, BlindRadius: 2},
			wantOK:        true,
			wantPrevented: 9,
			wantStopped:   true,
			wantCounters:  map[string]int64{_calls: 1, _attempts: 2, _would: 1, _prevented: 9},
		},
		{
			name: "unclaimed on the last attempt: would suppress, nothing to prevent",
			give: observe(retry.PolicyConfig{MaxAttempts: 2}),
			script: []step{
				fail(errUnavailable, "errown-claim", _claimed, "errown-storm", _four),
				fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine),
			},
			wantSent:     2,
			wantCode:     yarpcerrors.CodeUnavailable,
			want:         wire.Storm{Served: 13, Blind: 13, Retries: 2, Radius: 2, BlindRadius: 2},
			wantOK:       true,
			wantStopped:  true,
			wantCounters: map[string]int64{_calls: 1, _attempts: 1, _would: 1},
		},
		{
			name:         "claimed only: as enforce",
			give:         observe(retry.PolicyConfig{}),
			script:       []step{fail(errUnavailable, "errown-claim", _claimed, "errown-storm", _four), okWith()},
			wantSent:     2,
			want:         wire.Storm{Served: 5, Blind: 5, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantCounters: map[string]int64{_calls: 1, _attempts: 1},
		},
		{
			name:         "unclaimed with pushback: would suppress, the pushback refuses",
			give:         observe(retry.PolicyConfig{MaxAttempts: 3}),
			script:       []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-no-retry", "true", "errown-storm", _nine)},
			wantSent:     1,
			wantCode:     yarpcerrors.CodeUnavailable,
			want:         wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantStopped:  true,
			wantCounters: map[string]int64{_calls: 1, _would: 1, _pushback: 1},
		},
		{
			// Observe mode changes nothing a team had: the budget refuses
			// no retry, and counts the ones enforce mode would refuse.
			name: "unclaimed, the budget would refuse the retries: sent, counted",
			give: retry.Config{
				Mode:     retry.ModeObserve,
				Budget:   retry.BudgetConfig{Ratio: 0.1, NoFloor: true},
				Policies: []retry.PolicyConfig{{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}},
			},
			script:        []step{fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)},
			wantSent:      3,
			wantCode:      yarpcerrors.CodeUnavailable,
			want:          wire.Storm{Served: 9, Blind: 27, Retries: 1, Radius: 1, BlindRadius: 2},
			wantOK:        true,
			wantPrevented: 18,
			wantStopped:   true,
			wantCounters:  map[string]int64{_calls: 1, _attempts: 2, _would: 1, _wouldBudg: 2, _prevented: 18},
		},
		{
			name: "an unknown retry: unknown, nothing counted as prevented",
			give: observe(retry.PolicyConfig{MaxAttempts: 3}),
			script: []step{
				fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine),
				fail(errUnavailable),
				okWith(),
			},
			wantSent:     3,
			wantStopped:  true,
			wantCounters: map[string]int64{_calls: 1, _attempts: 2, _would: 1, _wouldOK: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// TestStormModeEquivalence: the same callee answers give the same Storm
// in both modes: in enforce mode the blind retries replay the suppressed
// attempt; in observe mode they are made and answer the same.
func TestStormModeEquivalence(t *testing.T) {
	script := []step{
		fail(errUnavailable, "errown-claim", _claimed, "errown-storm", _four),
		fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _suppress),
	}
	var storms [2]wire.Storm
	var prevented [2]uint64
	for i, mode := range []retry.Mode{retry.ModeEnforce, retry.ModeObserve} {
		m := newMiddleware(t, retry.Config{Mode: mode, Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{{Service: "callee", MaxAttempts: 4, Idempotent: new(true)}}}, newClock().option(), fixedRand(0.5))
		sink := &Sink{Out: newOutbound(script...)}
		_, _ = m.Call(context.Background(), req("callee", "get", "x"), sink)
		s := sink.State.Storm.Storm()
		require.True(t, s.Known, "%s", mode)
		storms[i], prevented[i] = s.Storm, sink.State.Storm.Prevented()
	}
	assert.Equal(t, storms[0], storms[1])
	assert.Equal(t, prevented[0], prevented[1])
	assert.Equal(t, wire.Storm{Served: 13, Blind: 58, Retries: 2, Radius: 2, BlindRadius: 3}, storms[0])
	assert.Equal(t, uint64(36), prevented[0])
}

func TestStormPolicyMode(t *testing.T) {
	unclaimed := fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)
	tests := []struct {
		name         string
		give         retry.Config
		procedure    string
		wantSent     int
		wantCounters map[string]int64
	}{
		{
			name:         "service observe, policy enforce: suppressed",
			give:         retry.Config{Mode: retry.ModeObserve, Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{{Service: "callee", Mode: retry.ModeEnforce, Idempotent: new(true)}}},
			procedure:    "get",
			wantSent:     1,
			wantCounters: map[string]int64{_calls: 1, _suppressed: 1, _prevented: 9},
		},
		{
			name:         "service enforce, policy observe: retried",
			give:         retry.Config{Mode: retry.ModeEnforce, Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{{Service: "callee", Mode: retry.ModeObserve, Idempotent: new(true)}}},
			procedure:    "get",
			wantSent:     2,
			wantCounters: map[string]int64{_calls: 1, _attempts: 1, _would: 1, _prevented: 9},
		},
		{
			name:         "default mode, policy observe: retried",
			give:         retry.Config{Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{{Service: "callee", Mode: retry.ModeObserve, Idempotent: new(true)}}},
			procedure:    "get",
			wantSent:     2,
			wantCounters: map[string]int64{_calls: 1, _attempts: 1, _would: 1, _prevented: 9},
		},
		{
			name:         "service observe, policy without a mode: observe",
			give:         retry.Config{Mode: retry.ModeObserve, Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}},
			procedure:    "get",
			wantSent:     2,
			wantCounters: map[string]int64{_calls: 1, _attempts: 1, _would: 1, _prevented: 9},
		},
		{
			name: "service-wide observe, a procedure's enforce: that procedure suppresses",
			give: retry.Config{Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{
				{Service: "callee", Mode: retry.ModeObserve, Idempotent: new(true)},
				{Service: "callee", Procedure: "put", Mode: retry.ModeEnforce, Idempotent: new(true)},
			}},
			procedure:    "put",
			wantSent:     1,
			wantCounters: map[string]int64{_calls: 1, _suppressed: 1, _prevented: 9},
		},
		{
			name: "service-wide observe, a procedure's enforce: the others observe",
			give: retry.Config{Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{
				{Service: "callee", Mode: retry.ModeObserve, Idempotent: new(true)},
				{Service: "callee", Procedure: "put", Mode: retry.ModeEnforce, Idempotent: new(true)},
			}},
			procedure:    "get",
			wantSent:     2,
			wantCounters: map[string]int64{_calls: 1, _attempts: 1, _would: 1, _prevented: 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scope := tally.NewTestScope("", nil)
			m := newMiddleware(t, tt.give, newClock().option(), fixedRand(0.5), WithSinks(obs.Sinks{Scope: scope}))
			out := newOutbound(unclaimed)
			sink := &Sink{Out: out}
			_, err := m.Call(context.Background(), req("callee", tt.procedure, "x"), sink)
			require.Error(t, err)
			assert.Len(t, out.Requests(), tt.wantSent)
			assert.Equal(t, tt.wantCounters, counters(scope))
			assert.Equal(t, wire.KnownFigures(wire.Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}), sink.State.Storm.Storm(), "the same figures either way")
		})
	}
}

// TestStormBlindTwin: suppressed retries draw on the budget's blind twin,
// which also sees the real retries; the real budget never sees them.
func TestStormBlindTwin(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	cfg := retry.Config{
		Budget:   retry.BudgetConfig{Ratio: 1, NoFloor: true},
		Policies: []retry.PolicyConfig{{Service: "callee", MaxAttempts: 3, Idempotent: new(true)}},
	}
	m := newMiddleware(t, cfg, newClock().option(), fixedRand(0.5), WithSinks(obs.Sinks{Scope: scope}))
	unclaimed := fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine)
	claimed := fail(errUnavailable, "errown-claim", _claimed, "errown-storm", _four)

	// Call 1 (1 request, 1 retry allowed): suppressed; the twin grants
	// at least one blind retry of the two the policy would make.
	first := &Sink{Out: newOutbound(unclaimed)}
	_, _ = m.Call(context.Background(), req("callee", "get", "x"), first)
	prevented := first.State.Storm.Prevented()
	assert.Contains(t, []uint64{9, 18}, prevented, "one or two blind retries of 9")

	// Call 2 (2 requests, 2 retries allowed): both real retries granted,
	// as if the blind ones had never been. (They fail: a retry that
	// succeeds is refunded.)
	second := &Sink{Out: newOutbound(claimed, claimed, claimed)}
	_, err := m.Call(context.Background(), req("callee", "get", "x"), second)
	require.Error(t, err)
	assert.Equal(t, 3, second.State.Attempts, "the real budget does not count blind retries")

	// Call 3 (3 requests, 3 retries allowed): the twin has seen 2 real
	// retries and the blind ones: none left. (Without the real ones it
	// would have one or two.)
	third := &Sink{Out: newOutbound(unclaimed)}
	_, _ = m.Call(context.Background(), req("callee", "get", "x"), third)
	assert.Equal(t, wire.KnownFigures(wire.Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1}), third.State.Storm.Storm())
	assert.Equal(t, uint64(0), third.State.Storm.Prevented())

	assert.Equal(t, map[string]int64{_calls: 3, _attempts: 2, _suppressed: 2, _prevented: int64(prevented)}, counters(scope))
}

// TestStormPreventedSums: the prevented counter adds every call's own
// prevention.
func TestStormPreventedSums(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option(), fixedRand(0.5), WithSinks(obs.Sinks{Scope: scope}))
	for _, storm := range []string{_nine, _suppress, "1,1,0,0,0"} {
		_, _ = m.Call(context.Background(), req("callee", "get", "x"), &Sink{Out: newOutbound(fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", storm))})
	}
	want := map[string]int64{_calls: 3, _suppressed: 3, _prevented: 9 + 18 + 1}
	assert.Equal(t, want, counters(scope), "counters")
}

// TestStormNotFoldedWithoutRetries: a call no policy can retry is left to
// the egress middleware to fold.
func TestStormNotFoldedWithoutRetries(t *testing.T) {
	m := newMiddleware(t, policies(
		retry.PolicyConfig{Service: "callee", Idempotent: new(true)},
		retry.PolicyConfig{Service: "callee", Procedure: "once", MaxAttempts: 1, Idempotent: new(true)},
	), newClock().option())
	for _, r := range []*transport.Request{req("other", "get", "x"), req("callee", "once", "x")} {
		sink := &Sink{Out: newOutbound(fail(errUnavailable, "errown-claim", _unclaimed, "errown-storm", _nine))}
		_, err := m.Call(context.Background(), r, sink)
		require.Error(t, err)
		assert.Equal(t, 1, sink.State.Attempts, "%s.%s", r.Service, r.Procedure)
		assert.Equal(t, 0, sink.State.Storm.Attempts(), "%s.%s: nothing folded", r.Service, r.Procedure)
	}
}

func TestStormCustomHeader(t *testing.T) {
	m := newMiddleware(t, retry.Config{Headers: ownership.Headers{Storm: "x-storm"}, Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
	sink := &Sink{Out: newOutbound(okWith("x-storm", _four, "errown-storm", _nine))}
	_, err := m.Call(context.Background(), req("callee", "get", "x"), sink)
	require.NoError(t, err)
	assert.Equal(t, wire.KnownFigures(wire.Storm{Served: 4, Blind: 4}), sink.State.Storm.Storm())
}

func TestModeValidate(t *testing.T) {
	_, err := New(retry.Config{Mode: "loud"})
	assert.ErrorContains(t, err, `mode: must be "enforce" or "observe", got "loud"`)
	_, err = New(retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Mode: "Observe"}}})
	assert.ErrorContains(t, err, `policies[0].mode: must be "enforce" or "observe", got "Observe"`)
	for _, mode := range []retry.Mode{"", retry.ModeEnforce, retry.ModeObserve} {
		_, err := New(retry.Config{Mode: mode, Policies: []retry.PolicyConfig{{Service: "callee", Mode: mode, Idempotent: new(true)}}})
		assert.NoError(t, err, "%q", mode)
		assert.NoError(t, mode.Validate(), "%q", mode)
	}
	assert.EqualError(t, retry.Mode("loud").Validate(), `mode: must be "enforce" or "observe", got "loud"`)
}
