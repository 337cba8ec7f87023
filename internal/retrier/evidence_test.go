package retrier

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// httpTimeout answers as yarpc's HTTP outbound does when net/http sees
// the attempt's deadline before the outbound's own select: unknown, once
// the deadline passed.
func httpTimeout(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
	<-ctx.Done()
	return nil, yarpcerrors.UnknownErrorf("unknown error from http client: Post \"http://callee/\": %v", ctx.Err())
}

// shareOf returns the recent share of overloaded attempts of procedure.
func shareOf(o *overload, procedure string) float64 {
	sh, ok := o.byProc.Peek(procedure)
	if !ok {
		return 0
	}
	return sh.at(o.elapsed)
}

// TestTimeoutByTheClock: an attempt that ends unknown once its deadline
// passed is deadline-exceeded for every decision: it is retried, counts
// as overload evidence, and once 45 of them (a share of
// 1-(63/64)^45 >= 0.5) made the callee overloaded, the next retry is
// refused for overload. The procedure's share is its own: another
// procedure of the callee shows no overload. Alike on the direct path and
// with an application's middleware between errown's retry middleware and
// its innermost step (which classifies each attempt there).
func TestTimeoutByTheClock(t *testing.T) {
	passThrough := middleware.UnaryOutboundFunc(func(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
		return out.Call(ctx, req)
	})
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			scope := tally.NewTestScope("", nil)
			m := newMiddleware(t, retry.Config{
				Budget:   retry.BudgetConfig{Disabled: true},
				Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond, AttemptTimeout: time.Millisecond}},
			}, WithSinks(obs.Sinks{Scope: scope}))
			out := newOutbound(httpTimeout)
			c := m.callees["callee"]
			c.overload.elapsed = still // no share decays with time
			for i := range 23 {
				sink := &Sink{Out: out, State: CallState{direct: true}}
				if !direct {
					sink = &Sink{Out: below(m, passThrough, out)}
				}
				_, err := m.Call(context.Background(), req("callee", "get", "x"), sink)
				require.Error(t, err)
				assert.Equal(t, yarpcerrors.CodeDeadlineExceeded, sink.State.Code, "call %d: classified", i)
				if i < 22 {
					require.Equal(t, 2, sink.State.Attempts, "call %d: attempts, want retried", i)
					require.Equal(t, wire.RefusedNone, sink.State.Refused, "call %d: refused", i)
					continue
				}
				assert.Equal(t, 1, sink.State.Attempts, "call %d: attempts, want its retry refused", i)
				assert.Equal(t, wire.RefusedOverload, sink.State.Refused, "call %d: refused", i)
			}
			assert.Len(t, out.Requests(), 45, "attempts sent")
			assert.InDelta(t, 1-pow(63.0/64, 45), shareOf(c.overload, "get"), 1e-9, "get's share")
			assert.True(t, c.overload.Overloaded("get"), "get overloaded")
			assert.False(t, c.overload.Overloaded("put"), "put, which never timed out, overloaded")
			assert.Equal(t, int64(1), counters(scope)["retry.denied+callee=callee,reason=overload"], "retry.denied{reason=overload}")
		})
	}
}

func pow(x float64, n int) float64 {
	r := 1.0
	for range n {
		r *= x
	}
	return r
}

// TestTimeoutByTheClockRetryableCodes: a policy whose retryableCodes name
// only deadline-exceeded retries an attempt that ended unknown once its
// deadline passed, and one that names only unknown does not.
func TestTimeoutByTheClockRetryableCodes(t *testing.T) {
	tests := []struct {
		give []string
		want int // attempts
	}{
		{give: []string{"deadline-exceeded"}, want: 2},
		{give: []string{"unknown"}, want: 1},
	}
	for _, tt := range tests {
		m := newMiddleware(t, retry.Config{
			Budget:   retry.BudgetConfig{Disabled: true},
			Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond, AttemptTimeout: time.Millisecond, RetryableCodes: tt.give}},
		})
		out := newOutbound(httpTimeout, succeed("ok"))
		sink := &Sink{Out: out, State: CallState{direct: true}}
		_, _ = m.Call(context.Background(), req("callee", "get", "x"), sink)
		assert.Equal(t, tt.want, sink.State.Attempts, "retryableCodes %v: attempts", tt.give)
		assert.Len(t, out.Requests(), tt.want, "retryableCodes %v: sent", tt.give)
	}
}

