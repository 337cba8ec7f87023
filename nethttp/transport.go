package nethttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/adapt"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Transport returns an http.RoundTripper that sends each request through
// errown's outbound middleware, mw's, to base (http.DefaultTransport when
// nil): errown logs the call against the request being served when the
// request's context is one Handler, or a yarpc dispatcher running
// errown, gave a handler; retries it per mw's retry policies, budget and
// the callee's claim; and, on a retry or in an incident, sets its attempt
// header (Rpc-Header-Errown-Attempt).
//
// WithService and WithProcedure name the callee; a retry policy applies
// when its service (and procedure, if it has one) equals them exactly. An
// error status (400 and up) counts by the yarpc code yarpc's HTTP
// transport reads from it (Rpc-Error-Code, else the status), and its
// claim, no-retry and storm headers are read as a yarpc callee's.
// RoundTrip returns the last attempt's response as base returned it, or
// base's error when it got none: an error status is never an error.
//
// A request body is kept for replay up to retry.maxBodyBytes (1 MiB by
// default), and only under a policy that says the calls are idempotent; a
// larger body is sent once (retry.denied{reason=body-too-large}). An
// attempt whose body errown kept carries a GetBody that replays it.
// An application's own retrying RoundTripper goes between Transport and
// base, with Attempts below it: see Attempts.
//
// When the request's context has a deadline, each attempt carries the
// time left in a Context-TTL-MS header, which Handler reads.
func Transport(mw *errown.Middleware, base http.RoundTripper, opts ...TransportOption) http.RoundTripper {
	if mw == nil {
		panic("nethttp: Transport needs a Middleware")
	}
	if base == nil {
		base = http.DefaultTransport
	}
	o := transportOptions{service: defaultService, procedure: defaultCalleeProcedure}
	for _, opt := range opts {
		opt.applyTransport(&o)
	}
	out := adapt.PartsOf(mw).Outbound // mw.Outbound().Unary, counted as wiring
	return &roundTripper{outbound: out, base: base, service: o.service, procedure: o.procedure}
}

func defaultService(r *http.Request) string {
	if s := r.Header.Get(_serviceHeader); s != "" {
		return s
	}
	if r.Host != "" {
		return r.Host
	}
	return r.URL.Host
}

func defaultCalleeProcedure(r *http.Request) string {
	if p := r.Header.Get(_procedureHeader); p != "" {
		return p
	}
	return methodPath(r)
}

type roundTripper struct {
	outbound  middleware.UnaryOutbound
	base      http.RoundTripper
	service   func(*http.Request) string
	procedure func(*http.Request) string
}

// RoundTrip implements http.RoundTripper.
func (t *roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	c := &call{base: t.base, orig: r}
	treq := &transport.Request{
		Service:   t.service(r),
		Procedure: t.procedure(r),
		Transport: _transportName,
	}
	if r.Body != nil && r.Body != http.NoBody {
		c.body = &origBody{r.Body}
		treq.Body = c.body
		treq.BodySize = int(max(r.ContentLength, 0))
	}
	res, err := t.outbound.Call(r.Context(), treq, c)
	return c.result(res, err)
}

// origBody is the caller's request body as errown's middleware sees it:
// an attempt whose body is still one tells the first attempt sent in
// place (nothing read it for replay) from a replay.
type origBody struct {
	io.ReadCloser
}

// call is the transport.UnaryOutbound the middleware sends one request's
// attempts to, one after the other: each becomes an HTTP request to base.
// It keeps the last attempt's response or error, which RoundTrip returns.
type call struct {
	adapt.NoLifecycle // base has no lifecycle of its own

	base http.RoundTripper
	orig *http.Request
	body *origBody // nil without a body

	sent      bool
	closeOnce sync.Once
	last      *http.Response
	lastErr   error
}

var _ transport.UnaryOutbound = (*call)(nil)

// Call sends one attempt.
func (c *call) Call(ctx context.Context, treq *transport.Request) (*transport.Response, error) {
	c.sent = true
	// A shallow copy with its own headers: the attempt changes nothing
	// else of the caller's request (the body is set below). Its context
	// carries treq for Attempts, below an application's RoundTripper.
	hreq := c.orig.WithContext(context.WithValue(ctx, attemptKey{}, treq))
	hreq.Header = c.orig.Header.Clone()
	if hreq.Header == nil {
		hreq.Header = make(http.Header, 2)
	}
	c.setBody(hreq, treq.Body)
	setHTTPHeaders(hreq.Header, treq.Headers)
	if deadline, ok := ctx.Deadline(); ok {
		hreq.Header.Set(_ttlHeader, strconv.FormatInt(max(time.Until(deadline).Milliseconds(), 0), 10))
	}
	res, err := c.base.RoundTrip(hreq)
	c.last, c.lastErr = res, err
	if err != nil {
		return nil, transportError(ctx, err)
	}
	return transportResponse(res)
}

