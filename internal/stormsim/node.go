package stormsim

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/release"
	"github.com/errown/errown/internal/wire"

	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// _attemptHeader is the header by which the retry middleware, errown's or
// used alone, numbers attempts 2 and later (errown's default name).
const _attemptHeader = defaults.AttemptHeader

// node is one running service of a topology.
//
// The request body is the request's path from the root: the root
// request's ID, then for every hop the attempt number the callee saw and
// the index of the call, e.g. "17@1/0.0@2" for the second attempt of the
// root's first call in root request 17. It names every request a node
// serves uniquely, so a node's failure is a draw of a random source seeded
// by (seed, node, path): independent for every request and attempt, and
// the same in every run with the same seed, whatever the interleaving.
type node struct {
	name string
	fail float64
	code yarpcerrors.Code
	drop bool
	hang bool
	seed uint64
	// inst are the node's instances, at least one; series records what
	// the node's instances saw under open-loop load (nil otherwise).
	inst   []*instance
	series *nodeSeries
	counters
}

// instance is one running instance of a node: its own dispatcher, state
// and capacity; the node's counters count for all its instances.
type instance struct {
	n *node
	// faulty: the node's faults (fail, hang) hold for this instance.
	faulty bool
	// calls are the instance's clients for the node's children, through
	// its own dispatcher.
	calls []nodeCall
	// capacity is the instance's finite capacity, nil when unlimited;
	// failing is set by a fail trigger; down by a crash trigger, from the
	// crash's instant until its restart, while its dispatcher stops.
	capacity *capacityQueue
	failing  atomic.Bool
	down     atomic.Bool
}

// handle serves one request on the node's first instance: a node that
// runs one.
func (n *node) handle(ctx context.Context, body []byte) ([]byte, error) {
	return n.inst[0].handle(ctx, body)
}

// nodeCall is a node's client for one child.
type nodeCall struct {
	client caller
	times  int
	soft   bool
}

// caller calls a node: a raw.Client, or a grpc-go or net/http client
// (grpcCaller, httpCaller) returning yarpc errors.
type caller interface {
	Call(ctx context.Context, procedure string, body []byte, opts ...yarpc.CallOption) ([]byte, error)
}

// attemptOf returns the attempt number of the request being served: what
// a grpc-go or net/http node's server read (withAttempt), else the
// attempt header of the yarpc call, else 1.
func attemptOf(ctx context.Context) int {
	if a, ok := ctx.Value(attemptKey{}).(int); ok {
		return a
	}
	if call := yarpc.CallFromContext(ctx); call != nil {
		return attemptNumber(call.Header(_attemptHeader))
	}
	return 1
}

// attemptNumber reads an attempt header value: its number, 1 when it is
// absent or malformed.
func attemptNumber(v string) int {
	if a, ok := wire.ParseAttempt(v); ok {
		return a
	}
	return 1
}

type attemptKey struct{}

// withAttempt returns ctx telling handle the attempt number of its
// request, read by a grpc-go or net/http server from the header value v.
func withAttempt(ctx context.Context, v string) context.Context {
	return context.WithValue(ctx, attemptKey{}, attemptNumber(v))
}

// counters are what a node counts.
type counters struct {
	served       atomic.Int64 // requests the handler ran
	retried      atomic.Int64 // requests that arrived as attempt 2 or later
	errors       atomic.Int64 // error responses
	unclaimed    atomic.Int64 // error responses claimed "unclaimed"
	ownFailures  atomic.Int64 // requests the node's own work failed
	ownUnclaimed atomic.Int64 // own failures that went out unclaimed

	mu    sync.Mutex
	paths map[string]int64 // requests served, by call path (see callPath)
}

func (c *counters) reset() {
	for _, v := range []*atomic.Int64{&c.served, &c.retried, &c.errors, &c.unclaimed, &c.ownFailures, &c.ownUnclaimed} {
		v.Store(0)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.paths)
}

// servedOn counts a request served on call path key.
func (c *counters) servedOn(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paths == nil {
		c.paths = make(map[string]int64)
	}
	c.paths[key]++
}

// maxPerPath returns the most requests served on one call path.
func (c *counters) maxPerPath() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var most int64
	for _, n := range c.paths {
		most = max(most, n)
	}
	return most
}

