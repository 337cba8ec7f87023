package retrier

import (
	"bytes"
	"context"
	"io"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// loop is an application's own retry middleware, blind to claims: it sends
// a call up to n times while it fails, buffering the body, and records
// what each send returned.
type loop struct {
	n int

	mu      sync.Mutex
	results []result
}

type result struct {
	code    yarpcerrors.Code
	body    string
	headers map[string]string
}

func (l *loop) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	var (
		res *transport.Response
		err error
	)
	for range l.n {
		r := *req
		r.Body, r.BodySize = bytes.NewReader(body), len(body)
		res, err = out.Call(ctx, &r)
		got := result{code: yarpcerrors.FromError(err).Code()}
		if res != nil {
			got.headers = maps.Clone(res.Headers.Items())
			if res.Body != nil {
				b, _ := io.ReadAll(res.Body)
				got.body = string(b)
				_ = res.Body.Close()
				res.Body = io.NopCloser(bytes.NewReader(b))
			}
			if res.ApplicationError && got.code == yarpcerrors.CodeOK {
				got.code = yarpcerrors.CodeUnknown
			}
		}
		l.mu.Lock()
		l.results = append(l.results, got)
		l.mu.Unlock()
		if err == nil && (res == nil || !res.ApplicationError) {
			return res, err
		}
	}
	return res, err
}

// below returns out with the application's middleware and then m's
// innermost step in front of it, as Apply chains them.
func below(m *Middleware, app middleware.UnaryOutbound, out transport.UnaryOutbound) transport.UnaryOutbound {
	return middleware.ApplyUnaryOutbound(out, yarpc.UnaryOutboundMiddleware(app, m.Attempts()))
}

