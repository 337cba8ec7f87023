// Package grpcgo gives plain grpc-go services (google.golang.org/grpc,
// no yarpc) errown's error ownership, on errown's own core: the
// interceptors adapt each gRPC call to a yarpc transport.Request and run
// the middleware an errown.Middleware puts on yarpc dispatchers, so the
// decision tables, the dependency memory, retry policies and budgets,
// observe mode, storm telemetry, metrics and the debug page are errown's,
// configured by the same Config (the same YAML), unchanged.
//
//	mw, err := errown.New(cfg, errown.WithScope(scope)) // or, with fx, errown.Core and Module
//	// mw.Start() before serving, mw.Stop() after.
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(grpcgo.UnaryServerInterceptor(mw)))
//	cc, err := grpc.NewClient(target, append(grpcgo.DialOptions(mw, grpcgo.WithService("payments")),
//		grpc.WithTransportCredentials(creds))...)
//
// One Middleware serves a service's server and all its ClientConns: the
// calls a handler makes with its request's context are logged against
// the request, and its error is claimed or unclaimed from them, exactly
// as on a yarpc dispatcher. Put errown's server interceptor first in the
// chain (outermost), so that it sees the error the caller will see; a
// recovery interceptor outside it turns a panic into an error without a
// claim, which callers treat as a missing claim.
//
// # Wire
//
// The wire is yarpc's gRPC transport's: errown's headers travel as plain
// lower-case metadata, errown-attempt on requests, errown-claim,
// errown-no-retry and errown-storm in the response's trailers, under the
// names the Config gives them. Procedures are "pkg.Service::Method", and
// gRPC codes map to yarpc's by yarpc's own table, so grpc-go and yarpc
// services with errown read each other's claims; a grpc-go client calling
// a yarpc service sends the metadata yarpc's gRPC inbound requires
// (rpc-caller, rpc-service and rpc-encoding, or a content-subtype) and a
// deadline. A callee's grpc-retry-pushback-ms that grpc-go would not retry
// on is errown's no-retry, and an errown server's no-retry also sends
// grpc-retry-pushback-ms: -1.
//
// # Retries errown does not own
//
// An application's own retry interceptor is chained inside errown's, with
// AttemptsInterceptor after it, last, which holds its replays to errown's
// rules; DialOptions chains the interceptors given with
// WithInnerInterceptors so. See AttemptsInterceptor and DialOptions.
//
// # grpc-go's own retries
//
// A retryPolicy in a ClientConn's service config makes grpc-go retry
// inside one call of the invoker, below every interceptor, blind to
// claims. DialOptions turns it off for the ClientConn
// (grpc.WithDisableRetry, which keeps transparent retries), and
// UnaryClientInterceptor alone commits each call to its first attempt
// (see there), so a callee serves no more than errown's policy allows.
// WithGRPCRetries leaves them on, and errown then neither counts nor
// refuses them: no hook of grpc-go (stats.Handler, per-RPC credentials)
// can hold them to errown's rules.
//
// # Several addresses
//
// grpc-go's pick_first sends every call and its retries to one address,
// and its round_robin sends a retry where its turn points, under
// concurrency often the address that just failed it. WithRoundRobin has
// DialOptions balance with errown's round robin, which sends a retry to
// an address the call's earlier attempts did not reach, as package
// retrypeer does for yarpc's peer lists (TestRoundRobinSpreadsRetries
// measures the difference).
//
// # Handlers
//
// The handler runs with its own grpc.ServerTransportStream in its context
// (as under grpc-go's own OpenTelemetry interceptor), through which its
// trailers reach errown: grpc.SetTrailer, SetHeader, SendHeader and Method
// work as without errown, but the experimental grpc.SetSendCompressor and
// grpc.ClientSupportedCompressors, which need grpc-go's own stream type,
// fail in a handler under errown's server interceptor.
//
// # fx
//
// Module adapts the application's errown.Core (or errown.Module) to
// grpc-go: see Module.
//
// # What is not covered
//
// Stream calls need no interceptor and get none: errown leaves streams
// alone on yarpc too. A handler's outbound calls made from a stream
// handler are untracked. The storm lab runs meshes of grpc-go services
// (go run ./cmd/stormsim -transport grpc-go).
package grpcgo
