package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/testtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	yhttp "go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcerrors"
)

// writesClaim is a callee without errown whose handler fails and writes
// whatever claim header value it is given: a misbehaving or hostile peer.
func writesClaim(value string) errowntest.Handler {
	return func(ctx context.Context, _ *errowntest.Client, _ []byte) ([]byte, error) {
		if err := yarpc.CallFromContext(ctx).WriteResponseHeader("errown-claim", value); err != nil {
			return nil, err
		}
		return nil, yarpcerrors.UnavailableErrorf("down")
	}
}

// TestGarbageClaimFromCallee: a claim header errown cannot read, however
// long or odd, is a missing claim: the caller retries once and unclaims.
func TestGarbageClaimFromCallee(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"empty", ""},
		{"unknown", "mine"},
		{"mixed case", "Unclaimed"},
		// (Leading and trailing blanks never arrive over HTTP: the
		// transport trims header values.)
		{"inner blank", "un claimed"},
		{"repeated", "unclaimed,unclaimed"},
		{"binary", "\x01\x02unclaimed\x7f"},
		{"huge", strings.Repeat("unclaimed", 7000)}, // 63 KB
	}
	for _, tt := range tests {
		for _, tr := range []string{errowntest.HTTP, errowntest.GRPC, errowntest.TChannel} {
			t.Run(tt.name+"/"+tr, func(t *testing.T) {
				mesh := errowntest.NewMesh(t)
				mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Handler: writesClaim(tt.give)})
				mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tr, Errown: withRetries(_c), Callees: []string{_c}, Handler: errowntest.Forward})
				reply := mesh.Call(context.Background(), _b, nil)
				require.Error(t, reply.Err)
				assert.Equal(t, _unclaimed, reply.Claim, "B retried the missing claim and unclaims")
				assert.Equal(t, int64(2), mesh.Service(_c).Served(), "exactly one retry")
			})
		}
	}
}

// TestCallerCannotSteer: nothing a caller puts on a request changes how
// errown decides: not a claim, not an attempt number, not anything that
// looks like a request ID.
func TestCallerCannotSteer(t *testing.T) {
	mesh := errowntest.NewMesh(t)
	mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: errowntest.HTTP, Errown: withRetries(), Handler: fail(_b)})
	for _, h := range [][2]string{
		{"errown-claim", "unclaimed"},
		{"errown-attempt", "99"},
		{"errown-request-id", "1"},
		{"x-request-id", "1"},
		{"errown-no-retry", "true"},
	} {
		reply := mesh.Call(context.Background(), _b, nil, yarpc.WithHeader(h[0], h[1]))
		require.Error(t, reply.Err)
		assert.Equal(t, _claimed, reply.Claim, "request header %s", h[0])
		_, noRetry := reply.Headers["errown-no-retry"]
		assert.False(t, noRetry, "a caller cannot make the callee push back")
	}
	assert.Equal(t, 0, mesh.Service(_b).Middleware().Introspect().InFlight)
}

// TestInFlightBound: a flood of concurrent requests cannot grow errown's
// ingress log past its bound; requests over it are served untracked.
// Admission is disabled: the flood is held in the handler until all of
// it arrived, which admission would not let it do.
func TestInFlightBound(t *testing.T) {
	const bound, flood = 8, 64
	scope := tally.NewTestScope("", nil)
	release := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(flood)
	mesh := errowntest.NewMesh(t)
	mesh.Start(errowntest.ServiceConfig{
		Name: _b, Transport: errowntest.HTTP,
		Errown: &errown.Config{InboundConfig: errown.InboundConfig{
			Ingress:   inbound.IngressConfig{MaxInFlight: bound},
			Admission: inbound.AdmissionConfig{Mode: inbound.AdmissionDisabled},
		}},
		ErrownOptions: []errown.Option{errown.WithScope(scope)},
		Handler: func(ctx context.Context, _ *errowntest.Client, body []byte) ([]byte, error) {
			arrived.Done()
			<-release
			return body, nil
		},
	})
	var done sync.WaitGroup
	for i := 0; i < flood; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			assert.NoError(t, mesh.Call(context.Background(), _b, []byte("x")).Err)
		}()
	}
	arrived.Wait()
	mw := mesh.Service(_b).Middleware()
	assert.Equal(t, bound, mw.Introspect().InFlight, "the log holds its bound and no more")
	close(release)
	done.Wait()
	assert.Equal(t, 0, mw.Introspect().InFlight)
	assert.Equal(t, int64(flood-bound), scope.Snapshot().Counters()["errown.inbound.untracked+"].Value())
}

// TestHangingCallee: a callee that hangs until the deadline costs the
// caller its deadline once; no retry is started without time for it, and
// the caller's error is unclaimed (the refusal satisfied the criteria).
func TestHangingCallee(t *testing.T) {
	for _, tr := range []string{errowntest.HTTP, errowntest.GRPC, errowntest.TChannel} {
		t.Run(tr, func(t *testing.T) {
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Handler: func(ctx context.Context, _ *errowntest.Client, _ []byte) ([]byte, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}})
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tr, Errown: withRetries(_c), Callees: []string{_c}, Handler: errowntest.Forward})
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			reply := mesh.Call(ctx, _b, nil)
			took := time.Since(start)
			require.Error(t, reply.Err)
			assert.Less(t, took, testtime.Scale(3*time.Second), "the caller is not held past its deadline")
			assert.Equal(t, int64(1), mesh.Service(_c).Served(), "no retry without time for it")
			require.Eventually(t, func() bool { return mesh.Service(_b).Middleware().Introspect().InFlight == 0 }, testtime.Scale(5*time.Second), 10*time.Millisecond)
		})
	}
}

