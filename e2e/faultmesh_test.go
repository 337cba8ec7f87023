package e2e_test

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/e2e/internal/chaos"
	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/backoff"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The fault mesh: an outside caller → A (yarpc over HTTP) → B (yarpc over
// gRPC) → a faultProxy → C, errown on A, B and C, A with a policy of two
// attempts for B and B one for C. C is the service the faults hit, of one
// of five kinds: yarpc over HTTP, gRPC or TChannel, a grpc-go server, a
// net/http server (the last two through errown's adapters, and called
// through them by B). Every request carries its ID (8 bytes of body, then
// the faultIDHeader on B's calls), so that each node's and each attempt's
// count can be checked request by request.
const (
	_fa = "fault-a"
	_fb = "fault-b"
	_fc = "fault-c"
)

// Kinds of C.
const (
	kindHTTP     = meshHTTP
	kindGRPC     = meshGRPC
	kindTChannel = meshTChannel
	kindGRPCGo   = "grpc-go"
	kindNetHTTP  = "net/http"
)

// The yarpc transport names, as errowntest spells them.
const (
	meshHTTP     = "http"
	meshGRPC     = "grpc"
	meshTChannel = "tchannel"
)

var _faultKinds = []string{kindHTTP, kindGRPC, kindTChannel, kindGRPCGo, kindNetHTTP}

// faultIDHeader carries the request's ID on B's attempts to C.
const faultIDHeader = "fault-id"

// faultTimings are the mesh's clocks, short so that the faults' tests
// run in seconds: B gives each attempt to C _attemptC, and the retry
// budgets and dependency memories count over _window.
const (
	_attemptC = time.Second
	_attemptB = 4 * time.Second
	_callTTL  = 8 * time.Second
	_window   = 2 * time.Second
)

// meshConfig is the errown config of a node with a policy of two
// attempts for callee (none for ""): a budget of one retry per request
// (exact counts: the budget never refuses), windows of _window, the
// attempts-in-flight limit off (it holds back timed-out attempts by how
// many are in flight, which no exact count can follow; the soak runs with
// it), an edge classified from 10 callee failures, and a snapshot file.
func meshConfig(callee string, attempt time.Duration, snapshot string) errown.Config {
	cfg := errown.Config{
		Retry: errown.RetryConfig{
			Budget:   retry.BudgetConfig{Ratio: 1, Window: _window},
			Overload: retry.OverloadConfig{Disabled: true},
		},
		Memory: depmem.Config{Window: _window, MinSamples: 10, Snapshot: depmem.SnapshotConfig{Path: snapshot}},
	}
	if callee != "" {
		cfg.Retry.Policies = []retry.PolicyConfig{{
			Service:        callee,
			MaxAttempts:    2,
			InitialBackoff: time.Millisecond,
			MaxBackoff:     time.Millisecond,
			AttemptTimeout: attempt,
			Idempotent:     new(true),
		}}
	}
	return cfg
}

// attemptLog counts B's attempts to C by request ID and by code.
type attemptLog struct {
	mu     sync.Mutex
	byID   map[uint64]int
	first  map[uint64]yarpcerrors.Code // the code of each request's first attempt
	codes  map[yarpcerrors.Code]int64
	counts []atomic.Int32 // in place of byID and codes when set (the soak)
	total  atomic.Int64
	failed atomic.Int64
}

func newAttemptLog() *attemptLog {
	return &attemptLog{byID: make(map[uint64]int), first: make(map[uint64]yarpcerrors.Code), codes: make(map[yarpcerrors.Code]int64)}
}

func (l *attemptLog) add(id string, err error) {
	n, _ := strconv.ParseUint(id, 10, 64)
	code := yarpcerrors.FromError(err).Code()
	l.total.Add(1)
	if err != nil {
		l.failed.Add(1)
	}
	if l.counts != nil {
		if n < uint64(len(l.counts)) {
			l.counts[n].Add(1)
		}
		return
	}
	l.mu.Lock()
	if l.byID[n] == 0 {
		l.first[n] = code
	}
	l.byID[n]++
	l.codes[code]++
	l.mu.Unlock()
}

// firstCode returns the code of request id's first attempt to C (not
// kept in the soak's counts: CodeOK there).
func (l *attemptLog) firstCode(id uint64) yarpcerrors.Code {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first[id]
}

