package errowntest

import (
	"context"

	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// Procedure is the one unary procedure every service of a Mesh serves,
// with raw encoding.
const Procedure = "call"

// Handler serves Procedure for a service of a Mesh. c calls the service's
// callees; pass it ctx (or a context derived from it) so that errown can
// tie the calls to the request being served.
type Handler func(ctx context.Context, c *Client, body []byte) ([]byte, error)

// Client calls a service's callees from its Handler.
type Client struct {
	service string
	callees []string
	clients map[string]raw.Client
}

// Callees returns the services c can call, in the order they were
// configured.
func (c *Client) Callees() []string {
	return append([]string(nil), c.callees...)
}

// Call calls Procedure on service, one of c's callees, through the
// dispatcher's outbound middleware (errown and the Recorder among them).
func (c *Client) Call(ctx context.Context, service string, body []byte, opts ...yarpc.CallOption) ([]byte, error) {
	rc, ok := c.clients[service]
	if !ok {
		return nil, yarpcerrors.InvalidArgumentErrorf("errowntest: %q does not call %q (callees: %v)", c.service, service, c.callees)
	}
	return rc.Call(ctx, Procedure, body, opts...)
}

// Echo is a Handler that calls nothing and returns body.
func Echo(_ context.Context, _ *Client, body []byte) ([]byte, error) {
	return body, nil
}

// Forward is a Handler that calls each callee in turn with body and stops
// at the first error, which it returns as is: a pass-through node. With
// no error it returns the last callee's response (body when there are no
// callees).
func Forward(ctx context.Context, c *Client, body []byte) ([]byte, error) {
	res := body
	for _, s := range c.callees {
		var err error
		if res, err = c.Call(ctx, s, body); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Fail returns a Handler that calls each callee in turn with body,
// whatever they return, and then fails with err: the failure begins in
// this service.
func Fail(err error) Handler {
	if err == nil {
		panic("errowntest: Fail needs an error")
	}
	return func(ctx context.Context, c *Client, body []byte) ([]byte, error) {
		for _, s := range c.callees {
			_, _ = c.Call(ctx, s, body) // the failure is this service's own, whatever the callees say
		}
		return nil, err
	}
}
