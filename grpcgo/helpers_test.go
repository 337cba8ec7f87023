package grpcgo_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Every node serves grpc.health.v1.Health/Check: grpc-go nodes through
// the generated service, yarpc nodes as a raw procedure of the name
// yarpc's gRPC transport gives that method.
const (
	_method    = "/grpc.health.v1.Health/Check"
	_procedure = "grpc.health.v1.Health::Check"
)

// Service names; yarpc wants at least two characters.
const (
	_a = "svc-a"
	_b = "svc-b"
	_c = "svc-c"
	_d = "svc-d"
)

const (
	_claimHeader   = "errown-claim"
	_stormHeader   = "errown-storm"
	_noRetryHeader = "errown-no-retry"
	_claimed       = "claimed"
	_unclaimed     = "unclaimed"
)

// _tiny is every policy's backoff: retries are immediate in effect.
const _tiny = time.Millisecond

// retrying is an errown config whose policy retries callee once (two
// attempts, idempotent), the budget disabled: every wanted retry is sent.
func retrying(callee string) *errown.Config {
	return &errown.Config{Retry: errown.RetryConfig{
		Budget: retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{
			Service:        callee,
			MaxAttempts:    2,
			InitialBackoff: _tiny,
			MaxBackoff:     _tiny,
			Idempotent:     new(true),
		}},
	}}
}

// noPolicy is an errown config without a retry policy.
func noPolicy() *errown.Config { return &errown.Config{} }

// work is what a node does once its callee, if any, answered: nil
// succeeds.
type work func(ctx context.Context) error

// failWith is work that fails with a gRPC status of code c.
func failWith(c codes.Code) work {
	return func(context.Context) error { return status.Error(c, "down") }
}

// node is one service of a test mesh: a grpc-go server, or a yarpc
// dispatcher with a gRPC inbound.
type node struct {
	name   string
	addr   string
	yarpc  bool
	mw     *errown.Middleware // nil without errown
	scope  tally.TestScope
	served atomic.Int64
	client healthpb.HealthClient // a grpc-go node's, to its callee

	mu     sync.Mutex
	storms []inbound.Storm
}

func (n *node) hook(s inbound.Storm) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.storms = append(n.storms, s)
}

// rootStorms returns the root storms errown's hook reported, oldest first,
// their times zeroed.
func (n *node) rootStorms() []inbound.Storm {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := slices.Clone(n.storms)
	for i := range out {
		out[i].Time = time.Time{}
	}
	return out
}

// counter returns the value of errown's counter name (under "errown.")
// with tags.
func (n *node) counter(name string, tags map[string]string) int64 {
	if c, ok := n.scope.Snapshot().Counters()[tally.KeyForPrefixedStringMap("errown."+name, tags)]; ok {
		return c.Value()
	}
	return 0
}

// nodeConfig describes a node.
type nodeConfig struct {
	name string
	// errown is the node's errown config; nil runs it without errown.
	errown *errown.Config
	// callee is called first, when set, with the request's context; its
	// error is returned as it came.
	callee *node
	// work runs after the callee answered; nil succeeds.
	work work
	// handler, when set, replaces calling the callee and work on a
	// grpc-go node; it may call the callee with n.client.
	handler func(ctx context.Context, n *node) error
	// dialOptions and clientOptions configure a grpc-go node's
	// ClientConn to its callee and errown's interceptor on it.
	dialOptions   []grpc.DialOption
	clientOptions []grpcgo.Option
	// serverOptions configure errown's server interceptor.
	serverOptions []grpcgo.Option
	// bare puts errown on the ClientConn with UnaryClientInterceptor
	// alone rather than DialOptions.
	bare bool
	// inner are the application's own interceptors, chained inside
	// errown's: between UnaryClientInterceptor and AttemptsInterceptor
	// when bare, else given to DialOptions with WithInnerInterceptors.
	inner []grpc.UnaryClientInterceptor
	// attempts chains AttemptsInterceptor last in a bare chain.
	attempts bool
}

