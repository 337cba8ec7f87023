package nethttp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// writer is the http.ResponseWriter a handler writes to under Handler. It
// holds back the status, headers and up to max bytes of body until errown
// has decided, or until the handler writes past max, flushes or hijacks
// (committed early, without errown's headers). It is also the yarpc
// UnaryHandler errown's inbound middleware runs.
type writer struct {
	w    http.ResponseWriter
	req  *http.Request
	next http.Handler
	max  int

	// The handler sets its headers in w's own map; snap is its copy taken
	// when the handler wrote its header (nil before), as net/http sends them.
	snap   http.Header
	status int // 0 until the handler writes its header
	buf    []byte

	committed bool // the response went to w
	hijacked  bool
	ran       bool // errown's middleware ran the handler

	// resw is errown's ResponseWriter while the handler runs, by which
	// an early commit drops errown's own headers the handler set.
	resw transport.ResponseWriter

	treq transport.Request // what errown's inbound middleware sees
	rpc  rpcWriter
}

var (
	_ http.ResponseWriter    = (*writer)(nil)
	_ http.Flusher           = (*writer)(nil)
	_ http.Hijacker          = (*writer)(nil)
	_ transport.UnaryHandler = (*writer)(nil)
)

func newWriter(w http.ResponseWriter, r *http.Request, next http.Handler, max int) *writer {
	rw := &writer{w: w, req: r, next: next, max: max}
	rw.rpc.w = rw
	return rw
}

// Handle implements transport.UnaryHandler: errown's inbound middleware
// calls it with the request's context and its own ResponseWriter, resw,
// which wraps rw.rpc.
func (rw *writer) Handle(ctx context.Context, _ *transport.Request, resw transport.ResponseWriter) error {
	rw.resw, rw.ran = resw, true
	defer func() { rw.resw = nil }()
	rw.next.ServeHTTP(rw, rw.req.WithContext(ctx))
	if rw.hijacked {
		return nil
	}
	if !rw.committed {
		rw.dropOwnHeaders(resw)
	}
	if status := rw.finalStatus(); isError(status) {
		return StatusError(status, nil)
	}
	return nil
}

// fail answers with err, an error errown's middleware returned without
// running the handler, as a yarpc service's HTTP inbound would: its
// code's status, Rpc-Error-Code and the message as the body.
func (rw *writer) fail(err error) {
	status := yarpcerrors.FromError(err)
	code, msg := status.Code(), status.Message()
	text, _ := code.MarshalText()
	h := rw.w.Header()
	h.Set(_errorCodeHeader, string(text))
	h.Set(_errorMessageHeader, msg)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	rw.status = Status(code)
	rw.buf = append(rw.buf[:0], msg+"\n"...)
}

// dropOwnHeaders removes errown's own application headers that the
// handler set or forwarded: resw, errown's ResponseWriter, drops (and
// counts) them from what it is given; what it lets through stays.
func (rw *writer) dropOwnHeaders(resw transport.ResponseWriter) {
	h := rw.sent()
	app := toTransportHeaders(h)
	if app.Len() == 0 {
		return
	}
	rw.rpc.filtering = true
	resw.AddHeaders(app)
	rw.rpc.filtering = false
	kept := rw.rpc.kept.Items()
	for k := range h {
		if hasPrefixFold(k, _applicationHeaderPrefix) {
			if _, ok := kept[transport.CanonicalizeHeaderKey(k[len(_applicationHeaderPrefix):])]; !ok {
				delete(h, k)
			}
		}
	}
	rw.rpc.kept = transport.Headers{}
}

// sent returns the headers the response goes out with: as they were when
// the handler wrote its header, or as they are if it has not.
func (rw *writer) sent() http.Header {
	if rw.snap != nil {
		return rw.snap
	}
	return rw.w.Header()
}

func (rw *writer) finalStatus() int {
	if rw.status == 0 {
		return http.StatusOK
	}
	return rw.status
}

// Header implements http.ResponseWriter.
func (rw *writer) Header() http.Header {
	return rw.w.Header()
}

// WriteHeader implements http.ResponseWriter. An informational status
// (1xx but 101) goes out at once, as net/http sends it; the final status
// is held back with the headers.
func (rw *writer) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // as net/http
	}
	if rw.hijacked || rw.status != 0 {
		return
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		rw.w.WriteHeader(code)
		return
	}
	rw.status = code
	rw.snap = rw.w.Header().Clone()
}