func (l *attemptLog) of(id uint64) int {
	if l.counts != nil {
		return int(l.counts[id].Load())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byID[id]
}

// Call counts a yarpc attempt: B's own outbound middleware, which runs
// inside errown's, once per attempt.
func (l *attemptLog) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	res, err := out.Call(ctx, req)
	if err == nil && res != nil && res.ApplicationError {
		err = yarpcerrors.UnknownErrorf("application error")
	}
	id, _ := req.Headers.Get(faultIDHeader)
	l.add(id, err)
	return res, err
}

// yarpcNode is a yarpc service of the fault mesh that can be stopped and
// started again on the same port, its errown middleware with it (the
// memory's snapshot written at stop, read at start).
type yarpcNode struct {
	name      string
	transport string
	cfg       errown.Config
	// callee returns the node's one callee at each start; nil for none.
	callee  func() testmesh.Callee
	options testmesh.TransportOptions
	own     *attemptLog // B's attempt counter; nil elsewhere
	// chaos, when set, is the node's own outbound middleware inside own
	// (the soak's chaos middleware at B).
	chaos middleware.UnaryOutbound
	// procedures are the procedures the node serves with handler:
	// "call" when empty.
	procedures []string
	// errownOptions are given to the node's errown.New.
	errownOptions []errown.Option
	handler       func(ctx context.Context, n *yarpcNode, id uint64, body []byte) ([]byte, error)

	served atomic.Int64
	byID   sync.Map // uint64 → *atomic.Int64, unless counts
	// counts, when set (the soak), count by ID in place of byID: IDs
	// below its length.
	counts []atomic.Int32

	mu     sync.Mutex
	addr   string // fixed at the first start
	node   *testmesh.Node
	client raw.Client // to the callee, if any
}

// Middleware returns the errown middleware of the running instance.
func (n *yarpcNode) Middleware() *errown.Middleware {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.node == nil {
		return nil
	}
	return n.node.Middleware()
}

func (n *yarpcNode) servedOf(id uint64) int64 {
	if n.counts != nil {
		return int64(n.counts[id].Load())
	}
	if v, ok := n.byID.Load(id); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// start starts the node: on a free port the first time, on the same port
// after a stop.
func (n *yarpcNode) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	cfg := n.cfg
	var callee testmesh.Callee
	tcfg := testmesh.Config{Name: n.name, Kind: n.transport, Listen: n.addr, Errown: &cfg, Transport: n.options, ErrownOptions: n.errownOptions}
	if n.callee != nil {
		callee = n.callee()
		tcfg.Callees = []testmesh.Callee{callee}
	}
	var own []middleware.UnaryOutbound
	if n.own != nil {
		own = append(own, n.own)
	}
	if n.chaos != nil {
		own = append(own, n.chaos)
	}
	tcfg.Outbound = yarpc.UnaryOutboundMiddleware(own...)
	tcfg.Register = func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
		procedures := n.procedures
		if len(procedures) == 0 {
			procedures = []string{"call"}
		}
		for _, p := range procedures {
			d.Register(raw.Procedure(p, n.serve))
		}
		if n.callee != nil {
			n.client = raw.New(d.ClientConfig(callee.Name))
		}
		return nil
	}
	node, err := testmesh.Start(tcfg)
	if err != nil {
		return err
	}
	n.addr, n.node = node.Addr(), node
	return nil
}

