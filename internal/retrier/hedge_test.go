package retrier

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Tests of hedges: attempts an application's middleware sends while
// another attempt of the same call is under way, with no failure to
// justify them. They take nothing a failure's retry needs.

// TestHedgeLeavesTheRetryItsAttempt: under a policy of two attempts, a
// hedge that fails at once while the attempt it hedged is still under
// way wins the hedging middleware's race; errown's retry of that failure
// is still sent (the hedge counted apart from the policy's attempts) and
// serves the call. Three requests left the process: the policy's two
// attempts and its one hedge.
func TestHedgeLeavesTheRetryItsAttempt(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 2, InitialBackoff: time.Nanosecond}},
	}, WithSinks(obs.Sinks{Scope: scope}))
	firstArrived, release := make(chan struct{}), make(chan struct{})
	out := newOutbound(
		func(ctx context.Context, _ *transport.Request) (*transport.Response, error) { // the first attempt: slow
			close(firstArrived)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, yarpcerrors.CancelledErrorf("client canceled request")
		},
		fail(errUnavailable, "errown-claim", "claimed"), // the hedge, on a bad instance
		succeed("served"), // errown's retry
	)
	h := &hedgeFirst{hedger: hedger{after: firstArrived}}
	sink := &Sink{Out: below(m, h, out)}

	res, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)
	close(release)
	h.wait()

	require.NoError(t, err, "the call: want errown's retry's answer")
	body, _ := io.ReadAll(res.Body)
	assert.Equal(t, "served", string(body), "the call's answer")
	sent := out.Requests()
	require.Len(t, sent, 3, "requests that left the process")
	assert.Equal(t, []string{"", "2", "3"}, []string{sent[0].Headers["errown-attempt"], sent[1].Headers["errown-attempt"], sent[2].Headers["errown-attempt"]}, "attempt headers")
	got := counters(scope)
	assert.Equal(t, int64(1), got["retry.foreign_attempts+callee=callee"], "the hedge, sent: %v", got)
	assert.Equal(t, int64(1), got["retry.attempts+callee=callee"], "errown's retry, sent: %v", got)
	assert.Zero(t, got["retry.denied+callee=callee,reason=foreign-attempts"], "refused: %v", got)
}

// hedgeFirst is hedger on its first call, and sends each later call
// once.
type hedgeFirst struct {
	hedger
	calls int
}

func (h *hedgeFirst) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	h.calls++
	if h.calls > 1 {
		return out.Call(ctx, req)
	}
	return h.hedger.Call(ctx, req, out)
}

// TestOneHedgeFewerThanTheAttempts: a policy of n attempts allows n-1
// hedges per call, apart from its attempts: with two attempts, the
// second hedge of a call (one sent while errown's retry is under way)
// is held, and answers with that retry's outcome.
func TestOneHedgeFewerThanTheAttempts(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 2, InitialBackoff: time.Nanosecond}},
	}, WithSinks(obs.Sinks{Scope: scope}))
	first, retried := make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	hedged := make(chan struct{}, 2)
	slow := func(arrived chan struct{}) step {
		return func(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
			close(arrived)
			<-release
			return nil, yarpcerrors.UnavailableErrorf("slow failure")
		}
	}
	out := newOutbound(
		slow(first),
		func(context.Context, *transport.Request) (*transport.Response, error) { // the first hedge
			hedged <- struct{}{}
			return nil, errUnavailable
		},
		slow(retried), // errown's retry
		succeed("a second hedge errown should not have sent"),
	)
	app := &hedgeEach{arrived: []<-chan struct{}{first, retried}, release: release, hedged: hedged}
	sink := &Sink{Out: below(m, app, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	assert.Equal(t, yarpcerrors.CodeUnavailable, yarpcerrors.FromError(err).Code(), "the call's answer: %v", err)
	assert.Len(t, out.Requests(), 3, "requests that left the process")
	assert.Equal(t, 3, sink.State.Attempts, "attempts")
	got := counters(scope)
	assert.Equal(t, int64(1), got["retry.foreign_attempts+callee=callee"], "hedges sent: %v", got)
	assert.Equal(t, int64(1), got["retry.denied+callee=callee,reason=foreign-attempts"], "hedges held: %v", got)
	require.Len(t, app.hedgeErrs, 2, "the hedges' answers")
	assert.Equal(t, "slow failure", yarpcerrors.FromError(app.hedgeErrs[1]).Message(), "the held hedge's answer: the retry's")
}

// hedgeEach is a hedging middleware for TestOneHedgeFewerThanTheAttempts:
// on its i-th call it sends the call, and a hedge once arrived[i] is
// closed (the attempt is below); it returns the first attempt's answer
// once the hedge has answered (closing release on its last call).
type hedgeEach struct {
	arrived   []<-chan struct{}
	release   chan struct{}
	hedged    chan struct{}
	calls     int
	hedgeErrs []error
}

func (h *hedgeEach) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	i := h.calls
	h.calls++
	first := make(chan answer, 1)
	go func() {
		res, err := out.Call(ctx, req)
		first <- answer{res, err}
	}()
	<-h.arrived[i]
	hedge := *req
	second := make(chan error, 1)
	go func() {
		_, err := out.Call(ctx, &hedge)
		second <- err
	}()
	if i == 0 {
		// The hedge fails at once: the first answer.
		err := <-second
		h.hedgeErrs = append(h.hedgeErrs, err)
		return nil, err
	}
	testtime.Sleep(20 * time.Millisecond) // the second hedge waits, held
	close(h.release)
	a := <-first
	h.hedgeErrs = append(h.hedgeErrs, <-second)
	return a.res, a.err
}

