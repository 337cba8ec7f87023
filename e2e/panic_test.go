package e2e_test

import (
	"context"
	"testing"

	"github.com/errown/errown/errowntest"
	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/yarpcerrors"
)

func panics(context.Context, *errowntest.Client, []byte) ([]byte, error) {
	panic("boom")
}

// A→B, B's handler panics. yarpc recovers the panic outside every
// middleware, so errown sets no claim: A sees it missing, retries once and
// unclaims. B's ingress log is removed all the same.
//
// The code differs on TChannel: yarpc sends the recovered panic (code
// unknown) as a TChannel system error, ErrCodeUnexpected, which the caller
// reads back as internal.
func TestPanickingHandler(t *testing.T) {
	want := func(code yarpcerrors.Code) result {
		return result{
			Code:   code,
			Claim:  _unclaimed,
			Served: map[string]int64{_a: 1, _b: 2},
			Attempts: []string{
				attemptCode(_a, _b, 1, _missing, code),
				attemptCode(_a, _b, 2, _missing, code),
				attemptCode(_outside, _a, 1, _unclaimed, code),
			},
		}
	}
	tests := []scenario{
		{give: errowntest.HTTP, want: want(yarpcerrors.CodeUnknown)},
		{give: errowntest.GRPC, want: want(yarpcerrors.CodeUnknown)},
		{give: errowntest.TChannel, want: want(yarpcerrors.CodeInternal)},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			mesh := errowntest.NewMesh(t)
			b := mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tt.give, Errown: withRetries(), Handler: panics})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tt.give, Errown: withRetries(_b), Callees: []string{_b}, Handler: errowntest.Forward})

			reply := mesh.Call(callCtx(t), _a, nil)

			assertResult(t, tt.want, observe(mesh, reply, _a, _b))
			assert.Zero(t, b.Middleware().Introspect().InFlight, "B still tracks requests")
		})
	}
}
