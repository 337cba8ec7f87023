package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/e2e/internal/chaos"
	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/internal/testidl/proto/echopb"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// The chaos mesh: an outside caller → B (yarpc over HTTP) → C, errown on
// both, the chaos middleware between B's errown middleware and its
// innermost step (B's own outbound middleware on a yarpc dispatcher, an
// inner interceptor of grpcgo's, a RoundTripper between nethttp's
// Transport and Attempts), C a chaos.Leaf of any of the five kinds.
const (
	_chaosB = "chaos-b"
	_chaosC = "chaos-c"
	// _chaosProc is the procedure B calls (and chaos.Alt of it on a
	// fallback): a yarpc procedure, a gRPC method's name, a path.
	_chaosProc = "call"
	// _chaosService is the gRPC service B calls on a grpc-go C.
	_chaosService = "errown.testidl.echo.Echo"
)

// chaosClocks are the chaos mesh's: B's attempt timeout to C, the
// middleware's and the leaf's delays, the outside caller's deadline.
const (
	_chaosAttempt  = 100 * time.Millisecond
	_chaosMaxDelay = 4 * time.Millisecond
	_chaosTTL      = 2 * time.Second
	_chaosWorkers  = 32
)

// _chaosOutcomes are C's: every outcome, answers (at once or delayed)
// six times in ten, so that B's overload limit does not shed most calls.
var _chaosOutcomes = []chaos.Outcome{chaos.Succeed, chaos.Succeed, chaos.Succeed, chaos.Succeed, chaos.Delay, chaos.Delay,
	chaos.Fail, chaos.Overload, chaos.TimeOut, chaos.Block}

// chaosMesh is one chaos mesh.
type chaosMesh struct {
	kind   string
	ledger *chaos.Ledger
	mw     *chaos.Middleware
	leaf   *chaos.Leaf
	b, c   *testmesh.Node
	caller raw.Client
}

// procedures returns the names C echoes for B's call and its fallback.
func (m *chaosMesh) procedures() []string {
	switch m.kind {
	case kindGRPCGo:
		return []string{"Call", chaos.Alt("Call")}
	case kindNetHTTP:
		return []string{"/" + _chaosProc, "/" + chaos.Alt(_chaosProc)}
	}
	return []string{_chaosProc, chaos.Alt(_chaosProc)}
}

// newChaosMesh starts the chaos mesh with C of kind, the middleware's and
// the leaf's choices drawn from seed, and stops it when the test ends.
func newChaosMesh(t *testing.T, kind string, seed uint64) *chaosMesh {
	t.Helper()
	m := &chaosMesh{kind: kind, ledger: new(chaos.Ledger)}
	var err error
	m.mw, err = chaos.New(chaos.Config{Source: chaos.NewSeeded(seed), MaxDelay: _chaosMaxDelay, Ledger: m.ledger})
	require.NoError(t, err)
	m.leaf, err = chaos.NewLeaf(chaos.LeafConfig{Source: chaos.NewSeeded(seed + 1000), MaxDelay: _chaosMaxDelay, Outcomes: _chaosOutcomes})
	require.NoError(t, err)
	// The attempts the middleware left running end before B stops.
	t.Cleanup(m.mw.Wait)

	m.c = startChaosLeaf(t, kind, m.leaf)
	cfg := errown.Config{Retry: errown.RetryConfig{
		Budget: retry.BudgetConfig{Ratio: 1},
		Policies: []retry.PolicyConfig{{
			Service: _chaosC, MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
			AttemptTimeout: _chaosAttempt, Idempotent: new(true),
		}},
	}}
	bcfg := testmesh.Config{Name: _chaosB, Kind: testmesh.HTTP, Errown: &cfg}
	var call func(ctx context.Context, id uint64) ([]byte, error)
	switch kind {
	case kindGRPCGo:
		cfg.Wiring = errown.WiringWarn // C is no outbound of B's dispatcher
		bcfg.Register = func(d *yarpc.Dispatcher, mw *errown.Middleware) error {
			cc, err := grpc.NewClient(m.c.Addr(), append(grpcgo.DialOptions(mw, grpcgo.WithService(_chaosC), grpcgo.WithInnerInterceptors(m.mw.Interceptor())),
				grpc.WithTransportCredentials(insecure.NewCredentials()))...)
			if err != nil {
				return err
			}
			t.Cleanup(func() { _ = cc.Close() })
			call = func(ctx context.Context, id uint64) ([]byte, error) {
				reply := new(echopb.EchoResponse)
				if err := cc.Invoke(ctx, "/"+_chaosService+"/Call", chaos.GRPCRequest(id), reply); err != nil {
					return nil, yarpcerrors.Newf(yarpcerrors.Code(status.Code(err)), "%s", status.Convert(err).Message())
				}
				return []byte(reply.GetKey()), nil
			}
			return registerChaosB(d, m, &call)
		}
	case kindNetHTTP:
		cfg.Wiring = errown.WiringWarn
		bcfg.Register = func(d *yarpc.Dispatcher, mw *errown.Middleware) error {
			base := &http.Transport{MaxIdleConnsPerHost: _chaosWorkers}
			t.Cleanup(base.CloseIdleConnections)
			client := &http.Client{Transport: nethttp.Transport(mw, m.mw.RoundTripper(nethttp.Attempts(mw, base)),
				nethttp.WithService(func(*http.Request) string { return _chaosC }))}
			call = func(ctx context.Context, id uint64) ([]byte, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+m.c.Addr()+"/"+_chaosProc, strings.NewReader(string(chaos.Body(id))))
				if err != nil {
					return nil, err
				}
				res, err := client.Do(req)
				if err != nil {
					return nil, yarpcerrors.UnavailableErrorf("%v", err)
				}
				b, err := io.ReadAll(res.Body)
				_ = res.Body.Close()
				if res.StatusCode >= 400 {
					return nil, nethttp.StatusError(res.StatusCode, res.Header)
				}
				return b, err
			}
			return registerChaosB(d, m, &call)
		}
	default:
		bcfg.Callees = []testmesh.Callee{{Name: _chaosC, Kind: kind, Addr: m.c.Addr()}}
		bcfg.Outbound = m.mw
		bcfg.Register = func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			client := raw.New(d.ClientConfig(_chaosC))
			call = func(ctx context.Context, id uint64) ([]byte, error) {
				var headers map[string]string
				res, err := client.Call(ctx, _chaosProc, chaos.Body(id), yarpc.ResponseHeaders(&headers))
				if !m.ledger.Check("B's handler", id, m.procedures(), chaos.Answer{Body: res, Echo: headers[chaos.EchoHeader], Err: err, Empty: err != nil}) {
					return nil, yarpcerrors.InternalErrorf("chaos: a cross delivery")
				}
				return res, err
			}
			return registerChaosB(d, m, &call)
		}
	}
	m.b, err = testmesh.Start(bcfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.b.Stop(), "stop B") })

	client, err := testmesh.NewClient("chaos-client", testmesh.TransportOptions{IdleConns: _chaosWorkers}, nil,
		testmesh.Callee{Name: _chaosB, Kind: testmesh.HTTP, Addr: m.b.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, client.Stop(), "stop the client") })
	m.caller = raw.New(client.ClientConfig(_chaosB))
	return m
}