func TestAttemptsHoldsForeignRetries(t *testing.T) {
	const (
		foreignSent = "retry.foreign_attempts+callee=callee"
		attempts    = "retry.attempts+callee=callee"
		suppressed  = "retry.suppressed+callee=callee"
		would       = "retry.would_suppress+callee=callee"
	)
	denied := func(reason string) string { return "retry.denied+callee=callee,reason=" + reason }
	policy := func(p retry.PolicyConfig) retry.Config {
		p.Service = "callee"
		if p.Idempotent == nil {
			p.Idempotent = new(true)
		}
		return retry.Config{Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{p}}
	}
	claimed := fail(errUnavailable, "errown-claim", "claimed")
	unclaimed := fail(errUnavailable, "errown-claim", "unclaimed")
	tests := []struct {
		name         string
		give         retry.Config
		giveLoop     int // sends of the application's middleware per errown attempt
		giveScript   []step
		giveDeadline time.Duration
		wantSent     int           // requests that left the process
		wantAttempt  []string      // their attempt headers
		want         reqlog.Result // Attempts and Refused
		wantCounters map[string]int64
	}{
		{
			name:         "claimed: the policy's attempts bound the application's replays",
			give:         policy(retry.PolicyConfig{MaxAttempts: 2}),
			giveLoop:     3,
			giveScript:   []step{claimed},
			wantSent:     2,
			wantAttempt:  []string{"", "2"},
			want:         reqlog.Result{Attempts: 2},
			wantCounters: map[string]int64{foreignSent: 1, denied("foreign-attempts"): 1},
		},
		{
			name:         "claimed, three attempts: errown retries after the application's replay",
			give:         policy(retry.PolicyConfig{MaxAttempts: 3}),
			giveLoop:     2,
			giveScript:   []step{claimed},
			wantSent:     3,
			wantAttempt:  []string{"", "2", "3"},
			want:         reqlog.Result{Attempts: 3},
			wantCounters: map[string]int64{foreignSent: 1, attempts: 1, denied("foreign-attempts"): 1},
		},
		{
			name:         "unclaimed: the replay does not leave",
			give:         policy(retry.PolicyConfig{}),
			giveLoop:     2,
			giveScript:   []step{unclaimed},
			wantSent:     1,
			wantAttempt:  []string{""},
			want:         reqlog.Result{Attempts: 1},
			wantCounters: map[string]int64{denied("foreign-unclaimed"): 1, suppressed: 1},
		},
		{
			name:         "unclaimed in observe mode: the replay goes",
			give:         policy(retry.PolicyConfig{Mode: retry.ModeObserve}),
			giveLoop:     2,
			giveScript:   []step{unclaimed},
			wantSent:     2,
			wantAttempt:  []string{"", "2"},
			want:         reqlog.Result{Attempts: 2},
			wantCounters: map[string]int64{foreignSent: 1, would: 1},
		},
		{
			name:         "pushback",
			give:         policy(retry.PolicyConfig{}),
			giveLoop:     2,
			giveScript:   []step{fail(errUnavailable, "errown-no-retry", "true")},
			wantSent:     1,
			wantAttempt:  []string{""},
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedPushback},
			wantCounters: map[string]int64{denied("foreign-pushback"): 1, denied("pushback"): 1},
		},
		{
			name:         "an answer is not retried by anyone",
			give:         policy(retry.PolicyConfig{}),
			giveLoop:     2,
			giveScript:   []step{fail(errInvalid)},
			wantSent:     1,
			wantAttempt:  []string{""},
			want:         reqlog.Result{Attempts: 1},
			wantCounters: map[string]int64{denied("foreign-code"): 1},
		},
		{
			name:         "a code the policy does not retry",
			give:         policy(retry.PolicyConfig{RetryableCodes: []string{"internal"}}),
			giveLoop:     2,
			giveScript:   []step{claimed},
			wantSent:     1,
			wantAttempt:  []string{""},
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedCode},
			wantCounters: map[string]int64{denied("foreign-code"): 1, denied("code"): 1},
		},
		{
			name:         "not idempotent",
			give:         policy(retry.PolicyConfig{Idempotent: new(false)}),
			giveLoop:     2,
			giveScript:   []step{claimed},
			wantSent:     1,
			wantAttempt:  []string{""},
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedNotIdempotent},
			wantCounters: map[string]int64{denied("foreign-not-idempotent"): 1, denied("not-idempotent"): 1},
		},
		{
			name: "no budget left",
			give: retry.Config{
				Budget:   retry.BudgetConfig{Ratio: 0.001, NoFloor: true},
				Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}},
			},
			giveLoop:     2,
			giveScript:   []step{claimed},
			wantSent:     1,
			wantAttempt:  []string{""},
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedBudget},
			wantCounters: map[string]int64{denied("foreign-budget"): 1, denied("budget"): 1},
		},
		{
			name:         "too little of the deadline left",
			give:         policy(retry.PolicyConfig{MinRemaining: time.Second}),
			giveLoop:     2,
			giveScript:   []step{claimed},
			giveDeadline: 500 * time.Millisecond,
			wantSent:     1,
			wantAttempt:  []string{""},
			want:         reqlog.Result{Attempts: 1, Refused: wire.RefusedDeadline},
			wantCounters: map[string]int64{denied("foreign-deadline"): 1, denied("deadline"): 1},
		},
		{
			name:         "no policy: no attempt limit of errown's, replays go",
			give:         retry.Config{},
			giveLoop:     3,
			giveScript:   []step{claimed},
			wantSent:     3,
			wantAttempt:  []string{"", "2", "3"},
			want:         reqlog.Result{Attempts: 3},
			wantCounters: map[string]int64{foreignSent: 2},
		},
		{
			name:         "no policy, unclaimed: the replay does not leave",
			give:         retry.Config{},
			giveLoop:     3,
			giveScript:   []step{unclaimed},
			wantSent:     1,
			wantAttempt:  []string{""},
			want:         reqlog.Result{Attempts: 1},
			wantCounters: map[string]int64{denied("foreign-unclaimed"): 2},
		},
		{
			name:         "success: nothing to replay",
			give:         policy(retry.PolicyConfig{}),
			giveLoop:     3,
			giveScript:   []step{succeed("ok")},
			wantSent:     1,
			wantAttempt:  []string{""},
			want:         reqlog.Result{Attempts: 1},
			wantCounters: map[string]int64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			scope := tally.NewTestScope("", nil)
			m := newMiddleware(t, tt.give, clock.option(), fixedRand(0.5), WithSinks(obs.Sinks{Scope: scope}))
			out := newOutbound(tt.giveScript...)
			deadline := tt.giveDeadline
			if deadline == 0 {
				deadline = time.Minute
			}
			ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(deadline))
			defer cancel()
			sink := &Sink{Out: below(m, &loop{n: tt.giveLoop}, out)}

			_, _ = m.Call(ctx, req("callee", "get", "hello"), sink)

			sent := out.Requests()
			require.Len(t, sent, tt.wantSent, "requests that left the process")
			for i, s := range sent {
				assert.Equal(t, "hello", s.Body, "request %d: body", i)
				assert.Equal(t, tt.wantAttempt[i], s.Headers["errown-attempt"], "request %d: attempt header", i)
			}
			assert.Equal(t, tt.want, reqlog.Result{Attempts: sink.State.Attempts, Refused: sink.State.Refused}, "state")
			got := counters(scope)
			delete(got, "retry.calls+callee=callee")
			assert.Equal(t, tt.wantCounters, got, "counters")
		})
	}
}

