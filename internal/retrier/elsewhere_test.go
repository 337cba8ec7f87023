package retrier

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/errown/errown/retrypeer"
	"github.com/opentracing/opentracing-go"
	"github.com/opentracing/opentracing-go/mocktracer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/peer/abstractpeer"
	"go.uber.org/yarpc/peer/roundrobin"
	"go.uber.org/yarpc/yarpcerrors"
)

// availablePeers is a peer.Transport whose peers are always available:
// what yarpc's lists choose among, without connections.
type availablePeers struct{}

func (availablePeers) RetainPeer(id peer.Identifier, _ peer.Subscriber) (peer.Peer, error) {
	p := abstractpeer.NewPeer(abstractpeer.PeerIdentifier(id.Identifier()), availablePeers{})
	p.SetStatus(peer.Available)
	return p, nil
}

func (availablePeers) ReleasePeer(peer.Identifier, peer.Subscriber) error { return nil }

// fleet is a callee of several instances behind package retrypeer's
// chooser over a round robin, as a yarpc outbound sends to them: the
// instances answer from answer in the order they are first reached
// (the round robin starts anywhere), and count what they got.
type fleet struct {
	transport.UnaryOutbound // lifecycle only
	chooser                 *retrypeer.Chooser
	answer                  []step

	mu    sync.Mutex
	roles map[string]int // instance → its answer
	got   map[string]int
}

func newFleet(t *testing.T, answer ...step) *fleet {
	t.Helper()
	list := roundrobin.New(availablePeers{})
	require.NoError(t, list.Start())
	t.Cleanup(func() { assert.NoError(t, list.Stop()) })
	var ids []peer.Identifier
	for i := range answer {
		ids = append(ids, abstractpeer.PeerIdentifier(fmt.Sprintf("p%d", i)))
	}
	require.NoError(t, list.Update(peer.ListUpdates{Additions: ids}))
	return &fleet{UnaryOutbound: newOutbound(), chooser: retrypeer.New(list), answer: answer, roles: map[string]int{}, got: map[string]int{}}
}

func (o *fleet) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	p, done, err := o.chooser.Choose(ctx, req)
	if err != nil {
		return nil, err
	}
	id := p.Identifier()
	o.mu.Lock()
	o.got[id]++
	role, ok := o.roles[id]
	if !ok {
		role = len(o.roles)
		o.roles[id] = role
	}
	o.mu.Unlock()
	res, err := o.answer[role](ctx, req)
	done(err)
	return res, err
}

// passingThrough is application middleware between errown's retry
// middleware and its innermost step that passes each attempt on.
var passingThrough = middleware.UnaryOutboundFunc(func(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	return out.Call(ctx, req)
})

// retriesInWindow returns the retries b counts in its window.
func retriesInWindow(b *budget) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, w := b.current()
	return w.retries
}

// Every shed below is an instance's admission's: resource-exhausted,
// claimed, with pushback, marked.
var (
	errShed  = yarpcerrors.ResourceExhaustedErrorf("errown: get shed by callee (inbound.admission, queue_full)")
	shedding = fail(errShed, "errown-claim", "claimed", "errown-no-retry", "true", "errown-shed", "queue_full")
)

