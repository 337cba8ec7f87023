package stormsim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A node of kind TransportGRPCGo is a plain grpc-go server whose calls to
// its children go through grpc-go ClientConns (or an http.Client, for a
// net/http child of a mixed mesh); one of kind TransportNetHTTP is a plain
// net/http server calling through http.Clients (or ClientConns). Under
// the ownership policies errown runs on them through the grpcgo and
// nethttp adapters, built from the same Config as on a yarpc node; under
// the blind policies the same retry middleware as on a yarpc node
// (retrier.New around attemptTimer) runs through the lab's own adapters
// (grpcBlind, httpBlind). The lab's recorders run as a server interceptor
// or handler (claims answered) and a client interceptor or RoundTripper
// (retries per edge and call path, the trace), innermost as on yarpc.

const (
	// _grpcMethod is the method every grpc-go node serves: the method
	// yarpc's gRPC outbound calls for the raw procedure _procedure, so
	// that a yarpc node of a mixed mesh calls a grpc-go node as it calls
	// a yarpc one.
	_grpcMethod = "/__default__/" + _procedure
	// _httpHeaderPrefix is how yarpc's HTTP transport, and nethttp, send
	// application headers.
	_httpHeaderPrefix = "Rpc-Header-"
	// _ttlHeader carries the time left of the caller's deadline, in ms.
	_ttlHeader = "Context-TTL-MS"
	// _errorCodeHeader carries the yarpc code of an error response.
	_errorCodeHeader = "Rpc-Error-Code"
)

// _mixedKinds are the kinds of the nodes of a TransportMixed mesh, cycled
// through in the topology's order: yarpc over HTTP, grpc-go, net/http.
var _mixedKinds = []string{TransportHTTP, TransportGRPCGo, TransportNetHTTP}

// nodeKind returns the kind of node i: its transport, or for
// TransportMixed its place in _mixedKinds.
func (o Options) nodeKind(i int) string {
	if o.Transport == TransportMixed {
		return _mixedKinds[i%len(_mixedKinds)]
	}
	return o.Transport
}

// native reports whether a node of kind is a grpc-go or net/http server
// rather than a yarpc dispatcher.
func native(kind string) bool {
	return kind == TransportGRPCGo || kind == TransportNetHTTP
}

// wireKind returns the yarpc transport that speaks to a node of kind.
func wireKind(kind string) string {
	switch kind {
	case TransportGRPCGo:
		return TransportGRPC
	case TransportNetHTTP:
		return TransportHTTP
	}
	return kind
}

// clientMiddleware is what runs on a node's client for one child.
type clientMiddleware struct {
	errown *errown.Middleware       // under the ownership policies
	blind  middleware.UnaryOutbound // a retry library blind to claims
	rec    *retryRecorder
	edge   int
}

// startNative starts node i of kind TransportGRPCGo or TransportNetHTTP,
// whose children listen on addrs, and returns its address. What it starts,
// its clients and then its server, joins the mesh's started list, which
// stops it, also when this fails half way (see startMesh).
func (m *mesh) startNative(o Options, i int, kind string, n *node, addrs []string, policies []retry.PolicyConfig, hook func(inbound.Storm)) (string, error) {
	gn := m.g.nodes[i]
	service := serviceName(gn.name)
	ecfg, eopts, blind, err := o.policy(gn, policies, hook, m.scope(i))
	if err != nil {
		return "", fmt.Errorf("%s: %w", service, err)
	}
	rec := &retryRecorder{log: m.log, tracer: m.tracer, sent: m.retries} // the native recorders name their edges
	clients := func(mw *errown.Middleware) error {
		for _, c := range gn.calls {
			child := serviceName(m.g.nodes[c.child].name)
			cl, stop, err := nativeClient(o, o.nodeKind(c.child), service, child, addrs[c.child], &clientMiddleware{errown: mw, blind: blind, rec: rec, edge: c.edge})
			if err != nil {
				return err
			}
			m.started = append(m.started, stop)
			n.inst[0].calls = append(n.inst[0].calls, nodeCall{client: cl, times: c.times, soft: c.soft})
		}
		return nil
	}
	cr := &claimRecorder{n: n, inflight: &m.inflight}
	cfg := testmesh.Config{Name: service, Errown: ecfg, ErrownOptions: eopts}
	switch kind {
	case TransportGRPCGo:
		cfg.Kind = testmesh.GRPCGo
		cfg.Interceptors = []grpc.UnaryServerInterceptor{grpcClaims(cr)}
		cfg.GRPCOptions = []grpc.ServerOption{grpc.ForceServerCodec(rawCodec{})}
		cfg.RegisterGRPC = func(srv *grpc.Server, mw *errown.Middleware) error {
			if err := clients(mw); err != nil {
				return err
			}
			registerGRPC(srv, n)
			return nil
		}
	default:
		cfg.Kind = testmesh.NetHTTP
		cfg.HandlerOptions = []nethttp.HandlerOption{nethttp.WithProcedure(func(*http.Request) string { return _procedure })}
		cfg.OuterHandler = func(app http.Handler) http.Handler { return httpClaims(cr, app) }
		cfg.Handler = func(mw *errown.Middleware) (http.Handler, error) {
			if err := clients(mw); err != nil {
				return nil, err
			}
			return httpApp(n), nil
		}
	}
	node, err := testmesh.Start(cfg)
	if err != nil {
		return "", fmt.Errorf("%s: %w", service, err)
	}
	m.started = append(m.started, node)
	m.errown[i] = node.Middleware()
	o.Logger.Debug("node started", zap.String("node", n.name), zap.String("service", service), zap.String("kind", kind), zap.String("addr", node.Addr()))
	return node.Addr(), nil
}

