package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/retry"
	"github.com/opentracing/opentracing-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// docs/DESIGN.md's first table on a mixed mesh: the chain
// A→B→C→D→E→F→G, one call per hop, whose services alternate the three
// kinds errown runs in:
//
//	A yarpc     HTTP inbound, gRPC outbound to B
//	B grpc-go   calls C with a net/http client
//	C net/http  calls D's yarpc HTTP inbound with a net/http client
//	D yarpc     HTTP inbound, gRPC outbound to E
//	E grpc-go   calls F with a net/http client
//	F net/http  calls G's yarpc HTTP inbound with a net/http client
//	G yarpc     HTTP inbound
//
// So each kind calls the next over that one's wire: yarpc → grpc-go
// through yarpc's gRPC outbound (A→B, D→E), grpc-go → net/http (B→C,
// E→F), net/http → yarpc's HTTP inbound (C→D, F→G); the other three
// directions do not occur in this order (grpcgo's and nethttp's interop
// tests have them). D fails every request with unavailable after E..G
// answered it successfully.

// The three services beyond the e2e helpers' A..D.
const (
	_e = "svc-e"
	_f = "svc-f"
	_g = "svc-g"
)

// _mixedNames is the chain, root first.
var _mixedNames = []string{_a, _b, _c, _d, _e, _f, _g}

// The procedure each kind serves, as errown names it: a yarpc service's
// raw procedure (fxtest's, so that the storm helpers apply at the root),
// the gRPC method every grpc-go service serves as yarpc names it, and the
// ServeMux pattern of the net/http services.
const (
	_mixedGRPCProcedure = "grpc.health.v1.Health::Check"
	_mixedHTTPPath      = "/call"
	_mixedHTTPPattern   = "POST " + _mixedHTTPPath
)

// _mixedFailing is D's position in the chain: the depth of the failure.
const _mixedFailing = 3

// _mixedRoots is how many root requests each case sends.
const _mixedRoots = 3

// mixedLoads derives a row of the table from the chain's shape: a node at
// depth d serves 2^k requests per root request, k being the hops above it
// on the path that retry the failure (two attempts each). Blind, every hop
// above D does: k = min(d, 3). With errown only C, D's caller, does: k = 1
// from D down, 0 above.
func mixedLoads(blind bool) []int64 {
	loads := make([]int64, len(_mixedNames))
	for d := range loads {
		k := min(d, _mixedFailing)
		if !blind {
			k = min(d, _mixedFailing) / _mixedFailing
		}
		loads[d] = 1 << k
	}
	return loads
}

// mixedTotal returns the requests a row serves in all.
func mixedTotal(loads []int64) uint64 {
	var n int64
	for _, l := range loads {
		n += l
	}
	return uint64(n)
}

// mixedNode is one service of the mixed chain.
type mixedNode struct {
	name   string
	served atomic.Int64
	// errown and options configure the service's errown; nil runs none.
	errown  *errown.Config
	options []errown.Option
	// addr is where callers reach it: host:port of a yarpc HTTP inbound or
	// a grpc-go server, the URL of a net/http server.
	addr string
	// mw and storm are nil without errown.
	mw    *errown.Middleware
	storm *stormNode
}

// mixedChain is the seven services, root first, the outside caller's
// HTTP client, and the tap every hop's attempts pass through.
type mixedChain struct {
	nodes []*mixedNode
	root  *http.Client
	tap   *mixedTap
}

// startMixedChain starts the chain, the last service first: with errown
// everywhere (each service with a policy of two idempotent attempts for
// its callee, the budget disabled, enforce mode), or with none anywhere
// and a plain retry-once at every hop.
func startMixedChain(t *testing.T, withErrown bool) *mixedChain {
	t.Helper()
	ch := &mixedChain{nodes: make([]*mixedNode, len(_mixedNames)), tap: new(mixedTap)}
	for i := len(_mixedNames) - 1; i >= 0; i-- {
		n := &mixedNode{name: _mixedNames[i]}
		var callee *mixedNode
		if i+1 < len(_mixedNames) {
			callee = ch.nodes[i+1]
		}
		if withErrown {
			var callees []string
			if callee != nil {
				callees = append(callees, callee.name)
			}
			n.storm = newStormNode()
			n.errown, n.options = stormConfig(retry.ModeEnforce, callees...), n.storm.options()
		}
		switch i % 3 {
		case 0:
			var outbound middleware.UnaryOutbound
			if callee != nil {
				// errown's middleware goes outside (Apply), the plain
				// retry too.
				outbound = ch.tap
				if !withErrown {
					outbound = yarpc.UnaryOutboundMiddleware(retryOnce{}, ch.tap)
				}
			}
			startMixedYARPC(t, n, callee, i == _mixedFailing, outbound, nil)
		case 1:
			startMixedGRPC(t, n, callee, ch.tap, nil)
		case 2:
			startMixedHTTP(t, n, callee, ch.tap, nil)
		}
		ch.nodes[i] = n
	}
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	ch.root = &http.Client{Transport: base}
	return ch
}