// callPath returns the call path of a request body: its path from the
// root without the attempt numbers, e.g. "17/0.0" for "17@1/0.0@2". Every
// attempt of every logical call along one path of calls from one root
// request shares it: the requests a node serves on one call path are the
// attempts that reached it along that path.
func callPath(body string) string {
	var b strings.Builder
	b.Grow(len(body))
	skip := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '@':
			skip = true
		case c == '/':
			skip = false
			b.WriteByte(c)
		case !skip:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// handle serves one request on the instance: count it, call the
// children, then hang if the instance has the node's hang, fail if a
// trigger fails it or it has the node's failures and their draw says so (after the calls below,
// as in docs/DESIGN.md), else pass on the error of the first failed call on a
// hard edge, if any.
func (in *instance) handle(ctx context.Context, body []byte) ([]byte, error) {
	n := in.n
	if in.down.Load() {
		// Crashed: a request its dispatcher took while stopping reaches
		// no process, and is not counted as served.
		return nil, yarpcerrors.Newf(yarpcerrors.CodeUnavailable, "stormsim: %s is down", n.name)
	}
	n.served.Add(1)
	n.series.count(_arrived)
	if in.capacity != nil {
		if err := in.capacity.serve(ctx); err != nil {
			return nil, err
		}
	}
	attempt := attemptOf(ctx)
	if attempt > 1 {
		n.retried.Add(1)
	}
	key := callPath(string(body))
	n.servedOn(key)
	path := string(body) + "@" + strconv.Itoa(attempt)
	root := rootOf(path)
	cctx := ctx
	if n.drop {
		// A fresh context: the same deadline, none of ctx's values, so
		// that errown cannot tie the calls to this request.
		fresh, cancel := context.Background(), context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); ok {
			fresh, cancel = context.WithDeadline(fresh, deadline)
		}
		defer cancel()
		cctx = fresh
	}
	var hard error
	for i, c := range in.calls {
		for j := range c.times {
			call := "/" + strconv.Itoa(i) + "." + strconv.Itoa(j)
			_, err := c.client.Call(withCall(cctx, callRef{root: root, path: key + call}), _procedure, []byte(path+call))
			if err != nil && !c.soft && hard == nil {
				hard = err
			}
		}
	}
	if n.hang && in.faulty {
		// Never answer: wait for the caller to give up. The error goes
		// to nobody; it ends the handler.
		<-ctx.Done()
		return nil, yarpcerrors.Newf(yarpcerrors.CodeDeadlineExceeded, "stormsim: %s hangs", n.name)
	}
	if in.failing.Load() || in.faulty && n.fails(path) {
		n.ownFailures.Add(1)
		if v := visitFromContext(ctx); v != nil {
			v.own.Store(true)
		}
		return nil, yarpcerrors.Newf(n.code, "stormsim: %s fails", n.name)
	}
	if hard != nil {
		return nil, yarpcerrors.FromError(hard)
	}
	return nil, nil
}

// fails draws whether the node's own work fails for the request at path.
func (n *node) fails(path string) bool {
	switch {
	case n.fail <= 0:
		return false
	case n.fail >= 1:
		return true
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(n.name)) // a hash.Hash never fails to write
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(path))
	return rand.New(rand.NewPCG(n.seed, h.Sum64())).Float64() < n.fail
}

// rootOf returns the root request ID at the start of a request path.
func rootOf(path string) int64 {
	id, _ := strconv.ParseInt(path[:strings.IndexByte(path, '@')], 10, 64) // our own format
	return id
}

// callRef names one logical call a node makes: the root request it is
// made for, and its call path (callPath of the request it sends).
type callRef struct {
	root int64
	path string
}

type callKey struct{}

// withCall returns ctx carrying the logical call ref, for the retry
// recorder of the node's outbound calls. It is the simulator's own
// bookkeeping and survives a context drop on purpose.
func withCall(ctx context.Context, ref callRef) context.Context {
	return context.WithValue(ctx, callKey{}, ref)
}

func callFromContext(ctx context.Context) (callRef, bool) {
	ref, ok := ctx.Value(callKey{}).(callRef)
	return ref, ok
}

// visit is what the handler tells the claim recorder about one request.
type visit struct {
	own atomic.Bool // the node's own work failed
}

type visitKey struct{}