// nativeClient returns a grpc-go or net/http client, for the wire of a
// node of kind, with which from calls the node to listening on addr, and
// what to stop it with. With mws nil (the simulator's own client) it runs
// no middleware.
func nativeClient(o Options, kind, from, to, addr string, mws *clientMiddleware) (caller, stopper, error) {
	switch wireKind(kind) {
	case TransportGRPC:
		opts := []grpc.DialOption{
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})),
		}
		if mws != nil {
			switch {
			case mws.errown != nil:
				opts = append(opts, grpcgo.DialOptions(mws.errown, grpcgo.WithService(to))...)
			case mws.blind != nil:
				opts = append(opts, grpc.WithChainUnaryInterceptor(grpcBlind(mws.blind, from, to)), grpc.WithDisableRetry())
			}
			opts = append(opts, grpc.WithChainUnaryInterceptor(grpcRecorder(mws.rec, mws.edge)))
		}
		cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("grpc-go client to %s: %w", to, err)
		}
		return &grpcCaller{cc: cc, from: from, to: to}, funcStopper(cc.Close), nil
	case TransportHTTP:
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.MaxIdleConnsPerHost = o.idleConns()
		var rt http.RoundTripper = base
		if mws != nil {
			rt = &httpRecorder{rec: mws.rec, edge: mws.edge, base: base}
			switch {
			case mws.errown != nil:
				rt = nethttp.Transport(mws.errown, rt)
			case mws.blind != nil:
				rt = &httpBlind{mw: mws.blind, service: to, base: rt}
			}
		}
		c := &httpCaller{client: &http.Client{Transport: rt}, url: "http://" + addr + "/", from: from, to: to}
		return c, funcStopper(func() error { base.CloseIdleConnections(); return nil }), nil
	default:
		return nil, nil, fmt.Errorf("transport: a grpc-go or net/http node cannot call a %s node", kind)
	}
}

type funcStopper func() error

func (f funcStopper) Stop() error { return f() }

// rawCodec is grpc-go's codec for the lab's raw bodies: messages are
// *[]byte.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch b := v.(type) {
	case *[]byte:
		return *b, nil
	case []byte:
		return b, nil
	}
	return nil, fmt.Errorf("stormsim: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("stormsim: cannot unmarshal into %T", v)
	}
	*b = bytes.Clone(data)
	return nil
}

func (rawCodec) Name() string { return "raw" }

// grpcClaims is the claim recorder as n's outermost grpc-go server
// interceptor, outside errown's.
func grpcClaims(cr *claimRecorder) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, v := cr.begin(ctx)
		defer cr.inflight.Add(-1)
		var attempt string
		if vs := metadata.ValueFromIncomingContext(ctx, _attemptHeader); len(vs) == 1 {
			attempt = vs[0]
		}
		ctx = withAttempt(ctx, attempt)
		ts := &trailerCapture{ServerTransportStream: grpc.ServerTransportStreamFromContext(ctx)}
		res, err := handler(grpc.NewContextWithServerTransportStream(ctx, ts), req)
		cr.end(v, err != nil, ts.claim)
		return res, err
	}
}