// served returns what each service has served so far, root first.
func (ch *mixedChain) served() []int64 {
	out := make([]int64, len(ch.nodes))
	for i, n := range ch.nodes {
		out[i] = n.served.Load()
	}
	return out
}

// startMixedNode starts the service n as cfg describes, with n's errown,
// until the test ends.
func startMixedNode(t *testing.T, n *mixedNode, cfg testmesh.Config) {
	t.Helper()
	cfg.Name, cfg.Errown, cfg.ErrownOptions = n.name, n.errown, n.options
	node, err := testmesh.Start(cfg)
	require.NoError(t, err, "start %s", n.name)
	t.Cleanup(func() {
		assert.NoError(t, node.Stop(), "stop %s", n.name)
	})
	n.addr, n.mw = node.Addr(), node.Middleware()
	if cfg.Kind == testmesh.NetHTTP {
		n.addr = "http://" + n.addr
	}
}

// startMixedYARPC starts a yarpc service: an HTTP inbound serving
// errowntest.Procedure (raw), and a gRPC outbound to callee, a grpc-go
// service, when there is one, whose Health/Check it calls first, each
// attempt through outbound. It fails with unavailable when fail is set,
// after its callee answered. tracer, when set, traces its transports.
func startMixedYARPC(t *testing.T, n, callee *mixedNode, fail bool, outbound middleware.UnaryOutbound, tracer opentracing.Tracer) {
	t.Helper()
	cfg := testmesh.Config{Kind: testmesh.HTTP, Transport: testmesh.TransportOptions{Tracer: tracer}, Outbound: outbound}
	if callee != nil {
		cfg.Callees = []testmesh.Callee{{Name: callee.name, Kind: testmesh.GRPCGo, Addr: callee.addr}}
	}
	cfg.Register = func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
		var client raw.Client
		if callee != nil {
			client = raw.New(d.ClientConfig(callee.name))
		}
		d.Register(raw.Procedure(errowntest.Procedure, func(ctx context.Context, body []byte) ([]byte, error) {
			n.served.Add(1)
			if client != nil {
				// An empty body is an empty HealthCheckRequest.
				if _, err := client.Call(ctx, _mixedGRPCProcedure, nil); err != nil {
					return nil, err
				}
			}
			if fail {
				return nil, yarpcerrors.UnavailableErrorf("%s is down", n.name)
			}
			return body, nil
		}))
		return nil
	}
	startMixedNode(t, n, cfg)
}

// startMixedGRPC starts a grpc-go service whose Health/Check POSTs to its
// callee, a net/http service, and fails with the gRPC code of the
// callee's error status, if any. tracer, when set, opens a server span
// ahead of errown's interceptor and a client span around each call.
func startMixedGRPC(t *testing.T, n, callee *mixedNode, tap *mixedTap, tracer trace.Tracer) {
	t.Helper()
	cfg := testmesh.Config{Kind: testmesh.GRPCGo}
	if tracer != nil {
		cfg.Interceptors = []grpc.UnaryServerInterceptor{func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			ctx, s := tracer.Start(ctx, info.FullMethod, trace.WithSpanKind(trace.SpanKindServer))
			defer s.End()
			return h(ctx, req)
		}}
	}
	cfg.RegisterGRPC = func(srv *grpc.Server, mw *errown.Middleware) error {
		n.mw = mw
		healthpb.RegisterHealthServer(srv, &mixedHealth{n: n, callee: callee, client: mixedHTTPClient(t, n, callee, tap, tracer)})
		return nil
	}
	startMixedNode(t, n, cfg)
}

type mixedHealth struct {
	healthpb.UnimplementedHealthServer

	n      *mixedNode
	callee *mixedNode
	client *http.Client
}

