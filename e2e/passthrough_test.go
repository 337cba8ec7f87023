package e2e_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/stretchr/testify/assert"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
)

// _echo is the name of the oneway or stream procedure of these tests.
const _echo = "echo"

// oneway serves _echo as a oneway procedure and calls it: over HTTP, the
// only yarpc transport with oneway calls.
var oneway = passThrough{
	procedures: func(got chan<- []byte) []transport.Procedure {
		return raw.OnewayProcedure(_echo, func(_ context.Context, body []byte) error {
			got <- body
			return nil
		})
	},
	call: func(ctx context.Context, oc *transport.OutboundConfig, body []byte, got <-chan []byte) ([]byte, error) {
		if _, err := raw.New(oc).CallOneway(ctx, _echo, body); err != nil {
			return nil, err
		}
		select {
		case b := <-got:
			return b, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	},
}

// stream serves _echo as a stream procedure answering one message with
// the same bytes, and calls it: over gRPC, the only yarpc transport with
// streams.
var stream = passThrough{
	procedures: func(got chan<- []byte) []transport.Procedure {
		return []transport.Procedure{{
			Name:        _echo,
			Encoding:    raw.Encoding,
			HandlerSpec: transport.NewStreamHandlerSpec(streamEcho{got: got}),
		}}
	},
	call: func(ctx context.Context, oc *transport.OutboundConfig, body []byte, got <-chan []byte) ([]byte, error) {
		s, err := oc.Outbounds.Stream.CallStream(ctx, &transport.StreamRequest{Meta: &transport.RequestMeta{
			Caller: oc.Caller(), Service: oc.Service(), Procedure: _echo, Encoding: raw.Encoding,
		}})
		if err != nil {
			return nil, err
		}
		defer s.Close(ctx)
		if err := s.SendMessage(ctx, &transport.StreamMessage{Body: io.NopCloser(bytes.NewReader(body)), BodySize: len(body)}); err != nil {
			return nil, err
		}
		msg, err := s.ReceiveMessage(ctx)
		if err != nil {
			return nil, err
		}
		defer msg.Body.Close()
		<-got
		return io.ReadAll(msg.Body)
	},
}

type streamEcho struct{ got chan<- []byte }

func (e streamEcho) HandleStream(s *transport.ServerStream) error {
	ctx := s.Context()
	msg, err := s.ReceiveMessage(ctx)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(msg.Body)
	_ = msg.Body.Close()
	if err != nil {
		return err
	}
	e.got <- body
	return s.SendMessage(ctx, &transport.StreamMessage{Body: io.NopCloser(bytes.NewReader(body)), BodySize: len(body)})
}

// passThrough is a kind of call errown leaves alone.
type passThrough struct {
	// procedures serves _echo, sending each body received on got.
	procedures func(got chan<- []byte) []transport.Procedure
	// call sends body to _echo from outside and returns what came back.
	call func(ctx context.Context, oc *transport.OutboundConfig, body []byte, got <-chan []byte) ([]byte, error)
}

// passGive is the transport of a service and the kind of call made to it.
type passGive struct {
	transport string
	kind      passThrough
}

// Oneway and stream calls pass through a service with errown untouched:
// they are served, and errown's inbound and egress counters stay at zero.
// TChannel has a row in neither: yarpc's TChannel transport has no oneway
// and no stream calls (its handler answers unimplemented for both, and its
// outbound implements neither interface).
func TestOnewayAndStreamUntouched(t *testing.T) {
	tests := []struct {
		name string
		give passGive
		want []byte
	}{
		{name: "http/oneway", give: passGive{errowntest.HTTP, oneway}, want: []byte("hello")},
		{name: "grpc/stream", give: passGive{errowntest.GRPC, stream}, want: []byte("hello")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			scope := tally.NewTestScope("", nil)
			got := make(chan []byte, 1)
			mesh := errowntest.NewMesh(t)
			a := mesh.Start(errowntest.ServiceConfig{
				Name: _a, Transport: tt.give.transport,
				Errown: withRetries(), ErrownOptions: []errown.Option{errown.WithScope(scope)},
				Procedures: tt.give.kind.procedures(got),
			})

			body, err := tt.give.kind.call(callCtx(t), mesh.OutboundConfig(_a), []byte("hello"), got)

			assert.NoError(t, err, "the call")
			assert.Equal(t, tt.want, body, "the body")
			for key, c := range scope.Snapshot().Counters() {
				assert.Zero(t, c.Value(), "errown counted %s, want nothing counted", key)
			}
			assert.Zero(t, a.Middleware().Introspect().InFlight, "errown tracks requests, want none")
		})
	}
}
