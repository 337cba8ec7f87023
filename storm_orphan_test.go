package errown_test

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
)

// inprocCallee returns a callee served by service c's errown inbound,
// whose handler makes fanout quiet calls of its own, each to a leaf that
// succeeds.
func inprocCallee(c *errown.Middleware, fanout int) *outboundtest.Outbound {
	return outboundtest.New(func(ctx context.Context, req *transport.Request) (*transport.Response, error) {
		w := &transporttest.FakeResponseWriter{}
		err := c.Inbound().Unary.Handle(ctx, req, w, edgeHandler(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
			for range fanout {
				leaf := outboundtest.New() // succeeds
				if _, err := c.Outbound().Unary.Call(ctx, &transport.Request{Caller: "c", Service: "d", Procedure: "r", Encoding: "raw", Headers: transport.NewHeaders()}, leaf); err != nil {
					return err
				}
			}
			return nil
		}))
		return &transport.Response{Headers: w.Headers}, err
	})
}

// TestStormOrphanQuietSubtreeInAnIncident: b serves a marked request (its
// caller reads its figures) whose handler calls c with a fresh context, a
// context drop; c's subtree serves 5 requests, all of them quiet. The
// orphan goes out marked, so c answers with its figures, and b's request,
// which may have made it, answers unknown rather than figures that leave
// the orphan's 5 requests out. Outside an incident (b's request unmarked,
// no incident at b) the orphan goes out as it is, nothing of errown's on
// it.
func TestStormOrphanQuietSubtreeInAnIncident(t *testing.T) {
	for _, tt := range []struct {
		attempt     string
		wantAttempt string
		wantStorm   string
	}{
		{attempt: "1", wantAttempt: "1", wantStorm: "unknown"},
		{attempt: "", wantAttempt: "-", wantStorm: ""},
	} {
		b := edgeErrown(t, errown.Config{})
		c := edgeErrown(t, errown.Config{})
		out := inprocCallee(c, 4)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resw := &transporttest.FakeResponseWriter{}
		err := b.Inbound().Unary.Handle(ctx, edgeReq(tt.attempt), resw, edgeHandler(
			func(context.Context, *transport.Request, transport.ResponseWriter) error {
				fresh, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := b.Outbound().Unary.Call(fresh, outReq(), out)
				return err
			}))
		cancel()
		require.NoError(t, err)
		assert.Equal(t, []string{tt.wantAttempt}, out.Header("errown-attempt"), "the orphan's attempt header (b's request marked %q)", tt.attempt)
		v, _ := resw.Headers.Get("errown-storm")
		assert.Equal(t, tt.wantStorm, v, "b's answer (its request marked %q)", tt.attempt)
		assert.Empty(t, c.Introspect().Storms, "c is no root of a marked orphan, nor of a quiet one")
	}
}
