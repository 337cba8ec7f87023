package errowntest

import (
	"context"
	"testing"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// RequestOption configures NewRequestContext.
type RequestOption interface {
	applyRequest(*Request)
}

type requestOptionFunc func(*Request)

func (f requestOptionFunc) applyRequest(r *Request) { f(r) }

// WithEdgeKind says what errown knows of the edge from the request's
// procedure to service: KindFailClose, KindFailOpen or KindUnknown, the
// default, which counts as correlated, as errown's default
// (inbound.UnknownCorrelated) has it.
func WithEdgeKind(service string, kind ownership.EdgeKind) RequestOption {
	return requestOptionFunc(func(r *Request) { r.kinds[service] = kind })
}

// Request is one request errown tracks, without a mesh: the context
// NewRequestContext returns carries it, so that inbound.DoNotRetry,
// inbound.CallerFault, outbound.Claim and outbound.Record work in a
// handler given that context as they do when errown's inbound middleware
// serves the request. End reads back what the handler recorded.
type Request struct {
	log   *reqlog.Log
	kinds map[string]ownership.EdgeKind

	ended    bool
	failures []calls.Entry
	counts   calls.Counts
}

// NewRequestContext returns a context for a handler of procedure, tracked
// as errown's inbound middleware tracks a request it serves, and the
// Request that reads it back. The request is open until End; t's Cleanup
// frees it.
//
//	ctx, req := errowntest.NewRequestContext(t, "orders::create")
//	err := handler.Create(ctx, order)
//	got := req.End(err) // got.Claim, got.NoRetry, got.Failures...
func NewRequestContext(t testing.TB, procedure string, opts ...RequestOption) (context.Context, *Request) {
	t.Helper()
	// One request in flight: a map of its own, so that requests of
	// parallel tests share nothing.
	logs, err := reqlog.NewMap(reqlog.Config{Shards: 1, MaxInFlight: 1})
	if err != nil {
		t.Errorf("errowntest: ingress log: %v", err)
		t.FailNow()
	}
	ctx, log := logs.OpenContext(context.Background(), procedure)
	if log == nil { // not with a fresh map of room for one
		t.Errorf("errowntest: no room for the request in its ingress log")
		t.FailNow()
	}
	r := &Request{log: log, kinds: make(map[string]ownership.EdgeKind)}
	for _, o := range opts {
		o.applyRequest(r)
	}
	t.Cleanup(func() {
		r.close()
		log.Egress.Release()
		logs.Remove(log)
	})
	return ctx, r
}

// Called records that the request's handler called service's procedure
// and got err back (nil: a success), with the callee's claim on it, as
// errown's egress middleware records a call after its attempts: one
// attempt, no retry. It stands in for the outbound call a handler makes
// through a fake client, so that outbound.Claim sees it and End counts
// it. It reports false once the request has ended.
func (r *Request) Called(service, procedure string, err error, claim ownership.Claim) bool {
	e := calls.Entry{
		Edge:     ownership.Edge{CallerProcedure: r.log.Procedure, Service: service, Procedure: procedure},
		Attempts: 1,
		Claim:    claim,
	}
	e.Code, e.Class = wire.Result(err, false, nil)
	if e.Class != wire.ClassOK {
		e.RCS = wire.RetryCriteriaSatisfied(wire.CallOutcome{Attempts: 1, Callee: claim, Code: e.Code})
	}
	return r.log.Egress.Append(e)
}

// Outcome is what errown's inbound middleware would make of a request
// whose handler returned an error, from what the handler recorded.
type Outcome struct {
	// Claim is the claim errown would put on the error response:
	// ClaimMissing when the handler succeeded (no header).
	Claim ownership.Claim
	// NoRetry reports whether the error response would ask the caller
	// not to retry (the handler called inbound.DoNotRetry, and failed).
	NoRetry bool
	// CallerFault reports whether the handler called inbound.CallerFault:
	// its error counts as an answer, not as this service's failure.
	CallerFault bool
	// Failures are the failed calls errown kept (outbound.Record, Called),
	// in their order; errown keeps only counts of the others.
	Failures []FailedCall
	// Calls counts every call recorded, failed or not.
	Calls int
}

// FailedCall is one failed outbound call errown recorded for a request:
// what its claim decision reads.
type FailedCall struct {
	Edge ownership.Edge
	// Code is the call's final code.
	Code yarpcerrors.Code
	// Claim is the callee's claim on the final error response.
	Claim ownership.Claim
	// Attempts made, the first one included.
	Attempts int
	// RCS reports whether the retry criteria were satisfied for the call:
	// when true, nobody above retries the request for it.
	RCS bool
}

func failedCalls(es []calls.Entry) []FailedCall {
	out := make([]FailedCall, len(es))
	for i, e := range es {
		out[i] = FailedCall{Edge: e.Edge, Code: e.Code, Claim: e.Claim, Attempts: e.Attempts, RCS: e.RCS}
	}
	return out
}

// End ends the request with the error its handler returned and says what
// errown would make of it. Calls recorded after End are refused, as
// they are once errown's inbound middleware has answered. End may be
// called again, with another error, on the same calls.
func (r *Request) End(err error) Outcome {
	r.close()
	_, class := wire.Result(err, false, nil)
	callerFault := r.log.CallerFault()
	o := Outcome{
		CallerFault: callerFault,
		Failures:    failedCalls(r.failures),
		Calls:       r.counts.Total(),
	}
	if class == wire.ClassOK {
		return o
	}
	// As inbound's decision: every failure kept with its edge's kind,
	// and a failure past the log's bound nobody retried as correlated.
	failures := make([]ingress.Failure, 0, len(r.failures)+1)
	for _, e := range r.failures {
		failures = append(failures, ingress.Failure{Kind: r.kinds[e.Edge.Service], RCS: e.RCS})
	}
	if r.counts.OverflowUnsatisfied > 0 {
		failures = append(failures, ingress.Failure{Kind: ownership.KindFailClose})
	}
	o.Claim = ingress.Decide(failures, true)
	o.NoRetry = r.log.NoRetry()
	return o
}

// close closes the request's egress log once, keeping what it held.
func (r *Request) close() {
	if r.ended {
		return
	}
	r.ended = true
	all, counts := r.log.Egress.CloseCounts(nil)
	for _, e := range all {
		if e.Failed() {
			r.failures = append(r.failures, e)
		}
	}
	r.counts = counts
}
