package chaos

import (
	"context"
	"strconv"
	"strings"

	"github.com/errown/errown/internal/testidl/proto/echopb"
	"google.golang.org/grpc"
)

// Interceptor returns m as a grpc-go unary client interceptor, for
// grpcgo.WithInnerInterceptors: each attempt invokes with a reply of its
// own (the winner's copied into the caller's), as a hedging interceptor
// must, and the call options as given. A Fallback's attempt goes to the
// method AltMethod names. With a Ledger, each attempt's answer to an
// echopb.EchoRequest (Key the request's ID) is checked as the invoker
// returns it.
func (m *Middleware) Interceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		rm, ok := reply.(*echopb.EchoResponse)
		if !ok {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		id, hasID := grpcID(req)
		send := func(ctx context.Context, alt bool) (*echopb.EchoResponse, error) {
			r := new(echopb.EchoResponse)
			meth := method
			if alt {
				meth = AltMethod(method)
			}
			err := invoker(ctx, meth, req, r, cc, opts...)
			if m.ledger != nil && hasID {
				m.ledger.Check("chaos attempt", id, []string{methodName(meth)}, GRPCAnswer(r, err))
			}
			return r, err
		}
		r, err := Do(ctx, m, send, func(*echopb.EchoResponse) {})
		if err == nil && r != nil {
			rm.Key = r.Key
		}
		return err
	}
}

// AltMethod returns the method a Fallback of the gRPC method falls back
// to: its name with AltSuffix.
func AltMethod(method string) string { return method + AltSuffix }

// methodName is the last element of a gRPC method, the procedure a Leaf
// echoes.
func methodName(method string) string { return method[strings.LastIndexByte(method, '/')+1:] }

// GRPCRequest returns the request message of request id.
func GRPCRequest(id uint64) *echopb.EchoRequest {
	return &echopb.EchoRequest{Key: strconv.FormatUint(id, 10)}
}

func grpcID(req any) (uint64, bool) {
	r, ok := req.(*echopb.EchoRequest)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(r.GetKey(), 10, 64)
	return id, err == nil
}

// GRPCAnswer is a reply (an echopb.EchoResponse whose Key is the echo)
// and error as a Ledger checks them.
func GRPCAnswer(reply *echopb.EchoResponse, err error) Answer {
	a := Answer{Err: err, Empty: err != nil}
	if reply.GetKey() != "" {
		a.Body = []byte(reply.GetKey())
	}
	return a
}
