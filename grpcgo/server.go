package grpcgo

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/adapt"
	"github.com/errown/errown/internal/wire"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/pkg/procedure"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// _callerKey is the metadata key yarpc's gRPC transport sends the
// caller's name in (go.uber.org/yarpc@v1.81.0/transport/grpc/headers.go).
const _callerKey = "rpc-caller"

// _transportName is what errown's middleware reads in Request.Transport:
// the name of yarpc's gRPC transport, whose wire this is.
const _transportName = "grpc"

// _pushbackKey is gRPC's server pushback trailer (gRFC A6): a value that
// is not a non-negative integer asks the client not to retry.
const _pushbackKey = "grpc-retry-pushback-ms"

// _noPushback is the pushback value the server interceptor sends with
// errown's no-retry header.
const _noPushback = "-1"

// UnaryServerInterceptor returns a grpc-go unary server interceptor that
// runs errown's inbound middleware, mw's, around each request, as a yarpc
// dispatcher would: the request is tracked, the outbound calls the
// handler makes with its context are logged against it, and errown claims
// or unclaims the error the handler returns.
//
// errown's response headers (claim, no-retry, storm, shed) go in the
// trailers, with grpc.SetTrailer, never in the headers, so that an error
// returned before any header stays a trailers-only response. A no-retry
// answer also carries grpc-retry-pushback-ms: -1, for callers' grpc-go
// retry policies. errown's own headers among the trailers the handler
// sets are dropped and counted (errown.inbound.replaced_headers).
//
// The request errown sees is what yarpc's gRPC inbound makes of the same
// wire: procedure "pkg.Service::Method", the rpc-caller metadata as its
// caller, and errown's attempt header when the metadata has it once. The
// error's code is what grpc-go sends for it. Streams need no interceptor.
func UnaryServerInterceptor(mw *errown.Middleware, opts ...Option) grpc.UnaryServerInterceptor {
	parts := adapt.PartsOf(mw)
	in := parts.Inbound
	o := newAdapterOptions(parts.Headers, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return serve(ctx, in, o, req, info.FullMethod, handler)
	}
}

func serve(ctx context.Context, in middleware.UnaryInbound, o options, req any, fullMethod string, handler grpc.UnaryHandler) (any, error) {
	treq := requestFromIncoming(ctx, fullMethod, o.attemptHeader)
	call := &serverCall{handler: handler, req: req, stream: grpc.ServerTransportStreamFromContext(ctx)}
	var trailer trailerWriter
	err := in.Handle(ctx, treq, &trailer, call)
	if md := trailer.take(); len(md) > 0 {
		if vs := md[o.noRetryHeader]; len(vs) == 1 && wire.ParseNoRetry(vs[0]) && len(md[_pushbackKey]) == 0 {
			md[_pushbackKey] = []string{_noPushback}
		}
		// Nothing to do about an error: there is no stream outside a
		// gRPC server, and a stream that already ended takes none.
		_ = grpc.SetTrailer(ctx, md)
	}
	if !call.called {
		return nil, grpcError(err) // errown's admission shed it: the handler never ran
	}
	return call.resp, call.err
}

// requestFromIncoming builds the transport.Request errown's inbound
// middleware reads: the procedure yarpc's gRPC inbound names the method
// by, the caller yarpc sends, and errown's attempt header (all errown
// reads of the headers), reading the metadata key by key, never copied.
func requestFromIncoming(ctx context.Context, fullMethod, attemptHeader string) *transport.Request {
	m := methodNames(fullMethod)
	req := &transport.Request{Service: m.service, Procedure: m.procedure, Transport: _transportName, Encoding: "proto"}
	if vs := metadata.ValueFromIncomingContext(ctx, _callerKey); len(vs) == 1 {
		req.Caller = vs[0]
	}
	// A key sent several times is one yarpc's gRPC inbound refuses;
	// errown reads it as absent.
	if vs := metadata.ValueFromIncomingContext(ctx, attemptHeader); len(vs) == 1 {
		req.Headers = transport.NewHeadersWithCapacity(1).With(attemptHeader, vs[0])
	}
	return req
}

// names are a method's gRPC service, "pkg.Service" in "/pkg.Service/Method",
// and the yarpc procedure yarpc's gRPC transport names it by,
// "pkg.Service::Method" (transport/grpc/handler.go, procedureFromStreamMethod).
type names struct{ service, procedure string }

