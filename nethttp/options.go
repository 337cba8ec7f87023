package nethttp

import (
	"fmt"
	"net/http"
)

// _defaultMaxBufferBytes is how much of a response Handler holds back by
// default while errown decides its claim: 1 MiB, as much as errown's retry
// middleware keeps of request bodies for replay.
const _defaultMaxBufferBytes = 1 << 20

// HandlerOption configures Handler.
type HandlerOption interface {
	applyHandler(*handlerOptions)
}

// TransportOption configures Transport.
type TransportOption interface {
	applyTransport(*transportOptions)
}

type handlerOptions struct {
	procedure func(*http.Request) string
	maxBuffer int
}

type transportOptions struct {
	service   func(*http.Request) string
	procedure func(*http.Request) string
}

// ProcedureOption names the procedure of a request. It is both a
// HandlerOption and a TransportOption.
type ProcedureOption struct {
	f func(*http.Request) string
}

var (
	_ HandlerOption   = ProcedureOption{}
	_ TransportOption = ProcedureOption{}
)

// WithProcedure names the procedure of each request with f. Under Handler
// it is this service's procedure: the caller procedure of the edges errown
// learns, and the procedure tag of the root storm metrics. Under Transport
// it is the callee's procedure: the one a retry policy's procedure
// matches, and part of the edge. f must be safe for concurrent use, must
// not read the request body, and should return few distinct values, such
// as route templates ("GET /items/{id}"), never raw paths with IDs: see
// the package documentation on cardinality.
//
// Default for Handler: the pattern of the http.ServeMux Handler wraps,
// when it wraps one and the request matches; else the method and path, as
// in "GET /items/42". Default for Transport: the request's Rpc-Procedure
// header (a call to a yarpc service) when set; else the method and path.
func WithProcedure(f func(*http.Request) string) ProcedureOption {
	return ProcedureOption{f: f}
}

func (o ProcedureOption) applyHandler(h *handlerOptions) {
	if o.f != nil {
		h.procedure = o.f
	}
}

func (o ProcedureOption) applyTransport(t *transportOptions) {
	if o.f != nil {
		t.procedure = o.f
	}
}

type serviceOption struct {
	f func(*http.Request) string
}

// WithService names the callee service of each request Transport sends
// with f: the name errown's retry policies, budgets and edges know the
// callee by (a policy's service must equal it exactly). f must be safe
// for concurrent use and should return few distinct values. Default: the
// request's Rpc-Service header (a call to a yarpc service) when set; else
// its host as written in the request, port included ("payments:8080").
func WithService(f func(*http.Request) string) TransportOption {
	return serviceOption{f: f}
}

func (o serviceOption) applyTransport(t *transportOptions) {
	if o.f != nil {
		t.service = o.f
	}
}

type maxBufferOption int

// WithMaxBufferBytes bounds the response Handler holds back while errown
// decides its claim to n bytes of body. A handler that writes more, or
// flushes, sends its response at once, without errown's headers: see the
// package documentation. n must be positive. Default 1 MiB (1 << 20), as
// much as errown's retry middleware keeps of request bodies for replay.
func WithMaxBufferBytes(n int) HandlerOption {
	if n <= 0 {
		panic(fmt.Sprintf("nethttp: WithMaxBufferBytes(%d): must be positive", n))
	}
	return maxBufferOption(n)
}

func (o maxBufferOption) applyHandler(h *handlerOptions) {
	h.maxBuffer = int(o)
}