func (h *mixedHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.n.served.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.callee.addr+_mixedHTTPPath, strings.NewReader(h.n.name))
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	res, err := h.client.Do(req)
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode >= 400 {
		// The callee's failure is this service's, with its code.
		c := codes.Unknown
		if res.StatusCode == http.StatusServiceUnavailable {
			c = codes.Unavailable
		}
		return nil, status.Errorf(c, "%s: %s", h.n.name, b)
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// startMixedHTTP starts a net/http service whose POST /call calls its
// callee, a yarpc service, over yarpc's HTTP transport, and answers with
// the callee's status. tracer, when set, opens a server span around
// errown's handler and a client span around each call.
func startMixedHTTP(t *testing.T, n, callee *mixedNode, tap *mixedTap, tracer trace.Tracer) {
	t.Helper()
	cfg := testmesh.Config{Kind: testmesh.NetHTTP}
	if tracer != nil {
		cfg.OuterHandler = func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, s := tracer.Start(r.Context(), r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer))
				defer s.End()
				h.ServeHTTP(w, r.WithContext(ctx))
			})
		}
	}
	cfg.Handler = func(mw *errown.Middleware) (http.Handler, error) {
		n.mw = mw
		client := mixedHTTPClient(t, n, callee, tap, tracer)
		mux := http.NewServeMux()
		mux.HandleFunc(_mixedHTTPPattern, func(w http.ResponseWriter, r *http.Request) {
			n.served.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			// yarpc wants a deadline; a caller without errown sends none.
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			req, err := yarpcHTTPRequest(ctx, n.name, callee)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			res, err := client.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			b, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if res.StatusCode >= 400 {
				// The callee's failure is this service's, same status.
				http.Error(w, n.name+": "+strings.TrimSpace(string(b)), res.StatusCode)
				return
			}
			_, _ = io.WriteString(w, n.name)
		})
		return mux, nil
	}
	startMixedNode(t, n, cfg)
}

// yarpcHTTPRequest is a call to errowntest.Procedure of the yarpc service
// callee over yarpc's HTTP transport, as any HTTP client can make it: POST
// with the headers yarpc's HTTP inbound requires, the deadline in
// Context-TTL-MS (errown's Transport sets it again on each attempt).
func yarpcHTTPRequest(ctx context.Context, caller string, callee *mixedNode) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+callee.addr+"/", strings.NewReader(caller))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Rpc-Caller", caller)
	req.Header.Set("Rpc-Service", callee.name)
	req.Header.Set("Rpc-Procedure", errowntest.Procedure)
	req.Header.Set("Rpc-Encoding", "raw")
	if deadline, ok := ctx.Deadline(); ok {
		req.Header.Set("Context-TTL-MS", strconv.FormatInt(max(time.Until(deadline).Milliseconds(), 0), 10))
	}
	return req, nil
}

// mixedHTTPClient is a net/http service's or a grpc-go service's client
// of callee: through errown's Transport, naming the callee as its policy
// does, or through a plain retry-once without errown; each attempt
// through tap. tracer, when set, opens a client span around each call,
// as otelhttp's Transport does.
func mixedHTTPClient(t *testing.T, n *mixedNode, callee *mixedNode, tap *mixedTap, tracer trace.Tracer) *http.Client {
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tapped := httpTap{tap: tap, caller: n.name, callee: callee.name, base: base}
	var rt http.RoundTripper = httpRetryOnce{tapped}
	if n.mw != nil {
		name := callee.name
		rt = nethttp.Transport(n.mw, tapped, nethttp.WithService(func(*http.Request) string { return name }))
	}
	if tracer != nil {
		rt = clientSpans{tracer: tracer, base: rt}
	}
	return &http.Client{Transport: rt}
}

// mixedTap records every attempt on every hop of the chain, whatever the
// kinds of its two ends, as the wire carried it: "caller->callee#attempt
// code claim storm", the attempt, claim and storm being errown's headers
// ("-" when absent), in the order the attempts ended. It is safe for
// concurrent use.
type mixedTap struct {
	mu       sync.Mutex
	attempts []string
}

func (tap *mixedTap) add(caller, callee, attempt string, code yarpcerrors.Code, claim, storm string) {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	tap.attempts = append(tap.attempts, mixedAttempt(caller, callee, attempt, code, claim, storm))
}