// TestShedRetriedOnceElsewhere: the direct caller retries an instance's
// shed once, at once, on another instance, never on the one that shed
// it: with one instance, or every other one tried, the call fails with
// the shed's answer, its pushback refusing the retry as before, no
// retry counted and its budget withdrawal given back. Alike on the
// direct path and below middleware errown does not own.
func TestShedRetriedOnceElsewhere(t *testing.T) {
	defer reqlog.SetRoutesRead(true)() // restores what retrypeer.New sets
	unmarked := fail(errShed, "errown-claim", "claimed", "errown-no-retry", "true")
	policy := retry.PolicyConfig{Service: "callee", Idempotent: new(true), MaxAttempts: 3}
	tests := []struct {
		name         string
		give         []step // the instances' answers
		policy       retry.PolicyConfig
		budget       retry.BudgetConfig
		wantErr      bool
		wantAttempts int
		wantRefused  wire.Refusal
		wantRetries  int64 // retry.attempts
		wantMost     int   // requests any one instance got
	}{
		{
			name:   "two instances, one sheds: served by the other",
			give:   []step{shedding, succeed("ok")},
			policy: policy, wantAttempts: 2, wantRetries: 1, wantMost: 1,
		},
		{
			name:   "one instance sheds: not retried",
			give:   []step{shedding},
			policy: policy, wantErr: true, wantAttempts: 1, wantRefused: wire.RefusedPushback, wantMost: 1,
		},
		{
			name:   "every instance sheds: one retry elsewhere, no more",
			give:   []step{shedding, shedding, shedding},
			policy: policy, wantErr: true, wantAttempts: 2, wantRefused: wire.RefusedPushback, wantRetries: 1, wantMost: 1,
		},
		{
			name:   "a handler's own resource-exhausted with pushback: not retried",
			give:   []step{unmarked, succeed("ok")},
			policy: policy, wantErr: true, wantAttempts: 1, wantRefused: wire.RefusedPushback, wantMost: 1,
		},
		{
			name:   "not idempotent: not retried",
			give:   []step{shedding, succeed("ok")},
			policy: retry.PolicyConfig{Service: "callee", Idempotent: new(false), MaxAttempts: 3}, wantErr: true, wantAttempts: 1, wantRefused: wire.RefusedPushback, wantMost: 1,
		},
		{
			name:   "the budget spent: not retried",
			give:   []step{shedding, succeed("ok")},
			policy: policy, budget: retry.BudgetConfig{Ratio: 0.01, NoFloor: true}, wantErr: true, wantAttempts: 1, wantRefused: wire.RefusedPushback, wantMost: 1,
		},
		{
			name:   "one attempt: not retried",
			give:   []step{shedding, succeed("ok")},
			policy: retry.PolicyConfig{Service: "callee", Idempotent: new(true), MaxAttempts: 1}, wantErr: true, wantAttempts: 1, wantMost: 1,
		},
	}
	for _, tt := range tests {
		for _, direct := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/direct=%v", tt.name, direct), func(t *testing.T) {
				scope := tally.NewTestScope("", nil)
				m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{tt.policy}, Budget: tt.budget}, newClock().option(), WithSinks(obs.Sinks{Scope: scope}))
				c := m.callees["callee"]
				out := newFleet(t, tt.give...)
				budget := retriesInWindow(c.budget)
				sink := &Sink{Out: out, State: CallState{direct: true}}
				if !direct {
					sink = &Sink{Out: below(m, passingThrough, out)}
				}
				res, err := m.Call(context.Background(), req("callee", "get", "x"), sink)
				st := &sink.State
				if tt.wantErr {
					require.Error(t, err)
					assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code(), "err %v", err)
					assert.Equal(t, ownership.ClaimClaimed, st.Claim, "the shed's claim")
					assert.True(t, st.NoRetry, "the shed's pushback: nobody above retries it")
					require.NotNil(t, res, "the shed's response")
					assert.Equal(t, "true", res.Headers.Items()["errown-no-retry"], "the shed's response")
				} else {
					require.NoError(t, err)
					assert.Equal(t, wire.ClassOK, st.Class)
					peers := st.Route.Peers(nil)
					require.Len(t, peers, 2)
					assert.NotEqual(t, peers[0], peers[1], "served by another instance")
				}
				assert.Equal(t, tt.wantAttempts, st.Attempts, "attempts")
				assert.Equal(t, tt.wantRefused, st.Refused, "refused")
				assert.Equal(t, tt.wantRetries, scope.Snapshot().Counters()["retry.attempts+callee=callee"].Value(), "retry.attempts")
				out.mu.Lock()
				for id, n := range out.got {
					assert.LessOrEqual(t, n, tt.wantMost, "requests %s got", id)
				}
				out.mu.Unlock()
				assert.Equal(t, int64(0), c.overload.inflight.Load(), "slots given back")
				wantBudget := budget
				if tt.wantErr && tt.wantRetries > 0 {
					wantBudget++ // a retry that failed stays withdrawn
				}
				assert.Equal(t, wantBudget, retriesInWindow(c.budget), "the budget's retries")
			})
		}
	}
}

