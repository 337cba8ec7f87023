package retrier

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// still is a clock that does not move: no share decays with time.
func still() time.Duration { return 0 }

func newTestOverload() *overload {
	return newOverload(retry.Config{Overload: retry.OverloadConfig{}}.WithDefaults().Overload, still)
}

func TestOverloadStaysOpenWithoutEvidence(t *testing.T) {
	o := newTestOverload()
	for range 1000 {
		round, ok := o.admit()
		if !ok {
			t.Fatal("an attempt was held back with no overload seen")
		}
		o.done(round, false)
	}
	if o.Limit() != retry.DefaultMaxInFlight || o.Overloaded() {
		t.Errorf("limit %v, overloaded %v; want %d, false", o.Limit(), o.Overloaded(), retry.DefaultMaxInFlight)
	}
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
		if rounds[i], ok = o.admit(); !ok {
			t.Fatalf("attempt %d held back", i)
		}
	}
	for _, r := range rounds {
		o.done(r, true)
	}
	if got := o.Limit(); got != 28 {
		t.Errorf("limit %v, want 28", got)
	}
	if !o.Overloaded() {
		t.Error("not overloaded after a hundred timeouts")
	}
	var admitted int
	for range 40 {
		if _, ok := o.admit(); ok {
			admitted++
		}
	}
	if admitted != 28 {
		t.Errorf("%d admitted under a limit of 28, want 28", admitted)
	}
}

func TestOverloadNextRoundCutsAgainDownToTheFloor(t *testing.T) {
	o := newTestOverload()
	for range 200 {
		r1, _ := o.admit()
		r2, ok := o.admit()
		if !ok {
			// At the floor with one in flight: only r1 went.
			o.done(r1, true)
			continue
		}
		o.done(r1, true)
		o.done(r2, true)
	}
	if got := o.Limit(); got != retry.DefaultMinInFlight {
		t.Errorf("limit %v after rounds of timeouts, want the floor %d", got, retry.DefaultMinInFlight)
	}
}

// TestOverloadGrowsBack: once attempts succeed again the limit grows by
// 1/limit while the recent share is not nil, then by one per attempt.
func TestOverloadGrowsBack(t *testing.T) {
	o := newTestOverload()
	for range 100 {
		r, _ := o.admit()
		o.done(r, true)
	}
	cut := o.Limit()
	if cut != retry.DefaultMinInFlight {
		t.Fatalf("limit %v, want the floor", cut)
	}
	r, _ := o.admit()
	o.done(r, false)
	if got := o.Limit(); got != cut+1/cut {
		t.Errorf("after one success: %v, want %v (additive increase)", got, cut+1/cut)
	}
	for range 1000 {
		r, _ := o.admit()
		o.done(r, false)
	}
	if o.Overloaded() {
		t.Error("still overloaded after 1000 successes")
	}
	before := o.Limit()
	r, _ = o.admit()
	o.done(r, false)
	if got := o.Limit(); got != before+1 {
		t.Errorf("with the share nil: %v, want %v", got, before+1)
	}
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
		a, ok := o.admit()
		if !ok {
			shed++
			continue
		}
		inflight = append(inflight, a)
	}
	if shed != 0 || o.Limit() != retry.DefaultMaxInFlight || o.Overloaded() {
		t.Errorf("shed %d, limit %v, overloaded %v; want 0, %d, false", shed, o.Limit(), o.Overloaded(), retry.DefaultMaxInFlight)
	}
}

// TestOverloadNoLimitWithoutEvidence: more attempts in flight than
// MaxInFlight are admitted while the callee shows no overload.
func TestOverloadNoLimitWithoutEvidence(t *testing.T) {
	o := newOverload(retry.Config{Overload: retry.OverloadConfig{MaxInFlight: 10}}.WithDefaults().Overload, still)
	for i := range 50 {
		if _, ok := o.admit(); !ok {
			t.Fatalf("attempt %d held back with no overload seen", i)
		}
	}
}

// TestOverloadShareDecaysWhileIdle: an edge left idle after an incident is
// not held to it: the share halves every second without attempts.
func TestOverloadShareDecaysWhileIdle(t *testing.T) {
	var now time.Duration
	o := newOverload(retry.Config{Overload: retry.OverloadConfig{}}.WithDefaults().Overload, func() time.Duration { return now })
	for range 200 {
		r, _ := o.admit()
		o.done(r, true)
	}
	if !o.Overloaded() {
		t.Fatal("not overloaded after 200 timeouts")
	}
	now += 2 * time.Second // the share, near 1, is a quarter of it now
	if o.Overloaded() {
		t.Error("still overloaded after two idle seconds")
	}
	for i := range 50 {
		if _, ok := o.admit(); !ok {
			t.Fatalf("attempt %d held back after the share decayed", i)
		}
	}
}

func TestOverloadDisabled(t *testing.T) {
	o := newOverload(retry.Config{Overload: retry.OverloadConfig{Disabled: true}}.WithDefaults().Overload, still)
	for range 100 {
		r, ok := o.admit()
		if !ok {
			t.Fatal("held back while disabled")
		}
		o.done(r, true)
	}
	if o.Overloaded() {
		t.Error("overloaded while disabled")
	}
}

