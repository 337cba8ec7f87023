package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/stretchr/testify/assert"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/yarpcerrors"
)

// detach is a Handler that answers at once and leaves behind a goroutine
// which, once release is closed, calls the first callee with the context
// keep makes of the request's, and reports the call's error on done.
func detach(keep func(context.Context) context.Context, release <-chan struct{}, done chan<- error) errowntest.Handler {
	return func(ctx context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
		kept := keep(ctx)
		// The request's body belongs to the transport once the handler
		// returns (gRPC recycles it): keep a copy.
		bodyCopy := append([]byte(nil), body...)
		go func() {
			<-release
			ctx, cancel := context.WithTimeout(kept, 5*time.Second)
			defer cancel()
			_, err := c.Call(ctx, c.Callees()[0], bodyCopy)
			done <- err
		}()
		return body, nil
	}
}

// background drops the request's context altogether.
func background(context.Context) context.Context { return context.Background() }

// egressCounters are the egress counters of a detached call.
type egressCounters struct {
	Calls, Late, Untracked int64
}

func readEgress(s tally.TestScope) egressCounters {
	counters := s.Snapshot().Counters()
	get := func(name string) int64 {
		if c, ok := counters[tally.KeyForPrefixedStringMap(name, nil)]; ok {
			return c.Value()
		}
		return 0
	}
	return egressCounters{
		Calls:     get("errown.egress.calls"),
		Late:      get("errown.egress.late"),
		Untracked: get("errown.egress.untracked"),
	}
}

// B answers the outside caller, then calls C (which fails) from a
// goroutine after its request has finished: with the request's values
// kept (context.WithoutCancel) the call is late, with a fresh context it is
// untracked. Either way nothing panics or leaks (goleak in TestMain), the
// call is still retried by policy, counted, and B tracks no request
// afterwards.
func TestDetachedWork(t *testing.T) {
	type give struct {
		transport string
		keep      func(context.Context) context.Context
	}
	type want struct {
		Egress   egressCounters
		Served   map[string]int64
		Attempts []string
	}
	late := want{
		Egress:   egressCounters{Calls: 1, Late: 1},
		Served:   map[string]int64{_b: 1, _c: 2},
		Attempts: []string{ok(_outside, _b), attempt(_b, _c, 1, _claimed), attempt(_b, _c, 2, _claimed)},
	}
	untracked := late
	untracked.Egress = egressCounters{Calls: 1, Untracked: 1}
	tests := []struct {
		name string
		give give
		want want
	}{
		{name: "http/late", give: give{errowntest.HTTP, context.WithoutCancel}, want: late},
		{name: "grpc/late", give: give{errowntest.GRPC, context.WithoutCancel}, want: late},
		{name: "tchannel/late", give: give{errowntest.TChannel, context.WithoutCancel}, want: late},
		{name: "http/untracked", give: give{errowntest.HTTP, background}, want: untracked},
		{name: "grpc/untracked", give: give{errowntest.GRPC, background}, want: untracked},
		{name: "tchannel/untracked", give: give{errowntest.TChannel, background}, want: untracked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			scope := tally.NewTestScope("", nil)
			release, done := make(chan struct{}), make(chan error, 1)
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tt.give.transport, Errown: withRetries(), Handler: fail(_c)})
			b := mesh.Start(errowntest.ServiceConfig{
				Name: _b, Transport: tt.give.transport,
				Errown: withRetries(_c), ErrownOptions: []errown.Option{errown.WithScope(scope)},
				Callees: []string{_c}, Handler: detach(tt.give.keep, release, done),
			})

			reply := mesh.Call(callCtx(t), _b, []byte("hello"))
			close(release)
			err := <-done

			assert.NoError(t, reply.Err, "outside caller")
			assert.Equal(t, "hello", string(reply.Body), "outside caller's body")
			assert.Equal(t, _unavail, yarpcerrors.FromError(err).Code(), "detached call ended with %v", err)
			got := want{
				Egress:   readEgress(scope),
				Served:   map[string]int64{_b: b.Served(), _c: mesh.Service(_c).Served()},
				Attempts: observe(mesh, reply).Attempts,
			}
			assertResult(t, result{Served: tt.want.Served, Attempts: tt.want.Attempts}, result{Served: got.Served, Attempts: got.Attempts})
			assert.Equal(t, tt.want.Egress, got.Egress, "egress counters")
			assert.Zero(t, b.Middleware().Introspect().InFlight, "B still tracks requests")
		})
	}
}
