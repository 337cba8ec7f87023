package ingress

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/egress"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/outbound"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// manualClock is a clock the handlers move, shared by two services.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestAdmissionOnlyTheBottleneckSheds: a service whose handler waits on
// a slow callee judges its own time, not its callee's. When the callee's
// work slows tenfold the callee cuts its limit and refuses a request it
// cannot finish in time; the service above keeps its limit, and admits
// that request with one of its own in flight (its own work takes no
// time), sheds nothing, and answers with the callee's shed.
func TestAdmissionOnlyTheBottleneckSheds(t *testing.T) {
	clk := &manualClock{t: time.Unix(1000, 0)}
	cfg := inbound.Config{Admission: inbound.AdmissionConfig{Mode: inbound.AdmissionEnforce, MinLimit: 1}}
	above := newEnv(t, cfg, withAdmissionClock(clk.Now))
	below := newEnv(t, cfg, withAdmissionClock(clk.Now))
	eg, err := egress.New(outbound.Config{})
	require.NoError(t, err)

	var work time.Duration // the callee's service time, moved between phases
	calleeHandler := handlerFunc(func(context.Context, *transport.Request, transport.ResponseWriter) error {
		clk.Add(work)
		return nil
	})
	// The network: the callee gets the deadline, not the caller's context.
	callee := outboundtest.New(func(ctx context.Context, req *transport.Request) (*transport.Response, error) {
		deadline, _ := ctx.Deadline()
		cctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		resw := &transporttest.FakeResponseWriter{}
		err := below.mw.Handle(cctx, rootRequest("work"), resw, calleeHandler)
		return &transport.Response{Headers: resw.Headers}, err
	})
	aboveHandler := handlerFunc(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		_, err := eg.Call(ctx, &transport.Request{Service: "below", Procedure: "work"}, callee)
		return err
	})
	send := func(deadline time.Duration) error {
		ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(deadline))
		defer cancel()
		return above.mw.Handle(ctx, rootRequest("proc"), &transporttest.FakeResponseWriter{}, aboveHandler)
	}

	work = 5 * time.Millisecond
	for range 32 {
		require.NoError(t, send(60*time.Millisecond))
	}
	aboveLimit, _, _ := above.mw.AdmissionLimit()
	belowLimit, _, _ := below.mw.AdmissionLimit()

	work = 50 * time.Millisecond
	for range 32 {
		require.NoError(t, send(60*time.Millisecond))
	}
	limit, _, _ := above.mw.AdmissionLimit()
	assert.GreaterOrEqual(t, limit, aboveLimit, "above: no cut on its callee's time")
	limit, _, _ = below.mw.AdmissionLimit()
	assert.Less(t, limit, belowLimit/2, "the bottleneck cuts on its own")

	// One request in flight at each service, and one more with 30ms
	// left: the service above admits it, the bottleneck, slower than
	// that, refuses it.
	started, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 2)
	for _, e := range []env{above, below} {
		go func() {
			held <- e.mw.Handle(context.Background(), rootRequest("held"), &transporttest.FakeResponseWriter{}, blocking(started, release))
		}()
		<-started
	}
	err = send(30 * time.Millisecond)
	assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code(), "%v", err)
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-held)

	for _, r := range []string{"queue_full", "retry", "incident", "deadline", "abandoned"} {
		assert.Zero(t, above.shed("enforce", r), "above shed for %s", r)
	}
	assert.Equal(t, int64(1), below.shed("enforce", "deadline"), "the bottleneck sheds")
}

// TestAdmissionParksWhileCalling: a request waiting for its outbound
// call does not count against its service's limit: with a limit of one,
// a second request is served while the first waits on its callee. A call
// the handler leaves under way when it returns takes nothing with it.
func TestAdmissionParksWhileCalling(t *testing.T) {
	e := newEnv(t, inbound.Config{Admission: oneAtOnce})
	eg, err := egress.New(outbound.Config{})
	require.NoError(t, err)
	calling, release := make(chan struct{}), make(chan struct{})
	slow := outboundtest.New(func(context.Context, *transport.Request) (*transport.Response, error) {
		calling <- struct{}{}
		<-release
		return &transport.Response{Headers: transport.NewHeaders()}, nil
	})
	call := func(ctx context.Context) {
		_, _ = eg.Call(ctx, &transport.Request{Service: "below", Procedure: "work"}, slow)
	}

	waiting := make(chan error, 1)
	go func() {
		waiting <- e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerFunc(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
			call(ctx)
			return nil
		}))
	}()
	<-calling
	assert.Zero(t, e.mw.admission.InFlight(), "parked while it calls")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // not queued behind it
	defer cancel()
	require.NoError(t, e.mw.Handle(ctx, request("http"), &transporttest.FakeResponseWriter{}, ok), "served at once")
	release <- struct{}{}
	require.NoError(t, <-waiting)
	assert.Zero(t, e.mw.admission.InFlight())

	// Fire and forget: the handler returns with its call under way.
	var wg sync.WaitGroup
	require.NoError(t, e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerFunc(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		wg.Go(func() { call(ctx) })
		<-calling
		return nil
	})))
	assert.Zero(t, e.mw.admission.InFlight(), "the request ended")
	release <- struct{}{}
	wg.Wait()
	assert.Zero(t, e.mw.admission.InFlight(), "its call ended later")
	for _, r := range []string{"queue_full", "deadline", "abandoned"} {
		assert.Zero(t, e.shed("enforce", r), "shed for %s", r)
	}
}
