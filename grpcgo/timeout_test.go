package grpcgo_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestTimeoutByTheClock: an attempt that ends unknown once its deadline
// passed (a transport below errown's interceptors that words a timeout
// as it likes) is deadline-exceeded through the adapter too: a policy
// whose retryableCodes name only deadline-exceeded retries it, and the
// root's call succeeds.
func TestTimeoutByTheClock(t *testing.T) {
	var attempts atomic.Int32
	misreports := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if attempts.Add(1) == 1 {
			<-ctx.Done()
			return status.Errorf(codes.Unknown, "unknown error from the transport: %v", ctx.Err())
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	cfg := retrying(_c)
	cfg.Retry.Policies[0].AttemptTimeout = 50 * time.Millisecond
	cfg.Retry.Policies[0].RetryableCodes = []string{"deadline-exceeded"}
	c := startGRPC(t, nodeConfig{name: _c})
	b := startGRPC(t, nodeConfig{name: _b, errown: cfg, callee: c, dialOptions: []grpc.DialOption{misreports}})

	got := callRoot(t, b)

	assert.Equal(t, codes.OK, got.code, "the root's call")
	assert.Equal(t, int32(2), attempts.Load(), "attempts")
	assert.Equal(t, map[string]int64{_b: 1, _c: 1}, served(b, c))
}
