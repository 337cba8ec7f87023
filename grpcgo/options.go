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
// whose Config names the headers h: those names, unless opts say otherwise.
func newAdapterOptions(h ownership.Headers, opts []Option) options {
	return newOptions(append([]Option{WithConfig(errown.Config{Headers: h})}, opts...))
}

// WithConfig overrides the header names the interceptors read from the
// Middleware's Config with those cfg sets: attemptHeader, which the server
// interceptor reads from the incoming metadata, and noRetryHeader, which
// both translate gRPC's pushback to and from. All else is the Middleware's.
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
// errown: the service its retry policy, budget, metrics and edges name.
// Default: the gRPC service of the method, "pkg.Service" in
// "/pkg.Service/Method". The server interceptor ignores it.
func WithService(name string) Option {
	return optionFunc(func(o *options) { o.service = name })
}

// WithGRPCRetries leaves grpc-go's own retries (a retryPolicy in the
// ClientConn's service config) on, which errown otherwise turns off:
// they would multiply each of errown's attempts, blind to claims. Use it
// only where the service config has no retryPolicy for the methods errown
// retries.
func WithGRPCRetries() Option {
	return optionFunc(func(o *options) { o.grpcRetries = true })
}

// WithRoundRobin has DialOptions balance the ClientConn's calls over the
// target's addresses with errown's round robin (the default service
// config): each call to the next ready address, and a retry to an address
// the call's earlier attempts did not reach (see the package
// documentation, "Several addresses"). A loadBalancingConfig given by the
// resolver or after it wins. The interceptors ignore it.
func WithRoundRobin() Option {
	return optionFunc(func(o *options) { o.roundRobin = true })
}

// WithInnerInterceptors gives DialOptions the application's own unary
// client interceptors to chain, in the order given, between
// UnaryClientInterceptor and AttemptsInterceptor, which it then chains
// last, so that a call they send again is held to errown's rules. The
// interceptors ignore it.
func WithInnerInterceptors(own ...grpc.UnaryClientInterceptor) Option {
	return optionFunc(func(o *options) { o.inner = append(o.inner, own...) })
}