// _methods caches names by full method, up to _maxMethods of them: a
// server's are its registered methods, a client's those it calls.
var (
	_methods     sync.Map // string → names
	_methodCount atomic.Int64
)

const _maxMethods = 1024

func methodNames(fullMethod string) names {
	if n, ok := _methods.Load(fullMethod); ok {
		return n.(names)
	}
	var n names
	n.service, n.procedure = splitMethod(fullMethod)
	if _methodCount.Load() < _maxMethods {
		if _, loaded := _methods.LoadOrStore(fullMethod, n); !loaded {
			_methodCount.Add(1)
		}
	}
	return n
}

// splitMethod returns a full method's names.
func splitMethod(fullMethod string) (service, proc string) {
	m := strings.TrimPrefix(fullMethod, "/")
	i := strings.LastIndex(m, "/")
	if i < 0 {
		return "", m
	}
	return m[:i], procedure.ToName(m[:i], m[i+1:])
}

// serverCall is the transport.UnaryHandler errown's inbound middleware
// calls: it runs the gRPC handler and keeps what it returned.
type serverCall struct {
	handler grpc.UnaryHandler
	req     any
	stream  grpc.ServerTransportStream // nil outside a gRPC server

	called bool
	resp   any
	err    error
}

// Handle implements transport.UnaryHandler: it calls the gRPC handler with
// ctx, which carries errown's request, and a stream whose trailers go
// through w, errown's writer. It returns the handler's error as a yarpc
// error of the same code, for errown to classify.
func (c *serverCall) Handle(ctx context.Context, _ *transport.Request, w transport.ResponseWriter) error {
	c.called = true
	var st *trailerStream
	if c.stream != nil {
		st = &trailerStream{ServerTransportStream: c.stream, w: w}
		ctx = grpc.NewContextWithServerTransportStream(ctx, st)
	}
	defer func() {
		if st != nil {
			st.close() // also when the handler panics: w is errown's, pooled
		}
	}()
	c.resp, c.err = c.handler(ctx, c.req)
	return yarpcError(c.err)
}

// trailerStream is the grpc.ServerTransportStream a handler sees: its
// trailers go through errown's writer, which drops errown's own headers,
// into the trailers the interceptor sends; headers go to the stream as is.
type trailerStream struct {
	grpc.ServerTransportStream

	mu     sync.Mutex
	w      transport.ResponseWriter // nil once closed
	closed bool
}

// SetTrailer passes md's trailers through errown's writer, keeping every
// value: the first of every key in one batch, further values one by one.
func (s *trailerStream) SetTrailer(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// The handler has returned; a goroutine it left behind sets
		// trailers as it would without errown.
		return s.ServerTransportStream.SetTrailer(md)
	}
	first := transport.NewHeadersWithCapacity(len(md))
	more := false
	for k, vs := range md {
		if len(vs) > 0 {
			first = first.With(k, vs[0])
			more = more || len(vs) > 1
		}
	}
	s.w.AddHeaders(first)
	if more {
		for k, vs := range md {
			for _, v := range vs[min(1, len(vs)):] {
				s.w.AddHeaders(transport.NewHeaders().With(k, v))
			}
		}
	}
	return nil
}

func (s *trailerStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed, s.w = true, nil
}

// trailerWriter is the transport.ResponseWriter errown's inbound
// middleware writes the response to: it collects headers as trailers.
// A gRPC handler writes no body through it.
type trailerWriter struct {
	mu sync.Mutex
	md metadata.MD
}

var _ transport.ResponseWriter = (*trailerWriter)(nil)

// AddHeaders appends h's values to the trailers (metadata.Join's way:
// a key set twice keeps both values).
func (w *trailerWriter) AddHeaders(h transport.Headers) {
	if h.Len() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.md == nil {
		w.md = make(metadata.MD, h.Len())
	}
	for k, v := range h.Items() {
		w.md[k] = append(w.md[k], v)
	}
}

// Write discards p: a gRPC handler returns its response message.
func (w *trailerWriter) Write(p []byte) (int, error) { return len(p), nil }

// SetApplicationError does nothing: gRPC has no application errors, and
// errown marks none on this transport.
func (w *trailerWriter) SetApplicationError() {}

// take returns the trailers collected so far.
func (w *trailerWriter) take() metadata.MD {
	w.mu.Lock()
	defer w.mu.Unlock()
	md := w.md
	w.md = nil
	return md
}
