package grpcgo

import (
	"context"
	"strconv"
	"sync"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/adapt"
	"github.com/errown/errown/internal/wire"
	"go.uber.org/yarpc/api/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// _applicationErrorKey is the trailer by which a yarpc gRPC callee marks
// an application error (a Thrift exception), as yarpc's gRPC outbound
// reads it (transport/grpc/outbound.go, metadataToIsApplicationError).
const _applicationErrorKey = "rpc-application-error"

// UnaryClientInterceptor returns a grpc-go unary client interceptor that
// runs errown's outbound middleware, mw's, around each call, as a yarpc
// dispatcher would: each attempt carries errown's attempt header in the
// outgoing metadata, the callee's trailers (claim, storm, no-retry) are
// read as the response's headers, and a retry, when errown's policy and
// the callee's claim allow it, calls the invoker again with the same
// request message (nothing is marshalled or buffered: retry.maxBodyBytes
// does not apply). The error returned is the last attempt's, as grpc-go
// returned it.
//
// The callee's service, which errown's retry policies match, is the gRPC
// service of the method unless WithService names it; the procedure is
// "pkg.Service::Method", as yarpc's gRPC transport names it.
//
// Pushback: a grpc-retry-pushback-ms trailer grpc-go itself would not
// retry on (negative, unparsable, or several values) counts as errown's
// no-retry header. A non-negative value is read as no pushback: errown's
// backoff applies, not the delay asked.
//
// grpc-go's own retries would run below every interceptor, multiplying
// each of errown's attempts blind to claims, so unless WithGRPCRetries the
// interceptor commits each call to its first attempt once the request is
// sent (grpc.MaxRetryRPCBufferSize(0)). That also loses grpc-go's
// transparent retry of a request the server refused unprocessed: dial
// with DialOptions instead, which disables retry policies for the whole
// ClientConn (grpc.WithDisableRetry) and keeps transparent retries.
//
// An application interceptor chained after this one runs on each of
// errown's attempts; one that sends a call again is held to errown's
// rules only with AttemptsInterceptor chained after it, last. Streams
// need no interceptor: errown leaves them alone.
func UnaryClientInterceptor(mw *errown.Middleware, opts ...Option) grpc.UnaryClientInterceptor {
	parts := adapt.PartsOf(mw)
	out := parts.Outbound
	o := newAdapterOptions(parts.Headers, opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		c := &clientCall{
			invoker:       invoker,
			method:        method,
			req:           req,
			reply:         reply,
			cc:            cc,
			noRetryHeader: o.noRetryHeader,
			commit:        !o.grpcRetries && !o.retryDisabled,
			service:       o.service,
		}
		c.opts = make([]grpc.CallOption, 0, len(callOpts)+1)
		c.opts = append(c.opts, callOpts...)
		if c.commit {
			c.opts = append(c.opts, _noGRPCRetry)
		}
		// No body: a retry calls the invoker again with req.
		_, err := out.Call(ctx, outboundRequest(method, o.service), c)
		switch {
		case err == nil:
			return nil
		case c.err != nil:
			return c.err
		default:
			return grpcError(err)
		}
	}
}

// _noGRPCRetry commits a call to its first attempt once its request is
// sent: grpc-go retries only calls not yet committed (stream.go,
// bufferForRetryLocked and withRetry).
var _noGRPCRetry = grpc.MaxRetryRPCBufferSize(0)

// DialOptions returns the options that put errown on a ClientConn:
// UnaryClientInterceptor(mw, opts...) chained after the interceptors
// given before it, and grpc.WithDisableRetry(), so that grpc-go's own
// retryPolicy never retries under errown while its transparent retries
// stay on. With WithGRPCRetries it leaves grpc-go's retries as they are.
//
//	cc, err := grpc.NewClient(target, append(grpcgo.DialOptions(mw, grpcgo.WithService("payments")),
//		grpc.WithTransportCredentials(creds))...)
//
// The application's interceptors that should run on each of errown's
// attempts (a retry interceptor among them) go in WithInnerInterceptors:
// DialOptions chains them after errown's, and AttemptsInterceptor(mw)
// last. grpc-go chains interceptors in the order of the options, so one
// chained by an option after DialOptions runs below errown's and its
// replays leave unseen, unless it is chained with AttemptsInterceptor
// after it (and no WithInnerInterceptors):
//
//	append(grpcgo.DialOptions(mw), grpc.WithChainUnaryInterceptor(appRetry, grpcgo.AttemptsInterceptor(mw)))
func DialOptions(mw *errown.Middleware, opts ...Option) []grpc.DialOption {
	o := newOptions(opts)
	if !o.grpcRetries {
		opts = append(opts[:len(opts):len(opts)], optionFunc(func(o *options) { o.retryDisabled = true }))
	}
	chain := []grpc.UnaryClientInterceptor{UnaryClientInterceptor(mw, opts...)}
	if len(o.inner) > 0 {
		chain = append(append(chain, o.inner...), AttemptsInterceptor(mw))
	}
	dial := []grpc.DialOption{grpc.WithChainUnaryInterceptor(chain...)}
	if !o.grpcRetries {
		dial = append(dial, grpc.WithDisableRetry())
	}
	if o.roundRobin {
		dial = append(dial, roundRobinDialOption())
	}
	return dial
}

// clientCall is one logical call as a transport.UnaryOutbound: each Call
// is one attempt, the invoker called with the call's request and reply.
type clientCall struct {
	adapt.NoLifecycle // it has no lifecycle of its own

	invoker       grpc.UnaryInvoker
	method        string
	req, reply    any
	cc            *grpc.ClientConn
	opts          []grpc.CallOption // the caller's, then ours
	noRetryHeader string
	commit        bool   // each attempt is committed to grpc-go's first try
	service       string // WithService's, or empty

	err error // the latest attempt's, as the invoker returned it
}

var (
	_ transport.UnaryOutbound = (*clientCall)(nil)
	_ transport.Namer         = (*clientCall)(nil)
)

// errownAttempt is one of errown's attempts of a clientCall, its own: an
// interceptor between may still run an attempt of it when errown sends the
// next (a hedge, an abandoned attempt). It is also a call option, a no-op
// in grpc-go (grpc.EmptyCallOption), by which AttemptsInterceptor finds it.
type errownAttempt struct {
	grpc.EmptyCallOption

	call *clientCall
	req  *transport.Request // as errown's step knows it

	mu      sync.Mutex
	done    bool        // Call has read trailer: nothing writes it again
	trailer metadata.MD // the callee's, of the attempt below that answered
}

var _ grpc.CallOption = (*errownAttempt)(nil)

// deliver sets the attempt's trailers to md, unless Call has returned: an
// attempt below that ends later (abandoned) writes nothing.
func (at *errownAttempt) deliver(md metadata.MD) {
	at.mu.Lock()
	if !at.done {
		at.trailer = md
	}
	at.mu.Unlock()
}

// request returns the request errown's step knows an attempt of method by,
// sent under at: at's own for the call's method, else one of its own (a
// fallback to another method is a call of its own, not a replay).
func (at *errownAttempt) request(method string) *transport.Request {
	if method == at.call.method {
		return at.req
	}
	return outboundRequest(method, at.call.service)
}

// outboundRequest returns the request errown's outbound middleware sees for
// a call of method, to service when it is not "" (WithService), else to
// the method's gRPC service.
func outboundRequest(method, service string) *transport.Request {
	m := methodNames(method)
	if service == "" {
		service = m.service
	}
	return &transport.Request{Service: service, Procedure: m.procedure, Transport: _transportName, Encoding: "proto"}
}

// Call sends one attempt: the invoker with req's headers (errown's attempt
// header) set in the outgoing metadata. It returns the callee's trailers
// as the response's headers, with an error of the code the invoker's had.
func (c *clientCall) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	at := &errownAttempt{call: c, req: req}
	opts := make([]grpc.CallOption, 0, len(c.opts)+2)
	opts = append(opts, c.opts...)
	opts = append(opts, grpc.Trailer(&at.trailer), at)
	err := c.invoker(withOutgoing(ctx, req.Headers), c.method, c.req, c.reply, c.cc, opts...)
	at.mu.Lock()
	at.done = true
	trailer := at.trailer
	at.mu.Unlock()
	c.err = err
	return &transport.Response{
		Headers:          responseHeaders(trailer, c.noRetryHeader),
		ApplicationError: applicationError(trailer),
	}, yarpcError(err)
}