// take returns the attempts recorded since the last take.
func (tap *mixedTap) take() []string {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	out := tap.attempts
	tap.attempts = nil
	return out
}

// mixedAttempt formats one attempt as mixedTap records it.
func mixedAttempt(caller, callee, attempt string, code yarpcerrors.Code, claim, storm string) string {
	return fmt.Sprintf("%s->%s#%s %v %s %s", caller, callee, attempt, code, claim, storm)
}

// orDash returns v, or "-" when it is empty.
func orDash(v string) string {
	if v == "" {
		return "-"
	}
	return v
}

var _ middleware.UnaryOutbound = (*mixedTap)(nil)

// Call taps a yarpc service's attempt (here always over gRPC, to a grpc-go
// service), inside errown's middleware or the plain retry.
func (tap *mixedTap) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	attempt, _ := req.Headers.Get(defaults.AttemptHeader)
	res, err := out.Call(ctx, req)
	var claim, storm string
	if res != nil {
		claim, _ = res.Headers.Get(defaults.ClaimHeader)
		storm, _ = res.Headers.Get(defaults.StormHeader)
	}
	tap.add(req.Caller, req.Service, orDash(attempt), yarpcerrors.FromError(err).Code(), orDash(claim), orDash(storm))
	return res, err
}

// httpTap taps a net/http or grpc-go service's attempts to its callee
// over HTTP: a net/http service or a yarpc HTTP inbound.
type httpTap struct {
	tap            *mixedTap
	caller, callee string
	base           http.RoundTripper
}

func (h httpTap) RoundTrip(r *http.Request) (*http.Response, error) {
	attempt := r.Header.Get(_mixedAttemptHeader)
	res, err := h.base.RoundTrip(r)
	code, claim, storm := yarpcerrors.CodeUnknown, "", ""
	if err == nil {
		code = httpCode(res)
		claim, storm = res.Header.Get(_mixedClaimHeader), res.Header.Get(_mixedStormHeader)
	}
	h.tap.add(h.caller, h.callee, orDash(attempt), code, orDash(claim), orDash(storm))
	return res, err
}

// httpCode is the yarpc code of an HTTP response: a yarpc service's
// Rpc-Error-Code, else its status (the few these tests see).
func httpCode(res *http.Response) yarpcerrors.Code {
	var c yarpcerrors.Code
	if v := res.Header.Get("Rpc-Error-Code"); v != "" && c.UnmarshalText([]byte(v)) == nil {
		return c
	}
	switch {
	case res.StatusCode < 400:
		return yarpcerrors.CodeOK
	case res.StatusCode == http.StatusServiceUnavailable:
		return yarpcerrors.CodeUnavailable
	default:
		return yarpcerrors.CodeUnknown
	}
}

// httpRetryOnce is retryOnce for net/http: a plain retry library that
// sends a request again once when it fails (no response, or an error
// status), whatever the response says.
type httpRetryOnce struct{ base http.RoundTripper }

func (rt httpRetryOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := rt.base.RoundTrip(r)
	if err == nil && res.StatusCode < 400 {
		return res, nil
	}
	if res != nil {
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
	again := r.Clone(r.Context())
	if r.GetBody != nil {
		if again.Body, err = r.GetBody(); err != nil {
			return nil, err
		}
	}
	return rt.base.RoundTrip(again)
}

// mixedReply is what the outside caller got from A.
type mixedReply struct {
	status int
	// code is A's Rpc-Error-Code.
	code string
	// claim and storm are errown's headers, nil when absent.
	claim, storm []string
	err          error
}

// call sends a root request to A from outside, over plain HTTP without
// errown: A serves a root request.
func (ch *mixedChain) call(t *testing.T) mixedReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := ch.nodes[0]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.addr+"/", strings.NewReader("mixed"))
	require.NoError(t, err)
	for k, v := range map[string]string{
		"Rpc-Caller": errowntest.OutsideCaller, "Rpc-Service": a.name, "Rpc-Procedure": errowntest.Procedure,
		"Rpc-Encoding": "raw", "Context-TTL-MS": "10000",
	} {
		req.Header.Set(k, v)
	}
	res, err := ch.root.Do(req)
	if err != nil {
		return mixedReply{err: err}
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	r := mixedReply{status: res.StatusCode, code: res.Header.Get("Rpc-Error-Code")}
	r.claim, r.storm = res.Header[_mixedClaimHeader], res.Header[_mixedStormHeader]
	return r
}