// Write implements http.ResponseWriter: it buffers p, or, past the bound,
// commits the response without errown's headers and writes p through.
func (rw *writer) Write(p []byte) (int, error) {
	if rw.hijacked {
		return 0, http.ErrHijacked
	}
	if rw.status == 0 {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.committed {
		return rw.w.Write(p)
	}
	if !bodyAllowed(rw.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if len(rw.buf)+len(p) <= rw.max {
		rw.buf = append(rw.buf, p...)
		return len(p), nil
	}
	if err := rw.commit(false); err != nil {
		return 0, err
	}
	return rw.w.Write(p)
}

// Flush implements http.Flusher: it commits the response as it stands,
// without errown's headers, and flushes it.
func (rw *writer) Flush() {
	_ = rw.FlushError()
}

// FlushError is Flush, reporting an error; http.ResponseController calls it.
func (rw *writer) FlushError() error {
	if rw.hijacked {
		return http.ErrHijacked
	}
	if !rw.committed {
		if err := rw.commit(false); err != nil {
			return err
		}
	}
	return http.NewResponseController(rw.w).Flush()
}

// Hijack implements http.Hijacker when the underlying ResponseWriter
// supports it (HTTP/1): what the handler wrote before is sent first.
func (rw *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if rw.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if !rw.committed && (rw.status != 0 || len(rw.buf) > 0) {
		if err := rw.commit(false); err != nil {
			return nil, nil, err
		}
	}
	conn, brw, err := http.NewResponseController(rw.w).Hijack()
	if err == nil {
		rw.hijacked, rw.committed = true, true
	}
	return conn, brw, err
}

// Unwrap returns the underlying ResponseWriter, for
// http.ResponseController's deadlines and full duplex.
func (rw *writer) Unwrap() http.ResponseWriter {
	return rw.w
}

// commit writes the held-back status, headers and body to w. final says
// errown has decided: its headers join the response.
func (rw *writer) commit(final bool) error {
	if !final && rw.resw != nil {
		// Early, without errown's claim: nor may the handler's copies of
		// errown's headers (a callee's claim it forwarded) go out.
		rw.dropOwnHeaders(rw.resw)
	}
	rw.committed = true
	status := rw.finalStatus()
	rw.status = status // what went out: a later WriteHeader changes nothing
	dst := rw.w.Header()
	var trailers http.Header
	if rw.snap != nil {
		// The headers go out as they were when the handler wrote its
		// header; trailers it set since stay for the end.
		trailers = trailerValues(dst, rw.snap["Trailer"])
		clear(dst)
		for k, v := range rw.snap {
			dst[k] = v
		}
	}
	defer func() {
		for k, v := range trailers {
			dst[k] = v
		}
	}()
	if final {
		for _, h := range rw.rpc.headers {
			setHTTPHeaders(dst, h)
		}
		if isError(status) && headerValue(rw.req.Header, _acceptsBothHeader) == _true {
			// A yarpc caller keeps an error response's headers, the claim
			// among them, only when the response says it carries both.
			dst.Set(_bothHeader, _true)
			if dst.Get(_errorCodeHeader) == "" {
				code, _ := codeFromStatus(status).MarshalText()
				dst.Set(_errorCodeHeader, string(code))
			}
			if dst.Get(_errorMessageHeader) == "" {
				dst.Set(_errorMessageHeader, http.StatusText(status))
			}
		}
		if len(rw.buf) > 0 && len(dst["Content-Length"]) == 0 && len(dst["Transfer-Encoding"]) == 0 && len(dst["Trailer"]) == 0 {
			dst["Content-Length"] = []string{strconv.Itoa(len(rw.buf))}
		}
	}
	rw.w.WriteHeader(status)
	if len(rw.buf) == 0 {
		return nil
	}
	_, err := rw.w.Write(rw.buf)
	rw.buf = nil
	return err
}

// trailerValues returns the trailers in h: the headers named with
// http.TrailerPrefix, and those declared in a Trailer header.
func trailerValues(h http.Header, declared []string) http.Header {
	var out http.Header
	for k, v := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) || declaredTrailer(declared, k) {
			if out == nil {
				out = make(http.Header)
			}
			out[k] = v
		}
	}
	return out
}

func declaredTrailer(declared []string, k string) bool {
	for _, d := range declared {
		for name := range strings.SplitSeq(d, ",") {
			if http.CanonicalHeaderKey(strings.TrimSpace(name)) == k {
				return true
			}
		}
	}
	return false
}

// bodyAllowed reports whether a response of status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// rpcWriter is the transport.ResponseWriter errown's inbound middleware
// writes to: it keeps errown's headers for the response, and, while
// filtering, what errown's ResponseWriter lets through of the handler's.
type rpcWriter struct {
	w         *writer
	headers   []transport.Headers // errown's, to send; read-only
	filtering bool
	kept      transport.Headers
}

var _ transport.ResponseWriter = (*rpcWriter)(nil)

// AddHeaders implements transport.ResponseWriter.
func (r *rpcWriter) AddHeaders(h transport.Headers) {
	switch {
	case r.filtering:
		r.kept = h
	case h.Len() > 0:
		r.headers = append(r.headers, h)
	}
}

// SetApplicationError implements transport.ResponseWriter. errown calls
// it only for TChannel.
func (r *rpcWriter) SetApplicationError() {}

// Write implements transport.ResponseWriter: errown writes no body, and
// anything that does writes to the HTTP response.
func (r *rpcWriter) Write(p []byte) (int, error) {
	return r.w.Write(p)
}
