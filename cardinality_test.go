package errown_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/admission"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// TestTagCardinalityBounded floods a service with distinct inbound and
// outbound procedure names, every call failing, and checks that the metric
// series errown emits stay bounded: procedure names only ever reach tags
// through the dependency memory's edges, capped by memory.maxEdges within a
// window, and through the storm metrics of root procedures, capped by
// maxRootProcedures.
func TestTagCardinalityBounded(t *testing.T) {
	const maxEdges, maxRoots, flood = 50, 10, 5000
	scope := tally.NewTestScope("", nil)
	mw, err := errown.New(errown.Config{
		InboundConfig: errown.InboundConfig{MaxRootProcedures: maxRoots},
		Memory:        depmem.Config{MaxEdges: maxEdges},
		Retry:         errown.RetryConfig{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}},
	}, errown.WithScope(scope))
	require.NoError(t, err)

	out := middleware.ApplyUnaryOutbound(outboundtest.New(outboundtest.Fail(yarpcerrors.UnavailableErrorf("down"))), mw.Outbound().Unary) // fails every call, in memory
	handler := transportHandlerFunc(func(ctx context.Context, req *transport.Request) error {
		_, err := out.Call(ctx, &transport.Request{Service: "callee", Procedure: "get-" + req.Procedure})
		return err
	})
	in := middleware.ApplyUnaryInbound(handler, mw.Inbound().Unary)
	for i := 0; i < flood; i++ {
		req := &transport.Request{Service: "svc", Procedure: fmt.Sprintf("proc-%d", i), Transport: "http"}
		require.Error(t, in.Handle(context.Background(), req, &transporttest.FakeResponseWriter{}))
	}

	snap := scope.Snapshot()
	series := len(snap.Counters()) + len(snap.Gauges()) + len(snap.Timers()) + len(snap.Histograms())
	// Two counters per tracked edge, six storm series per root procedure
	// and the "_other" one, plus a fixed set (per callee with a policy,
	// per refusal reason: inbound.failed_after_denied's nine among them),
	// and admission's: a shed counter per reason and two gauges.
	assert.LessOrEqual(t, series, 2*maxEdges+6*(maxRoots+1)+70+len(admission.Reasons)+2, "series after %d distinct procedures", flood)
	other := snap.Counters()["errown.storm.requests+procedure=_other"]
	require.NotNil(t, other, "root procedures past the bound share one tag")
	assert.Equal(t, int64(flood-maxRoots), other.Value())
	assert.Len(t, mw.Introspect().Dependencies, maxEdges)
	overflow := snap.Counters()["errown.depmem.edges_overflow+"]
	require.NotNil(t, overflow)
	assert.Equal(t, int64(flood-maxEdges), overflow.Value())
	t.Logf("%d distinct procedures, %d metric series", flood, series)
}

type transportHandlerFunc func(context.Context, *transport.Request) error

func (f transportHandlerFunc) Handle(ctx context.Context, req *transport.Request, _ transport.ResponseWriter) error {
	return f(ctx, req)
}