func visitFromContext(ctx context.Context) *visit {
	v, _ := ctx.Value(visitKey{}).(*visit)
	return v
}

// claimRecorder is the outermost inbound middleware of a node: it counts
// the node's error responses by the claim errown (if any) put on them.
type claimRecorder struct {
	n *node
	// inflight counts the requests being handled, mesh-wide.
	inflight *atomic.Int64
}

var _ middleware.UnaryInbound = (*claimRecorder)(nil)

// Handle implements middleware.UnaryInbound.
func (r *claimRecorder) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	ctx, v := r.begin(ctx)
	defer r.inflight.Add(-1)
	w := &claimCapture{ResponseWriter: resw}
	err := h.Handle(ctx, req, w)
	r.end(v, err != nil, w.claim)
	return err
}

// begin counts a request in flight (end with r.inflight.Add(-1)) and
// returns ctx with the visit the handler reports to.
func (r *claimRecorder) begin(ctx context.Context) (context.Context, *visit) {
	r.inflight.Add(1)
	v := &visit{}
	return context.WithValue(ctx, visitKey{}, v), v
}

// end counts an answered request: failed, with claim.
func (r *claimRecorder) end(v *visit, failed bool, claim string) {
	if !failed {
		return
	}
	r.n.errors.Add(1)
	if wire.ParseClaim(claim) == ownership.ClaimUnclaimed {
		r.n.unclaimed.Add(1)
		if v.own.Load() {
			r.n.ownUnclaimed.Add(1)
		}
	}
}

// claimCapture notes the claim header of the response it writes.
type claimCapture struct {
	transport.ResponseWriter
	claim string
}

// AddHeaders implements transport.ResponseWriter.
func (w *claimCapture) AddHeaders(h transport.Headers) {
	if v, ok := h.Get(defaults.ClaimHeader); ok {
		w.claim = v
	}
	w.ResponseWriter.AddHeaders(h)
}

// retryRecorder is the innermost outbound middleware of a node: it sees
// every attempt and records, for each retry (attempt 2 or later, by the
// attempt header), the root request, the logical call (by its call path)
// and the hop it was spent on, and every attempt of the traced root
// request.
type retryRecorder struct {
	log    *radiusLog
	tracer *tracer
	edges  map[string]int // by callee service
	sent   *counts        // retries sent per bin, under open-loop load
}

var _ middleware.UnaryOutbound = (*retryRecorder)(nil)

// Call implements middleware.UnaryOutbound.
func (r *retryRecorder) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	v, _ := req.Headers.Get(_attemptHeader)
	trace := r.attempt(ctx, r.edges[req.Service], attemptNumber(v))
	res, err := out.Call(ctx, req)
	trace(res, err)
	return res, err
}

// attempt records attempt number attempt on edge e of the call ctx
// carries, if it is a retry, and returns what to call with the attempt's
// outcome.
func (r *retryRecorder) attempt(ctx context.Context, e, attempt int) func(*transport.Response, error) {
	call, ok := callFromContext(ctx)
	if ok && attempt > 1 {
		r.log.record(call.root, call.path, e)
	}
	if attempt > 1 {
		r.sent.add(1)
	}
	if !ok || !r.tracer.traces(call.root) {
		return func(*transport.Response, error) {}
	}
	start := time.Now()
	deadline, _ := ctx.Deadline()
	return func(res *transport.Response, err error) { r.tracer.record(e, attempt, start, deadline, res, err) }
}

// attemptTimer is the per-attempt timeout of a retry library that knows
// nothing of errown: an outbound middleware inside the retry middleware
// of a node blind to claims, which times out each attempt on its own, so
// that the retry middleware, with no per-attempt timeout of its own,
// starts a retry whenever the deadline leaves its minimum remaining (not
// only when a whole attempt fits, as errown's does).
type attemptTimer struct {
	timeouts map[string]time.Duration // by callee service
}

var _ middleware.UnaryOutbound = (*attemptTimer)(nil)

// Call implements middleware.UnaryOutbound.
func (a *attemptTimer) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	timeout := a.timeouts[req.Service]
	if timeout <= 0 {
		return out.Call(ctx, req)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	res, err := out.Call(actx, req)
	release.With(res, cancel) // the body is read after the call returns
	return res, err
}
