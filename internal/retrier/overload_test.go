package retrier

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// _proc is the callee procedure of the tests that drive an overload by
// hand.
const _proc = "get"

// still is a clock that does not move: no share decays with time.
func still() time.Duration { return 0 }

func newTestOverload() *overload {
	return newOverload(withDefaults(retry.Config{Overload: retry.OverloadConfig{}}).Overload, still)
}

func TestOverloadStaysOpenWithoutEvidence(t *testing.T) {
	o := newTestOverload()
	for range 1000 {
		round, ok := o.admit(_proc)
		require.True(t, ok, "an attempt was held back with no overload seen")
		o.done(round, false)
	}
	assert.Equal(t, float64(retry.DefaultConfig().Overload.MaxInFlight), o.Limit(), "limit")
	assert.False(t, o.Overloaded(_proc), "overloaded")
}

// TestOverloadCutsOncePerRound: a hundred attempts in flight all time
// out; once most recent attempts were overloaded (the 45th: a share of
// 1-(63/64)^45 ≥ 0.5) the limit is cut, once, to half the attempts then in
// flight (56: 28), however many of the same round time out after.
func TestOverloadCutsOncePerRound(t *testing.T) {
	o := newTestOverload()
	rounds := make([]admission, 100)
	for i := range rounds {
		var ok bool
		rounds[i], ok = o.admit(_proc)
		require.True(t, ok, "attempt %d held back", i)
	}
	for _, r := range rounds {
		o.done(r, true)
	}
	assert.Equal(t, 28.0, o.Limit(), "limit")
	assert.True(t, o.Overloaded(_proc), "not overloaded after a hundred timeouts")
	var admitted int
	for range 40 {
		if _, ok := o.admit(_proc); ok {
			admitted++
		}
	}
	assert.Equal(t, 28, admitted, "admitted under a limit of 28")
}

func TestOverloadNextRoundCutsAgainDownToTheFloor(t *testing.T) {
	o := newTestOverload()
	for range 200 {
		r1, _ := o.admit(_proc)
		r2, ok := o.admit(_proc)
		if !ok {
			// At the floor with one in flight: only r1 went.
			o.done(r1, true)
			continue
		}
		o.done(r1, true)
		o.done(r2, true)
	}
	assert.Equal(t, float64(retry.DefaultConfig().Overload.MinInFlight), o.Limit(), "limit after rounds of timeouts, want the floor")
}

// TestOverloadGrowsBack: once attempts succeed again the limit grows by
// 1/limit while the recent share is not nil, then by one per attempt.
func TestOverloadGrowsBack(t *testing.T) {
	o := newTestOverload()
	for range 100 {
		r, _ := o.admit(_proc)
		o.done(r, true)
	}
	cut := o.Limit()
	require.Equal(t, float64(retry.DefaultConfig().Overload.MinInFlight), cut, "limit, want the floor")
	r, _ := o.admit(_proc)
	o.done(r, false)
	assert.Equal(t, cut+1/cut, o.Limit(), "after one success (additive increase)")
	for range 1000 {
		r, _ := o.admit(_proc)
		o.done(r, false)
	}
	assert.False(t, o.Overloaded(_proc), "still overloaded after 1000 successes")
	before := o.Limit()
	r, _ = o.admit(_proc)
	o.done(r, false)
	assert.Equal(t, before+1, o.Limit(), "with the share nil")
}

// TestOverloadTailTimeoutsDoNotCut: a healthy callee whose attempts time
// out at random, 20% of them (a policy's attempt timeout at its p80), with
// 200 in flight, never has its limit held or cut: a majority of recent
// attempts must time out for that.
func TestOverloadTailTimeoutsDoNotCut(t *testing.T) {
	o := newTestOverload()
	rng := rand.New(rand.NewPCG(1, 2))
	inflight := make([]admission, 0, 200)
	var shed int
	for range 100000 {
		if len(inflight) == cap(inflight) {
			k := rng.IntN(len(inflight))
			o.done(inflight[k], rng.Float64() < 0.2)
			inflight = append(inflight[:k], inflight[k+1:]...)
		}
		a, ok := o.admit(_proc)
		if !ok {
			shed++
			continue
		}
		inflight = append(inflight, a)
	}
	assert.Equal(t, 0, shed, "shed")
	assert.Equal(t, float64(retry.DefaultConfig().Overload.MaxInFlight), o.Limit(), "limit")
	assert.False(t, o.Overloaded(_proc), "overloaded")
}

// TestOverloadNoLimitWithoutEvidence: more attempts in flight than
// MaxInFlight are admitted while the callee shows no overload.
func TestOverloadNoLimitWithoutEvidence(t *testing.T) {
	o := newOverload(withDefaults(retry.Config{Overload: retry.OverloadConfig{MaxInFlight: 10}}).Overload, still)
	for i := range 50 {
		_, ok := o.admit(_proc)
		require.True(t, ok, "attempt %d held back with no overload seen", i)
	}
}