// overloadedToTheFloor drives procedure's share of c's limit past the
// threshold and the limit to its floor, as timeouts would.
func overloadedToTheFloor(t *testing.T, o *overload, procedure string) {
	t.Helper()
	for o.Limit() > 1 || !o.Overloaded(procedure) {
		a, _ := o.admit(procedure)
		o.done(a, true)
	}
}

// TestCancelledAttemptHasNoOutcome: an attempt its caller gave up on (a
// hedge's loser, an inner hop whose caller went first) gives its slot
// back and moves neither the share nor the limit: it says nothing of the
// callee.
func TestCancelledAttemptHasNoOutcome(t *testing.T) {
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond}},
	})
	c := m.callees["callee"]
	c.overload.elapsed = still // no share decays with time
	overloadedToTheFloor(t, c.overload, "get")
	share, limit := shareOf(c.overload, "get"), c.overload.Limit()
	all := c.overload.all.at(c.overload.elapsed)
	require.Equal(t, 1.0, limit, "the floor")

	for _, direct := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		out := newOutbound(func(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
			return nil, yarpcerrors.CancelledErrorf("call cancelled: %v", ctx.Err())
		})
		sink := &Sink{Out: out, State: CallState{direct: direct}}
		if !direct {
			sink.Out = below(m, &loop{n: 1}, out)
		}
		_, err := m.Call(ctx, req("callee", "get", "x"), sink)
		require.Error(t, err)
		assert.Len(t, out.Requests(), 1, "direct %v: sent", direct)
		assert.Equal(t, int64(0), c.overload.inflight.Load(), "direct %v: the slot given back", direct)
		assert.Equal(t, limit, c.overload.Limit(), "direct %v: limit", direct)
		assert.Equal(t, share, shareOf(c.overload, "get"), "direct %v: get's share", direct)
		assert.Equal(t, all, c.overload.all.at(c.overload.elapsed), "direct %v: the callee's share", direct)
		f := sink.State.Storm.Storm()
		assert.Equal(t, wire.KnownFigures(wire.One), f, "direct %v: storm figures", direct)
	}
}

// TestCallersDeadlineIsNoEvidence: an attempt that timed out on its
// caller's deadline, shorter than the policy's attempt timeout, is the
// caller's doing: its slot goes back and the share stays nil. One that
// its own attempt timeout ended is the callee's.
func TestCallersDeadlineIsNoEvidence(t *testing.T) {
	tests := []struct {
		name           string
		callerDeadline time.Duration // 0: none
		attemptTimeout time.Duration
		wantShare      float64
	}{
		{name: "the caller's deadline first", callerDeadline: 2 * time.Millisecond, attemptTimeout: time.Minute},
		{name: "the attempt timeout first", callerDeadline: time.Minute, attemptTimeout: 2 * time.Millisecond, wantShare: 1 - pow(63.0/64, 3)},
		{name: "no caller deadline", attemptTimeout: 2 * time.Millisecond, wantShare: 1 - pow(63.0/64, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMiddleware(t, retry.Config{
				Budget:   retry.BudgetConfig{Disabled: true},
				Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 1, AttemptTimeout: tt.attemptTimeout}},
			})
			c := m.callees["callee"]
			c.overload.elapsed = still // no share decays with time
			c.overload.elapsed = still // no share decays with time
			out := newOutbound(func(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
				<-ctx.Done()
				return nil, yarpcerrors.DeadlineExceededErrorf("timed out")
			})
			for range 3 {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if tt.callerDeadline > 0 {
					ctx, cancel = context.WithTimeout(ctx, tt.callerDeadline)
				}
				sink := &Sink{Out: below(m, &loop{n: 1}, out)}
				_, err := m.Call(ctx, req("callee", "get", "x"), sink)
				cancel()
				require.Error(t, err)
			}
			assert.Len(t, out.Requests(), 3, "sent")
			assert.InDelta(t, tt.wantShare, shareOf(c.overload, "get"), 1e-9, "share")
			assert.Equal(t, int64(0), c.overload.inflight.Load(), "slots given back")
		})
	}
}