// start starts n as tcfg describes, with errown when cfg.errown is set
// (its metrics on n.scope, its root storms to n.hook), until the test
// ends.
func start(t testing.TB, n *node, cfg nodeConfig, tcfg testmesh.Config) {
	t.Helper()
	n.scope = tally.NewTestScope("", nil)
	tcfg.Name, tcfg.Errown = cfg.name, cfg.errown
	tcfg.ErrownOptions = []errown.Option{errown.WithScope(n.scope), errown.WithStormHook(n.hook)}
	node, err := testmesh.Start(tcfg)
	require.NoError(t, err, "start %s", n.name)
	t.Cleanup(func() {
		assert.NoError(t, node.Stop(), "stop %s", n.name)
	})
	n.addr, n.mw = node.Addr(), node.Middleware()
}

// startGRPC starts a grpc-go node, with errown's interceptors on its
// server and its ClientConn when cfg.errown is set.
func startGRPC(t testing.TB, cfg nodeConfig) *node {
	t.Helper()
	n := &node{name: cfg.name}
	h := &healthServer{n: n, work: cfg.work, handler: cfg.handler}
	start(t, n, cfg, testmesh.Config{Kind: testmesh.GRPCGo, ServerOptions: cfg.serverOptions,
		RegisterGRPC: func(srv *grpc.Server, mw *errown.Middleware) error {
			if cfg.callee != nil {
				h.callee = dial(t, n.name, cfg.callee, mw, cfg)
				n.client = h.callee
			}
			healthpb.RegisterHealthServer(srv, h)
			return nil
		}})
	return n
}

