package stormsim

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/errown/errown/internal/outboundtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestThrottleRejection(t *testing.T) {
	tests := []struct {
		name              string
		requests, accepts float64
		k                 float64
		want              float64
	}{
		{name: "nothing yet", requests: 0, accepts: 0, k: 2, want: 0},
		{name: "all accepted", requests: 100, accepts: 100, k: 2, want: 0},
		{name: "half accepted, K = 2: no rejection", requests: 100, accepts: 50, k: 2, want: 0},
		{name: "a third accepted", requests: 90, accepts: 30, k: 2, want: 30.0 / 91},
		{name: "none accepted", requests: 9, accepts: 0, k: 2, want: 0.9},
		{name: "K = 1 rejects sooner", requests: 99, accepts: 49, k: 1, want: 0.5},
		{name: "more accepts than requests", requests: 10, accepts: 20, k: 2, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, ThrottleRejection(tt.requests, tt.accepts, tt.k), 1e-12)
		})
	}
}

func TestThrottleMiddleware(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	th := newThrottle(Throttle{}, "C", 1, scope)
	var (
		reached int
		fail    error
	)
	out := outboundtest.New(func(context.Context, *transport.Request) (*transport.Response, error) {
		reached++
		return &transport.Response{}, fail
	})
	call := func(service string) error {
		_, err := th.Call(context.Background(), &transport.Request{Service: service}, out)
		return err
	}

	// Healthy: nothing rejected, every call reaches the callee.
	for range 100 {
		require.NoError(t, call("stormsim-d"))
	}
	assert.Equal(t, 100, reached)

	// Failing: the callee accepts nothing more. Past K = 2 requests per
	// accept the throttle rejects locally, unavailable, and the call
	// reaches nobody: the n-th call of 2000 more reaches the callee with
	// the chance 1 − ThrottleRejection(100+n, 100, 2), about 570 in all,
	// within 4 standard errors.
	fail = yarpcerrors.Newf(yarpcerrors.CodeDeadlineExceeded, "timeout")
	reached = 0
	local := 0
	for range 2000 {
		err := call("stormsim-d")
		if yarpcerrors.FromError(err).Code() == yarpcerrors.CodeUnavailable {
			local++
		}
	}
	assert.Equal(t, 2000, local+reached, "a call is rejected locally or reaches the callee")
	want, variance := 0.0, 0.0
	for n := range 2000 {
		p := ThrottleRejection(float64(100+n), 100, 2)
		want += 1 - p
		variance += p * (1 - p)
	}
	assert.InDelta(t, want, reached, 4*math.Sqrt(variance))
	assert.Less(t, reached, 700)
	c := scope.Snapshot().Counters()["throttle.rejected+callee=stormsim-d"]
	require.NotNil(t, c)
	assert.Equal(t, int64(local), c.Value(), "every local rejection is counted")

	reached = 0
	assert.Equal(t, yarpcerrors.CodeDeadlineExceeded, yarpcerrors.FromError(call("stormsim-other")).Code(), "another callee has its own window")
	assert.Equal(t, 1, reached)
}

func TestThrottleAcceptsAnswers(t *testing.T) {
	// An error that is the callee's answer (not a failure) counts as
	// accepted: the throttle never rejects.
	th := newThrottle(Throttle{}, "C", 1, tally.NoopScope)
	answer := outboundtest.New(outboundtest.Fail(yarpcerrors.Newf(yarpcerrors.CodeNotFound, "no")))
	for range 500 {
		_, err := th.Call(context.Background(), &transport.Request{Service: "x"}, answer)
		require.Equal(t, yarpcerrors.CodeNotFound, yarpcerrors.FromError(err).Code())
	}
	assert.Equal(t, 500, answer.Calls(), "every call reached the callee")
}

func TestThrottleWindowSlides(t *testing.T) {
	// A 1s window in 10 buckets of 100ms.
	th := newThrottle(Throttle{Window: time.Second, Buckets: 10}, "C", 7, tally.NoopScope)
	t0 := time.Unix(1000, 0)
	for i := range 100 {
		th.attempt("d", t0.Add(time.Duration(i)*time.Millisecond)) // all in t0's bucket
	}
	c := th.callees["d"]
	th.attempt("d", t0.Add(200*time.Millisecond))
	th.accept(c, t0.Add(500*time.Millisecond))
	assert.Equal(t, []float64{101, 1}, []float64{sum(c.requests), sum(c.accepts)})

	// At t0+1.05s t0's bucket has left the window: the request at 200ms,
	// the accept at 500ms and this request remain.
	th.attempt("d", t0.Add(1050*time.Millisecond))
	assert.Equal(t, []float64{2, 1}, []float64{sum(c.requests), sum(c.accepts)})

	// A whole window later everything is forgotten.
	th.attempt("d", t0.Add(10*time.Second))
	assert.Equal(t, []float64{1, 0}, []float64{sum(c.requests), sum(c.accepts)})
}

func TestThrottleDraws(t *testing.T) {
	// With 9 requests and no accept the rejection probability is 0.9:
	// over 2000 tenth requests of fresh windows, 1800 ± 4 standard errors
	// (54) are rejected; the same seed draws the same.
	draw := func(seed uint64) int {
		th := newThrottle(Throttle{}, "C", seed, tally.NoopScope)
		now := time.Unix(1000, 0)
		rejected := 0
		for i := range 2000 {
			service := strconv.Itoa(i)
			for range 9 {
				th.attempt(service, now)
			}
			if _, r := th.attempt(service, now); r {
				rejected++
			}
		}
		return rejected
	}
	got := draw(3)
	assert.InDelta(t, 1800, got, 54)
	assert.Equal(t, got, draw(3), "seeded")
}