// dropConnection closes the connection mid-response for every request:
// a status line and half a header, then nothing.
func dropConnection(http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { dropMidResponse(w) })
}

// dropMidResponse sends a status line and half a header, then closes the
// connection.
func dropMidResponse(w http.ResponseWriter) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nRpc-Header-Errown-Cla")
	_ = buf.Flush()
	_ = conn.Close()
}

// TestConnectionClosedMidResponse: a callee whose connection dies
// mid-response is a failure with no claim: retried once, then unclaimed.
func TestConnectionClosedMidResponse(t *testing.T) {
	in := yhttp.NewTransport().NewInbound("127.0.0.1:0", yhttp.Interceptor(dropConnection))
	callee := yarpc.NewDispatcher(yarpc.Config{Name: _c, Inbounds: yarpc.Inbounds{in}})
	served := 0
	var mu sync.Mutex
	callee.Register(raw.Procedure("call", func(context.Context, []byte) ([]byte, error) {
		mu.Lock()
		served++
		mu.Unlock()
		return nil, nil
	}))
	require.NoError(t, callee.Start())
	defer func() { assert.NoError(t, callee.Stop()) }()
	hits := &hitCounter{}
	// Count the requests that reach the callee's socket: the handler never
	// runs, the interceptor answers first.
	mw, err := errown.New(*withRetries(_c))
	require.NoError(t, err)
	caller := yarpc.NewDispatcher(mw.Apply(yarpc.Config{
		Name:               _b,
		Outbounds:          yarpc.Outbounds{_c: {Unary: yhttp.NewTransport().NewSingleOutbound("http://" + in.Addr().String())}},
		OutboundMiddleware: yarpc.OutboundMiddleware{Unary: hits},
	}))
	require.NoError(t, caller.Start())
	defer func() { assert.NoError(t, caller.Stop()) }()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = raw.New(caller.ClientConfig(_c)).Call(ctx, "call", []byte("x"))
	require.Error(t, err)
	assert.Equal(t, 2, hits.n(), "one retry of a missing claim")
	assert.Equal(t, 0, served)
}

// hitCounter is outbound middleware counting the attempts that go out.
type hitCounter struct {
	mu    sync.Mutex
	count int
}

func (h *hitCounter) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	h.mu.Lock()
	h.count++
	h.mu.Unlock()
	return out.Call(ctx, req)
}

func (h *hitCounter) n() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// TestOwnFailureCancellingFanOut: a handler that fails on its own and
// cancels the calls it still had in flight owns its error: it claims it,
// and its caller retries.
func TestOwnFailureCancellingFanOut(t *testing.T) {
	for _, tr := range []string{errowntest.HTTP, errowntest.GRPC, errowntest.TChannel} {
		t.Run(tr, func(t *testing.T) {
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Errown: withRetries(), Handler: func(ctx context.Context, _ *errowntest.Client, _ []byte) ([]byte, error) {
				<-ctx.Done() // slow: answers only when given up on
				return nil, ctx.Err()
			}})
			mesh.Start(errowntest.ServiceConfig{
				Name: _b, Transport: tr, Errown: withRetries(_c), Callees: []string{_c},
				Handler: func(ctx context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
					fanOut, cancel := context.WithCancel(ctx)
					done := make(chan struct{})
					go func() {
						defer close(done)
						_, _ = c.Call(fanOut, _c, body)
					}()
					time.Sleep(10 * time.Millisecond)
					cancel() // B's own step failed: give up on the rest
					<-done
					return nil, yarpcerrors.InternalErrorf("b's own step failed")
				},
			})
			reply := mesh.Call(context.Background(), _b, nil)
			require.Error(t, reply.Err)
			assert.Equal(t, _claimed, reply.Claim, "the cancelled sibling explains nothing: B owns its error")
		})
	}
}

// TestRetryKeepsContentLength: a retried HTTP request carries its length
// like the first attempt did, rather than being sent in chunks.
func TestRetryKeepsContentLength(t *testing.T) {
	var (
		mu      sync.Mutex
		lengths []int64
	)
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			lengths = append(lengths, r.ContentLength)
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}
	in := yhttp.NewTransport().NewInbound("127.0.0.1:0", yhttp.Interceptor(record))
	callee := yarpc.NewDispatcher(yarpc.Config{Name: _c, Inbounds: yarpc.Inbounds{in}})
	callee.Register(raw.Procedure("call", func(context.Context, []byte) ([]byte, error) {
		return nil, yarpcerrors.UnavailableErrorf("down")
	}))
	require.NoError(t, callee.Start())
	defer func() { assert.NoError(t, callee.Stop()) }()
	mw, err := errown.New(*withRetries(_c))
	require.NoError(t, err)
	caller := yarpc.NewDispatcher(mw.Apply(yarpc.Config{
		Name:      _b,
		Outbounds: yarpc.Outbounds{_c: {Unary: yhttp.NewTransport().NewSingleOutbound("http://" + in.Addr().String())}},
	}))
	require.NoError(t, caller.Start())
	defer func() { assert.NoError(t, caller.Stop()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = raw.New(caller.ClientConfig(_c)).Call(ctx, "call", []byte("hello"))
	require.Error(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int64{5, 5}, lengths, "both attempts say how long they are")
}