// TransportName names grpc-go as the transport of the call.
func (c *clientCall) TransportName() string { return _transportName }

// withOutgoing returns ctx with h set in its outgoing metadata, each key
// replacing any value the caller's metadata had for it: a handler that
// forwards its incoming metadata must not send its own caller's attempt
// number, and a key sent twice is one yarpc's gRPC inbound refuses.
func withOutgoing(ctx context.Context, h transport.Headers) context.Context {
	if h.Len() == 0 {
		return ctx
	}
	md, ok := metadata.FromOutgoingContext(ctx) // a copy
	if !ok {
		md = make(metadata.MD, h.Len())
	}
	for k, v := range h.Items() {
		md[k] = []string{v}
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// responseHeaders returns the callee's trailers as yarpc headers: each
// single-valued key (a key sent several times is garbage, read as absent,
// where yarpc's gRPC outbound fails the call), and errown's no-retry
// header when the trailers push back.
func responseHeaders(md metadata.MD, noRetryHeader string) transport.Headers {
	if len(md) == 0 {
		return transport.Headers{}
	}
	h := transport.NewHeadersWithCapacity(len(md) + 1)
	for k, vs := range md {
		if len(vs) == 1 {
			h = h.With(k, vs[0])
		}
	}
	if pushback(md) {
		h = h.With(noRetryHeader, wire.NoRetryValue)
	}
	return h
}

// pushback reports whether md's grpc-retry-pushback-ms asks not to retry,
// by grpc-go's own rule (stream.go, shouldRetry): several values, or one
// that is not a non-negative integer. Absent, it does not.
func pushback(md metadata.MD) bool {
	vs := md[_pushbackKey]
	switch len(vs) {
	case 0:
		return false
	case 1:
		n, err := strconv.Atoi(vs[0])
		return err != nil || n < 0
	default:
		return true
	}
}

// applicationError reports whether a yarpc callee marked the response as
// an application error.
func applicationError(md metadata.MD) bool {
	vs := md[_applicationErrorKey]
	return len(vs) > 0 && vs[0] != ""
}
