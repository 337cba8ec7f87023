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
// errown-no-retry and errown-storm in the response's trailers (never its
// headers: an error returned before any header was sent stays a
// trailers-only response); when the Config renames errown's headers, the
// interceptors read the names from the Middleware. Procedures are named
// "pkg.Service::Method" for "/pkg.Service/Method", as yarpc names them, and
// gRPC codes map to yarpc's codes by yarpc's own table. So grpc-go and yarpc
// services with errown call each other and read each other's claims; a
// grpc-go client calling a yarpc service must send the metadata yarpc's
// gRPC inbound requires (rpc-caller, rpc-service and rpc-encoding, or a
// content-subtype), and a deadline.
//
// gRPC's own pushback speaks errown's: a callee's grpc-retry-pushback-ms
// that grpc-go would not retry on (negative, garbled, several values) is
// errown's no-retry, and an errown server's no-retry (inbound.DoNotRetry)
// also sends grpc-retry-pushback-ms: -1 for callers without errown.
//
// # Retries errown does not own
//
// An application that keeps its own retry interceptor chains it inside
// errown's, and AttemptsInterceptor after it, last: errown's innermost
// attempt step, as errown's own is on a yarpc dispatcher. It sees every
// call of the invoker, each an attempt that leaves the process, counts it
// in the call's attempts and storm figures, and refuses a replay errown's
// rules refuse (of an unclaimed error; past the edge's policy, budget,
// pushback or deadline) before it leaves: the retrying interceptor gets
// the previous attempt's error back, the same value, with its trailers.
// DialOptions chains the interceptors given with WithInnerInterceptors so:
//
//	grpcgo.DialOptions(mw, grpcgo.WithService("payments"), grpcgo.WithInnerInterceptors(appRetry))
//	// or, by hand:
//	grpc.WithChainUnaryInterceptor(grpcgo.UnaryClientInterceptor(mw, grpcgo.WithService("payments")),
//		appRetry, grpcgo.AttemptsInterceptor(mw))
//
// grpc-go chains interceptors in the order of its options, across
// several WithChainUnaryInterceptor: one chained by an option after
// DialOptions runs below errown's, unseen unless AttemptsInterceptor is
// chained after it.
//
// # grpc-go's own retries
//
// A retryPolicy in a ClientConn's service config makes grpc-go retry
// inside one call of the invoker (stream.go: retryLocked, shouldRetry),
// below every interceptor, AttemptsInterceptor's too, blind to claims.
// errown stops them where they are decided: a call grpc-go has committed
// to its attempt is never retried. DialOptions dials with
// grpc.WithDisableRetry(), which keeps only the transparent retries of a
// request the server never processed; UnaryClientInterceptor used alone
// commits each call to its first attempt once its request is sent
// (grpc.MaxRetryRPCBufferSize(0)), which loses those transparent retries
// too, and AttemptsInterceptor commits it again after any interceptor
// between that undid it. So with grpc-go's retryPolicy left on and no
// DialOptions, a callee serves no more than errown's policy allows.
//
// WithGRPCRetries leaves grpc-go's retries on, and errown then neither
// counts nor refuses them. A stats.Handler sees each of grpc-go's attempts
// (a stats.Begin, IsTransparentRetryAttempt for a transparent one), but
// no hook of grpc-go can hold them to errown's rules: per-RPC credentials
// (GetRequestMetadata, called before each attempt's headers go out) could
// fail an attempt, but cannot see the previous attempt's claim, return its
// error in its place (the error is the credentials' own, and gRFC A54
// turns some codes into internal), or stop grpc-go retrying that failure
// in turn.
//
// # Several addresses
//
// A ClientConn whose target resolves to several addresses balances by its
// service config: grpc-go's default, pick_first, sends every call and its
// retries to one address, and round_robin sends a retry where its turn
// points, under concurrency often the address that just failed it.
// WithRoundRobin has DialOptions balance with errown's round robin, which
// sends errown's retry of a call to an address its earlier attempts did
// not reach, as package retrypeer does for yarpc's peer lists. Measured (TestRoundRobinSpreadsRetries: three instances, one
// failing every call UNAVAILABLE, two attempts per call, 4 in flight,
// 900 requests, five runs under -race): WithRoundRobin 100% of requests
// at 1.34-1.35 calls per request, errown over grpc-go's round_robin
// 89.7-90.6% at 1.34-1.36, grpc-go's own retry policy over round_robin,
// without errown, 88.2-89.7% at 1.32-1.34.
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
// Module adapts the application's one errown.Core (or errown.Module) to
// grpc-go: it provides ServerOptions and a Dialer, which an fx
// application's constructors build its grpc.Server and ClientConns with,
// and no *errown.Middleware of its own. The configuration comes from the
// application's config under "errown", as for a yarpc service, and start
// fails with errown.ErrNotWired when no constructor took them. An
// application that serves net/http as well adds nethttp.Module beside it,
// on the same Core; one without Core fails with ErrNoCore.
//
// # What is not covered
//
// Stream calls need no interceptor and get none: errown leaves streams
// alone on yarpc too. A handler's outbound calls made from a stream
// handler are untracked. The storm lab runs meshes of grpc-go services
// (go run ./cmd/stormsim -transport grpc-go).
package grpcgo