// registerGRPC registers n.handle on srv as _grpcMethod.
func registerGRPC(srv *grpc.Server, n *node) {
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: strings.Split(_grpcMethod, "/")[1],
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: _procedure,
			Handler: func(_ any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
				var body []byte
				if err := dec(&body); err != nil {
					return nil, err
				}
				h := func(ctx context.Context, req any) (any, error) {
					out, err := n.handle(ctx, *req.(*[]byte))
					if err != nil {
						return nil, grpcError(err)
					}
					return &out, nil
				}
				if interceptor == nil {
					return h(ctx, &body)
				}
				return interceptor(ctx, &body, &grpc.UnaryServerInfo{FullMethod: _grpcMethod}, h)
			},
		}},
	}, struct{}{})
}

// trailerCapture notes the claim in the trailers a grpc-go handler sets.
type trailerCapture struct {
	grpc.ServerTransportStream
	claim string
}

// SetTrailer implements grpc.ServerTransportStream.
func (s *trailerCapture) SetTrailer(md metadata.MD) error {
	if vs := md.Get(defaults.ClaimHeader); len(vs) > 0 {
		s.claim = vs[0]
	}
	return s.ServerTransportStream.SetTrailer(md)
}

// grpcError returns a yarpc error as the gRPC status of the same code
// (yarpc's codes are gRPC's).
func grpcError(err error) error {
	ye := yarpcerrors.FromError(err)
	return status.Error(codes.Code(ye.Code()), ye.Message())
}

// yarpcError returns a grpc-go error as the yarpc error of its code, nil
// for nil.
func yarpcError(err error) error {
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	return yarpcerrors.Newf(yarpcerrors.Code(st.Code()), "%s", st.Message())
}

// grpcCaller calls a node through a grpc-go ClientConn, with the metadata
// a yarpc gRPC inbound requires.
type grpcCaller struct {
	cc       *grpc.ClientConn
	from, to string
}

// Call implements caller.
func (c *grpcCaller) Call(ctx context.Context, _ string, body []byte, _ ...yarpc.CallOption) ([]byte, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, "rpc-caller", c.from, "rpc-service", c.to, "rpc-encoding", "raw")
	var out []byte
	if err := c.cc.Invoke(ctx, _grpcMethod, &body, &out); err != nil {
		return nil, yarpcError(err)
	}
	return out, nil
}

// grpcRecorder is the retry recorder as the innermost grpc-go client
// interceptor of a node's ClientConn to the child over edge.
func grpcRecorder(r *retryRecorder, edge int) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var v string // the last value the interceptors above set
		if md, ok := metadata.FromOutgoingContext(ctx); ok {
			if vs := md.Get(_attemptHeader); len(vs) > 0 {
				v = vs[len(vs)-1]
			}
		}
		trace := r.attempt(ctx, edge, attemptNumber(v))
		var trailer metadata.MD
		err := invoker(ctx, method, req, reply, cc, append(opts[:len(opts):len(opts)], grpc.Trailer(&trailer))...)
		trace(&transport.Response{Headers: mdHeaders(trailer)}, yarpcError(err))
		return err
	}
}

// mdHeaders returns the single-valued keys of md as yarpc headers.
func mdHeaders(md metadata.MD) transport.Headers {
	h := transport.NewHeadersWithCapacity(len(md))
	for k, vs := range md {
		if len(vs) == 1 {
			h = h.With(k, vs[0])
		}
	}
	return h
}

// grpcBlind runs a yarpc outbound middleware, the blind retry library,
// around each call of a ClientConn: each attempt calls the invoker again,
// with the request's headers (the attempt number) as outgoing metadata.
// The error returned is the last attempt's, as grpc-go returned it.
func grpcBlind(mw middleware.UnaryOutbound, from, to string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		a := &grpcAttempt{method: method, req: req, reply: reply, cc: cc, invoker: invoker, opts: opts}
		treq := &transport.Request{Caller: from, Service: to, Procedure: _procedure, Transport: TransportGRPC, Encoding: "raw"}
		_, err := mw.Call(ctx, treq, a)
		if a.called {
			return a.err
		}
		return grpcError(err)
	}
}

// grpcAttempt is one logical call as a transport.UnaryOutbound: each
// Call is one attempt.
type grpcAttempt struct {
	method     string
	req, reply any
	cc         *grpc.ClientConn
	invoker    grpc.UnaryInvoker
	opts       []grpc.CallOption
	called     bool
	err        error
}

