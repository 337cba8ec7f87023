package retrier

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Tests of the attempts a middleware between errown's retry middleware and
// the innermost step sends in shapes other than a loop: a hedge, a
// fallback, replays into an overloaded callee.

// hedger is an application's hedging middleware: it sends the call, and
// a second attempt after delay while the first is under way; it returns
// the first answer and leaves the other attempt running (wait waits for
// it).
type hedger struct {
	delay time.Duration
	// after, when set, sends the hedge once it is closed instead of after
	// delay: a test that needs its first attempt below before the hedge
	// (a loaded machine can start the first attempt's goroutine late).
	after <-chan struct{}
	wg    sync.WaitGroup
}

type answer struct {
	res *transport.Response
	err error
}

func (h *hedger) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	answers := make(chan answer, 2)
	send := func(r *transport.Request) {
		defer h.wg.Done()
		res, err := out.Call(ctx, r)
		answers <- answer{res, err}
	}
	h.wg.Add(1)
	go send(req)
	var timer <-chan time.Time
	if h.after == nil {
		timer = time.After(h.delay)
	}
	select {
	case a := <-answers:
		return a.res, a.err
	case <-h.after: // nil, and never ready, unless set
	case <-timer:
	}
	hedge := *req
	h.wg.Add(1)
	go send(&hedge)
	a := <-answers
	return a.res, a.err
}

func (h *hedger) wait() { h.wg.Wait() }

// overloadedCallee drives the share of c's overloaded attempts of _proc
// over the threshold, and the limit down to its floor, and stops the
// shares' decay (a loaded machine's pauses would end the overload
// mid-test).
func overloadedCallee(t *testing.T, c *callee) {
	t.Helper()
	c.overload.elapsed = still
	for i := 0; c.overload.Limit() > c.overload.min || !c.overload.Overloaded(_proc); i++ {
		require.Less(t, i, 10000, "the callee never became overloaded")
		r, _ := c.overload.admit(_proc)
		c.overload.done(r, true)
	}
}

// TestHedgeIntoOverloadedCallee: a hedge's second attempt is admitted to
// the overload limit, counted, numbered and folded like any other; the
// call's retry criteria see both attempts (RCS satisfied: the caller
// above does not retry), errown does not retry into the overloaded
// callee, and the hedge left running, which ends after the call
// returned, gives its slot back and counts as late, writing nothing.
func TestHedgeIntoOverloadedCallee(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Overload: retry.OverloadConfig{MinInFlight: 4},
		Policies: []retry.PolicyConfig{{
			Service: "callee", Idempotent: new(true), MaxAttempts: 3,
			RetryableCodes: []string{"deadline-exceeded", "unavailable"}, InitialBackoff: time.Nanosecond,
		}},
	}, WithSinks(obs.Sinks{Scope: scope}))
	c := m.callees["callee"]
	overloadedCallee(t, c)

	var (
		mu       sync.Mutex
		inflight []int64 // the callee's attempts in flight as each arrived
	)
	arrived := func() {
		mu.Lock()
		inflight = append(inflight, c.overload.inflight.Load())
		mu.Unlock()
	}
	firstArrived, hedgeArrived, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	timedOut := yarpcerrors.DeadlineExceededErrorf("timed out")
	out := newOutbound(
		func(context.Context, *transport.Request) (*transport.Response, error) { // the first attempt
			arrived()
			close(firstArrived)
			<-hedgeArrived
			return nil, timedOut
		},
		func(context.Context, *transport.Request) (*transport.Response, error) { // the hedge
			arrived()
			close(hedgeArrived)
			<-release
			return nil, timedOut
		},
		succeed("a retry errown should not have sent"),
	)
	// The hedge goes once the first attempt is below (after 5ms, say).
	h := &hedger{after: firstArrived}
	sink := &Sink{Out: below(m, h, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	assert.Equal(t, yarpcerrors.CodeDeadlineExceeded, yarpcerrors.FromError(err).Code(), "the first answer: %v", err)
	st := &sink.State
	assert.Equal(t, 2, st.Attempts, "attempts")
	assert.Equal(t, wire.RefusedOverload, st.Refused, "refused")
	rcs := wire.RetryCriteriaSatisfied(wire.CallOutcome{Attempts: st.Sent(), Callee: st.Claim, Refused: st.Refused, Code: st.Code})
	assert.True(t, rcs, "RCS")
	// The handler's failure after it is unclaimed: the caller above does
	// not retry.
	assert.Equal(t, ownership.ClaimUnclaimed, ingress.Decide([]ingress.Failure{{Kind: ownership.KindFailClose, RCS: rcs}}, true), "the claim the caller above reads")
	// The first attempt's figures; the hedge's, still under way, are not
	// known when the call returns.
	assert.Equal(t, 1, st.Storm.Attempts(), "attempts folded in the storm")

	close(release)
	h.wait()
	sentReqs := out.Requests()
	require.Len(t, sentReqs, 2, "requests that left the process: errown retried into the overloaded callee")
	assert.Equal(t, "", sentReqs[0].Headers["errown-attempt"], "the first attempt's number")
	assert.Equal(t, "2", sentReqs[1].Headers["errown-attempt"], "the hedge's number")
	mu.Lock()
	assert.Equal(t, []int64{1, 2}, inflight, "attempts in flight as each arrived: both admitted")
	mu.Unlock()
	assert.Equal(t, int64(0), c.overload.inflight.Load(), "attempts in flight after both ended")
	got := counters(scope)
	assert.Equal(t, int64(1), got["retry.foreign_attempts+callee=callee"], "foreign attempts (the hedge): %v", got)
	assert.Equal(t, int64(1), got["retry.late_attempts+callee=callee"], "late attempts (the hedge): %v", got)
	assert.Equal(t, int64(1), got["retry.denied+callee=callee,reason=overload"], "errown's retry refused for overload: %v", got)
	assert.Equal(t, 2, st.Attempts, "attempts, after the late hedge ended")
	assert.Equal(t, 1, st.Storm.Attempts(), "attempts folded in the storm, after the late hedge ended")
}

// fallback is an application's fallback middleware: when the call fails
// it calls procedure instead, through the same chain.
type fallback struct {
	procedure string

	mu   sync.Mutex
	body string // what the fallback's response read
}

func (f *fallback) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	res, err := out.Call(ctx, req)
	if err == nil && (res == nil || !res.ApplicationError) {
		return res, err
	}
	if res != nil && res.Body != nil {
		_ = res.Body.Close()
	}
	other := *req
	other.Procedure = f.procedure
	res, err = out.Call(ctx, &other)
	if res != nil && res.Body != nil {
		b, _ := io.ReadAll(res.Body)
		f.mu.Lock()
		f.body = string(b)
		f.mu.Unlock()
	}
	return res, err
}

