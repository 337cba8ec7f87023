package ingress

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/defaults"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// shed returns the count of inbound.shed in mode for reason.
func (e env) shed(mode, reason string) int64 {
	c, ok := e.scope.Snapshot().Counters()["inbound.shed+mode="+mode+",reason="+reason]
	if !ok {
		return 0
	}
	return c.Value()
}

// blocking returns a handler that signals started and waits for release.
func blocking(started chan<- struct{}, release <-chan struct{}) handlerFunc {
	return func(context.Context, *transport.Request, transport.ResponseWriter) error {
		started <- struct{}{}
		<-release
		return nil
	}
}

// ok is a handler that succeeds.
var ok = handlerFunc(func(context.Context, *transport.Request, transport.ResponseWriter) error { return nil })

// oneAtOnce is an admission of one request at once and one queued.
var oneAtOnce = inbound.AdmissionConfig{Mode: inbound.AdmissionEnforce, MinLimit: 1, MaxLimit: 1, MaxQueue: 1}

func TestAdmissionSheds(t *testing.T) {
	e := newEnv(t, inbound.Config{Admission: oneAtOnce, Edge: inbound.EdgeConfig{Callers: []string{"outside"}}})
	started, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, blocking(started, release))
	}()
	<-started
	queued := make(chan error, 1)
	go func() {
		queued <- e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, ok)
	}()
	require.Eventually(t, func() bool { _, q, _ := e.mw.AdmissionLimit(); return q == 1 }, 5*time.Second, time.Millisecond)

	retry := request("http")
	retry.Headers = transport.NewHeaders().With("errown-attempt", "2")
	edgeReq := request("http")
	edgeReq.Caller = "outside"
	for _, tt := range []struct {
		name      string
		req       *transport.Request
		reason    string
		wantClaim string
		wantShed  string
	}{
		{"a retry", retry, "retry", "claimed", "retry"},
		{"a first attempt past a full queue", request("http"), "queue_full", "claimed", "queue_full"},
		{"an edge request: no errown header", edgeReq, "queue_full", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resw := &transporttest.FakeResponseWriter{}
			served := false
			err := e.mw.Handle(context.Background(), tt.req, resw, handlerFunc(func(context.Context, *transport.Request, transport.ResponseWriter) error {
				served = true
				return nil
			}))
			assert.False(t, served)
			assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code(), "%v", err)
			claim, _ := resw.Headers.Get(defaults.ClaimHeader)
			assert.Equal(t, tt.wantClaim, claim)
			_, noRetry := resw.Headers.Get(defaults.NoRetryHeader)
			assert.Equal(t, tt.wantClaim != "", noRetry, "pushback")
			shed, _ := resw.Headers.Get(defaults.ShedHeader)
			assert.Equal(t, tt.wantShed, shed, "the shed marker, naming the reason")
		})
	}
	assert.Equal(t, int64(1), e.shed("enforce", "retry"))
	assert.Equal(t, int64(2), e.shed("enforce", "queue_full"))

	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-queued, "the queued request is served once the slot is free")
}

