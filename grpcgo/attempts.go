package grpcgo

import (
	"context"
	"errors"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/adapt"
	"go.uber.org/yarpc/api/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// AttemptsInterceptor returns errown's innermost attempt step, mw's, as a
// grpc-go unary client interceptor. Chained last, next to grpc-go's
// invoker, it sees every call of the invoker, including those an
// application's interceptor between errown's UnaryClientInterceptor and
// it sends again (a retry interceptor, a client library that loops). It
// counts them in the call's attempts and storm figures, and a replay
// errown's rules refuse (of an unclaimed error; past the edge's policy,
// budget, pushback or deadline) does not leave the process: the
// interceptor that replayed gets the previous attempt's error back, the
// very value, with its trailers, header and peer in the call options that
// ask for them, and its grpc.OnFinish functions called with it. Each
// refusal counts in errown.retry.denied{reason=foreign-...}, each replay
// let through in errown.retry.foreign_attempts.
//
//	grpc.WithChainUnaryInterceptor(grpcgo.UnaryClientInterceptor(mw, grpcgo.WithService("payments")),
//		appRetry, grpcgo.AttemptsInterceptor(mw))
//
// or give the application's interceptors to DialOptions with
// WithInnerInterceptors. Use one per ClientConn: a second one counts each
// attempt twice. A call without errown's UnaryClientInterceptor (of the
// same mw) above, or made with a context other than the one it handed
// down, passes through uncounted. Where UnaryClientInterceptor commits
// each call to grpc-go's first try (without DialOptions or
// WithGRPCRetries), it commits each attempt again, after whatever call
// options the interceptors between set.
func AttemptsInterceptor(mw *errown.Middleware) grpc.UnaryClientInterceptor {
	step := adapt.AttemptsOf(mw)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		at := errownAttemptOf(opts)
		if at == nil {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		treq := at.request(method)
		a := &attempt{call: at.call, of: at, own: treq, invoker: invoker, method: method, req: req, reply: reply, cc: cc, opts: opts}
		_, err := step.Call(ctx, treq, a)
		if !a.sent {
			return refused(at, opts, err)
		}
		return a.err
	}
}

// errownAttemptOf returns the attempt errown's UnaryClientInterceptor
// passes down in opts, or nil.
func errownAttemptOf(opts []grpc.CallOption) *errownAttempt {
	for i := len(opts) - 1; i >= 0; i-- {
		if at, ok := opts[i].(*errownAttempt); ok {
			return at
		}
	}
	return nil
}

// attempt is one call of the invoker below the innermost step, as a
// transport.UnaryOutbound: Call sends it, and keeps what came back with
// its error for a refused replay to return.
type attempt struct {
	adapt.NoLifecycle

	call       *clientCall
	of         *errownAttempt     // errown's attempt it was sent under
	own        *transport.Request // the request the step was given for it
	invoker    grpc.UnaryInvoker
	method     string
	req, reply any
	cc         *grpc.ClientConn
	opts       []grpc.CallOption

	sent    bool
	res     transport.Response // what errown's step reads of it
	err     error              // as the invoker returned it
	trailer metadata.MD
	header  metadata.MD
	peer    peer.Peer
	gotPeer bool
}

var _ transport.UnaryOutbound = (*attempt)(nil)

// Call sends the attempt: the invoker with the call options it was given,
// then errown's, with treq's headers (errown's attempt header, which the
// step stamps on a replay) in the outgoing metadata.
func (a *attempt) Call(ctx context.Context, treq *transport.Request) (*transport.Response, error) {
	a.sent = true
	opts := make([]grpc.CallOption, 0, len(a.opts)+4)
	for _, o := range a.opts {
		if t, ok := o.(grpc.TrailerCallOption); ok && t.TrailerAddr == &a.of.trailer {
			// errown's attempt gets the trailers when this attempt
			// ends, unless it has returned (deliver): attempts of it
			// may run at once.
			continue
		}
		opts = append(opts, o)
	}
	opts = append(opts, grpc.Trailer(&a.trailer))
	for _, o := range a.opts {
		switch o.(type) {
		case grpc.HeaderCallOption:
			opts = append(opts, grpc.Header(&a.header))
		case grpc.PeerCallOption:
			opts = append(opts, grpc.Peer(&a.peer))
			a.gotPeer = true
		}
	}
	if a.call.commit {
		opts = append(opts, _noGRPCRetry)
	}
	if treq != a.own {
		// A replay, stamped with its own attempt number; errown's own
		// attempt has its headers in ctx already.
		ctx = withOutgoing(ctx, treq.Headers)
	}
	a.err = a.invoker(ctx, a.method, a.req, a.reply, a.cc, opts...)
	a.of.deliver(copyMD(a.trailer))
	a.res = transport.Response{
		Headers:          responseHeaders(a.trailer, a.call.noRetryHeader),
		ApplicationError: applicationError(a.trailer),
	}
	if a.err == nil {
		return &a.res, nil
	}
	return &a.res, &attemptError{status: yarpcError(a.err), attempt: a}
}

// attemptError is an attempt's error as errown's step keeps it: the yarpc
// error of its code, which errown classifies (through Unwrap), and the
// attempt, whose error and metadata a refused replay returns.
type attemptError struct {
	status  error
	attempt *attempt
}

func (e *attemptError) Error() string { return e.attempt.err.Error() }
func (e *attemptError) Unwrap() error { return e.status }

// refused returns, for a replay errown's step refused with err, the error
// the attempt before it returned, exactly, and gives the replay's call
// options what that attempt's would have had.
func refused(at *errownAttempt, opts []grpc.CallOption, err error) error {
	var e *attemptError
	if !errors.As(err, &e) {
		// Not an attempt of this interceptor's: should not happen.
		return grpcError(err)
	}
	prev := e.attempt
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.TrailerCallOption:
			if o.TrailerAddr == &at.trailer {
				at.deliver(copyMD(prev.trailer))
			} else {
				*o.TrailerAddr = copyMD(prev.trailer)
			}
		case grpc.HeaderCallOption:
			*o.HeaderAddr = copyMD(prev.header)
		case grpc.PeerCallOption:
			if prev.gotPeer {
				*o.PeerAddr = prev.peer
			}
		case grpc.OnFinishCallOption:
			o.OnFinish(prev.err)
		}
	}
	return prev.err
}

// copyMD returns a copy of md, nil for nil.
func copyMD(md metadata.MD) metadata.MD {
	if md == nil {
		return nil
	}
	return md.Copy()
}
