package ingresslog

import (
	"context"
	"sync/atomic"

	"github.com/errown/errown/egresslog"
)

// ID identifies a request in flight. IDs are minted by the Map, in this
// process, and are never read from a request.
type ID uint64

// Log is the IngressLog of one inbound request.
type Log struct {
	// ID is the locally minted request ID.
	ID ID
	// Procedure is the inbound procedure being served.
	Procedure string
	// Egress holds the request's outbound calls.
	Egress egresslog.Log

	noRetry atomic.Bool
	slot    int // index in its shard's logs, under the shard's lock
}

// SetNoRetry asks that the error response to this request tell the caller
// not to retry it.
func (l *Log) SetNoRetry() {
	l.noRetry.Store(true)
}

// NoRetry reports whether SetNoRetry was called.
func (l *Log) NoRetry() bool {
	return l.noRetry.Load()
}

type logKey struct{}

// NewContext returns a child of ctx carrying l.
func NewContext(ctx context.Context, l *Log) context.Context {
	return context.WithValue(ctx, logKey{}, l)
}

// logContext is a context node carrying a Log (see Map.OpenContext). It
// answers Value for logKey and passes everything else to its parent.
type logContext struct {
	context.Context
	log Log
}

func (c *logContext) Value(key any) any {
	if _, ok := key.(logKey); ok {
		return &c.log
	}
	return c.Context.Value(key)
}

// FromContext returns the Log in ctx, or nil when ctx carries none: the
// call is not made on behalf of a tracked request (a context was dropped,
// or the request was served untracked).
func FromContext(ctx context.Context) *Log {
	l, _ := ctx.Value(logKey{}).(*Log)
	return l
}