func TestAdmissionDropsAbandoned(t *testing.T) {
	e := newEnv(t, inbound.Config{Admission: oneAtOnce})
	started, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, blocking(started, release))
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	served := make(chan struct{}, 1)
	go func() {
		queued <- e.mw.Handle(ctx, request("http"), &transporttest.FakeResponseWriter{}, handlerFunc(func(context.Context, *transport.Request, transport.ResponseWriter) error {
			served <- struct{}{}
			return nil
		}))
	}()
	require.Eventually(t, func() bool { _, q, _ := e.mw.AdmissionLimit(); return q == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	err := <-queued
	assert.Equal(t, yarpcerrors.CodeCancelled, yarpcerrors.FromError(err).Code(), "%v", err)
	assert.Equal(t, int64(1), e.shed("enforce", "abandoned"))
	close(release)
	require.NoError(t, <-held)
	assert.Empty(t, served, "the handler never saw it")
}

func TestAdmissionObserveServesAll(t *testing.T) {
	cfg := oneAtOnce
	cfg.Mode = inbound.AdmissionObserve
	e := newEnv(t, inbound.Config{Admission: cfg})
	started, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, blocking(started, release))
	}()
	<-started
	retry := request("http")
	retry.Headers = transport.NewHeaders().With("errown-attempt", "3")
	// The first over the limit would queue: it is served at once...
	over := make(chan error, 1)
	go func() {
		over <- e.mw.Handle(context.Background(), retry, &transporttest.FakeResponseWriter{}, blocking(started, release))
	}()
	<-started
	assert.Equal(t, int64(0), e.shed("observe", "retry"))
	// ...and the second would be shed: it is served too, and counted.
	require.NoError(t, e.mw.Handle(context.Background(), retry, &transporttest.FakeResponseWriter{}, ok))
	assert.Equal(t, int64(1), e.shed("observe", "retry"))
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-over)
}

func TestAdmissionEnforcedByDefault(t *testing.T) {
	e := newEnv(t, inbound.Config{})
	_, _, on := e.mw.AdmissionLimit()
	assert.True(t, on)
}

func TestAdmissionDisabled(t *testing.T) {
	e := newEnv(t, inbound.Config{Admission: inbound.AdmissionConfig{Mode: inbound.AdmissionDisabled}})
	_, _, on := e.mw.AdmissionLimit()
	assert.False(t, on)
	require.NoError(t, e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, ok))
	for name := range e.scope.Snapshot().Counters() {
		assert.NotContains(t, name, "shed")
	}
}

// BenchmarkHandleAdmission compares the steady path (a quiet success,
// under the limit) with admission disabled and enforced.
func BenchmarkHandleAdmission(b *testing.B) {
	for _, mode := range []inbound.AdmissionMode{inbound.AdmissionDisabled, inbound.AdmissionEnforce} {
		b.Run(string(mode), func(b *testing.B) {
			mw, err := New(inbound.Config{Admission: inbound.AdmissionConfig{Mode: mode}})
			require.NoError(b, err)
			req := request("http")
			resw := &transporttest.FakeResponseWriter{}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := mw.Handle(ctx, req, resw, ok); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(string(mode)+"/parallel", func(b *testing.B) {
			mw, err := New(inbound.Config{Admission: inbound.AdmissionConfig{Mode: mode}})
			require.NoError(b, err)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := request("http")
				resw := &transporttest.FakeResponseWriter{}
				ctx := context.Background()
				for pb.Next() {
					if err := mw.Handle(ctx, req, resw, ok); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkHandleAdmissionPaired runs the steady path (a quiet success,
// under the limit) with admission disabled and enforced in turns of 1000
// requests, so that what drifts on a shared machine touches both alike,
// and reports each one's ns per request and enforce's extra.
func BenchmarkHandleAdmissionPaired(b *testing.B) {
	var mws [2]*Middleware
	for i, mode := range []inbound.AdmissionMode{inbound.AdmissionDisabled, inbound.AdmissionEnforce} {
		mw, err := New(inbound.Config{Admission: inbound.AdmissionConfig{Mode: mode}})
		require.NoError(b, err)
		mws[i] = mw
	}
	req := request("http")
	resw := &transporttest.FakeResponseWriter{}
	ctx := context.Background()
	var spent [2]time.Duration
	const turn = 1000
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, i := range []int{0, 1, 1, 0} {
			start := time.Now()
			for range turn {
				if err := mws[i].Handle(ctx, req, resw, ok); err != nil {
					b.Fatal(err)
				}
			}
			spent[i] += time.Since(start)
		}
	}
	n := float64(2 * turn * b.N)
	b.ReportMetric(float64(spent[0])/n, "disabled-ns/req")
	b.ReportMetric(float64(spent[1])/n, "enforce-ns/req")
	b.ReportMetric(float64(spent[1]-spent[0])/n, "extra-ns/req")
}