// TestFallbackIsACallOfItsOwn: a call to another procedure through the
// same middleware is no replay of the first: it is sent, and gets its own
// response, never the first procedure's.
func TestFallbackIsACallOfItsOwn(t *testing.T) {
	m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}})
	code := yarpcerrors.CodeUnavailable
	out := newOutbound(
		appError(&code, "errown-claim", "unclaimed", "errown-code", "unavailable"), // get
		succeed("cached"), // getCached
	)
	f := &fallback{procedure: "getCached"}
	sink := &Sink{Out: below(m, f, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	require.NoError(t, err)
	assert.Len(t, out.Requests(), 2, "requests that left the process: the fallback was not sent")
	assert.Equal(t, "cached", f.body, "the fallback's response")
}

// replayer is an application's retry middleware that calls between before
// it replays a failed call once.
type replayer struct {
	between func()
	errs    []error
}

func (r *replayer) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	res, err := out.Call(ctx, req)
	r.errs = append(r.errs, err)
	if err == nil {
		return res, err
	}
	r.between()
	again := *req
	res, err = out.Call(ctx, &again)
	r.errs = append(r.errs, err)
	return res, err
}

// TestForeignReplayIntoOverloadedCalleeRefused: a replay errown did not
// make, after an attempt the callee timed out, is refused while the
// callee is overloaded, as errown's own retry would be.
func TestForeignReplayIntoOverloadedCalleeRefused(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Overload: retry.OverloadConfig{MinInFlight: 4},
		Policies: []retry.PolicyConfig{{
			Service: "callee", Idempotent: new(true), MaxAttempts: 3,
			RetryableCodes: []string{"deadline-exceeded"}, InitialBackoff: time.Nanosecond,
		}},
	}, WithSinks(obs.Sinks{Scope: scope}))
	overloadedCallee(t, m.callees["callee"])
	out := newOutbound(fail(yarpcerrors.DeadlineExceededErrorf("timed out")))
	sink := &Sink{Out: below(m, &loop{n: 2}, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	assert.Equal(t, yarpcerrors.CodeDeadlineExceeded, yarpcerrors.FromError(err).Code(), "err %v", err)
	assert.Len(t, out.Requests(), 1, "requests that left the process")
	assert.Equal(t, wire.RefusedOverload, sink.State.Refused, "refused")
	got := counters(scope)
	assert.Equal(t, int64(1), got["retry.denied+callee=callee,reason=foreign-overload"], "counters %v", got)
	assert.Zero(t, got["retry.foreign_attempts+callee=callee"], "counters %v", got)
}

// TestShedAttemptIsTheLast: a replay the overload limit sheds is the
// call's last attempt: what a replay after it is judged by and returns,
// not the attempt before.
func TestShedAttemptIsTheLast(t *testing.T) {
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 3, InitialBackoff: time.Nanosecond}},
	})
	c := m.callees["callee"]
	overloadedCallee(t, c)
	var holds []admission
	r := &replayer{between: func() {
		overloadedCallee(t, c) // again: the first attempt was no overload
		// Take every slot of the limit.
		for {
			a, ok := c.overload.admit(_proc)
			if !ok {
				break
			}
			holds = append(holds, a)
			require.Less(t, len(holds), 100, "the limit holds nothing back")
		}
	}}
	out := newOutbound(fail(errUnavailable, "errown-claim", "claimed"))
	sink := &Sink{Out: below(m, r, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)
	for _, a := range holds {
		c.overload.abandon(a)
	}

	assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code(), "the shed replay's error: %v", err)
	assert.Len(t, out.Requests(), 1, "requests that left the process")
	last := sink.State.Sends.Last
	require.NotNil(t, last, "the last attempt's outcome")
	assert.Equal(t, yarpcerrors.CodeResourceExhausted, last.Code, "the last outcome: want the shed attempt's, not the one before")
	assert.Equal(t, err, last.Err, "the last outcome's error")
}