// dial returns a Health client of callee for the service caller, set up
// as cfg's dialOptions, clientOptions, bare, inner and attempts say:
// through errown (grpcgo.DialOptions, or the interceptors chained by hand
// when bare) when mw is set, with the yarpc metadata a yarpc callee
// requires when callee is a yarpc node.
func dial(t testing.TB, caller string, callee *node, mw *errown.Middleware, cfg nodeConfig) healthpb.HealthClient {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if callee.yarpc {
		opts = append(opts, grpc.WithChainUnaryInterceptor(yarpcMetadata(caller, callee.name)))
	}
	if mw != nil {
		eopts := append([]grpcgo.Option{grpcgo.WithService(callee.name)}, cfg.clientOptions...)
		if cfg.bare {
			chain := append([]grpc.UnaryClientInterceptor{grpcgo.UnaryClientInterceptor(mw, eopts...)}, cfg.inner...)
			if cfg.attempts {
				chain = append(chain, grpcgo.AttemptsInterceptor(mw))
			}
			opts = append(opts, grpc.WithChainUnaryInterceptor(chain...))
		} else {
			opts = append(opts, grpcgo.DialOptions(mw, append(eopts, grpcgo.WithInnerInterceptors(cfg.inner...))...)...)
		}
	}
	opts = append(opts, cfg.dialOptions...)
	cc, err := grpc.NewClient("passthrough:///"+callee.addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return healthpb.NewHealthClient(cc)
}

// yarpcMetadata adds what yarpc's gRPC inbound requires of a caller that
// is not yarpc: its name, the service's, and the encoding of the body
// (raw: the yarpc node reads the protobuf bytes as they are).
func yarpcMetadata(caller, service string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx = metadata.AppendToOutgoingContext(ctx, "rpc-caller", caller, "rpc-service", service, "rpc-encoding", "raw")
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

type healthServer struct {
	healthpb.UnimplementedHealthServer

	n       *node
	callee  healthpb.HealthClient
	work    work
	handler func(ctx context.Context, n *node) error
}

func (h *healthServer) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.n.served.Add(1)
	if h.handler != nil {
		if err := h.handler(ctx, h.n); err != nil {
			return nil, err
		}
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}
	if h.callee != nil {
		if _, err := h.callee.Check(ctx, req); err != nil {
			return nil, err
		}
	}
	if h.work != nil {
		if err := h.work(ctx); err != nil {
			return nil, err
		}
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// startYARPC starts a yarpc node: a dispatcher with a gRPC inbound,
// errown applied by Middleware.Apply when cfg.errown is set, and a gRPC
// outbound to its callee, grpc-go or yarpc alike.
func startYARPC(t testing.TB, cfg nodeConfig) *node {
	t.Helper()
	n := &node{name: cfg.name, yarpc: true}
	tcfg := testmesh.Config{Kind: testmesh.GRPC}
	if cfg.callee != nil {
		tcfg.Callees = []testmesh.Callee{{Name: cfg.callee.name, Kind: testmesh.GRPC, Addr: cfg.callee.addr}}
	}
	tcfg.Register = func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
		var client raw.Client
		if cfg.callee != nil {
			client = raw.New(d.ClientConfig(cfg.callee.name))
		}
		d.Register(raw.Procedure(_procedure, func(ctx context.Context, body []byte) ([]byte, error) {
			n.served.Add(1)
			if client != nil {
				if _, err := client.Call(ctx, _procedure, body); err != nil {
					return nil, err
				}
			}
			if cfg.work != nil {
				if err := cfg.work(ctx); err != nil {
					return nil, err
				}
			}
			return nil, nil // an empty HealthCheckResponse
		}))
		return nil
	}
	start(t, n, cfg, tcfg)
	return n
}

// reply is what a root caller without errown got.
type reply struct {
	code    codes.Code
	trailer metadata.MD
}

func (r reply) get(key string) string {
	if vs := r.trailer.Get(key); len(vs) == 1 {
		return vs[0]
	}
	return ""
}

// callRoot calls n's Check from a plain grpc-go client without errown, a
// root caller, and returns the code and trailers it got.
func callRoot(t testing.TB, n *node, dialOptions ...grpc.DialOption) reply {
	t.Helper()
	client := dial(t, "root", n, nil, nodeConfig{dialOptions: dialOptions})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var trailer metadata.MD
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	return reply{code: status.Code(err), trailer: trailer}
}

// served returns how many requests each node served.
func served(nodes ...*node) map[string]int64 {
	m := make(map[string]int64, len(nodes))
	for _, n := range nodes {
		m[n.name] = n.served.Load()
	}
	return m
}

// rootStorm is the storm errown reports for a root request of the
// procedure with the given figures.
func rootStorm(known, failed bool, served, blind, retries uint64, radius, blindRadius int) inbound.Storm {
	s := inbound.Storm{Procedure: _procedure, Known: known, Failed: failed}
	if known {
		s.Served, s.Blind, s.Prevented, s.Retries = served, blind, blind-served, retries
		s.Radius, s.BlindRadius = radius, blindRadius
	}
	return s
}

// atOnset returns s as errown reports a root storm at an incident's
// onset: one of the request's calls went out unmarked.
func atOnset(s inbound.Storm) inbound.Storm {
	s.Onset = true
	return s
}

// wireRecorder is a client interceptor chained below errown's (a dial
// option after DialOptions): it records the errown headers of every
// attempt that leaves the process, in its outgoing metadata and in the
// trailers that came back.
type wireRecorder struct {
	mu       sync.Mutex
	sent     []metadata.MD
	trailers []metadata.MD
}

func (w *wireRecorder) dialOption() grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		out, _ := metadata.FromOutgoingContext(ctx)
		var trailer metadata.MD
		err := invoker(ctx, method, req, reply, cc, append(slices.Clone(opts), grpc.Trailer(&trailer))...)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.sent = append(w.sent, errownKeys(out))
		w.trailers = append(w.trailers, errownKeys(trailer))
		return err
	})
}

// recorded returns the errown metadata each attempt sent and got back,
// one entry per attempt, oldest first.
func (w *wireRecorder) recorded() (sent, trailers []metadata.MD) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.sent), slices.Clone(w.trailers)
}

// errownKeys returns md's keys that start with "errown-", never nil.
func errownKeys(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, vs := range md {
		if strings.HasPrefix(k, "errown-") {
			out[k] = vs
		}
	}
	return out
}