// TestShedNotRetriedWithoutRetrypeer: with no chooser that records the
// call's peers, the retry could reach the instance that shed the call:
// the shed is not retried, its pushback refusing it, as before.
func TestShedNotRetriedWithoutRetrypeer(t *testing.T) {
	tests := []struct {
		name   string
		routes bool // a retrypeer chooser exists in the process, for other outbounds
	}{
		{name: "no retrypeer chooser in the process"},
		{name: "a retrypeer chooser elsewhere, a plain one here", routes: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer reqlog.SetRoutesRead(tt.routes)()
			m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
			out := newOutbound(shedding, succeed("ok"))
			sink := &Sink{Out: out, State: CallState{direct: true}}
			_, err := m.Call(context.Background(), req("callee", "get", "x"), sink)
			require.Error(t, err)
			assert.Len(t, out.Requests(), 1, "sent")
			assert.Equal(t, wire.RefusedPushback, sink.State.Refused)
			assert.True(t, sink.State.Shed, "read as a shed")
		})
	}
}

// TestShedRetryChooserFailsOtherwise: a retry of a shed whose peer
// chooser fails for another reason than having no other instance (the
// list stopped, no peer available in time) reached the innermost step:
// it is the call's outcome, as for any retry, not the shed.
func TestShedRetryChooserFailsOtherwise(t *testing.T) {
	defer reqlog.SetRoutesRead(true)()
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
			noPeer := yarpcerrors.UnavailableErrorf("no peer available")
			out := newOutbound(
				func(ctx context.Context, r *transport.Request) (*transport.Response, error) {
					reqlog.RouteFromContext(ctx).Record("p0")
					return shedding(ctx, r)
				},
				fail(noPeer), // chose nothing: the Route stays strict
			)
			sink := &Sink{Out: out, State: CallState{direct: true}}
			if !direct {
				sink = &Sink{Out: below(m, passingThrough, out)}
			}
			_, err := m.Call(context.Background(), req("callee", "get", "x"), sink)
			assert.Equal(t, noPeer, err)
			assert.Len(t, out.Requests(), 2, "sent")
			assert.Equal(t, 2, sink.State.Attempts)
			assert.Equal(t, yarpcerrors.CodeUnavailable, sink.State.Code)
		})
	}
}

// shedInstance returns the instance of o that answered with its first
// step (the one that shed), and how many requests it got.
func (o *fleet) shedInstance() (string, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, role := range o.roles {
		if role == 0 {
			return id, o.got[id]
		}
	}
	return "", 0
}

// TestShedInstanceNotReachedByALaterRetry: the call's first attempt is
// shed by one instance, its retry elsewhere fails retryably on the
// other, and the policy allows a third attempt: that ordinary retry
// must not go back to the instance that shed the call (calls.Route:
// "which must never reach that instance again").
func TestShedInstanceNotReachedByALaterRetry(t *testing.T) {
	defer reqlog.SetRoutesRead(true)()
	unavailable := fail(yarpcerrors.UnavailableErrorf("down"), "errown-claim", "claimed")
	m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 3}}}, newClock().option())
	out := newFleet(t, shedding, unavailable)
	sink := &Sink{Out: out, State: CallState{direct: true}}
	_, _ = m.Call(context.Background(), req("callee", "get", "x"), sink)
	id, got := out.shedInstance()
	assert.Equal(t, 1, got, "requests the shedding instance %s got; route %v", id, sink.State.Route.Peers(nil))
}

// TestShedRetryHedgeNotToTheShedInstance: below a hedging middleware,
// the retry of a shed goes to another instance, and the hedge the
// hedger sends of that retry must not go to the instance that shed the
// call either.
func TestShedRetryHedgeNotToTheShedInstance(t *testing.T) {
	defer reqlog.SetRoutesRead(true)()
	m := newMiddleware(t, retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 3}},
	}, newClock().option())
	out := newFleet(t, shedding, outboundtest.Delay(100*time.Millisecond, succeed("ok")))
	h := &hedger{delay: 20 * time.Millisecond}
	sink := &Sink{Out: below(m, h, out)}
	_, err := m.Call(context.Background(), req("callee", "get", "x"), sink)
	h.wait()
	id, got := out.shedInstance()
	assert.Equal(t, 1, got, "requests the shedding instance %s got", id)
	require.NoError(t, err, "the other instance serves the retry")
}

