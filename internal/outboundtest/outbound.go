package outboundtest

import (
	"context"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/errown/errown/internal/adapt"
	"go.uber.org/yarpc/api/transport"
)

// A Step answers one call. Call records the request before it runs the
// step, so a step may read, consume or change req.
type Step func(ctx context.Context, req *transport.Request) (*transport.Response, error)

// Request is what an Outbound saw of one call, copied when it was called.
type Request struct {
	// Req is the request as handed over. Its fields may have been reused
	// since: read the copies below, and use Req only for identity.
	Req *transport.Request
	// Ctx is the call's context.
	Ctx context.Context
	// Shallow is a copy of *Req taken on arrival, before its body was read:
	// its Body is the reader handed over, its Headers share the request's
	// store.
	Shallow transport.Request

	Caller, Service, Procedure, ShardKey, RoutingKey, RoutingDelegate string
	// Headers and OriginalHeaders are copies of the request's Items and
	// OriginalItems.
	Headers, OriginalHeaders map[string]string
	// Body is the request body read in full, when HasBody.
	Body     string
	HasBody  bool
	BodySize int
	// Deadline is the context's deadline, when HasDeadline; Timeout the
	// time left on arrival.
	Deadline    time.Time
	HasDeadline bool
	Timeout     time.Duration
}

// Outbound is a transport.UnaryOutbound that answers call i with step i
// of its script, the last step repeating once the script ran out (an
// empty script answers every call with an empty response). It records
// every request and the body of every response it returned.
type Outbound struct {
	adapt.NoLifecycle

	script []Step

	mu     sync.Mutex
	reqs   []Request
	bodies []io.ReadCloser
	wait   []waiter
}

type waiter struct {
	n  int
	ch chan struct{}
}

var _ transport.UnaryOutbound = (*Outbound)(nil)

// New returns an Outbound answering from script.
func New(script ...Step) *Outbound {
	return &Outbound{script: script}
}

// Call records req and answers with this call's step. It reads the
// request's body to its end first, as a transport sends it: the step and
// the middleware that handed it over find it consumed.
func (o *Outbound) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	r := record(ctx, req)
	o.mu.Lock()
	i := len(o.reqs)
	o.reqs = append(o.reqs, r)
	o.wait = release(o.wait, len(o.reqs))
	o.mu.Unlock()

	step := emptyResponse
	if len(o.script) > 0 {
		step = o.script[min(i, len(o.script)-1)]
	}
	res, err := step(ctx, req)
	var body io.ReadCloser
	if res != nil {
		body = res.Body
	}
	o.mu.Lock()
	o.bodies = append(o.bodies, body)
	o.mu.Unlock()
	return res, err
}

func record(ctx context.Context, req *transport.Request) Request {
	r := Request{
		Req:             req,
		Ctx:             ctx,
		Shallow:         *req,
		Caller:          req.Caller,
		Service:         req.Service,
		Procedure:       req.Procedure,
		ShardKey:        req.ShardKey,
		RoutingKey:      req.RoutingKey,
		RoutingDelegate: req.RoutingDelegate,
		Headers:         maps.Clone(req.Headers.Items()),
		OriginalHeaders: maps.Clone(req.Headers.OriginalItems()),
		BodySize:        req.BodySize,
	}
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		r.Body, r.HasBody = string(b), true
	}
	if d, ok := ctx.Deadline(); ok {
		r.Deadline, r.HasDeadline, r.Timeout = d, true, time.Until(d)
	}
	return r
}

// release closes the channels of the waiters whose count of calls has
// arrived and returns the others.
func release(ws []waiter, calls int) []waiter {
	kept := ws[:0]
	for _, w := range ws {
		if calls >= w.n {
			close(w.ch)
			continue
		}
		kept = append(kept, w)
	}
	return kept
}

// Requests returns the requests received so far, in arrival order.
func (o *Outbound) Requests() []Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Request(nil), o.reqs...)
}

// Calls returns the number of calls received so far.
func (o *Outbound) Calls() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.reqs)
}

// Header returns the value of header k in each request received so far,
// "-" for a request without it.
func (o *Outbound) Header(k string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	vs := make([]string, len(o.reqs))
	for i, r := range o.reqs {
		v, ok := r.Headers[k]
		if !ok {
			v = "-"
		}
		vs[i] = v
	}
	return vs
}

// ResponseBodies returns the response bodies of the calls returned so far,
// in return order (nil for a call answered without a response).
func (o *Outbound) ResponseBodies() []io.ReadCloser {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]io.ReadCloser(nil), o.bodies...)
}

// Arrived returns a channel closed once n calls have arrived (closed
// already if they have).
func (o *Outbound) Arrived(n int) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch := make(chan struct{})
	if len(o.reqs) >= n {
		close(ch)
		return ch
	}
	o.wait = append(o.wait, waiter{n: n, ch: ch})
	return ch
}
