package grpcgo

import (
	"github.com/errown/errown"
	"github.com/errown/errown/ownership"
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
	retryDisabled bool // DialOptions disabled grpc-go's retries on the ClientConn
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func newOptions(opts []Option) options {
	o := options{attemptHeader: ownership.DefaultAttemptHeader, noRetryHeader: ownership.DefaultNoRetryHeader}
	for _, opt := range opts {
		opt.apply(&o)
	}
	return o
}

// WithConfig gives the interceptors the Config the Middleware was built
// from, whose header names errown.Middleware does not expose. Two are
// read: attemptHeader, which the server interceptor reads from the
// incoming metadata (without it, errown counts every request as a root),
// and noRetryHeader, which both interceptors translate gRPC's pushback
// (grpc-retry-pushback-ms) to and from. Without WithConfig the default
// names are assumed: pass it whenever the Config renames either.
// Everything else (the claim and storm headers, policies, budget,
// memory) comes from the Middleware itself.
func WithConfig(cfg errown.Config) Option {
	return optionFunc(func(o *options) {
		if cfg.AttemptHeader != "" {
			o.attemptHeader = cfg.AttemptHeader
		}
		if cfg.NoRetryHeader != "" {
			o.noRetryHeader = cfg.NoRetryHeader
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