// errown's attempt, claim and storm headers as yarpc's HTTP transport
// carries them.
var (
	_mixedAttemptHeader = http.CanonicalHeaderKey("Rpc-Header-" + defaults.AttemptHeader)
	_mixedClaimHeader   = http.CanonicalHeaderKey("Rpc-Header-" + defaults.ClaimHeader)
	_mixedStormHeader   = http.CanonicalHeaderKey("Rpc-Header-" + defaults.StormHeader)
)

// TestMixedMeshChainTable reproduces docs/DESIGN.md's first table on the
// mixed chain, per root request and exactly (no budget anywhere): every
// hop retrying once blind to claims, A 1, B 2, C 4, D 8, E 8, F 8, G 8;
// errown everywhere, A 1, B 1, C 1, D 2, E 2, F 2, G 2, and the root's
// storm figures say so: served 11, blind 39, prevented 28, radius 1, blind
// radius 3.
//
// With errown everywhere, the first root request is the incident's onset:
// no hop has seen a failure, so every first attempt goes unmarked and the
// quiet success below D answers D's first, unmarked call without figures
// (E's subtree counts as one). The root's storm is then low by what that
// hides, and B and C, serving unmarked requests, record root storms of
// their own subtrees. From the second request on every call is marked and
// the figures are the table's, exactly.
func TestMixedMeshChainTable(t *testing.T) {
	// The published row, and errown's: only C retries D, so D serves 2,
	// and E..G, which serve what D forwards, 2 each.
	published := []int64{1, 2, 4, 8, 8, 8, 8}
	enforced := []int64{1, 1, 1, 2, 2, 2, 2}
	blind, owned := mixedLoads(true), mixedLoads(false)
	require.Equal(t, published, blind, "derived blind row")
	require.Equal(t, enforced, owned, "derived owned row")
	// The root's storm, derived: served is what the services serve with
	// errown, 1+1+1+2·4 = 11; blind what they serve when every hop
	// retries, 1+2+4+8·4 = 39; prevented 28; one retry (C's), radius 1
	// (one hop on the call path spent a retry), blind radius 3 (A, B and C
	// would have). Hop by hop: G's leaf success says nothing, F's says
	// "2,2,0,0,0", E's "3,3,0,0,0", D's failure "4,4,0,0,0"; C retries D
	// (claimed): "9,9,1,1,1"; B does not (unclaimed), its suppressed retry
	// would replay C's 9: "10,19,1,1,2"; A likewise: "11,39,1,1,3".
	served, blindServed := mixedTotal(owned), mixedTotal(blind)
	require.Equal(t, uint64(11), served, "derived served")
	require.Equal(t, uint64(39), blindServed, "derived blind")
	root := rootStorm(true, true, served, blindServed, 1, 1, _mixedFailing)
	require.Equal(t, uint64(28), root.Prevented, "derived prevented")
	rootHeader := fmt.Sprintf("%d,%d,1,1,%d", served, blindServed, _mixedFailing)

	// On the wire, per root request, with errown: G's success says
	// nothing, F's and E's what they took; D claims its own failure, C
	// retries it (attempt 2), E..G serving it again; C and B answer
	// unclaimed, with their subtrees' figures, and nobody above C retries.
	// Each attempt's claim and storm crossed from one kind to the next:
	// yarpc to net/http (D→C, G→F), net/http to grpc-go (C→B, F→E), grpc-go
	// trailers to yarpc's gRPC outbound (B→A, E→D).
	ok := yarpcerrors.CodeOK
	belowD := []string{
		mixedAttempt(_f, _g, "1", ok, "-", "-"),
		mixedAttempt(_e, _f, "1", ok, "-", "2,2,0,0,0"),
		mixedAttempt(_d, _e, "1", ok, "-", "3,3,0,0,0"),
	}
	ownedWire := slices.Concat(
		belowD, []string{mixedAttempt(_c, _d, "1", _unavail, _claimed, "4,4,0,0,0")},
		belowD, []string{mixedAttempt(_c, _d, "2", _unavail, _claimed, "4,4,0,0,0")},
		[]string{
			mixedAttempt(_b, _c, "1", _unavail, _unclaimed, "9,9,1,1,1"),
			mixedAttempt(_a, _b, "1", _unavail, _unclaimed, "10,19,1,1,2"),
		},
	)
	// At the onset: D's first request, unmarked, calls E unmarked, and so
	// on down to G: nothing of errown's on those edges, and D's failure
	// counts E's quiet subtree as one, "2,2,0,0,0". C retries D with the
	// mark, and that subtree is marked throughout (belowD, "4,4,0,0,0").
	// C's subtree is then 1+2+4 = 7 ("7,7,1,1,1"); B's 8, blind 1+2·7 =
	// 15 ("8,15,1,1,2"); A's 9, blind 1+2·15 = 31 ("9,31,1,1,3"), so 22
	// prevented. B and C each record a root storm of their own subtree,
	// at the onset, as does A; D's (2, nothing stormy) is none.
	belowDOnset := []string{
		mixedAttempt(_f, _g, "-", ok, "-", "-"),
		mixedAttempt(_e, _f, "-", ok, "-", "-"),
		mixedAttempt(_d, _e, "-", ok, "-", "-"),
	}
	onsetWire := slices.Concat(
		belowDOnset, []string{mixedAttempt(_c, _d, "-", _unavail, _claimed, "2,2,0,0,0")},
		belowD, []string{mixedAttempt(_c, _d, "2", _unavail, _claimed, "4,4,0,0,0")},
		[]string{
			mixedAttempt(_b, _c, "-", _unavail, _unclaimed, "7,7,1,1,1"),
			mixedAttempt(_a, _b, "-", _unavail, _unclaimed, "8,15,1,1,2"),
		},
	)
	onsetRoot := atOnset(rootStorm(true, true, 9, 31, 1, 1, _mixedFailing))
	require.Equal(t, uint64(22), onsetRoot.Prevented, "derived prevented at the onset")
	onsetHeader := "9,31,1,1,3"
	onsetB := atOnset(rootStorm(true, true, 8, 15, 1, 1, 2))
	onsetB.Procedure = _mixedGRPCProcedure
	onsetC := atOnset(rootStorm(true, true, 7, 7, 1, 1, 1))
	onsetC.Procedure = _mixedHTTPPattern
	// Blind, every edge carries what its callee serves, each attempt
	// without errown's headers.
	blindWire := map[string]int64{}
	for i := 1; i < len(_mixedNames); i++ {
		code := _unavail
		if i > _mixedFailing {
			code = ok
		}
		blindWire[mixedAttempt(_mixedNames[i-1], _mixedNames[i], "-", code, "-", "-")] = blind[i]
	}

	t.Run("every hop retries blind", func(t *testing.T) {
		t.Parallel()
		ch := startMixedChain(t, false)
		for i := range _mixedRoots {
			before := ch.served()
			r := ch.call(t)
			got := ch.served()
			for k := range got {
				got[k] -= before[k]
			}
			assert.Equal(t, blind, got, "root request %d: served (A..G)", i)
			assert.Equal(t, root.Blind, mixedTotal(got), "root request %d: the services served in all, errown's root storm says blind", i)
			assert.NoError(t, r.err, "root request %d: A's answer, want 503 unavailable", i)
			assert.Equal(t, http.StatusServiceUnavailable, r.status, "root request %d: A's status", i)
			assert.Equal(t, "unavailable", r.code, "root request %d: A's code", i)
			assert.Nil(t, r.claim, "root request %d: no errown anywhere, yet a claim", i)
			assert.Nil(t, r.storm, "root request %d: no errown anywhere, yet a storm", i)
			t.Logf("root request %d: served %v (A..G); A answered %d %s", i, got, r.status, r.code)
			// Every hop sent each failed call twice, blind: nothing on
			// the wire says anything of errown.
			assert.Equal(t, blindWire, mixedEdges(ch.tap.take()), "root request %d: attempts on the wire, by edge and outcome", i)
		}
	})

	t.Run("errown everywhere", func(t *testing.T) {
		t.Parallel()
		ch := startMixedChain(t, true)
		for i := range _mixedRoots {
			before := ch.served()
			r := ch.call(t)
			got := ch.served()
			for k := range got {
				got[k] -= before[k]
			}
			assert.Equal(t, owned, got, "root request %d: served (A..G)", i)
			assert.Equal(t, root.Served, mixedTotal(got), "root request %d: the services served in all, the root storm says", i)
			assert.NoError(t, r.err, "root request %d: A's answer, want 503 unavailable", i)
			assert.Equal(t, http.StatusServiceUnavailable, r.status, "root request %d: A's status", i)
			assert.Equal(t, "unavailable", r.code, "root request %d: A's code", i)
			assert.Equal(t, []string{_unclaimed}, r.claim, "root request %d: A's claim", i)
			wantHeader, wantWire := rootHeader, ownedWire
			if i == 0 {
				wantHeader, wantWire = onsetHeader, onsetWire
			}
			assert.Equal(t, []string{wantHeader}, r.storm, "root request %d: A's storm", i)
			t.Logf("root request %d: served %v (A..G); A answered %d %s, claim %q, storm %q", i, got, r.status, r.code, r.claim, r.storm)
			assert.Equal(t, wantWire, ch.tap.take(), "root request %d: on the wire", i)
		}

		a, b, c := ch.nodes[0], ch.nodes[1], ch.nodes[2]
		assertRootStorms(t, a.name, a.mw, a.storm, append([]inbound.Storm{onsetRoot}, slices.Repeat([]inbound.Storm{root}, _mixedRoots-1)...))
		assertRootStorms(t, b.name, b.mw, b.storm, []inbound.Storm{onsetB})
		assertRootStorms(t, c.name, c.mw, c.storm, []inbound.Storm{onsetC})
		for _, n := range ch.nodes[3:] {
			got := n.storm.hooked()
			assert.Empty(t, got, "%s is no root, yet reported root storms\n\t%s", n.name, formatStorms(got))
		}
		wantMetrics := stormCounts{
			Requests: _mixedRoots, Prevented: int64(onsetRoot.Prevented) + int64(root.Prevented)*(_mixedRoots-1), Retries: _mixedRoots,
			Radius: map[float64]int64{1: _mixedRoots}, BlindRadius: map[float64]int64{_mixedFailing: _mixedRoots},
		}
		assert.Equal(t, wantMetrics, a.storm.rootMetrics(), "A's errown.storm metrics")
		wantB := stormCounts{
			Requests: 1, Prevented: 7, Retries: 1,
			Radius: map[float64]int64{1: 1}, BlindRadius: map[float64]int64{2: 1},
		}
		assert.Equal(t, wantB, b.storm.rootMetricsOf(_mixedGRPCProcedure), "B's errown.storm metrics: the onset request")
		wantC := stormCounts{
			Requests: 1, Retries: 1,
			Radius: map[float64]int64{1: 1}, BlindRadius: map[float64]int64{1: 1},
		}
		assert.Equal(t, wantC, c.storm.rootMetricsOf(_mixedHTTPPattern), "C's errown.storm metrics: the onset request")

		// Each hop's errown, across the kinds: C (net/http) read D's
		// (yarpc over HTTP) claim and retried once; B (grpc-go) read C's
		// unclaimed and did not, nor A (yarpc) B's (grpc-go's trailers).
		// A suppressed retry prevents the callee's blind subtree, one
		// request of it: A 19 (B's, 38/2), B 9 (C's, 36/4), which split
		// the root's 28. Below D nothing failed. At the onset the callee's
		// blind subtree is what its figures said: A 15 (B's), B 7 (C's),
		// which split the onset root's 22.
		var prevented, onsetPrevented int64
		for i, h := range []struct{ attempts, suppressed, onsetSubtree int64 }{
			{0, 1, 15}, {0, 1, 7}, {1, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0},
		} {
			n, callee := ch.nodes[i], ch.nodes[i+1].name
			subtree := int64(mixedTotal(blind[i+1:])) / blind[i+1]
			prevented += h.suppressed * subtree
			onsetPrevented += h.suppressed * h.onsetSubtree
			got := [3]int64{n.storm.retryCounter("attempts", callee), n.storm.retryCounter("suppressed", callee), n.storm.retryCounter("prevented", callee)}
			want := [3]int64{h.attempts * _mixedRoots, h.suppressed * _mixedRoots, h.suppressed * (h.onsetSubtree + subtree*(_mixedRoots-1))}
			assert.Equal(t, want, got, "%s's retry.attempts, retry.suppressed and retry.prevented for %s", n.name, callee)
		}
		assert.Equal(t, int64(root.Prevented), prevented, "the hops prevent per root request after the onset, the root says")
		assert.Equal(t, int64(28), prevented, "the hops prevent per root request after the onset, the table says")
		assert.Equal(t, int64(onsetRoot.Prevented), onsetPrevented, "the hops prevent at the onset, the root says")
		// The claims each service answered with, and read from its callee.
		for i, h := range []struct {
			claimed, unclaimed int64 // answered, per root request
			failedClaim        string
			failed             int64 // logical calls to the callee that failed with failedClaim
		}{
			{0, 1, _unclaimed, 1}, // A read B's unclaimed
			{0, 1, _unclaimed, 1}, // B read C's unclaimed
			{0, 1, _claimed, 1},   // C read D's claimed (both attempts)
			{2, 0, "", 0},         // D: its own failure, twice
			{0, 0, "", 0}, {0, 0, "", 0}, {0, 0, "", 0},
		} {
			n := ch.nodes[i]
			got := [2]int64{mixedCounter(n, "inbound.claimed", nil), mixedCounter(n, "inbound.unclaimed", nil)}
			assert.Equal(t, [2]int64{h.claimed * _mixedRoots, h.unclaimed * _mixedRoots}, got, "%s's inbound.claimed and inbound.unclaimed", n.name)
			var failures int64
			for _, c := range []string{_claimed, _unclaimed, "missing"} {
				failures += mixedCounter(n, "egress.failures", map[string]string{"claim": c})
			}
			if h.failedClaim != "" {
				assert.Equal(t, h.failed*_mixedRoots, mixedCounter(n, "egress.failures", map[string]string{"claim": h.failedClaim}), "%s: egress.failures{claim=%s}", n.name, h.failedClaim)
			}
			assert.Equal(t, h.failed*_mixedRoots, failures, "%s: failed calls to its callee in all", n.name)
		}
		// errown's decisions, one per failed request, name each kind's
		// procedure and the code; E..G succeeded and decided nothing.
		for i, want := range []struct {
			procedure, claim string
			perRoot          int
		}{
			{errowntest.Procedure, _unclaimed, 1}, {_mixedGRPCProcedure, _unclaimed, 1},
			{_mixedHTTPPattern, _unclaimed, 1}, {errowntest.Procedure, _claimed, 2},
			{"", "", 0}, {"", "", 0}, {"", "", 0},
		} {
			n := ch.nodes[i]
			// Counted one by one; listed once per repeat within one
			// reading of errown's coarse clock (Decisions).
			made := mixedCounter(n, "inbound.claimed", nil) + mixedCounter(n, "inbound.unclaimed", nil)
			assert.Equal(t, int64(want.perRoot*_mixedRoots), made, "%s's claim decisions made", n.name)
			decisions := n.mw.Introspect().Decisions
			assert.LessOrEqual(t, len(decisions), want.perRoot*_mixedRoots, "%s lists claim decisions, want 1 to %d", n.name, want.perRoot*_mixedRoots)
			assert.Equal(t, want.perRoot > 0, len(decisions) > 0, "%s lists %d claim decisions, want 1 to %d", n.name, len(decisions), want.perRoot*_mixedRoots)
			for _, d := range decisions {
				assert.Equal(t, want.procedure, d.Procedure, "%s decided %+v: procedure", n.name, d)
				assert.Equal(t, want.claim, d.Claim, "%s decided %+v: claim", n.name, d)
				assert.Equal(t, "unavailable", d.Code, "%s decided %+v: code", n.name, d)
			}
		}
		for _, n := range ch.nodes {
			assert.Zero(t, n.mw.Introspect().InFlight, "%s: requests still tracked", n.name)
		}
		want := make(map[string]int64, len(ch.nodes))
		got := make(map[string]int64, len(ch.nodes))
		for i, n := range ch.nodes {
			want[n.name], got[n.name] = owned[i]*_mixedRoots, n.served.Load()
		}
		assert.Equal(t, want, got, "served in all")
	})
}

// mixedEdges counts the attempts mixedTap recorded, by their format:
// edge, attempt header, code, claim and storm.
func mixedEdges(attempts []string) map[string]int64 {
	m := make(map[string]int64)
	for _, a := range attempts {
		m[a]++
	}
	return m
}

// mixedCounter returns the service's errown counter name (under
// "errown."), with tags.
func mixedCounter(n *mixedNode, name string, tags map[string]string) int64 {
	if c, ok := n.storm.scope.Snapshot().Counters()[tally.KeyForPrefixedStringMap("errown."+name, tags)]; ok {
		return c.Value()
	}
	return 0
}