// serve counts the request by its ID, then runs the node's handler.
func (n *yarpcNode) serve(ctx context.Context, body []byte) ([]byte, error) {
	n.served.Add(1)
	if len(body) != 8 {
		return nil, yarpcerrors.InvalidArgumentErrorf("%s: body of %d bytes", n.name, len(body))
	}
	id := binary.LittleEndian.Uint64(body)
	if n.counts != nil && id < uint64(len(n.counts)) {
		n.counts[id].Add(1)
	} else {
		v, _ := n.byID.LoadOrStore(id, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	return n.handler(ctx, n, id, body)
}

// stop stops the dispatcher (which finishes the requests in flight) and
// errown, which writes its snapshot.
func (n *yarpcNode) stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.node == nil {
		return nil
	}
	return n.node.Stop()
}

// leaf is what C does: it answers with the body it got.
func leaf(context.Context, *yarpcNode, uint64, []byte) ([]byte, error) {
	return []byte("ok-leaf!"), nil
}

// echoLeaf is what C does in the soak: it answers with the echo of the
// request's ID and procedure, in its body and chaos.EchoHeader, so that
// an answer handed to another request shows.
func echoLeaf(ctx context.Context, _ *yarpcNode, id uint64, _ []byte) ([]byte, error) {
	call := yarpc.CallFromContext(ctx)
	echo := chaos.Echo(id, call.Procedure())
	_ = call.WriteResponseHeader(chaos.EchoHeader, echo)
	return []byte(echo), nil
}

// forward is what A does: it calls B with the body it got.
func forward(ctx context.Context, n *yarpcNode, _ uint64, body []byte) ([]byte, error) {
	return n.client.Call(ctx, "call", body)
}

// faultMesh is the mesh of one test: A, B, the proxy and C.
type faultMesh struct {
	t        testing.TB
	kind     string
	proxy    *faultProxy
	a, b     *yarpcNode
	c        restartable
	attempts *attemptLog
	caller   raw.Client
	client   *yarpc.Dispatcher
	cleanup  []func()

	lateMu sync.Mutex
	late   []func() // what B's handlers opened, closed last
}

// closeLast has close run f after everything else.
func (m *faultMesh) closeLast(f func()) {
	m.lateMu.Lock()
	m.late = append(m.late, f)
	m.lateMu.Unlock()
}

// restartable is C: any of the five kinds, stopped and started again on
// its port.
type restartable interface {
	start() error
	stop() error
	Addr() string
	Served() int64
}

func (n *yarpcNode) Addr() string  { n.mu.Lock(); defer n.mu.Unlock(); return n.addr }
func (n *yarpcNode) Served() int64 { return n.served.Load() }

// newFaultMesh starts the mesh with C of kind, the proxy's slow link
// adding delay to every answer. ids > 0 counts requests by ID in arrays
// of that length (the soak's millions) rather than in maps.
func newFaultMesh(t testing.TB, kind string, delay time.Duration, ids int) *faultMesh {
	t.Helper()
	m := &faultMesh{t: t, kind: kind, attempts: newAttemptLog()}
	var countsA, countsB, countsC []atomic.Int32
	if ids > 0 {
		m.attempts.counts = make([]atomic.Int32, ids)
		countsA, countsB, countsC = make([]atomic.Int32, ids), make([]atomic.Int32, ids), make([]atomic.Int32, ids)
	}
	dir := t.TempDir()
	var err error
	switch kind {
	case kindGRPCGo:
		m.c = &grpcGoLeaf{leafNode: leafNode{cfg: meshConfig("", 0, filepath.Join(dir, "c.snapshot"))}}
	case kindNetHTTP:
		m.c = &netHTTPLeaf{leafNode{cfg: meshConfig("", 0, filepath.Join(dir, "c.snapshot"))}}
	default:
		m.c = &yarpcNode{name: _fc, transport: kind, cfg: meshConfig("", 0, filepath.Join(dir, "c.snapshot")), handler: leaf, counts: countsC}
	}
	m.must(m.c.start())
	m.cleanup = append(m.cleanup, func() { m.must(m.c.stop()) })
	m.proxy, err = newFaultProxy(m.c.Addr(), delay)
	m.must(err)
	m.cleanup = append(m.cleanup, m.proxy.Close)

	m.b = &yarpcNode{name: _fb, transport: meshGRPC, cfg: meshConfig(_fc, _attemptC, filepath.Join(dir, "b.snapshot")), own: m.attempts, counts: countsB}
	switch kind {
	case kindGRPCGo:
		m.b.cfg.Wiring = errown.WiringWarn // C is no outbound of B's dispatcher
		m.b.handler = m.grpcGoCall()
	case kindNetHTTP:
		m.b.cfg.Wiring = errown.WiringWarn
		m.b.handler = m.netHTTPCall()
	default:
		m.b.callee = func() testmesh.Callee { return testmesh.Callee{Name: _fc, Kind: kind, Addr: m.proxy.Addr()} }
		m.b.options = testmesh.TransportOptions{IdleConns: 256, Reconnect: _reconnect}
		m.b.handler = func(ctx context.Context, n *yarpcNode, id uint64, body []byte) ([]byte, error) {
			return n.client.Call(ctx, "call", body, yarpc.WithHeader(faultIDHeader, strconv.FormatUint(id, 10)))
		}
	}
	m.must(m.b.start())
	m.cleanup = append(m.cleanup, func() { m.must(m.b.stop()) })

	m.a = &yarpcNode{name: _fa, transport: meshHTTP, cfg: meshConfig(_fb, _attemptB, filepath.Join(dir, "a.snapshot")), handler: forward, counts: countsA}
	m.a.callee = func() testmesh.Callee { return testmesh.Callee{Name: _fb, Kind: testmesh.GRPC, Addr: m.b.Addr()} }
	m.must(m.a.start())
	m.cleanup = append(m.cleanup, func() { m.must(m.a.stop()) })

	m.client, err = testmesh.NewClient("fault-client", testmesh.TransportOptions{IdleConns: 256}, nil,
		testmesh.Callee{Name: _fa, Kind: testmesh.HTTP, Addr: m.a.Addr()})
	m.must(err)
	m.cleanup = append(m.cleanup, func() { m.must(m.client.Stop()) })
	m.caller = raw.New(m.client.ClientConfig(_fa))
	return m
}

// close stops everything, callers first.
func (m *faultMesh) close() {
	for i := len(m.cleanup) - 1; i >= 0; i-- {
		m.cleanup[i]()
	}
	m.lateMu.Lock()
	defer m.lateMu.Unlock()
	for _, f := range m.late {
		f()
	}
}

func (m *faultMesh) must(err error) {
	m.t.Helper()
	if err != nil {
		m.t.Fatal(err)
	}
}

// reconnect is the reconnect backoff of the mesh's gRPC clients: at most
// _reconnectMax. yarpc's default doubles up to 30s and grpc-go's up to
// 120s: after an outage a client keeps failing calls fast for up to that
// long, whatever errown does, so the steady state the tests ask for
// within one window needs a backoff under it.
type reconnect struct{}

const _reconnectMax = 100 * time.Millisecond

var _reconnect backoff.Strategy = reconnect{}

func (reconnect) Backoff() backoff.Backoff { return reconnect{} }

func (reconnect) Duration(attempts uint) time.Duration {
	return min(time.Duration(1<<min(attempts, 10))*time.Millisecond, _reconnectMax)
}

// call sends request id from outside and returns its answer: its code,
// claim, body and error.
func (m *faultMesh) call(id uint64) (yarpcerrors.Code, string, []byte, error) {
	var body [8]byte
	binary.LittleEndian.PutUint64(body[:], id)
	ctx, cancel := context.WithTimeout(context.Background(), _callTTL)
	defer cancel()
	var headers map[string]string
	res, err := m.caller.Call(ctx, "call", body[:], yarpc.ResponseHeaders(&headers))
	return yarpcerrors.FromError(err).Code(), headers["errown-claim"], res, err
}

// grpcGoLeaf is C as a grpc-go server with errown's interceptor: its
// Health/Check answers.
type grpcGoLeaf struct {
	healthpb.UnimplementedHealthServer
	leafNode
}

func (g *grpcGoLeaf) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	g.served.Add(1)
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (g *grpcGoLeaf) start() error {
	return g.startAs(testmesh.Config{Kind: testmesh.GRPCGo, RegisterGRPC: func(s *grpc.Server, _ *errown.Middleware) error {
		healthpb.RegisterHealthServer(s, g)
		return nil
	}})
}

// leafNode is C as a grpc-go or net/http server, which can be stopped and
// started again on its port.
type leafNode struct {
	cfg errown.Config

	served atomic.Int64
	mu     sync.Mutex
	addr   string // fixed at the first start
	node   *testmesh.Node
}

// startAs starts the node as tcfg says, with its errown, on its port
// after the first start; stop lets the requests in flight finish.
func (l *leafNode) startAs(tcfg testmesh.Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cfg := l.cfg
	tcfg.Name, tcfg.Listen, tcfg.Errown, tcfg.Graceful = _fc, l.addr, &cfg, true
	node, err := testmesh.Start(tcfg)
	if err != nil {
		return err
	}
	l.addr, l.node = node.Addr(), node
	return nil
}

func (l *leafNode) stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.node == nil {
		return nil
	}
	return l.node.Stop()
}

