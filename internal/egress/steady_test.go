package egress

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// answer is one attempt's result for script: its headers, whether it
// fails (unavailable), and whether it is an application error with code
// invalid-argument (an answer).
type answer struct {
	headers []string // name, value, ...
	fail    bool
	app     bool
}

// script returns the steps answering the attempts of calls in order, the
// last answer again when they run out, each response's body naming the
// attempt it answers ("answer 2" for the second sent).
func script(answers []answer) []outboundtest.Step {
	var n atomic.Int32
	steps := make([]outboundtest.Step, len(answers))
	for i, a := range answers {
		steps[i] = func(context.Context, *transport.Request) (*transport.Response, error) {
			res := &transport.Response{Headers: outboundtest.Headers(a.headers...), Body: io.NopCloser(strings.NewReader(fmt.Sprint("answer ", n.Add(1))))}
			switch {
			case a.app:
				code := yarpcerrors.CodeInvalidArgument
				res.ApplicationError = true
				res.ApplicationErrorMeta = &transport.ApplicationErrorMeta{Code: &code}
				return res, nil
			case a.fail:
				return res, yarpcerrors.UnavailableErrorf("down")
			}
			return res, nil
		}
	}
	return steps
}

// TestSteadyPathAsChain: a steady-state call through the direct path
// (errown's retry middleware right above the transport, whose first
// attempt goes through retrier.SendFirst) leaves what the same call
// leaves through a yarpc chain of the egress middleware, the retry
// middleware and the innermost attempt step as middleware of their own
// (every attempt through the pooled call and its CallState): the same
// attempts sent, the same response and error, the same egress log
// (entries, counts, storm figures), every metric the same, and the caller
// procedure in an incident afterwards or not alike.
func TestSteadyPathAsChain(t *testing.T) {
	policy := func(f func(*retry.PolicyConfig)) retry.Config {
		p := retry.PolicyConfig{Service: "payments", Idempotent: new(true), InitialBackoff: time.Nanosecond, MaxBackoff: time.Nanosecond}
		if f != nil {
			f(&p)
		}
		return retry.Config{Policies: []retry.PolicyConfig{p}}
	}
	claimed := answer{fail: true, headers: []string{"errown-claim", "claimed"}}
	tests := []struct {
		name    string
		cfg     retry.Config
		body    func() io.Reader
		answers []answer
	}{
		{name: "no policy: success", answers: []answer{{}}},
		{name: "no policy: claimed failure", answers: []answer{claimed}},
		{name: "success", cfg: policy(nil), answers: []answer{{}}},
		{name: "success with storm figures", cfg: policy(nil), answers: []answer{{headers: []string{"errown-storm", "3,4,1,1,1"}}}},
		{name: "success with unknown figures", cfg: policy(nil), answers: []answer{{headers: []string{"errown-storm", "unknown"}}}},
		{name: "claimed failure, then success", cfg: policy(nil), answers: []answer{claimed, {}}},
		{name: "claimed failure twice", cfg: policy(nil), answers: []answer{claimed}},
		{name: "unclaimed failure", cfg: policy(nil), answers: []answer{{fail: true, headers: []string{"errown-claim", "unclaimed"}}}},
		{name: "missing claim", cfg: policy(nil), answers: []answer{{fail: true}}},
		{name: "pushback", cfg: policy(nil), answers: []answer{{fail: true, headers: []string{"errown-claim", "claimed", "errown-no-retry", "true"}}}},
		{name: "answer", cfg: policy(nil), answers: []answer{{app: true, headers: []string{"errown-claim", "claimed"}}}},
		{name: "not idempotent", cfg: policy(func(p *retry.PolicyConfig) { p.Idempotent = new(false) }), answers: []answer{claimed}},
		{name: "code not retried", cfg: policy(func(p *retry.PolicyConfig) { p.RetryableCodes = []string{"internal"} }), answers: []answer{claimed}},
		{name: "attempt timeout", cfg: policy(func(p *retry.PolicyConfig) { p.AttemptTimeout = time.Second }), answers: []answer{claimed, {}}},
		{name: "a body to read", cfg: policy(nil), body: func() io.Reader { return strings.NewReader("payload") }, answers: []answer{claimed, {}}},
		{name: "observe mode", cfg: func() retry.Config { c := policy(nil); c.Mode = retry.ModeObserve; return c }(), answers: []answer{claimed, {}}},
	}
	type run struct {
		res      string // the body of the response the caller got
		app      bool   // whether it was an application error
		headers  map[string]string
		err      error
		budget   [2]int64 // the callee's retry budget: requests, retries
		bodies   []string
		attempts []string
		entries  []calls.Entry
		counts   calls.Counts
		storm    wire.Figures
		counters map[string]int64
		hot      bool
	}
	call := func(t *testing.T, cfg retry.Config, body func() io.Reader, answers []answer, direct bool) run {
		scope := tally.NewTestScope("", nil)
		r, err := retrier.New(cfg, retrier.WithSinks(obs.Sinks{Scope: scope}))
		require.NoError(t, err)
		mw, err := New(outbound.Config{}, WithSinks(obs.Sinks{Scope: scope}), WithInner(r))
		require.NoError(t, err)
		logs, err := reqlog.NewMap(reqlog.Config{})
		require.NoError(t, err)
		ctx, log := logs.OpenContext(context.Background(), "checkout")
		out := outboundtest.New(script(answers)...)
		req := &transport.Request{Caller: "shop", Service: "payments", Procedure: "charge", Encoding: "raw", Headers: transport.NewHeaders()}
		if body != nil {
			req.Body = body()
		} else {
			req.Body = bytes.NewReader([]byte("payload"))
		}
		var res *transport.Response
		if direct {
			res, err = mw.Direct(r.Attempts()).Call(ctx, req, out)
		} else {
			chain := middleware.ApplyUnaryOutbound(out, r.Attempts())
			res, err = mw.Call(ctx, req, chain)
		}
		var got run
		got.err = err
		if res != nil {
			got.app, got.headers = res.ApplicationError, res.Headers.OriginalItems()
			if res.Body != nil {
				b, rerr := io.ReadAll(res.Body)
				require.NoError(t, rerr)
				got.res = string(b)
			}
		}
		for _, b := range r.Budgets() {
			if b.Callee == "payments" {
				got.budget = [2]int64{b.Requests, b.Retries}
			}
		}
		for _, r := range out.Requests() {
			got.bodies = append(got.bodies, r.Body)
			got.attempts = append(got.attempts, r.Headers["errown-attempt"])
		}
		sum := log.Egress.CloseSummary()
		got.entries = append([]calls.Entry(nil), sum.Failures...)
		got.counts, got.storm = sum.Counts, sum.Storm
		sum.Release()
		got.counters = make(map[string]int64)
		for k, c := range scope.Snapshot().Counters() {
			got.counters[k] = c.Value()
		}
		got.hot = mw.incidents.hot(ownership.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "charge"})
		logs.Remove(log)
		return got
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chain := call(t, tt.cfg, tt.body, tt.answers, false)
			direct := call(t, tt.cfg, tt.body, tt.answers, true)
			assert.Equal(t, chain.res, direct.res, "response")
			assert.Equal(t, chain.app, direct.app, "application error")
			assert.Equal(t, chain.headers, direct.headers, "response headers")
			assert.Equal(t, chain.budget, direct.budget, "retry budget: requests, retries")
			assert.Equal(t, chain.err, direct.err, "error")
			assert.Equal(t, chain.bodies, direct.bodies, "bodies sent")
			assert.Equal(t, chain.attempts, direct.attempts, "attempt headers sent")
			assert.Equal(t, chain.entries, direct.entries, "the egress log's failures")
			assert.Equal(t, chain.counts, direct.counts, "the egress log's counts")
			assert.Equal(t, chain.storm, direct.storm, "the egress log's storm figures")
			assert.Equal(t, chain.counters, direct.counters, "metrics")
			assert.Equal(t, chain.hot, direct.hot, "in an incident")
			assert.NotEmpty(t, chain.counters, "the metrics were read")
			if len(tt.cfg.Policies) > 0 {
				assert.Positive(t, chain.budget[0], "the budget was read")
			}
		})
	}
}
