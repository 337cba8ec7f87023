package ingress

import (
	"github.com/errown/errown/internal/reqlog"
	"go.uber.org/yarpc/api/transport"
)

// writer is the ResponseWriter a handler writes to under errown. It keeps
// what the encoding says of an application error, and drops errown's own
// response headers the handler sets or forwards from its callee.
type writer struct {
	transport.ResponseWriter
	m *Middleware

	appError bool
	appMeta  *transport.ApplicationErrorMeta
	size     int
}

var (
	_ transport.ExtendedResponseWriter     = (*writer)(nil)
	_ transport.ApplicationErrorMetaSetter = (*writer)(nil)
)

// tracked is what a tracked request holds, in one allocation: the context
// node that carries its Log, and the writer its handler writes to.
type tracked struct {
	reqlog.Node
	w writer
}

// AddHeaders passes h on without errown's own headers.
func (w *writer) AddHeaders(h transport.Headers) {
	w.ResponseWriter.AddHeaders(w.m.withoutOwnHeaders(h))
}

// SetApplicationError marks the response as an application error.
func (w *writer) SetApplicationError() {
	w.appError = true
	w.ResponseWriter.SetApplicationError()
}

// SetApplicationErrorMeta keeps meta, whose code classifies the
// application error, and passes it on when the transport takes it.
func (w *writer) SetApplicationErrorMeta(meta *transport.ApplicationErrorMeta) {
	if meta != nil {
		w.appMeta = meta
	}
	if s, ok := w.ResponseWriter.(transport.ApplicationErrorMetaSetter); ok {
		s.SetApplicationErrorMeta(meta)
	}
}

// IsApplicationError reports whether SetApplicationError was called.
func (w *writer) IsApplicationError() bool {
	return w.appError
}

// ApplicationErrorMeta returns what SetApplicationErrorMeta was given.
func (w *writer) ApplicationErrorMeta() *transport.ApplicationErrorMeta {
	return w.appMeta
}

// Write writes to the transport's writer.
func (w *writer) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.size += n
	return n, err
}

// ResponseSize returns the bytes written.
func (w *writer) ResponseSize() int {
	return w.size
}
