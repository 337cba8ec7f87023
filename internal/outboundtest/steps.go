package outboundtest

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/yarpc/api/transport"
)

var emptyResponse = Respond()

// Respond answers with a fresh response carrying the given headers, key
// and value alternating, with no body and no error.
func Respond(headers ...string) Step {
	return func(context.Context, *transport.Request) (*transport.Response, error) {
		return &transport.Response{Headers: Headers(headers...)}, nil
	}
}

// Headers returns headers holding the given key, value pairs, in order.
func Headers(kv ...string) transport.Headers {
	h := transport.NewHeaders()
	for i := 0; i+1 < len(kv); i += 2 {
		h = h.With(kv[i], kv[i+1])
	}
	return h
}

// Answer answers with res and err, as they are: every call answered by
// the step gets the same response.
func Answer(res *transport.Response, err error) Step {
	return func(context.Context, *transport.Request) (*transport.Response, error) {
		return res, err
	}
}

// Fail answers with err and, when headers are given as key, value pairs,
// a fresh response carrying them, as yarpc's HTTP and gRPC outbounds
// return a callee's error with its headers.
func Fail(err error, headers ...string) Step {
	return func(context.Context, *transport.Request) (*transport.Response, error) {
		if len(headers) == 0 {
			return nil, err
		}
		return &transport.Response{Headers: Headers(headers...)}, err
	}
}

// Succeed answers with a fresh response carrying the given headers whose
// body reads s while the call's context is alive, as a transport streams
// a body under the call.
func Succeed(s string, headers ...string) Step {
	return func(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
		return &transport.Response{Headers: Headers(headers...), Body: &Body{ctx: ctx, r: strings.NewReader(s)}, BodySize: len(s)}, nil
	}
}

// EchoHeaders answers with a fresh response carrying the request's
// headers.
func EchoHeaders() Step {
	return func(_ context.Context, req *transport.Request) (*transport.Response, error) {
		h := transport.NewHeaders()
		for k, v := range req.Headers.Items() {
			h = h.With(k, v)
		}
		return &transport.Response{Headers: h}, nil
	}
}

// Delay runs then after d, or answers the context's error when it is done
// first.
func Delay(d time.Duration, then Step) Step {
	return func(ctx context.Context, req *transport.Request) (*transport.Response, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return then(ctx, req)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Block answers the context's error once it is done, as a callee that
// never answers.
func Block() Step {
	return func(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// Wait runs then once ch is closed, whatever the call's context says: a
// callee holding its answer until the test releases it.
func Wait(ch <-chan struct{}, then Step) Step {
	return func(ctx context.Context, req *transport.Request) (*transport.Response, error) {
		<-ch
		return then(ctx, req)
	}
}

// Body is a response body that reads while the call's context is alive
// and records that it was closed.
type Body struct {
	ctx    context.Context
	r      io.Reader
	closed atomic.Bool
}

// NewBody returns a Body reading s while ctx is alive.
func NewBody(ctx context.Context, s string) *Body {
	return &Body{ctx: ctx, r: strings.NewReader(s)}
}

// Read reads the body, or answers the context's error once it is done.
func (b *Body) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	return b.r.Read(p)
}

// Close records the close.
func (b *Body) Close() error {
	b.closed.Store(true)
	return nil
}

// Closed reports whether the body was closed.
func (b *Body) Closed() bool { return b.closed.Load() }