// TestHedgeOverTheAttemptLimitIsNotSent: a hedge the policy's attempts
// do not allow is not sent: it waits for the attempt under way, and
// answers with its failure, so the hedging middleware takes that one.
func TestHedgeOverTheAttemptLimitIsNotSent(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 1}},
	}, WithSinks(obs.Sinks{Scope: scope}))
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	out := newOutbound(func(context.Context, *transport.Request) (*transport.Response, error) {
		once.Do(func() { close(started) })
		<-release
		return nil, errUnavailable
	})
	h := &both{started: started, release: release}
	sink := &Sink{Out: below(m, h, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	assert.Equal(t, yarpcerrors.CodeUnavailable, yarpcerrors.FromError(err).Code(), "err %v", err)
	assert.Len(t, out.Requests(), 1, "requests that left the process")
	assert.Equal(t, 1, sink.State.Attempts, "attempts")
	require.Len(t, h.errs, 2, "answers the hedging middleware got")
	assert.Equal(t, yarpcerrors.CodeUnavailable, yarpcerrors.FromError(h.errs[1]).Code(), "the refused hedge's answer: %v", h.errs[1])
	got := counters(scope)
	assert.Equal(t, int64(1), got["retry.denied+callee=callee,reason=foreign-attempts"], "counters %v", got)
	assert.Zero(t, got["retry.foreign_attempts+callee=callee"], "counters %v", got)
}

// both is a hedging middleware that sends a second attempt while the
// first is under way (started), then lets the first answer (release),
// and waits for both: errs holds the first's answer and the second's.
type both struct {
	started <-chan struct{}
	release chan struct{}
	errs    []error
}

func (b *both) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	first := make(chan answer, 1)
	go func() {
		res, err := out.Call(ctx, req)
		first <- answer{res, err}
	}()
	<-b.started
	second := make(chan error, 1)
	hedge := *req
	go func() {
		_, err := out.Call(ctx, &hedge)
		second <- err
	}()
	testtime.Sleep(20 * time.Millisecond) // the hedge waits, unsent
	close(b.release)
	a := <-first
	b.errs = append(b.errs, a.err, <-second)
	return a.res, a.err
}

// sendLater is an application's middleware that returns at once and
// sends the attempt later, once start is closed: err is what it got.
type sendLater struct {
	start chan struct{}
	done  chan struct{}
	err   error
}

func (s *sendLater) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	go func() {
		defer close(s.done)
		<-s.start
		_, s.err = out.Call(ctx, req)
	}()
	return nil, yarpcerrors.UnavailableErrorf("not yet")
}