func TestOverloadConfigValidate(t *testing.T) {
	tests := []struct {
		give retry.OverloadConfig
		want string // "" for valid
	}{
		{give: retry.OverloadConfig{}},
		{give: retry.OverloadConfig{MaxInFlight: 5, MinInFlight: 5, Threshold: 1}},
		{give: retry.OverloadConfig{MinInFlight: -1}, want: "overload.minInFlight: must be >= 1, got -1"},
		{give: retry.OverloadConfig{MaxInFlight: 2, MinInFlight: 3}, want: "overload.maxInFlight: must be >= minInFlight (3), got 2"},
		{give: retry.OverloadConfig{Threshold: 1.5}, want: "overload.threshold: must be in (0, 1], got 1.5"},
		{give: retry.OverloadConfig{Threshold: -0.1}, want: "overload.threshold: must be in (0, 1], got -0.1"},
	}
	for _, tt := range tests {
		err := retry.Config{Overload: tt.give}.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%+v: %v, want valid", tt.give, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.give, err, tt.want)
		}
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
	var last *reqlog.Sink
	call := func(out transport.UnaryOutbound) (reqlog.CallState, error) {
		last = &reqlog.Sink{Out: below(m, &loop{n: 1}, out)}
		_, err := m.Call(context.Background(), req("callee", "get", "x"), last)
		return reqlog.CallState{Attempts: last.State.Attempts, Refused: last.State.Refused}, err
	}

	// While fewer than half of the recent attempts timed out, timeouts are
	// retried; it takes a good number of them. Then the callee is
	// overloaded: no retry.
	calls := 0
	for ; ; calls++ {
		got, _ := call(slow)
		if got == (reqlog.CallState{Attempts: 1, Refused: ownership.RefusedOverload}) {
			break
		}
		if got != (reqlog.CallState{Attempts: 2}) || calls > 100 {
			t.Fatalf("call %d: %+v, want retried once", calls, got)
		}
	}
	if calls < 20 {
		t.Errorf("overloaded after %d calls (%d timeouts), want at least 20", calls, 2*calls)
	}
	if n := len(slow.requests()); n != 2*calls+1 {
		t.Errorf("%d attempts sent, want %d", n, 2*calls+1)
	}

	// Hold the limit's one slot (the cuts took it to the floor) with a
	// call in flight: the next call is shed.
	c := m.callees["callee"]
	for c.overload.Limit() > 1 {
		r, _ := c.overload.admit()
		c.overload.done(r, true)
	}
	hold, ok := c.overload.admit()
	if !ok {
		t.Fatal("the floor's slot was taken")
	}
	fresh := newOutbound(succeed("ok"))
	got, err := call(fresh)
	c.overload.done(hold, false)
	if code := yarpcerrors.FromError(err).Code(); code != yarpcerrors.CodeResourceExhausted {
		t.Errorf("shed call: %v, want resource-exhausted", err)
	}
	if got != (reqlog.CallState{Attempts: 1, Refused: ownership.RefusedOverload}) {
		t.Errorf("shed call: %+v, want refused for overload", got)
	}
	if n := len(fresh.requests()); n != 0 {
		t.Errorf("the shed call was sent %d times", n)
	}
	if f := last.State.Storm.Storm(); !f.Known || f.Storm.Served != 0 || f.Storm.Retries != 0 {
		t.Errorf("shed call's storm: %+v, want known, nothing served", f)
	}
	if got := counters(scope)["retry.denied+callee=callee,reason=overload"]; got != 2 {
		t.Errorf("retry.denied{reason=overload} = %d, want 2 (a retry, a shed attempt)", got)
	}
	if !wire.RetryCriteriaSatisfied(wire.CallOutcome{Attempts: 1, Refused: ownership.RefusedOverload, Code: yarpcerrors.CodeResourceExhausted}) {
		t.Error("a shed call's retry criteria are not satisfied")
	}
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
		sink := &reqlog.Sink{Out: below(m, &loop{n: 1}, slow)}
		_, _ = m.Call(context.Background(), req("callee", "get", "x"), sink)
		if sink.State.Attempts != 2 || sink.State.Refused != ownership.RefusedNone {
			t.Errorf("call %d: %d attempts, refused %v; want 2, none", i, sink.State.Attempts, sink.State.Refused)
		}
	}
	if n := len(slow.requests()); n != 80 {
		t.Errorf("%d attempts sent, want 80", n)
	}
	got := counters(scope)
	// The last calls find the callee overloaded: their retries would have
	// been refused.
	if got["retry.would_overload+callee=callee"] < 10 || got["retry.denied+callee=callee,reason=overload"] != 0 {
		t.Errorf("counters %v, want would_overload >= 10 and no overload refusal", got)
	}
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
	for c.overload.Limit() > 1 || !c.overload.Overloaded() {
		r, _ := c.overload.admit()
		c.overload.done(r, true)
	}
	hold, _ := c.overload.admit()
	defer c.overload.done(hold, false)
	out := newOutbound(succeed("ok"))
	sink := &reqlog.Sink{Out: out, Direct: true}

	_, err := m.Call(context.Background(), req("callee", "get", "x"), sink)

	if code := yarpcerrors.FromError(err).Code(); code != yarpcerrors.CodeResourceExhausted {
		t.Fatalf("err %v, want resource-exhausted", err)
	}
	st := sink.State
	if st.Code != yarpcerrors.CodeResourceExhausted || st.Class != ownership.ClassFailure || !st.Classified {
		t.Errorf("classified %v %v (%v), want resource-exhausted, a failure", st.Code, st.Class, st.Classified)
	}
	if st.Attempts != 1 || st.Refused != ownership.RefusedOverload || st.Sends.Count != 0 {
		t.Errorf("attempts %d, refused %v, sent %d; want 1, overload, 0", st.Attempts, st.Refused, st.Sends.Count)
	}
	if n := len(out.requests()); n != 0 {
		t.Errorf("%d sent, want 0", n)
	}
}