// TestHeldHedgeAnswersWithTheSuccess: a hedge errown holds back while
// the attempt it hedged goes on answers, once that attempt succeeds,
// with its response (body and all), never with the refusal: a hedging
// middleware that takes the first answer it gets takes the success
// whichever answer reaches it first.
func TestHeldHedgeAnswersWithTheSuccess(t *testing.T) {
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 1}},
	})
	started, release := make(chan struct{}), make(chan struct{})
	out := newOutbound(func(ctx context.Context, r *transport.Request) (*transport.Response, error) {
		close(started)
		<-release
		return succeed("served")(ctx, r)
	})
	h := &bothBodies{started: started, release: release}
	sink := &Sink{Out: below(m, h, out)}

	res, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	assert.Equal(t, "served", string(body), "the call's answer")
	assert.Len(t, out.Requests(), 1, "requests that left the process")
	require.NoError(t, h.heldErr, "the held hedge's answer")
	assert.Equal(t, "served", h.heldBody, "the held hedge's body")
}

// TestAdapterHeldHedgeAnswersWithTheRefusal: through the adapters' form
// of the innermost step (grpcgo, nethttp), whose attempts answer from
// what their own send kept, a hedge held back while the attempt under
// way succeeds answers with the refusal: it has no reply of its own to
// deliver the success into.
func TestAdapterHeldHedgeAnswersWithTheRefusal(t *testing.T) {
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 1}},
	})
	started, release := make(chan struct{}), make(chan struct{})
	out := newOutbound(func(ctx context.Context, r *transport.Request) (*transport.Response, error) {
		close(started)
		<-release
		return succeed("served")(ctx, r)
	})
	h := &bothBodies{started: started, release: release}
	chain := middleware.ApplyUnaryOutbound(out, yarpc.UnaryOutboundMiddleware(h, m.AdapterAttempts()))
	sink := &Sink{Out: chain}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	require.NoError(t, err)
	assert.Equal(t, yarpcerrors.CodeAborted, yarpcerrors.FromError(h.heldErr).Code(), "the held hedge's answer: %v", h.heldErr)
}

// bothBodies is both, keeping the second attempt's body.
type bothBodies struct {
	started  <-chan struct{}
	release  chan struct{}
	heldErr  error
	heldBody string
}

func (b *bothBodies) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	first := make(chan answer, 1)
	go func() {
		res, err := out.Call(ctx, req)
		first <- answer{res, err}
	}()
	<-b.started
	second := make(chan answer, 1)
	hedge := *req
	go func() {
		res, err := out.Call(ctx, &hedge)
		second <- answer{res, err}
	}()
	testtime.Sleep(20 * time.Millisecond) // the hedge waits, unsent
	close(b.release)
	a, s := <-first, <-second
	b.heldErr = s.err
	if s.res != nil && s.res.Body != nil {
		body, _ := io.ReadAll(s.res.Body)
		b.heldBody = string(body)
	}
	return a.res, a.err
}

