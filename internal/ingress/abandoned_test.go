package ingress

import (
	"context"
	"sync"
	"testing"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/egress"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/outbound"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// TestHandleAbandonedCallsKeepFiguresKnown: a call the handler abandoned,
// cancelled (a hedge's loser) or left running when it returned
// (fire-and-forget), counts as the one request it sent: the request's
// figures stay known, a root's success sends no storm header in the
// steady state and records no storm, and a marked request's caller reads
// quiet figures, which put it in no incident.
func TestHandleAbandonedCallsKeepFiguresKnown(t *testing.T) {
	eg, err := egress.New(outbound.Config{})
	require.NoError(t, err)
	call := func(ctx context.Context, out transport.UnaryOutbound) {
		_, _ = eg.Call(ctx, &transport.Request{Service: "c", Procedure: "get"}, out)
	}
	var wg sync.WaitGroup
	release := make(chan struct{})
	tests := []struct {
		name    string
		handler handlerFunc
		want    string // the storm header to a marked request
	}{
		{
			name: "a hedge's loser",
			handler: func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
				loser, cancel := context.WithCancel(ctx)
				cancel() // the other attempt answered first
				call(loser, outboundtest.New(func(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
					return nil, yarpcerrors.CancelledErrorf("call cancelled: %v", ctx.Err())
				}))
				call(ctx, outboundtest.New()) // a quiet success
				return nil
			},
			want: "3,3,0,0,0",
		},
		{
			name: "fire-and-forget",
			handler: func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
				wg.Add(1)
				started := make(chan struct{})
				go func() {
					defer wg.Done()
					call(ctx, outboundtest.New(func(context.Context, *transport.Request) (*transport.Response, error) {
						close(started)
						<-release
						return &transport.Response{Headers: transport.NewHeaders()}, nil
					}))
				}()
				<-started
				return nil
			},
			want: "2,2,0,0,0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release = make(chan struct{})
			e := newEnv(t, inbound.Config{})
			root := &transporttest.FakeResponseWriter{}
			require.NoError(t, e.mw.Handle(context.Background(), rootRequest("proc"), root, tt.handler))
			_, sent := stormOf(root)
			assert.False(t, sent, "a root's success sends a storm header")
			close(release)
			wg.Wait()

			release = make(chan struct{})
			marked := &transporttest.FakeResponseWriter{}
			require.NoError(t, e.mw.Handle(context.Background(), markedRequest("proc", "1"), marked, tt.handler))
			got, _ := stormOf(marked)
			assert.Equal(t, tt.want, got, "the storm header to a marked request")
			assert.False(t, wire.ParseStorm(got).Stormy(), "%q puts the caller in an incident", got)
			close(release)
			wg.Wait()

			assert.LessOrEqual(t, e.stormCounter("requests", "proc"), int64(0), "root storms recorded (-1: no series)")
			assert.LessOrEqual(t, e.stormCounter("unknown", "proc"), int64(0), "unknown root storms (-1: no series)")
		})
	}
}
