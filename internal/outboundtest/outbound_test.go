package outboundtest

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
)

var errDown = errors.New("down")

func TestScriptInOrderLastRepeating(t *testing.T) {
	first := &transport.Response{}
	o := New(Answer(first, nil), Fail(errDown, "k", "v"))
	ctx := context.Background()

	res, err := o.Call(ctx, &transport.Request{})
	require.NoError(t, err)
	assert.Same(t, first, res, "Answer returns its response as it is")
	for range 2 {
		res, err = o.Call(ctx, &transport.Request{})
		assert.Same(t, errDown, err)
		require.NotNil(t, res)
		assert.Equal(t, map[string]string{"k": "v"}, res.Headers.Items())
	}
	assert.Equal(t, 3, o.Calls())
}

func TestEmptyScriptAnswersEmpty(t *testing.T) {
	res, err := New().Call(context.Background(), &transport.Request{})
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Empty(t, res.Headers.Items())
}

func TestRecordsACopyAtTheTimeOfTheCall(t *testing.T) {
	o := New()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := &transport.Request{
		Caller: "a", Service: "b", Procedure: "p", ShardKey: "s", RoutingKey: "rk", RoutingDelegate: "rd",
		Headers: Headers("X-Trace", "abc"), Body: strings.NewReader("body"), BodySize: 4,
	}
	_, err := o.Call(ctx, req)
	require.NoError(t, err)
	req.Service = "changed"
	req.Headers = Headers("x-trace", "changed")

	got := o.Requests()
	require.Len(t, got, 1)
	r := got[0]
	assert.Same(t, req, r.Req)
	assert.Equal(t, "changed", r.Req.Service, "Req is the request itself")
	assert.Equal(t, "b", r.Shallow.Service, "Shallow its copy")
	assert.Same(t, req.Body, r.Shallow.Body, "with the body handed over")
	n, _ := req.Body.Read(make([]byte, 1))
	assert.Zero(t, n, "read to its end, as a transport sends it")
	assert.Equal(t, ctx, r.Ctx)
	assert.Equal(t, []string{"a", "b", "p", "s", "rk", "rd"}, []string{r.Caller, r.Service, r.Procedure, r.ShardKey, r.RoutingKey, r.RoutingDelegate})
	assert.Equal(t, map[string]string{"x-trace": "abc"}, r.Headers, "canonical, as sent")
	assert.Equal(t, map[string]string{"X-Trace": "abc"}, r.OriginalHeaders)
	assert.Equal(t, "body", r.Body)
	assert.True(t, r.HasBody)
	assert.Equal(t, 4, r.BodySize)
	assert.True(t, r.HasDeadline)
	assert.InDelta(t, time.Minute, r.Timeout, float64(time.Minute)/2)
	assert.Equal(t, []string{"abc"}, o.Header("x-trace"))
	assert.Equal(t, []string{"-"}, o.Header("x-other"))

	_, err = o.Call(context.Background(), &transport.Request{})
	require.NoError(t, err)
	r = o.Requests()[1]
	assert.False(t, r.HasBody)
	assert.False(t, r.HasDeadline)
}

func TestResponseBodies(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	o := New(Fail(errDown), Succeed("ok", "k", "v"))
	_, err := o.Call(ctx, &transport.Request{})
	assert.Same(t, errDown, err)
	res, err := o.Call(ctx, &transport.Request{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v"}, res.Headers.Items())
	assert.Equal(t, 2, res.BodySize)

	bodies := o.ResponseBodies()
	require.Len(t, bodies, 2)
	assert.Nil(t, bodies[0], "no response, no body")
	b, err := io.ReadAll(bodies[1])
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b))

	body := bodies[1].(*Body)
	assert.False(t, body.Closed())
	require.NoError(t, body.Close())
	assert.True(t, body.Closed())

	cancel()
	_, err = NewBody(ctx, "late").Read(make([]byte, 4))
	assert.ErrorIs(t, err, context.Canceled, "a body reads while its call's context is alive")
}

func TestRespond(t *testing.T) {
	o := New(Respond("k", "v"))
	first, err := o.Call(context.Background(), &transport.Request{})
	require.NoError(t, err)
	second, err := o.Call(context.Background(), &transport.Request{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v"}, first.Headers.Items())
	assert.Nil(t, first.Body)
	assert.NotSame(t, first, second, "a fresh response each call")
}

func TestEchoHeaders(t *testing.T) {
	res, err := New(EchoHeaders()).Call(context.Background(), &transport.Request{Headers: Headers("a", "1", "b", "2")})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, res.Headers.Items())
}

func TestDelayAndBlock(t *testing.T) {
	ok := Answer(&transport.Response{}, nil)
	start := time.Now()
	_, err := New(Delay(20*time.Millisecond, ok)).Call(context.Background(), &transport.Request{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = New(Delay(time.Hour, ok)).Call(ctx, &transport.Request{})
	assert.ErrorIs(t, err, context.Canceled, "a delay ends with its context")

	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = New(Block()).Call(ctx, &transport.Request{})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestWaitAndArrived(t *testing.T) {
	release := make(chan struct{})
	o := New(Wait(release, Answer(&transport.Response{}, nil)))
	select {
	case <-o.Arrived(0):
	default:
		t.Fatal("zero calls have arrived already")
	}
	second := o.Arrived(2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, err := o.Call(context.Background(), &transport.Request{})
			assert.NoError(t, err)
		})
	}
	<-second
	assert.Equal(t, 2, o.Calls(), "both arrived, both held")
	assert.Empty(t, o.ResponseBodies(), "neither returned")
	close(release)
	wg.Wait()
	assert.Len(t, o.ResponseBodies(), 2)
}

// Calls and reads in flight together: run with -race.
func TestConcurrentCallsAndReads(t *testing.T) {
	o := New(EchoHeaders())
	const n = 50
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req := &transport.Request{Headers: Headers("k", "v")}
			_, err := o.Call(context.Background(), req)
			assert.NoError(t, err)
			req.Headers = req.Headers.With("k", "reused") // as a pooled request is
		})
		wg.Go(func() {
			for _, r := range o.Requests() {
				_ = r.Headers["k"]
			}
			_ = o.Header("k")
			_ = o.ResponseBodies()
		})
	}
	wg.Wait()
	assert.Equal(t, n, o.Calls())
	for _, v := range o.Header("k") {
		assert.Equal(t, "v", v)
	}
}