// TestOverloadShareDecaysWhileIdle: an edge left idle after an incident is
// not held to it: the share halves every second without attempts.
func TestOverloadShareDecaysWhileIdle(t *testing.T) {
	var now time.Duration
	o := newOverload(withDefaults(retry.Config{Overload: retry.OverloadConfig{}}).Overload, func() time.Duration { return now })
	for range 200 {
		r, _ := o.admit(_proc)
		o.done(r, true)
	}
	require.True(t, o.Overloaded(_proc), "not overloaded after 200 timeouts")
	now += 2 * time.Second // the share, near 1, is a quarter of it now
	assert.False(t, o.Overloaded(_proc), "still overloaded after two idle seconds")
	for i := range 50 {
		_, ok := o.admit(_proc)
		require.True(t, ok, "attempt %d held back after the share decayed", i)
	}
}

func TestOverloadDisabled(t *testing.T) {
	o := newOverload(withDefaults(retry.Config{Overload: retry.OverloadConfig{Disabled: true}}).Overload, still)
	for range 100 {
		r, ok := o.admit(_proc)
		require.True(t, ok, "held back while disabled")
		o.done(r, true)
	}
	assert.False(t, o.Overloaded(_proc), "overloaded while disabled")
}

// TestOverloadRefusalTakesNoSlot: admit refuses an attempt without
// taking a slot, and admits as before, on an edge with no overload (with
// no attempt in flight, and with its limit's worth), one cut to its floor
// with its slot free and taken, and one disabled.
func TestOverloadRefusalTakesNoSlot(t *testing.T) {
	check := func(t *testing.T, o *overload, want bool) {
		t.Helper()
		before := o.inflight.Load()
		_, ok := o.admit(_proc)
		assert.Equal(t, !want, ok, "admit")
		if !ok {
			assert.Equal(t, before, o.inflight.Load(), "a refusal took a slot")
		}
		if ok && !o.disabled {
			// The slot back, with no outcome to move the limit or share.
			o.inflight.Add(-1)
		}
	}
	t.Run("no overload", func(t *testing.T) {
		check(t, newTestOverload(), false)
	})
	t.Run("at the limit, no overload", func(t *testing.T) {
		// The count alone holds nothing back: only an overloaded edge
		// is limited.
		o := newTestOverload()
		o.inflight.Store(int64(o.Limit()))
		check(t, o, false)
	})
	t.Run("at the floor", func(t *testing.T) {
		o := newTestOverload()
		for o.Limit() > 1 || !o.Overloaded(_proc) {
			a, _ := o.admit(_proc)
			o.done(a, true)
		}
		check(t, o, false)
		_, ok := o.admit(_proc) // the one slot, held
		require.True(t, ok)
		check(t, o, true)
		o.inflight.Add(-1) // given back
		check(t, o, false)
	})
	t.Run("disabled", func(t *testing.T) {
		o := newOverload(withDefaults(retry.Config{Overload: retry.OverloadConfig{Disabled: true}}).Overload, still)
		for range 10 {
			o.admit(_proc) // slots are not counted: nothing to give back
		}
		check(t, o, false)
	})
}

func TestOverloadConfigValidate(t *testing.T) {
	tests := []struct {
		give retry.OverloadConfig
		want string // "" for valid
	}{
		{give: retry.OverloadConfig{}},
		{give: retry.OverloadConfig{MaxInFlight: 5, MinInFlight: 5, Threshold: 0.99}},
		{give: retry.OverloadConfig{Threshold: 1}, want: "overload.threshold: must be in (0, 1), got 1"},
		{give: retry.OverloadConfig{MinInFlight: -1}, want: "overload.minInFlight: must be >= 1, got -1"},
		{give: retry.OverloadConfig{MaxInFlight: 2, MinInFlight: 3}, want: "overload.maxInFlight: must be >= minInFlight (3), got 2"},
		{give: retry.OverloadConfig{Threshold: 1.5}, want: "overload.threshold: must be in (0, 1), got 1.5"},
		{give: retry.OverloadConfig{Threshold: -0.1}, want: "overload.threshold: must be in (0, 1), got -0.1"},
	}
	for _, tt := range tests {
		err := retry.Config{Overload: tt.give}.Validate()
		if tt.want == "" {
			assert.NoError(t, err, "%+v, want valid", tt.give)
			continue
		}
		assert.ErrorContains(t, err, tt.want, "%+v", tt.give)
	}
}

