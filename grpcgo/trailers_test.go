package grpcgo_test

import (
	"context"
	"testing"

	"github.com/errown/errown/grpcgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// An error a handler returns without having sent headers is a
// trailers-only response, and still carries the claim; one after headers
// were sent carries it too. grpc-go's own retry, which retries only
// trailers-only responses (stream.go, shouldRetry), tells them apart.
func TestTrailersOnly(t *testing.T) {
	for _, tt := range []struct {
		name        string
		sendHeaders bool
		served      int64
	}{
		{"trailers only", false, 3},
		{"headers sent first", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := startGRPC(t, nodeConfig{name: _c, errown: noPolicy(), handler: func(ctx context.Context, _ *node) error {
				if tt.sendHeaders {
					if err := grpc.SendHeader(ctx, metadata.Pairs("x-app", "1")); err != nil {
						return err
					}
				}
				return status.Error(codes.Unavailable, "down")
			}})
			r := callRoot(t, c, grpc.WithDefaultServiceConfig(_grpcRetry))
			assert.Equal(t, tt.served, c.served.Load(), "served: the response was not what it should be")
			assert.Equal(t, codes.Unavailable, r.code, "root code (trailer %v)", r.trailer)
			assert.Equal(t, _claimed, r.get(_claimHeader), "root claim (trailer %v)", r.trailer)
			assert.Equal(t, "1,1,0,0,0", r.get(_stormHeader), "root storm (trailer %v)", r.trailer)
		})
	}
}

// The trailers a handler sets go out, every value kept, but errown's own
// headers among them are dropped and counted: only errown's decision
// goes out, and each of its headers once, which yarpc's gRPC outbound
// requires (a key with two values fails its call).
func TestHandlerTrailers(t *testing.T) {
	for _, fail := range []bool{true, false} {
		c := startGRPC(t, nodeConfig{name: _c, errown: noPolicy(), handler: func(ctx context.Context, _ *node) error {
			_ = grpc.SetTrailer(ctx, metadata.MD{
				_claimHeader:   {_unclaimed}, // forwarded from a callee, say
				_stormHeader:   {"9,9,9,9,9"},
				_noRetryHeader: {"true"},
				"x-app":        {"a", "b"},
			})
			_ = grpc.SetTrailer(ctx, metadata.Pairs("x-app", "c"))
			if fail {
				return status.Error(codes.Internal, "own failure")
			}
			return nil
		}})
		r := callRoot(t, c)
		want := map[string][]string{"x-app": {"a", "b", "c"}}
		if fail {
			want[_claimHeader] = []string{_claimed}
			want[_stormHeader] = []string{"1,1,0,0,0"}
		}
		got := map[string][]string{}
		for k, vs := range r.trailer {
			if k != "content-type" { // a trailers-only response's
				got[k] = vs
			}
		}
		assert.Equal(t, want, got, "fail=%v: trailers", fail)
		assert.Equal(t, int64(1), c.counter("inbound.replaced_headers", nil), "fail=%v: inbound.replaced_headers", fail)
	}
}

// grpc-go's own retryPolicy does not retry under errown: with a policy of
// three attempts in the ClientConn's service config and errown's of two,
// the callee serves two requests, not six, whether errown came with
// DialOptions (grpc.WithDisableRetry) or as the interceptor alone (each
// call committed to its first attempt); WithGRPCRetries leaves grpc-go's
// on.
func TestGRPCRetryPolicyTurnedOff(t *testing.T) {
	for _, tt := range []struct {
		name   string
		policy bool
		bare   bool
		opts   []grpcgo.Option
		served int64
	}{
		{"DialOptions", true, false, nil, 2},
		{"interceptor alone", true, true, nil, 2},
		{"DialOptions, no errown policy", false, false, nil, 1},
		{"interceptor alone, no errown policy", false, true, nil, 1},
		{"DialOptions WithGRPCRetries", true, false, []grpcgo.Option{grpcgo.WithGRPCRetries()}, 6},
		{"interceptor alone WithGRPCRetries", true, true, []grpcgo.Option{grpcgo.WithGRPCRetries()}, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := startGRPC(t, nodeConfig{name: _c, work: failWith(codes.Unavailable)}) // trailers only, no errown
			cfg := noPolicy()
			if tt.policy {
				cfg = retrying(_c)
			}
			b := startGRPC(t, nodeConfig{
				name: _b, errown: cfg, callee: c, bare: tt.bare,
				dialOptions:   []grpc.DialOption{grpc.WithDefaultServiceConfig(_grpcRetry)},
				clientOptions: tt.opts,
			})
			for i := range 2 { // the ClientConn's first call, and one once its service config is known
				before := c.served.Load()
				assert.Equal(t, codes.Unavailable, callRoot(t, b).code, "call %d: root code", i)
				assert.Equal(t, tt.served, c.served.Load()-before, "call %d: C served", i)
			}
		})
	}
}

// A goroutine the handler left behind that sets trailers after the
// handler returned reaches the gRPC stream as it would without errown,
// never errown's writer, which the next request may already be using.
func TestLateTrailers(t *testing.T) {
	late := make(chan struct{})
	const calls = 6
	done := make(chan error, calls)
	c := startGRPC(t, nodeConfig{name: _c, errown: noPolicy(), handler: func(ctx context.Context, _ *node) error {
		go func() {
			<-late
			done <- grpc.SetTrailer(ctx, metadata.Pairs("x-late", "1"))
		}()
		return status.Error(codes.Unavailable, "down")
	}})
	r := callRoot(t, c)
	close(late)
	<-done // an error or not, as grpc-go decides: the stream has ended
	for range calls - 1 {
		callRoot(t, c) // each also leaves a goroutine behind, racing the next request
	}
	for range calls - 1 {
		<-done
	}
	assert.Equal(t, _claimed, r.get(_claimHeader), "trailer %v, want the claim", r.trailer)
	assert.Empty(t, r.get("x-late"), "trailer %v, want no x-late", r.trailer)
}

// Pinned limitation (see the package doc): grpc-go's experimental
// compressor functions need its own stream type, which a handler under
// errown's server interceptor does not see.
func TestCompressorFunctionsUnderErrown(t *testing.T) {
	var errs [2]error
	c := startGRPC(t, nodeConfig{name: _c, errown: noPolicy(), handler: func(ctx context.Context, _ *node) error {
		_, errs[0] = grpc.ClientSupportedCompressors(ctx)
		errs[1] = grpc.SetSendCompressor(ctx, "identity")
		return nil
	}})
	require.Equal(t, codes.OK, callRoot(t, c).code, "root code")
	assert.Error(t, errs[0], "ClientSupportedCompressors: expected it to fail under errown")
	assert.Error(t, errs[1], "SetSendCompressor: expected it to fail under errown")
}