// registerChaosB registers B's procedure: it calls C with call, set once
// B's clients are built, and checks the answer.
func registerChaosB(d *yarpc.Dispatcher, m *chaosMesh, call *func(context.Context, uint64) ([]byte, error)) error {
	d.Register(raw.Procedure(_chaosProc, func(ctx context.Context, body []byte) ([]byte, error) {
		id, ok := chaos.ID(body)
		if !ok {
			return nil, yarpcerrors.InvalidArgumentErrorf("B: body of %d bytes", len(body))
		}
		res, err := (*call)(ctx, id)
		if !m.ledger.Check("B's handler", id, m.procedures(), chaos.Answer{Body: res, Err: err, Empty: err != nil}) {
			return nil, yarpcerrors.InternalErrorf("chaos: a cross delivery")
		}
		return res, err
	}))
	return nil
}

// startChaosLeaf starts C, of kind, serving the leaf's answers to the
// procedure and its fallback, errown on it.
func startChaosLeaf(t *testing.T, kind string, leaf *chaos.Leaf) *testmesh.Node {
	t.Helper()
	cfg := testmesh.Config{Name: _chaosC, Kind: kind, Errown: &errown.Config{}}
	switch kind {
	case kindGRPCGo:
		cfg.RegisterGRPC = func(s *grpc.Server, _ *errown.Middleware) error {
			s.RegisterService(&grpc.ServiceDesc{
				ServiceName: _chaosService,
				HandlerType: (*any)(nil),
				Methods:     []grpc.MethodDesc{grpcLeafMethod("Call", leaf), grpcLeafMethod(chaos.Alt("Call"), leaf)},
			}, struct{}{})
			return nil
		}
	case kindNetHTTP:
		cfg.Handler = func(*errown.Middleware) (http.Handler, error) {
			mux := http.NewServeMux()
			for _, p := range []string{"/" + _chaosProc, "/" + chaos.Alt(_chaosProc)} {
				mux.HandleFunc("POST "+p, func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					id, ok := chaos.ID(b)
					if !ok {
						http.Error(w, "no id", http.StatusBadRequest)
						return
					}
					w.Header().Set(chaos.EchoHeader, chaos.Echo(id, p))
					res, err := leaf.Serve(r.Context(), id, p)
					if err != nil {
						http.Error(w, err.Error(), nethttp.Status(yarpcerrors.FromError(err).Code()))
						return
					}
					_, _ = w.Write(res)
				})
			}
			return mux, nil
		}
	default:
		cfg.Register = func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			for _, p := range []string{_chaosProc, chaos.Alt(_chaosProc)} {
				d.Register(raw.Procedure(p, func(ctx context.Context, body []byte) ([]byte, error) {
					id, ok := chaos.ID(body)
					if !ok {
						return nil, yarpcerrors.InvalidArgumentErrorf("C: body of %d bytes", len(body))
					}
					if call := yarpc.CallFromContext(ctx); call != nil {
						_ = call.WriteResponseHeader(chaos.EchoHeader, chaos.Echo(id, p))
					}
					return leaf.Serve(ctx, id, p)
				}))
			}
			return nil
		}
	}
	n, err := testmesh.Start(cfg)
	require.NoError(t, err, "start C (%s)", kind)
	t.Cleanup(func() { assert.NoError(t, n.Stop(), "stop C") })
	return n
}