// TestOverloadShedsAndStopsRetries: a callee whose attempts time out has
// its retries refused for overload, and once its limit is reached an
// attempt is not sent at all: resource-exhausted at once, RCS satisfied.
func TestOverloadShedsAndStopsRetries(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond}},
	}, WithSinks(obs.Sinks{Scope: scope}))
	slow := newOutbound(fail(yarpcerrors.DeadlineExceededErrorf("timed out")))
	var last *Sink
	call := func(out transport.UnaryOutbound) (reqlog.Result, error) {
		last = &Sink{Out: below(m, &loop{n: 1}, out)}
		_, err := m.Call(context.Background(), req("callee", "get", "x"), last)
		return reqlog.Result{Attempts: last.State.Attempts, Refused: last.State.Refused}, err
	}

	// While fewer than half of the recent attempts timed out, timeouts are
	// retried; it takes a good number of them. Then the callee is
	// overloaded: no retry.
	calls := 0
	for ; ; calls++ {
		got, _ := call(slow)
		if got.Attempts == 1 && got.Refused == wire.RefusedOverload {
			break
		}
		require.Equal(t, reqlog.Result{Attempts: 2}, got, "call %d, want retried once", calls)
		require.LessOrEqual(t, calls, 100, "call %d: %+v, want retried once", calls, got)
	}
	assert.GreaterOrEqual(t, calls, 20, "overloaded after %d calls (%d timeouts), want at least 20", calls, 2*calls)
	assert.Len(t, slow.Requests(), 2*calls+1, "attempts sent")

	// Hold the limit's one slot (the cuts took it to the floor) with a
	// call in flight: the next call is shed.
	c := m.callees["callee"]
	for c.overload.Limit() > 1 {
		r, _ := c.overload.admit(_proc)
		c.overload.done(r, true)
	}
	hold, ok := c.overload.admit(_proc)
	require.True(t, ok, "the floor's slot was taken")
	fresh := newOutbound(succeed("ok"))
	got, err := call(fresh)
	c.overload.done(hold, false)
	assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code(), "shed call: %v", err)
	assert.Equal(t, reqlog.Result{Attempts: 1, Refused: wire.RefusedOverload}, got, "shed call, want refused for overload")
	assert.Empty(t, fresh.Requests(), "the shed call was sent")
	f := last.State.Storm.Storm()
	assert.True(t, f.Known, "shed call's storm: %+v, want known", f)
	assert.Equal(t, uint64(0), f.Storm.Served, "shed call's storm: %+v, want nothing served", f)
	assert.Equal(t, uint64(0), f.Storm.Retries, "shed call's storm: %+v, want nothing served", f)
	assert.Equal(t, int64(2), counters(scope)["retry.denied+callee=callee,reason=overload"], "retry.denied{reason=overload} (a retry, a shed attempt)")
	assert.True(t, wire.RetryCriteriaSatisfied(wire.CallOutcome{Attempts: 1, Refused: wire.RefusedOverload, Code: yarpcerrors.CodeResourceExhausted}), "a shed call's retry criteria are not satisfied")
}

// TestOverloadObserveModeHoldsNothingBack: in observe mode errown sends
// and retries as without it: an overloaded callee's timed-out attempts are
// retried and attempts over the limit sent, each counted in
// retry.would_overload.
func TestOverloadObserveModeHoldsNothingBack(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Mode:     retry.ModeObserve,
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond}},
	}, WithSinks(obs.Sinks{Scope: scope}))
	slow := newOutbound(fail(yarpcerrors.DeadlineExceededErrorf("timed out")))
	for i := range 40 {
		sink := &Sink{Out: below(m, &loop{n: 1}, slow)}
		_, _ = m.Call(context.Background(), req("callee", "get", "x"), sink)
		assert.Equal(t, 2, sink.State.Attempts, "call %d: attempts", i)
		assert.Equal(t, wire.RefusedNone, sink.State.Refused, "call %d: refused", i)
	}
	assert.Len(t, slow.Requests(), 80, "attempts sent")
	got := counters(scope)
	// The last calls find the callee overloaded: their retries would have
	// been refused.
	assert.GreaterOrEqual(t, got["retry.would_overload+callee=callee"], int64(10), "counters %v, want would_overload >= 10", got)
	assert.Equal(t, int64(0), got["retry.denied+callee=callee,reason=overload"], "counters %v, want no overload refusal", got)
}

// TestOverloadShedOnTheDirectPath: with nothing between errown's retry
// middleware and the step (Sink.Direct), a shed attempt is classified as
// the callee's overload, a failure the egress middleware logs with its
// retry criteria satisfied, and counts as no attempt sent.
func TestOverloadShedOnTheDirectPath(t *testing.T) {
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond}},
	})
	c := m.callees["callee"]
	for c.overload.Limit() > 1 || !c.overload.Overloaded(_proc) {
		r, _ := c.overload.admit(_proc)
		c.overload.done(r, true)
	}
	hold, _ := c.overload.admit(_proc)
	defer c.overload.done(hold, false)
	out := newOutbound(succeed("ok"))
	sink := &Sink{Out: out, State: CallState{direct: true}}

	_, err := m.Call(context.Background(), req("callee", "get", "x"), sink)

	require.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code(), "err %v", err)
	st := &sink.State
	assert.Equal(t, yarpcerrors.CodeResourceExhausted, st.Code, "classified code")
	assert.Equal(t, wire.ClassFailure, st.Class, "classified class")
	assert.Equal(t, 1, st.Attempts, "attempts")
	assert.Equal(t, wire.RefusedOverload, st.Refused, "refused")
	assert.Equal(t, 0, st.Sends.Count, "sent")
	assert.Empty(t, out.Requests(), "sent")
}