// TestAttemptSentAfterItsCallReturned: an attempt sent after its call
// returned is not sent: nobody waits for it, and its call's state is
// sealed. It counts in retry.late_attempts.
func TestAttemptSentAfterItsCallReturned(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 1}}},
		WithSinks(obs.Sinks{Scope: scope}))
	out := newOutbound(succeed("late"))
	app := &sendLater{start: make(chan struct{}), done: make(chan struct{})}
	sink := &Sink{Out: below(m, app, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)
	require.Error(t, err)
	close(app.start)
	<-app.done

	assert.Empty(t, out.Requests(), "requests that left the process")
	assert.Equal(t, yarpcerrors.CodeCancelled, yarpcerrors.FromError(app.err).Code(), "the late attempt's error: %v", app.err)
	assert.Equal(t, int64(1), counters(scope)["retry.late_attempts+callee=callee"], "late attempts")
	assert.Equal(t, 0, sink.State.Sends.Count, "attempts counted")
}

// straggler is a hedging middleware whose hedge reaches errown's
// innermost step late: on its first call it sends the call, returns its
// answer and leaves the hedge to be sent once release is closed (go);
// with cancelled, the hedge's context is cancelled first, as a hedger
// cancels the loser when the first answer wins. Its next call waits for
// the hedge to end before it sends.
type straggler struct {
	cancelled bool
	release   chan struct{}
	done      chan struct{} // closed once the hedge ended
	once      sync.Once
	calls     int
	hedgeErr  error // what the hedge got
}

func newStraggler(cancelled bool) *straggler {
	return &straggler{cancelled: cancelled, release: make(chan struct{}), done: make(chan struct{})}
}

func (s *straggler) goAhead() { s.once.Do(func() { close(s.release) }) }

func (s *straggler) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	s.calls++
	if s.calls > 1 {
		s.goAhead()
		<-s.done
		return out.Call(ctx, req)
	}
	res, err := out.Call(ctx, req)
	hctx, cancel := context.WithCancel(ctx)
	if s.cancelled {
		cancel()
	}
	hedge := *req
	go func() {
		defer close(s.done)
		defer cancel()
		<-s.release
		_, s.hedgeErr = out.Call(hctx, &hedge)
	}()
	return res, err
}

// answerCancelled answers as a transport does for an attempt whose
// caller cancelled it.
func answerCancelled(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
	return nil, yarpcerrors.CancelledErrorf("client canceled request: %v", ctx.Err())
}

// TestCancelledLoserIsNotTheCallsAnswer: a hedge's loser, cancelled by
// the hedging middleware, that reaches the innermost step only once
// errown's loop is retrying (so it is taken for errown's retry) is sent
// and ends cancelled: it is no outcome of the call. errown's retry that
// follows finds the policy's two attempts spent and is not sent; it
// answers with the callee's failure, the call's last outcome, not with
// the cancellation (which nobody above made: over a chain of hops it
// reached the root request as cancelled while the leaf only ever
// answered unavailable).
func TestCancelledLoserIsNotTheCallsAnswer(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 2, InitialBackoff: time.Nanosecond}},
	}, WithSinks(obs.Sinks{Scope: scope}))
	out := newOutbound(fail(errUnavailable), answerCancelled, succeed("a third attempt"))
	h := newStraggler(true)
	sink := &Sink{Out: below(m, h, out)}

	res, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	assert.Nil(t, res, "response")
	assert.Equal(t, yarpcerrors.CodeUnavailable, yarpcerrors.FromError(err).Code(), "the call's answer: %v", err)
	assert.Equal(t, yarpcerrors.CodeCancelled, yarpcerrors.FromError(h.hedgeErr).Code(), "the loser's own answer: %v", h.hedgeErr)
	assert.Len(t, out.Requests(), 2, "requests that left the process")
	assert.Equal(t, 2, sink.State.Attempts, "attempts")
	assert.Equal(t, yarpcerrors.CodeUnavailable, sink.State.Code, "the call's code")
	got := counters(scope)
	assert.Equal(t, int64(1), got["retry.denied+callee=callee,reason=foreign-attempts"], "errown's retry refused: %v", got)
	assert.Zero(t, got["retry.denied+callee=callee,reason=foreign-code"], "refused as a replay of a cancellation: %v", got)
}