func (l *leafNode) Addr() string  { l.mu.Lock(); defer l.mu.Unlock(); return l.addr }
func (l *leafNode) Served() int64 { return l.served.Load() }

// grpcGoCall is B's handler when C is grpc-go: a grpc-go client through
// errown's dial options, its attempts counted by an interceptor inside
// errown's.
func (m *faultMesh) grpcGoCall() func(context.Context, *yarpcNode, uint64, []byte) ([]byte, error) {
	var (
		once   sync.Once
		client healthpb.HealthClient
		err    error
	)
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		md, _ := metadata.FromOutgoingContext(ctx)
		id := ""
		if v := md.Get(faultIDHeader); len(v) > 0 {
			id = v[0]
		}
		ierr := invoker(ctx, method, req, reply, cc, opts...)
		m.attempts.add(id, yarpcErrorOf(ierr))
		return ierr
	}
	return func(ctx context.Context, n *yarpcNode, id uint64, _ []byte) ([]byte, error) {
		once.Do(func() {
			opts := append(grpcgo.DialOptions(n.Middleware(), grpcgo.WithService(_fc), grpcgo.WithInnerInterceptors(count)),
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithConnectParams(grpc.ConnectParams{Backoff: grpcbackoff.Config{BaseDelay: time.Millisecond, Multiplier: 2, MaxDelay: _reconnectMax}, MinConnectTimeout: time.Second}))
			var cc *grpc.ClientConn
			cc, err = grpc.NewClient(m.proxy.Addr(), opts...)
			if err == nil {
				client = healthpb.NewHealthClient(cc)
				m.closeLast(func() { _ = cc.Close() })
			}
		})
		if err != nil {
			return nil, err
		}
		ctx = metadata.AppendToOutgoingContext(ctx, faultIDHeader, strconv.FormatUint(id, 10))
		if _, cerr := client.Check(ctx, &healthpb.HealthCheckRequest{}); cerr != nil {
			return nil, yarpcErrorOf(cerr)
		}
		return []byte("ok-leaf!"), nil
	}
}