// grpcLeafMethod serves the leaf's answers to the method name of
// _chaosService: EchoResponse.Key is the echo.
func grpcLeafMethod(name string, leaf *chaos.Leaf) grpc.MethodDesc {
	return grpc.MethodDesc{MethodName: name, Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(echopb.EchoRequest)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, req any) (any, error) {
			id, err := strconv.ParseUint(req.(*echopb.EchoRequest).GetKey(), 10, 64)
			if err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "C: key %q", req.(*echopb.EchoRequest).GetKey())
			}
			res, err := leaf.Serve(ctx, id, name)
			if err != nil {
				return nil, status.Error(codes.Code(yarpcerrors.FromError(err).Code()), err.Error())
			}
			return &echopb.EchoResponse{Key: string(res)}, nil
		}
		if interceptor == nil {
			return h(ctx, in)
		}
		return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + _chaosService + "/" + name}, h)
	}}
}

// send sends requests 1 to n from outside, _chaosWorkers at a time, and
// checks each answer; it returns how many failed.
func (m *chaosMesh) send(n int) int64 {
	var (
		next   atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	for range _chaosWorkers {
		wg.Go(func() {
			for {
				id := next.Add(1)
				if id > int64(n) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), _chaosTTL)
				res, err := m.caller.Call(ctx, _chaosProc, chaos.Body(uint64(id)))
				cancel()
				if err != nil {
					failed.Add(1)
				}
				m.ledger.Check("the outside caller", uint64(id), m.procedures(), chaos.Answer{Body: res, Err: err, Empty: err != nil})
			}
		})
	}
	wg.Wait()
	m.mw.Wait()
	return failed.Load()
}

// _chaosE2ERequests are each e2e chaos run's requests.
const _chaosE2ERequests = 3000

// The chaos middleware at B over real dispatchers on 127.0.0.1: HTTP,
// gRPC and TChannel between yarpc nodes, and through the grpcgo and
// nethttp adapters to a grpc-go and a net/http C, the HTTP one also with
// GOMAXPROCS=1 (sync.Pool hands a released object straight to the next
// request on the same P). It fails on any answer delivered to a request
// (or procedure) it was not for, at the chaos middleware's attempts, in
// B's handler or at the outside caller; under -race on any race report;
// and on any crash.
func TestChaos(t *testing.T) {
	tests := []struct {
		kind       string
		gomaxprocs int
	}{
		{kind: kindHTTP},
		{kind: kindGRPC},
		{kind: kindTChannel},
		{kind: kindGRPCGo},
		{kind: kindNetHTTP},
		{kind: kindHTTP, gomaxprocs: 1},
	}
	for i, tt := range tests {
		name := tt.kind
		if tt.gomaxprocs > 0 {
			name += fmt.Sprintf("-gomaxprocs=%d", tt.gomaxprocs)
		}
		t.Run(name, func(t *testing.T) {
			if tt.gomaxprocs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tt.gomaxprocs))
			}
			seed := uint64(100 + i)
			m := newChaosMesh(t, tt.kind, seed)
			start := time.Now()
			failed := m.send(_chaosE2ERequests)
			s := m.mw.Stats()
			t.Logf("seed %d: %d requests in %v, %d failed; %d answers checked, %d cross deliveries; chaos %v sends %d late %d; leaf %v",
				seed, _chaosE2ERequests, time.Since(start).Round(time.Millisecond), failed, m.ledger.Checked(), m.ledger.Cross(), s.Calls, s.Sends, s.Late, m.leaf.Served())
			if m.ledger.Cross() > 0 {
				t.Errorf("seed %d: %d answers delivered to a request they were not for; the first:\n\t%s", seed, m.ledger.Cross(), strings.Join(m.ledger.Samples(), "\n\t"))
			}
			assert.GreaterOrEqual(t, m.ledger.Checked(), int64(2*_chaosE2ERequests), "every request checked at B and outside")
			for _, a := range chaos.Actions {
				assert.Positive(t, s.Calls[a], "calls that drew %v", a)
			}
		})
	}
}
