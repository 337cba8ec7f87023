package e2e_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// reject is inbound middleware that turns every request away with err
// before the handler runs, as a load shedder or an authenticator would.
// Its error never passes through the encoding layer, so it is not marked
// as an application error: on TChannel yarpc sends it as a system error.
type reject struct {
	err      error
	rejected atomic.Int64
}

var _ middleware.UnaryInbound = (*reject)(nil)

func (r *reject) Handle(context.Context, *transport.Request, transport.ResponseWriter, transport.UnaryHandler) error {
	r.rejected.Add(1)
	return r.err
}

// An error that does not come from the handler. Every handler error
// already reaches yarpc as an application error (the raw, JSON, Thrift
// and Protobuf encodings all call SetApplicationError), and TChannel keeps
// the headers of those. Errors from inbound middleware or the transport
// are not: without errown TChannel sends them as system errors, which
// carry neither headers nor the exact code (the code goes through
// TChannel's few system error codes: not-found becomes internal). errown
// marks the error response as an application error on TChannel, so its
// claim and the exact code get through; HTTP and gRPC carry both either
// way.
//
// A→B, B's inbound middleware rejects every request with not-found, which
// no policy retries: A's attempt shows what crossed the wire.
func TestMiddlewareError(t *testing.T) {
	type give struct {
		transport string
		errown    *errown.Config
	}
	type want struct {
		Edge     []string // A's attempts to B
		Rejected int64
	}
	tests := []struct {
		name string
		give give
		want want
	}{
		{name: "http/errown", give: give{errowntest.HTTP, withRetries()}, want: want{[]string{notFound(_claimed)}, 1}},
		{name: "grpc/errown", give: give{errowntest.GRPC, withRetries()}, want: want{[]string{notFound(_claimed)}, 1}},
		{name: "tchannel/errown", give: give{errowntest.TChannel, withRetries()}, want: want{[]string{notFound(_claimed)}, 1}},
		{name: "http/plain", give: give{errowntest.HTTP, nil}, want: want{[]string{notFound(_missing)}, 1}},
		{name: "grpc/plain", give: give{errowntest.GRPC, nil}, want: want{[]string{notFound(_missing)}, 1}},
		// A TChannel system error: no headers, and not-found arrives as
		// internal (via ErrCodeUnexpected, yarpc transport/tchannel/codes.go).
		{name: "tchannel/plain", give: give{errowntest.TChannel, nil}, want: want{
			[]string{attemptCode(_a, _b, 1, _missing, yarpcerrors.CodeInternal)}, 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &reject{err: yarpcerrors.NotFoundErrorf("no such thing")}
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tt.give.transport, Errown: tt.give.errown, ExtraInbound: r})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tt.give.transport, Callees: []string{_b}, Handler: errowntest.Forward})

			_ = mesh.Call(callCtx(t), _a, nil)

			got := want{Edge: formatAttempts(mesh.Recorder().Edge(_a, _b)), Rejected: r.rejected.Load()}
			assert.Equal(t, tt.want, got)
		})
	}
}

// notFound is A's attempt to B when B's middleware says not-found.
func notFound(claim string) string {
	return attemptCode(_a, _b, 1, claim, yarpcerrors.CodeNotFound)
}