// TestAttemptsRefusedReplayReturnsThePrevious: the application's
// middleware gets the refused replay's answer as the previous attempt
// gave it, body, headers and all: a Thrift exception with its claim.
func TestAttemptsRefusedReplayReturnsThePrevious(t *testing.T) {
	m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}})
	code := yarpcerrors.CodeUnavailable
	out := newOutbound(appError(&code, "errown-claim", "unclaimed", "errown-code", "unavailable"))
	app := &loop{n: 2}
	sink := &Sink{Out: below(m, app, out)}

	res, err := m.Call(context.Background(), req("callee", "get", "x"), sink)

	require.NoError(t, err, "Call, want the application error")
	require.NotNil(t, res, "Call's response, want the application error")
	require.True(t, res.ApplicationError, "Call = %v, want the application error", res)
	assert.Len(t, out.Requests(), 1, "requests that left the process")
	require.Len(t, app.results, 2, "answers the application's middleware saw")
	first, second := app.results[0], app.results[1]
	assert.Equal(t, "exception", first.body, "the previous answer's body")
	assert.Equal(t, first.body, second.body, "refused replay answered %+v, want the previous answer %+v", second, first)
	assert.True(t, maps.Equal(second.headers, first.headers), "refused replay answered %+v, want the previous answer %+v", second, first)
	assert.Equal(t, first.code, second.code, "refused replay answered %+v, want the previous answer %+v", second, first)
}

func TestAttemptsWithoutCallStatePassesThrough(t *testing.T) {
	m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}})
	out := newOutbound(fail(errUnavailable, "errown-claim", "unclaimed"))
	chain := below(m, &loop{n: 3}, out)

	_, _ = chain.Call(context.Background(), req("callee", "get", "x"))

	assert.Len(t, out.Requests(), 3, "requests that left: with no call state the step has nothing to go by")
}

// hedge sends every call twice at once.
type hedge struct{}

func (hedge) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = out.Call(ctx, &transport.Request{Service: req.Service, Procedure: req.Procedure})
	}()
	res, err := out.Call(ctx, req)
	wg.Wait()
	return res, err
}

// TestAttemptsConcurrentSends: a middleware sending one call twice at once
// (a hedge) gets both sent, each counted in the call's attempts and the
// second in retry.foreign_attempts, and races with nothing (-race).
func TestAttemptsConcurrentSends(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, WithSinks(obs.Sinks{Scope: scope}))
	out := newOutbound(func(context.Context, *transport.Request) (*transport.Response, error) {
		testtime.Sleep(time.Millisecond)
		return &transport.Response{}, nil
	})
	sink := &Sink{Out: below(m, hedge{}, out)}
	for i := range 20 {
		sink.State = CallState{}
		_, _ = m.Call(context.Background(), req("callee", "get", "x"), sink)
		assert.Equal(t, 2, sink.State.Attempts, "call %d: attempts, both sent counted", i)
	}
	assert.Len(t, out.Requests(), 40, "requests that left")
	// Each pair: one counted as the call's attempt, the other (whichever
	// came second) as a replay, concurrent or after the first.
	assert.Equal(t, int64(20), counters(scope)["retry.foreign_attempts+callee=callee"], "foreign attempts")
}

func TestAttemptsWarnsOncePerProcedure(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, WithSinks(obs.Sinks{Logger: zap.New(core)}))
	out := newOutbound(fail(errUnavailable, "errown-claim", "unclaimed"))
	for range 3 {
		sink := &Sink{Out: below(m, &loop{n: 2}, out)}
		_, _ = m.Call(context.Background(), req("callee", "get", "x"), sink)
	}
	entries := logs.FilterMessageSnippet("errown refused a retry it did not make").All()
	require.Len(t, entries, 1, "warnings, want once per procedure: %v", logs.All())
	fields := entries[0].ContextMap()
	assert.Equal(t, "callee", fields["service"], "warning fields %v", fields)
	assert.Equal(t, "get", fields["procedure"], "warning fields %v", fields)
	assert.Equal(t, "foreign-unclaimed", fields["reason"], "warning fields %v", fields)
}