// TestHedgeInErrownsBackoffTakesItsRetry: a hedge that reaches the
// innermost step after errown's loop decided to retry, during its
// backoff, is sent as a replay of the first attempt; it spends the
// policy's second attempt, so errown's retry after the backoff is not
// sent (it was, a third attempt under maxAttempts 2) and answers with
// the hedge's failure: no attempt of the call was under way when it
// arrived, so it is no hedge that counts apart. What it took from
// errown's retry counts in retry.starved_by_hedges (reason attempts).
func TestHedgeInErrownsBackoffTakesItsRetry(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	h := newStraggler(false)
	sleep := func(ctx context.Context, _ time.Duration) error {
		h.goAhead() // the hedge arrives while errown waits
		<-h.done
		return ctx.Err()
	}
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 2}},
	}, WithSinks(obs.Sinks{Scope: scope}), withClock(time.Now, sleep))
	hedgeFailed := yarpcerrors.UnavailableErrorf("the hedge failed")
	out := newOutbound(fail(errUnavailable), fail(hedgeFailed), succeed("a third attempt"))
	sink := &Sink{Out: below(m, h, out)}

	res, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	assert.Nil(t, res, "response")
	assert.Equal(t, hedgeFailed.Error(), fmt.Sprint(err), "the call's answer")
	assert.Equal(t, hedgeFailed.Error(), fmt.Sprint(h.hedgeErr), "the hedge's answer")
	assert.Len(t, out.Requests(), 2, "requests that left the process")
	assert.Equal(t, 2, sink.State.Attempts, "attempts")
	got := counters(scope)
	assert.Equal(t, int64(1), got["retry.foreign_attempts+callee=callee"], "the hedge, sent: %v", got)
	assert.Equal(t, int64(1), got["retry.denied+callee=callee,reason=foreign-attempts"], "errown's retry refused: %v", got)
	assert.Equal(t, int64(1), got["retry.starved_by_hedges+callee=callee,reason=attempts"], "errown's retry, its attempt taken: %v", got)
}

// thrice is an application's middleware that sends every call three
// times, one after the other, whatever the answers: errs are the answers.
type thrice struct{ errs []error }

func (t *thrice) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	var (
		res *transport.Response
		err error
	)
	for range 3 {
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
		r := *req
		res, err = out.Call(ctx, &r)
		t.errs = append(t.errs, err)
	}
	return res, err
}

// TestReplayAfterSuccessHeldToTheAttemptLimit: a replay with no outcome
// to judge it by (after a success) is still held to the policy's
// attempts: the third of a call under maxAttempts 2 is not sent.
func TestReplayAfterSuccessHeldToTheAttemptLimit(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 2}},
	}, WithSinks(obs.Sinks{Scope: scope}))
	out := newOutbound(succeed("ok"))
	app := &thrice{}
	sink := &Sink{Out: below(m, app, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	assert.Equal(t, yarpcerrors.CodeAborted, yarpcerrors.FromError(err).Code(), "the third's answer: %v", err)
	require.Len(t, app.errs, 3, "answers")
	assert.NoError(t, app.errs[0], "the first's answer")
	assert.NoError(t, app.errs[1], "the second's answer")
	assert.Len(t, out.Requests(), 2, "requests that left the process")
	assert.Equal(t, 2, sink.State.Attempts, "attempts")
	got := counters(scope)
	assert.Equal(t, int64(1), got["retry.foreign_attempts+callee=callee"], "the second, sent: %v", got)
	assert.Equal(t, int64(1), got["retry.denied+callee=callee,reason=foreign-attempts"], "the third, refused: %v", got)
}

// TestReplayAfterSuccessWithdrawsFromTheBudget: a replay with no outcome
// to judge it by (after a success) is an attempt past its call's first,
// and withdraws from the budget as a hedge does: with no floor, the first
// call's window (one request, 0.1 of a retry) has no room for it. (Before,
// it was sent and withdrew nothing.)
func TestReplayAfterSuccessWithdrawsFromTheBudget(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Ratio: 0.1, NoFloor: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 3}},
	}, WithSinks(obs.Sinks{Scope: scope}), newClock().option())
	out := newOutbound(succeed("ok"))
	app := &thrice{}
	sink := &Sink{Out: below(m, app, out)}

	_, err := m.Call(context.Background(), &transport.Request{Service: "callee", Procedure: "get"}, sink)

	assert.Equal(t, yarpcerrors.CodeAborted, yarpcerrors.FromError(err).Code(), "the third's answer: %v", err)
	require.Len(t, app.errs, 3, "answers")
	assert.NoError(t, app.errs[0], "the first's answer")
	assert.Len(t, out.Requests(), 1, "requests that left the process")
	got := counters(scope)
	assert.Equal(t, int64(2), got["retry.denied+callee=callee,reason=foreign-budget"], "the second and third, refused: %v", got)
	assert.Zero(t, got["retry.foreign_attempts+callee=callee"], "replays sent: %v", got)
}