// TestHedgesLeaveTheRetriesHalfTheBudget: hedges withdraw from the
// callee's budget up to half of what its window allows; errown's
// retries of failures may take the rest, and one the hedges' share left
// without room counts in retry.starved_by_hedges. A hedge of a call that
// succeeds is given back.
func TestHedgesLeaveTheRetriesHalfTheBudget(t *testing.T) {
	clock := newClock()
	b := newBudget(retry.BudgetConfig{Ratio: 0.1, Window: 10 * time.Second}, newBudgetClock(clock.Now, 0, nil))
	for range 100 {
		b.deposit() // 10 retries allowed
	}
	var epochs []int64
	for range 5 {
		e, ok := b.withdrawHedge()
		require.True(t, ok, "a hedge within half of the budget")
		epochs = append(epochs, e)
	}
	_, ok := b.withdrawHedge()
	assert.False(t, ok, "the sixth hedge: over half of the budget")
	for i := range 5 {
		_, ok, _ := b.withdraw()
		require.True(t, ok, "retry %d: the half hedges leave", i)
	}
	_, ok, hedgesTook := b.withdraw()
	assert.False(t, ok, "the budget spent")
	assert.True(t, hedgesTook, "refused for the hedges' withdrawals")
	assert.Equal(t, int64(5), b.inWindow().hedges, "the hedges' withdrawals in the window (the budget view's)")
	_, refused, starved := b.outcomes()
	assert.Equal(t, int64(2), refused, "refused in the window: the sixth hedge and the retry")
	assert.Equal(t, int64(1), starved, "refused for the hedges in the window (the budget view's)")

	for _, e := range epochs {
		b.refundHedge(e) // their calls succeeded
	}
	_, ok, _ = b.withdraw()
	assert.True(t, ok, "a retry, once the hedges were given back")
	_, ok = b.withdrawHedge()
	assert.True(t, ok, "a hedge, once the hedges were given back")
}

func TestHedgeAllows(t *testing.T) {
	tests := []struct {
		name         string
		giveRequests int64
		giveHedges   int64
		giveFloor    float64 // per second, over a 10s window
		want         bool
	}{
		{name: "half of ten", giveRequests: 100, giveHedges: 4, want: true},
		{name: "over half of ten", giveRequests: 100, giveHedges: 5, want: false},
		{name: "the floor counts", giveRequests: 0, giveHedges: 49, giveFloor: 10, want: true},
		{name: "over half of the floor", giveRequests: 0, giveHedges: 50, giveFloor: 10, want: false},
		{name: "nothing allowed", giveRequests: 0, giveHedges: 0, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, HedgeAllows(tt.giveRequests, tt.giveHedges, 0.1, tt.giveFloor, 10*time.Second))
		})
	}
}

// TestRetryStarvedByHedgesCounted: errown's retry of a failure that the
// budget refuses, and would have let go without the hedges' withdrawals
// in its window, counts in retry.starved_by_hedges{reason=budget}.
func TestRetryStarvedByHedgesCounted(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		// One request allows two retries, one of them a hedge.
		Budget:   retry.BudgetConfig{Ratio: 2, NoFloor: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 3, InitialBackoff: time.Nanosecond}},
	}, WithSinks(obs.Sinks{Scope: scope}), newClock().option())
	firstArrived, release := make(chan struct{}), make(chan struct{})
	out := newOutbound(
		func(ctx context.Context, _ *transport.Request) (*transport.Response, error) { // the first attempt: slow
			close(firstArrived)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, yarpcerrors.CancelledErrorf("client canceled request")
		},
		fail(errUnavailable, "errown-claim", "claimed"), // the hedge
		fail(errUnavailable, "errown-claim", "claimed"), // errown's first retry
		succeed("a retry the budget has no room for"),
	)
	h := &hedgeFirst{hedger: hedger{after: firstArrived}}
	sink := &Sink{Out: below(m, h, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)
	close(release)
	h.wait()

	assert.Equal(t, yarpcerrors.CodeUnavailable, yarpcerrors.FromError(err).Code(), "the call's answer: %v", err)
	assert.Len(t, out.Requests(), 3, "requests that left the process")
	got := counters(scope)
	assert.Equal(t, int64(1), got["retry.denied+callee=callee,reason=budget"], "errown's second retry, refused: %v", got)
	assert.Equal(t, int64(1), got["retry.starved_by_hedges+callee=callee,reason=budget"], "refused for the hedge's withdrawal: %v", got)
}
