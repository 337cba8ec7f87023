package e2e_test

import (
	"context"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc/yarpcerrors"
)

// pushBack fails and asks its caller not to retry.
func pushBack(ctx context.Context, _ *errowntest.Client, _ []byte) ([]byte, error) {
	inbound.DoNotRetry(ctx)
	return nil, yarpcerrors.UnavailableErrorf("overloaded, do not retry")
}

// noBudget is an errown config whose budget refuses every retry to the
// callees: the tiniest ratio and no floor.
func noBudget(callees ...string) *errown.Config {
	cfg := withRetries(callees...)
	cfg.Retry.Budget = retry.BudgetConfig{Ratio: 0.0001, NoFloor: true}
	return cfg
}

// A→B→C, C fails. B wants to retry C but is refused, by C's pushback or
// by its budget: the system chose not to spend more, so RCS holds, B
// unclaims and A does not retry either. C serves once.
func TestRetryRefused(t *testing.T) {
	type give struct {
		transport string
		c         errowntest.Handler
		b         *errown.Config
	}
	want := result{
		Code:   _unavail,
		Claim:  _unclaimed,
		Served: map[string]int64{_a: 1, _b: 1, _c: 1},
		Attempts: []string{
			attempt(_b, _c, 1, _claimed),
			attempt(_a, _b, 1, _unclaimed),
			attempt(_outside, _a, 1, _unclaimed),
		},
	}
	tests := []struct {
		name string
		give give
		want result
	}{
		{name: "http/pushback", give: give{errowntest.HTTP, pushBack, withRetries(_c)}, want: want},
		{name: "grpc/pushback", give: give{errowntest.GRPC, pushBack, withRetries(_c)}, want: want},
		{name: "tchannel/pushback", give: give{errowntest.TChannel, pushBack, withRetries(_c)}, want: want},
		{name: "http/budget", give: give{errowntest.HTTP, fail(_c), noBudget(_c)}, want: want},
		{name: "grpc/budget", give: give{errowntest.GRPC, fail(_c), noBudget(_c)}, want: want},
		{name: "tchannel/budget", give: give{errowntest.TChannel, fail(_c), noBudget(_c)}, want: want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tt.give.transport, Errown: withRetries(), Handler: tt.give.c})
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tt.give.transport, Errown: tt.give.b, Callees: []string{_c}, Handler: errowntest.Forward})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tt.give.transport, Errown: withRetries(_b), Callees: []string{_b}, Handler: errowntest.Forward})

			reply := mesh.Call(callCtx(t), _a, nil)

			assertResult(t, tt.want, observe(mesh, reply, _a, _b, _c))
		})
	}
}
