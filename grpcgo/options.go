package grpcgo

import (
	"github.com/errown/errown"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/ownership"
	"google.golang.org/grpc"
)

// Option configures UnaryServerInterceptor and UnaryClientInterceptor.
type Option interface {
	apply(*options)
}

type options struct {
	attemptHeader string
	noRetryHeader string
	service       string
	grpcRetries   bool
	roundRobin    bool
	retryDisabled bool // DialOptions disabled grpc-go's retries on the ClientConn
	inner         []grpc.UnaryClientInterceptor
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func newOptions(opts []Option) options {
	o := options{attemptHeader: defaults.AttemptHeader, noRetryHeader: defaults.NoRetryHeader}
	for _, opt := range opts {
		opt.apply(&o)
	}
	return o
}

// newAdapterOptions returns the options of an interceptor on a Middleware
// whose Config names the headers h: those names, unless opts say
// otherwise.
func newAdapterOptions(h ownership.Headers, opts []Option) options {
	return newOptions(append([]Option{WithConfig(errown.Config{Headers: h})}, opts...))
}

// WithConfig gives the interceptors the header names of cfg. Two are
// read: attemptHeader, which the server interceptor reads from the
// incoming metadata (with the wrong name, errown counts every request as
// a root), and noRetryHeader, which both interceptors translate gRPC's
// pushback (grpc-retry-pushback-ms) to and from. By default the
// interceptors read them from the Config the Middleware was built from,
// so WithConfig is needed only to override those; a name cfg leaves
// empty keeps the Middleware's. Everything else
// (the claim and storm headers, policies, budget, memory) comes from the
// Middleware itself.
func WithConfig(cfg errown.Config) Option {
	return optionFunc(func(o *options) {
		if cfg.Headers.Attempt != "" {
			o.attemptHeader = cfg.Headers.Attempt
		}
		if cfg.Headers.NoRetry != "" {
			o.noRetryHeader = cfg.Headers.NoRetry
		}
	})
}

// WithService names the callee of a client interceptor's calls for
// errown: the service a retry policy (retry.policies[].service), a budget,
// the retry metrics' callee tag and the dependency memory's edges name.
// Default: the gRPC service of the method, "pkg.Service" in
// "/pkg.Service/Method". A ClientConn usually reaches one service, so
// give each ClientConn's interceptor the name its policy uses. The server
// interceptor ignores it.
func WithService(name string) Option {
	return optionFunc(func(o *options) { o.service = name })
}

// WithGRPCRetries leaves grpc-go's own retries (a retryPolicy in the
// ClientConn's service config) on for the calls of a client interceptor
// or the ClientConn of DialOptions. By default errown turns them off:
// grpc-go would retry under errown, blind to claims and unseen by
// errown's budget and telemetry, multiplying each of errown's attempts.
// Use it only on a ClientConn whose service config has no retryPolicy
// for the methods errown retries, and accept that grpc-go's retries of
// the others are blind to claims.
func WithGRPCRetries() Option {
	return optionFunc(func(o *options) { o.grpcRetries = true })
}

// WithRoundRobin has DialOptions balance the ClientConn's calls over the
// target's addresses with errown's round robin (the ClientConn's default
// service config): each call to the next ready address, and a retry
// errown's policy sends to an address the call's earlier attempts did not
// reach. Without it grpc-go's default,
// pick_first, sends every call and its retries to one address, and
// grpc-go's round_robin sends a retry where its turn points, under
// concurrency often the address that just failed it; a resolver's or a
// WithDefaultServiceConfig's loadBalancingConfig given after it wins. The
// interceptors themselves ignore it.
func WithRoundRobin() Option {
	return optionFunc(func(o *options) { o.roundRobin = true })
}

// WithInnerInterceptors gives DialOptions the application's own unary
// client interceptors to chain inside errown's: after
// UnaryClientInterceptor, so that each of errown's attempts passes through
// them, and before AttemptsInterceptor, which DialOptions then chains
// last, so that a call they send again (a retry interceptor, a client
// library that loops) is seen, counted and held to errown's rules. They
// run in the order given, the first outermost. The interceptors
// themselves ignore it.
func WithInnerInterceptors(own ...grpc.UnaryClientInterceptor) Option {
	return optionFunc(func(o *options) { o.inner = append(o.inner, own...) })
}
