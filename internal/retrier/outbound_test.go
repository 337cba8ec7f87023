package retrier

import (
	"context"
	"io"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Test doubles shared by this package's tests.

// step is one scripted answer of fakeOutbound. It gets the attempt's ctx so
// that a response body can depend on it.
type step func(ctx context.Context) (*transport.Response, error)

// fail answers with err and, when headers are given as key, value pairs, a
// response carrying them (as yarpc's HTTP and gRPC transports do).
func fail(err error, headers ...string) step {
	return func(context.Context) (*transport.Response, error) {
		if len(headers) == 0 {
			return nil, err
		}
		h := transport.NewHeaders()
		for i := 0; i+1 < len(headers); i += 2 {
			h = h.With(headers[i], headers[i+1])
		}
		return &transport.Response{Headers: h}, err
	}
}

// appError answers as yarpc hands a Thrift exception to outbound
// middleware: no error, a response marked as an application error with
// code (nil: the IDL gave it none) and a body to close.
func appError(code *yarpcerrors.Code, headers ...string) step {
	return func(ctx context.Context) (*transport.Response, error) {
		res, _ := fail(nil, headers...)(ctx)
		if res == nil {
			res = &transport.Response{}
		}
		res.ApplicationError = true
		res.ApplicationErrorMeta = &transport.ApplicationErrorMeta{Name: "Exception", Code: code}
		res.Body = &ctxBody{ctx: ctx, r: strings.NewReader("exception")}
		return res, nil
	}
}

// succeed answers with a response whose body reads s while the attempt's
// ctx is alive, like a transport streaming the body under it.
func succeed(s string) step {
	return func(ctx context.Context) (*transport.Response, error) {
		return &transport.Response{Body: &ctxBody{ctx: ctx, r: strings.NewReader(s)}, BodySize: len(s)}, nil
	}
}

type ctxBody struct {
	ctx    context.Context
	r      io.Reader
	closed atomic.Bool
}

func (b *ctxBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	return b.r.Read(p)
}

func (b *ctxBody) Close() error {
	b.closed.Store(true)
	return nil
}

// sent is what fakeOutbound saw of one request.
type sent struct {
	Body        string
	HasBody     bool
	BodySize    int
	Headers     map[string]string
	HasDeadline bool
	Timeout     time.Duration // time left before the deadline, if any
}

// fakeOutbound is a transport.UnaryOutbound that records each request and
// answers from a script; past its end it repeats the last step.
type fakeOutbound struct {
	script []step

	mu     sync.Mutex
	sent   []sent
	bodies []io.ReadCloser // of the responses returned, nil for none
}

var _ transport.UnaryOutbound = (*fakeOutbound)(nil)

func newOutbound(script ...step) *fakeOutbound {
	return &fakeOutbound{script: script}
}

func (o *fakeOutbound) Transports() []transport.Transport { return nil }
func (o *fakeOutbound) Start() error                      { return nil }
func (o *fakeOutbound) Stop() error                       { return nil }
func (o *fakeOutbound) IsRunning() bool                   { return true }

func (o *fakeOutbound) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	s := sent{BodySize: req.BodySize, Headers: maps.Clone(req.Headers.Items())}
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		s.Body, s.HasBody = string(b), true
	}
	if d, ok := ctx.Deadline(); ok {
		s.HasDeadline, s.Timeout = true, time.Until(d)
	}
	o.mu.Lock()
	i := min(len(o.sent), len(o.script)-1)
	o.sent = append(o.sent, s)
	o.mu.Unlock()
	res, err := o.script[i](ctx)
	var body io.ReadCloser
	if res != nil {
		body = res.Body
	}
	o.mu.Lock()
	o.bodies = append(o.bodies, body)
	o.mu.Unlock()
	return res, err
}

func (o *fakeOutbound) requests() []sent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]sent(nil), o.sent...)
}

// responseBodies returns the bodies of the responses returned, as
// returned.
func (o *fakeOutbound) responseBodies() []io.ReadCloser {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]io.ReadCloser(nil), o.bodies...)
}

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