// yarpcErrorOf is a grpc-go error as a yarpc one: the codes are the same
// numbers.
func yarpcErrorOf(err error) error {
	if err == nil {
		return nil
	}
	s := status.Convert(err)
	if s.Code() == codes.OK {
		return nil
	}
	return yarpcerrors.Newf(yarpcerrors.Code(s.Code()), "%s", s.Message())
}

// netHTTPLeaf is C as a net/http server with errown's handler.
type netHTTPLeaf struct{ leafNode }

func (h *netHTTPLeaf) start() error {
	return h.startAs(testmesh.Config{Kind: testmesh.NetHTTP, Handler: func(*errown.Middleware) (http.Handler, error) {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /call", func(w http.ResponseWriter, r *http.Request) {
			h.served.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, "ok-leaf!")
		})
		return mux, nil
	}})
}

// countingRT counts each attempt errown's Transport sends.
type countingRT struct {
	log  *attemptLog
	base http.RoundTripper
}

func (c countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.base.RoundTrip(r)
	var aerr error
	switch {
	case err != nil && r.Context().Err() == context.DeadlineExceeded:
		aerr = yarpcerrors.DeadlineExceededErrorf("%v", err)
	case err != nil:
		aerr = yarpcerrors.UnavailableErrorf("%v", err)
	case res.StatusCode >= 500:
		aerr = yarpcerrors.UnavailableErrorf("status %d", res.StatusCode)
	}
	c.log.add(r.Header.Get(faultIDHeader), aerr)
	return res, err
}

// netHTTPCall is B's handler when C is net/http: an http.Client through
// errown's Transport.
func (m *faultMesh) netHTTPCall() func(context.Context, *yarpcNode, uint64, []byte) ([]byte, error) {
	var (
		once   sync.Once
		client *http.Client
	)
	return func(ctx context.Context, n *yarpcNode, id uint64, body []byte) ([]byte, error) {
		once.Do(func() {
			base := &http.Transport{MaxIdleConnsPerHost: 256}
			m.closeLast(base.CloseIdleConnections)
			client = &http.Client{Transport: nethttp.Transport(n.Middleware(), countingRT{log: m.attempts, base: base},
				nethttp.WithService(func(*http.Request) string { return _fc }))}
		})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+m.proxy.Addr()+"/call", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set(faultIDHeader, strconv.FormatUint(id, 10))
		res, err := client.Do(req)
		if err != nil {
			return nil, yarpcerrors.UnavailableErrorf("%s: %v", _fc, err)
		}
		b, rerr := io.ReadAll(res.Body)
		_ = res.Body.Close()
		switch {
		case res.StatusCode >= 500:
			return nil, yarpcerrors.UnavailableErrorf("%s: status %d", _fc, res.StatusCode)
		case rerr != nil:
			return nil, yarpcerrors.UnavailableErrorf("%s: %v", _fc, rerr)
		}
		return b, nil
	}
}
