package nethttp

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/adapt"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
)

// Handler returns h served under mw's inbound middleware: each request is
// tracked as errown tracks a yarpc request, the calls h makes with the
// request's context through Transport(mw, ...) are logged against it, and
// when h answers with an error status (400 and up) errown claims or
// unclaims the error in the response's Rpc-Header-Errown-Claim header,
// with the storm telemetry beside it. The status counts as the yarpc code
// of the package documentation's table.
//
// Handler holds back h's response, up to WithMaxBufferBytes of body, until
// errown has decided: see the package documentation, "Buffering". A
// Context-TTL-MS header bounds the request's context.
//
// mw's Start and Stop are the caller's to call; one Middleware may serve a
// Handler, a Transport and a dispatcher at once.
func Handler(mw *errown.Middleware, h http.Handler, opts ...HandlerOption) http.Handler {
	if mw == nil || h == nil {
		panic("nethttp: Handler needs a Middleware and a handler")
	}
	o := handlerOptions{maxBuffer: _defaultMaxBufferBytes}
	for _, opt := range opts {
		opt.applyHandler(&o)
	}
	if o.procedure == nil {
		o.procedure = defaultProcedure(h)
	}
	in := adapt.PartsOf(mw).Inbound // mw.Inbound().Unary, counted as wiring
	return &handler{inbound: in, next: h, procedure: o.procedure, maxBuffer: o.maxBuffer}
}

// defaultProcedure names a request served by h: by the pattern it
// matches when h is an http.ServeMux, else by its method and path.
func defaultProcedure(h http.Handler) func(*http.Request) string {
	mux, _ := h.(*http.ServeMux)
	return func(r *http.Request) string {
		if mux != nil {
			if _, pattern := mux.Handler(r); pattern != "" {
				return pattern
			}
		}
		return methodPath(r)
	}
}

// methodPath is the procedure of a request nothing else names, on either
// side (Handler's and Transport's default): "GET /orders".
func methodPath(r *http.Request) string { return r.Method + " " + r.URL.Path }

type handler struct {
	inbound   middleware.UnaryInbound
	next      http.Handler
	procedure func(*http.Request) string
	maxBuffer int
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if ttl, ok := parseTTL(headerValue(r.Header, _ttlHeader)); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ttl)
		defer cancel()
	}
	rw := newWriter(w, r, h.next, h.maxBuffer)
	// errown reads the procedure, the transport and its attempt header.
	rw.treq = transport.Request{
		Procedure: h.procedure(r),
		Transport: _transportName,
		Headers:   toTransportHeaders(r.Header),
		Body:      r.Body,
		BodySize:  int(max(r.ContentLength, 0)),
	}
	// errown classifies the yarpc error of an error status; what goes out
	// is h's own response or, when errown's middleware answered without
	// running h (admission shed it), its error.
	if err := h.inbound.Handle(ctx, &rw.treq, &rw.rpc, rw); err != nil && !rw.ran {
		rw.fail(err)
	}
	// errown's middleware returned: send the response with errown's
	// headers, unless it went out already (flushed early, or hijacked).
	if !rw.committed {
		_ = rw.commit(true) // the client went away: nothing to do
	}
}

// headerValue returns the first value of header key, given in canonical
// form as net/http's server leaves request headers: no canonicalization.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseTTL reads a Context-TTL-MS value: a non-negative count of
// milliseconds. Anything else is ignored (yarpc rejects the request; a
// plain HTTP service has no reason to).
func parseTTL(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}
