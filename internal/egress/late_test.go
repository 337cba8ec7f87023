package egress

import (
	"context"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// abandoner is an application's timeout middleware that gives up on the
// attempt it sent as soon as the attempt is under way (started says so),
// returning deadline-exceeded while the attempt goes on; done is closed
// once the abandoned attempt has returned, and bodies holds what each
// abandoned attempt's response read.
type abandoner struct {
	started func(req *transport.Request) <-chan struct{}
	done    func(req *transport.Request) chan struct{}

	mu     sync.Mutex
	bodies map[string]string // by request id
}

func (a *abandoner) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	go func() {
		defer close(a.done(req))
		res, _ := out.Call(context.WithoutCancel(ctx), req)
		if res != nil && res.Body != nil {
			b, _ := io.ReadAll(res.Body)
			id, _ := req.Headers.Get("x-id")
			a.mu.Lock()
			a.bodies[id] = string(b)
			a.mu.Unlock()
		}
	}()
	<-a.started(req)
	return nil, yarpcerrors.DeadlineExceededErrorf("gave up on the attempt")
}

// TestLateAttemptWritesNothing: an attempt that a middleware below errown's
// retry middleware abandoned ends after its call returned, in the middle
// of the next request's call, with a failure and a subtree's storm
// figures. It writes nothing: not in its own call's state (sealed), nor
// in the next call's (no pool hands it the same state: GOMAXPROCS=1
// would). It counts in retry.late_attempts and gets its own response.
// Marked (in an incident), the request and headers it reads late are its
// own too: no later mark reuses or clears them.
func TestLateAttemptWritesNothing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, tt := range []struct {
		name    string
		context func() (context.Context, *reqlog.Log)
	}{
		{"unmarked", trackedContext},
		{"marked", markedContext},
	} {
		t.Run(tt.name, func(t *testing.T) { testLateAttemptWritesNothing(t, tt.context) })
	}
}

func testLateAttemptWritesNothing(t *testing.T, newContext func() (context.Context, *reqlog.Log)) {
	scope := tally.NewTestScope("", nil)
	r, err := retrier.New(retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "s", Idempotent: new(true), MaxAttempts: 1}},
	}, retrier.WithSinks(obs.Sinks{Scope: scope}))
	require.NoError(t, err)
	mw, err := New(outbound.Config{}, WithInner(r))
	require.NoError(t, err)

	const n = 200
	started := make([]chan struct{}, n)
	release := make([]chan struct{}, n)
	done := make([]chan struct{}, n)
	for i := range n {
		started[i], release[i], done[i] = make(chan struct{}), make(chan struct{}), make(chan struct{})
	}
	index := func(req *transport.Request) int {
		id, _ := req.Headers.Get("x-id")
		i, err := strconv.Atoi(id)
		if err != nil {
			panic("request id " + strconv.Quote(id) + ": the request's headers changed under it")
		}
		return i
	}
	app := &abandoner{
		started: func(req *transport.Request) <-chan struct{} { return started[index(req)] },
		done:    func(req *transport.Request) chan struct{} { return done[index(req)] },
		bodies:  make(map[string]string),
	}
	out := outboundtest.New(func(_ context.Context, req *transport.Request) (*transport.Response, error) {
		i := index(req)
		if i > 0 {
			// The call before ends now, late, while this one is under way.
			close(release[i-1])
			<-done[i-1]
		}
		close(started[i])
		<-release[i]
		if j := index(req); j != i { // read late: the headers are still this request's
			panic("request " + strconv.Itoa(i) + " read as " + strconv.Itoa(j) + " after its call returned")
		}
		res := headers("errown-storm", "7,7,0,0,0", "errown-claim", "claimed")
		res.Body = io.NopCloser(strings.NewReader("body of " + strconv.Itoa(i)))
		return res, yarpcerrors.UnavailableErrorf("late failure of %d", i)
	})
	chain := middleware.ApplyUnaryOutbound(out, yarpc.UnaryOutboundMiddleware(app, r.Attempts()))

	logs := make([]*reqlog.Log, n)
	for i := range n {
		ctx, log := newContext()
		logs[i] = log
		req := &transport.Request{Service: "s", Procedure: "p", Headers: transport.NewHeaders().With("x-id", strconv.Itoa(i))}
		_, err := mw.Call(ctx, req, chain)
		require.Equal(t, yarpcerrors.CodeDeadlineExceeded, yarpcerrors.FromError(err).Code(), "call %d: %v", i, err)
	}
	close(release[n-1])
	<-done[n-1]

	want := logs[0].Egress.StormTotal(logs[0].Egress.Counts().NotFailed)
	assert.Less(t, want.Storm.Served, uint64(7), "the first call's storm %+v: a late attempt's figures", want)
	for i, log := range logs {
		c := log.Egress.Counts()
		assert.Equal(t, 1, c.Stored, "call %d: calls stored", i)
		assert.Equal(t, 0, c.NotFailed, "call %d: calls that did not fail", i)
		assert.Equal(t, want, log.Egress.StormTotal(c.NotFailed), "call %d: storm", i)
	}
	assert.Equal(t, int64(n), counters(scope)["retry.late_attempts+callee=s"], "late attempts")
	app.mu.Lock()
	defer app.mu.Unlock()
	for i := range n {
		id := strconv.Itoa(i)
		assert.Equal(t, "body of "+id, app.bodies[id], "the late attempt %d's response", i)
	}
}

// counters returns the non-zero counters of a test scope.
func counters(s tally.TestScope) map[string]int64 {
	got := make(map[string]int64)
	for k, c := range s.Snapshot().Counters() {
		if c.Value() != 0 {
			got[k] = c.Value()
		}
	}
	return got
}
