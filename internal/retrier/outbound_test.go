package retrier

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Test doubles shared by this package's tests.

// step is one scripted answer of the callee below the middleware.
type step = outboundtest.Step

// newOutbound returns a callee answering from script, its last step
// repeating, that records what it was sent.
func newOutbound(script ...step) *outboundtest.Outbound {
	return outboundtest.New(script...)
}

// fail answers with err and, when headers are given as key, value pairs, a
// response carrying them (as yarpc's HTTP and gRPC transports do).
func fail(err error, headers ...string) step { return outboundtest.Fail(err, headers...) }

// appError answers as yarpc hands a Thrift exception to outbound
// middleware: no error, a response marked as an application error with
// code (nil: the IDL gave it none) and a body to close.
func appError(code *yarpcerrors.Code, headers ...string) step {
	return func(ctx context.Context, _ *transport.Request) (*transport.Response, error) {
		res := &transport.Response{Headers: outboundtest.Headers(headers...)}
		res.ApplicationError = true
		res.ApplicationErrorMeta = &transport.ApplicationErrorMeta{Name: "Exception", Code: code}
		res.Body = outboundtest.NewBody(ctx, "exception")
		return res, nil
	}
}

// succeed answers with a response whose body reads s while the attempt's
// ctx is alive, like a transport streaming the body under it.
func succeed(s string) step { return outboundtest.Succeed(s) }

// fakeClock is a clock whose sleep only records and moves time on.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Now()}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func (c *fakeClock) option() Option {
	return withClock(c.Now, c.Sleep)
}

// fixedRand is a jitter source that always returns u.
func fixedRand(u float64) Option {
	return withRand(func() float64 { return u })
}

// counters returns the non-zero counters of a test scope as
// "name+tag=value,..." → value.
func counters(s tally.TestScope) map[string]int64 {
	got := make(map[string]int64)
	for k, c := range s.Snapshot().Counters() {
		if c.Value() != 0 {
			got[k] = c.Value()
		}
	}
	return got
}

// keys returns the sorted keys of m, for messages.
func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// newMiddleware returns New(cfg, opts...) or fails t.
func newMiddleware(t testing.TB, cfg retry.Config, opts ...Option) *Middleware {
	t.Helper()
	m, err := New(cfg, opts...)
	require.NoError(t, err, "New")
	return m
}