var _ transport.UnaryOutbound = (*grpcAttempt)(nil)

// Call implements transport.UnaryOutbound.
func (a *grpcAttempt) Call(ctx context.Context, treq *transport.Request) (*transport.Response, error) {
	a.called = true
	if treq.Headers.Len() > 0 {
		md, ok := metadata.FromOutgoingContext(ctx) // a copy
		if !ok {
			md = make(metadata.MD, treq.Headers.Len())
		}
		for k, v := range treq.Headers.Items() {
			md[k] = []string{v}
		}
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	var trailer metadata.MD
	a.err = a.invoker(ctx, a.method, a.req, a.reply, a.cc, append(a.opts[:len(a.opts):len(a.opts)], grpc.Trailer(&trailer))...)
	return &transport.Response{Headers: mdHeaders(trailer)}, yarpcError(a.err)
}

func (a *grpcAttempt) Start() error                      { return nil }
func (a *grpcAttempt) Stop() error                       { return nil }
func (a *grpcAttempt) IsRunning() bool                   { return true }
func (a *grpcAttempt) Transports() []transport.Transport { return nil }

// httpApp returns n's net/http handler, inside errown's: n.handle.
func httpApp(n *node) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			var out []byte
			if out, err = n.handle(r.Context(), body); err == nil {
				w.Header().Set("Content-Type", "application/octet-stream")
				_, _ = w.Write(out) // the caller is gone
				return
			}
		}
		ye := yarpcerrors.FromError(err)
		w.Header().Set(_errorCodeHeader, ye.Code().String())
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(nethttp.Status(ye.Code()))
		_, _ = io.WriteString(w, ye.Message())
	})
}

// httpClaims is the claim recorder as the outermost handler around app
// (errown's), which also bounds the request's context by Context-TTL-MS,
// as yarpc's HTTP inbound does.
func httpClaims(cr *claimRecorder, app http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, v := cr.begin(r.Context())
		defer cr.inflight.Add(-1)
		if ms, err := strconv.ParseInt(r.Header.Get(_ttlHeader), 10, 64); err == nil && ms >= 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
			defer cancel()
		}
		ctx = withAttempt(ctx, r.Header.Get(_httpHeaderPrefix+_attemptHeader))
		sw := &statusCapture{ResponseWriter: w}
		app.ServeHTTP(sw, r.WithContext(ctx))
		cr.end(v, sw.status >= http.StatusBadRequest, sw.claim)
	})
}

// statusCapture notes the status and the claim of the response it writes.
type statusCapture struct {
	http.ResponseWriter
	status int
	claim  string
}

// WriteHeader implements http.ResponseWriter.
func (w *statusCapture) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.claim = w.Header().Get(_httpHeaderPrefix + defaults.ClaimHeader)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *statusCapture) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusCapture) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// transportError is the yarpc error of a request that got no response.
func transportError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return yarpcerrors.Newf(yarpcerrors.CodeDeadlineExceeded, "%v", err)
	case errors.Is(err, context.Canceled):
		return yarpcerrors.Newf(yarpcerrors.CodeCancelled, "%v", err)
	}
	return yarpcerrors.Newf(yarpcerrors.CodeUnknown, "%v", err)
}

// rpcHeaders returns the application headers of an HTTP response, as
// yarpc's HTTP transport sends them.
func rpcHeaders(h http.Header) transport.Headers {
	out := transport.NewHeaders()
	for k, vs := range h {
		if len(vs) > 0 && len(k) > len(_httpHeaderPrefix) && strings.EqualFold(k[:len(_httpHeaderPrefix)], _httpHeaderPrefix) {
			out = out.With(strings.ToLower(k[len(_httpHeaderPrefix):]), vs[0])
		}
	}
	return out
}

// httpCaller calls a node through an http.Client, with the headers a
// yarpc HTTP inbound requires.
type httpCaller struct {
	client   *http.Client
	url      string
	from, to string
}