// TestShedRetrySentNowhereIsNoSucceededRetry: the retry of a shed that
// went nowhere (one instance) gives its withdrawal back, and the
// budget's view counts no retry that succeeded: none was sent.
func TestShedRetrySentNowhereIsNoSucceededRetry(t *testing.T) {
	defer reqlog.SetRoutesRead(true)()
	m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
	c := m.callees["callee"]
	out := newFleet(t, shedding)
	for range 3 {
		_, err := m.Call(context.Background(), req("callee", "get", "x"), &Sink{Out: out, State: CallState{direct: true}})
		require.Error(t, err)
	}
	assert.Equal(t, int64(0), retriesInWindow(c.budget), "withdrawals given back")
	succeeded, refused, _ := c.budget.outcomes()
	assert.Equal(t, int64(0), succeeded, "retries that succeeded")
	assert.Equal(t, int64(0), refused, "retries the budget refused")
}

// TestShedRetryTraced: the caller's span records the retry of a shed
// once it went (errown.retry), and, sent nowhere, the pushback's
// refusal (errown.retry_refused), never a retry that was not sent.
func TestShedRetryTraced(t *testing.T) {
	defer reqlog.SetRoutesRead(true)()
	tests := []struct {
		name string
		give []step
		want []string
	}{
		{name: "another instance: retried", give: []step{shedding, succeed("ok")}, want: []string{"errown.retry"}},
		{name: "one instance: refused", give: []step{shedding}, want: []string{"errown.retry_refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
			sp := mocktracer.New().StartSpan("call")
			ctx := opentracing.ContextWithSpan(context.Background(), sp)
			_, _ = m.Call(ctx, req("callee", "get", "x"), &Sink{Out: newFleet(t, tt.give...), State: CallState{direct: true}})
			sp.Finish()
			var events []string
			for _, l := range sp.(*mocktracer.MockSpan).Logs() {
				for _, f := range l.Fields {
					if f.Key == "event" {
						events = append(events, f.ValueString)
					}
				}
			}
			assert.Equal(t, tt.want, events)
		})
	}
}

// TestShedRetryWhileOverloaded: a callee overloaded by its timeouts
// gets no retry of a shed in enforce mode (the pushback refuses it, as
// before); observe mode retries it elsewhere and counts what enforce
// would have refused (retry.would_overload), as for any retry.
func TestShedRetryWhileOverloaded(t *testing.T) {
	defer reqlog.SetRoutesRead(true)()
	for _, tt := range []struct {
		mode        retry.Mode
		wantErr     bool
		wantWould   int64
		wantRetries int64
	}{
		{mode: retry.ModeEnforce, wantErr: true},
		{mode: retry.ModeObserve, wantWould: 1, wantRetries: 1},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			scope := tally.NewTestScope("", nil)
			m := newMiddleware(t, retry.Config{Mode: tt.mode, Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true), MaxAttempts: 3}}}, newClock().option(), WithSinks(obs.Sinks{Scope: scope}))
			c := m.callees["callee"]
			c.overload.elapsed = still
			for range 100 {
				c.overload.done(c.overload.unheld("get"), true) // timeouts
			}
			require.True(t, c.overload.Overloaded("get"))
			out := newFleet(t, shedding, succeed("ok"))
			_, err := m.Call(context.Background(), req("callee", "get", "x"), &Sink{Out: out, State: CallState{direct: true}})
			counters := scope.Snapshot().Counters()
			if tt.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantRetries, counters["retry.attempts+callee=callee"].Value(), "retry.attempts")
			var would int64
			if c, ok := counters["retry.would_overload+callee=callee"]; ok {
				would = c.Value()
			}
			assert.Equal(t, tt.wantWould, would, "retry.would_overload")
		})
	}
}