// transportResponse returns res as errown's middleware reads it: its
// application headers, its body, and for an error status the yarpc error
// that goes with the response (StatusError).
func transportResponse(res *http.Response) (*transport.Response, error) {
	tres := &transport.Response{
		Headers:          toTransportHeaders(res.Header),
		Body:             res.Body,
		BodySize:         int(res.ContentLength),
		ApplicationError: res.Header.Get(_statusHeader) == _statusError,
	}
	if tres.ApplicationError {
		// A yarpc service's application error (a Thrift exception), with
		// the code its IDL gave it, if any.
		if v, err := strconv.Atoi(res.Header.Get(_appErrorCodeHeader)); err == nil {
			code := yarpcerrors.Code(v)
			tres.ApplicationErrorMeta = &transport.ApplicationErrorMeta{Code: &code}
		}
	}
	if isError(res.StatusCode) {
		// The response goes with the error: errown reads the callee's
		// claim, no-retry and storm headers on it.
		return tres, StatusError(res.StatusCode, res.Header)
	}
	return tres, nil
}

// setBody gives hreq the body of one attempt: the caller's own when
// nothing read it, else what errown kept for replay, whose Close closes
// the caller's.
func (c *call) setBody(hreq *http.Request, body io.Reader) {
	switch b := body.(type) {
	case nil:
		hreq.Body, hreq.GetBody, hreq.ContentLength = nil, nil, 0
	case *origBody:
		hreq.Body = b.ReadCloser // GetBody and ContentLength: the caller's
	case *bytes.Reader:
		n := b.Len()
		if n == 0 {
			hreq.Body, hreq.GetBody, hreq.ContentLength = http.NoBody, nil, 0
			c.closeOrig()
			return
		}
		off := b.Size() - int64(n)
		hreq.Body = &replayBody{Reader: b, c: c}
		hreq.ContentLength = int64(n)
		hreq.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(io.NewSectionReader(b, off, int64(n))), nil
		}
	default:
		// The body was too large to keep: sent once, the part read
		// followed by the rest.
		hreq.Body = &replayBody{Reader: b, c: c}
		hreq.GetBody = nil
	}
}

// replayBody is an attempt's body read from what errown kept; its Close
// closes the caller's body, once.
type replayBody struct {
	io.Reader
	c *call
}

func (b *replayBody) Close() error {
	b.c.closeOrig()
	return nil
}

func (c *call) closeOrig() {
	if c.body != nil {
		c.closeOnce.Do(func() { _ = c.body.Close() })
	}
}

// result is what RoundTrip returns: the last attempt's HTTP response, with
// res's body (errown may wrap it to release the attempt's context on
// Close), or base's error.
func (c *call) result(res *transport.Response, err error) (*http.Response, error) {
	if !c.sent {
		// Nothing reached base, which would have closed the body.
		c.closeOrig()
		if err == nil {
			err = errors.New("nethttp: errown sent no request")
		}
		return nil, err
	}
	switch {
	case c.lastErr != nil:
		return nil, c.lastErr
	case c.last == nil:
		return nil, errors.New("nethttp: the base RoundTripper returned neither a response nor an error")
	}
	if res != nil && res.Body != nil {
		c.last.Body = res.Body
	}
	c.last.Request = c.orig // as base would have it: the request RoundTrip got
	return c.last, nil
}

// transportError is the yarpc error for an attempt that got no response,
// as yarpc's HTTP outbound reports one: deadline-exceeded or cancelled
// when ctx ended, unknown otherwise (a refused or broken connection).
func transportError(ctx context.Context, err error) error {
	switch ctx.Err() {
	case context.DeadlineExceeded:
		return yarpcerrors.DeadlineExceededErrorf("%v", err)
	case context.Canceled:
		return yarpcerrors.CancelledErrorf("%v", err)
	}
	return yarpcerrors.UnknownErrorf("%v", err)
}