// Call implements caller.
func (c *httpCaller) Call(ctx context.Context, procedure string, body []byte, _ ...yarpc.CallOption) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, yarpcerrors.Newf(yarpcerrors.CodeInternal, "%v", err)
	}
	h := req.Header
	h.Set("Rpc-Caller", c.from)
	h.Set("Rpc-Service", c.to)
	h.Set("Rpc-Procedure", procedure)
	h.Set("Rpc-Encoding", "raw")
	h.Set("Rpc-Accepts-Both-Response-Error", "true")
	h.Set("Content-Type", "application/octet-stream")
	setTTL(ctx, h)
	res, err := c.client.Do(req)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer func() { _ = res.Body.Close() }()
	out, err := io.ReadAll(res.Body)
	switch {
	case res.StatusCode >= http.StatusBadRequest:
		return nil, nethttp.StatusError(res.StatusCode, res.Header)
	case err != nil:
		return nil, transportError(ctx, err)
	}
	return out, nil
}

// setTTL sets the time left of ctx's deadline on h.
func setTTL(ctx context.Context, h http.Header) {
	if deadline, ok := ctx.Deadline(); ok {
		h.Set(_ttlHeader, strconv.FormatInt(max(time.Until(deadline).Milliseconds(), 0), 10))
	}
}

// httpRecorder is the retry recorder as the innermost RoundTripper of a
// node's client for the child over edge.
type httpRecorder struct {
	rec  *retryRecorder
	edge int
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *httpRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	trace := t.rec.attempt(r.Context(), t.edge, attemptNumber(r.Header.Get(_httpHeaderPrefix+_attemptHeader)))
	res, err := t.base.RoundTrip(r)
	switch {
	case err != nil:
		trace(nil, transportError(r.Context(), err))
	case res.StatusCode >= http.StatusBadRequest:
		trace(&transport.Response{Headers: rpcHeaders(res.Header)}, nethttp.StatusError(res.StatusCode, res.Header))
	default:
		trace(nil, nil)
	}
	return res, err
}

// httpBlind runs a yarpc outbound middleware, the blind retry library,
// around each request of an http.Client: each attempt is a copy of the
// request, its body from GetBody, with the request's headers (the
// attempt number) as Rpc-Header-*. The response returned is the last
// attempt's.
type httpBlind struct {
	mw      middleware.UnaryOutbound
	service string
	base    http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *httpBlind) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		defer func() { _ = r.Body.Close() }() // each attempt sends its own copy
	}
	a := &httpAttempt{base: t.base, orig: r}
	treq := &transport.Request{Caller: r.Header.Get("Rpc-Caller"), Service: t.service, Procedure: _procedure, Transport: TransportHTTP, Encoding: "raw"}
	_, err := t.mw.Call(r.Context(), treq, a)
	if a.called {
		return a.last, a.lastErr
	}
	return nil, err
}

// httpAttempt is one request as a transport.UnaryOutbound: each Call is
// one attempt. It keeps the last attempt's response, its body read.
type httpAttempt struct {
	base    http.RoundTripper
	orig    *http.Request
	called  bool
	last    *http.Response
	lastErr error
}

var _ transport.UnaryOutbound = (*httpAttempt)(nil)

// Call implements transport.UnaryOutbound.
func (a *httpAttempt) Call(ctx context.Context, treq *transport.Request) (*transport.Response, error) {
	a.called = true
	a.last, a.lastErr = nil, nil
	hreq := a.orig.Clone(ctx)
	if a.orig.GetBody != nil {
		body, err := a.orig.GetBody()
		if err != nil {
			a.lastErr = err
			return nil, yarpcerrors.Newf(yarpcerrors.CodeInternal, "%v", err)
		}
		hreq.Body = body
	}
	for k, v := range treq.Headers.Items() {
		hreq.Header.Set(_httpHeaderPrefix+k, v)
	}
	setTTL(ctx, hreq.Header)
	res, err := a.base.RoundTrip(hreq)
	if err != nil {
		a.lastErr = err
		return nil, transportError(ctx, err)
	}
	// The body is read now: the attempt's context (attemptTimer's) ends
	// when Call returns.
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		a.lastErr = err
		return nil, transportError(ctx, err)
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	a.last = res
	tres := &transport.Response{Headers: rpcHeaders(res.Header)}
	if res.StatusCode >= http.StatusBadRequest {
		return tres, nethttp.StatusError(res.StatusCode, res.Header)
	}
	return tres, nil
}

func (a *httpAttempt) Start() error                      { return nil }
func (a *httpAttempt) Stop() error                       { return nil }
func (a *httpAttempt) IsRunning() bool                   { return true }
func (a *httpAttempt) Transports() []transport.Transport { return nil }