// TestOverloadEvidenceIsTheProcedures: a callee whose slow procedure
// took its limit to the floor, the one slot held, sheds that procedure's
// next attempt but sends a healthy procedure's (whose success then
// raises the limit, which is the callee's).
func TestOverloadEvidenceIsTheProcedures(t *testing.T) {
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), InitialBackoff: time.Nanosecond}},
	})
	c := m.callees["callee"]
	c.overload.elapsed = still // no share decays with time
	overloadedToTheFloor(t, c.overload, "report")
	hold, ok := c.overload.admit("report")
	require.True(t, ok, "the floor's slot")
	defer c.overload.done(hold, false)

	tests := []struct {
		procedure string
		wantSent  int
		wantCode  yarpcerrors.Code
	}{
		{procedure: "report", wantSent: 0, wantCode: yarpcerrors.CodeResourceExhausted},
		{procedure: "get", wantSent: 1, wantCode: yarpcerrors.CodeOK},
	}
	for _, tt := range tests {
		out := newOutbound(succeed("ok"))
		_, err := m.Call(context.Background(), req("callee", tt.procedure, "x"), &Sink{Out: out, State: CallState{direct: true}})
		assert.Equal(t, tt.wantCode, yarpcerrors.FromError(err).Code(), "%s: %v", tt.procedure, err)
		assert.Len(t, out.Requests(), tt.wantSent, "%s: sent", tt.procedure)
	}
}

// TestShedIsNoOverloadEvidence: an instance's shed (resource-exhausted,
// claimed, with pushback, marked by the shed header, as a callee's
// admission answers) is not retried, by the pushback, and leaves the
// limit on attempts in flight and the shares as they were, however many
// come back: the callee's admission holds what it can finish, and a
// caller that cut its own limit for it would fight that admission. Nor
// is any other refusal: an unmarked shed (a callee from before the
// marker) or a callee's own rate limiter. A claimed timeout is the
// evidence; an unclaimed one comes from further below.
func TestShedIsNoOverloadEvidence(t *testing.T) {
	const calls = 100
	exhausted := yarpcerrors.ResourceExhaustedErrorf("shed")
	tests := []struct {
		name      string
		give      step
		wantShare float64
		wantLimit float64
	}{
		{
			name:      "an instance's shed",
			give:      fail(exhausted, "errown-claim", "claimed", "errown-no-retry", "true", "errown-shed", "queue_full"),
			wantLimit: 1000,
		},
		{
			name:      "a claimed resource-exhausted with pushback, unmarked: a shed from before the marker",
			give:      fail(exhausted, "errown-claim", "claimed", "errown-no-retry", "true"),
			wantLimit: 1000,
		},
		{
			name:      "a resource-exhausted from a callee without errown: its rate limiter",
			give:      fail(exhausted),
			wantLimit: 1000,
		},
		{
			name:      "a timeout from a callee without errown",
			give:      fail(yarpcerrors.DeadlineExceededErrorf("timed out")),
			wantShare: 1 - pow(63.0/64, calls),
			wantLimit: 1,
		},
		{
			name:      "a shed marker on an answer that is no shed: unclaimed",
			give:      fail(exhausted, "errown-claim", "unclaimed", "errown-no-retry", "true", "errown-shed", "queue_full"),
			wantLimit: 1000,
		},
		{
			name:      "a claimed timeout",
			give:      fail(yarpcerrors.DeadlineExceededErrorf("timed out"), "errown-claim", "claimed"),
			wantShare: 1 - pow(63.0/64, calls),
			wantLimit: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMiddleware(t, retry.Config{
				Budget:   retry.BudgetConfig{Disabled: true},
				Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 1}},
			})
			c := m.callees["callee"]
			c.overload.elapsed = still // no share decays with time
			out := newOutbound(tt.give)
			for range calls {
				_, err := m.Call(context.Background(), req("callee", "get", "x"), &Sink{Out: out, State: CallState{direct: true}})
				require.Error(t, err)
			}
			assert.Len(t, out.Requests(), calls, "sent")
			assert.InDelta(t, tt.wantShare, shareOf(c.overload, "get"), 1e-9, "share")
			assert.InDelta(t, tt.wantShare, c.overload.all.at(c.overload.elapsed), 1e-9, "the callee's share")
			assert.Equal(t, tt.wantLimit, c.overload.Limit(), "limit")
			assert.Equal(t, int64(0), c.overload.inflight.Load(), "slots given back")
		})
	}
}
