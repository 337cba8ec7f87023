package bench

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcerrors"
)

// Services of the HTTP chain: the client calls svc-a, which calls svc-b,
// which calls svc-c.
var _chain = []string{"svc-a", "svc-b", "svc-c"}

// httpChain is a chain of yarpc dispatchers over HTTP on 127.0.0.1 and a
// client of its first node.
type httpChain struct {
	stops  []func() error
	client raw.Client
	// leafCalls counts the calls the chain's last node received while
	// down (the leaf up counts nothing, to keep the success path bare).
	leafCalls atomic.Int64
	// want reports whether a request's result is what the chain must
	// return; nil: success.
	want func(error) bool
}

// call sends one request through the chain.
func (c *httpChain) call() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.client.Call(ctx, _procedure, _payload)
	return err
}

// wanted reports whether err is what a request through c must return.
func (c *httpChain) wanted(err error) bool {
	if c.want == nil {
		return err == nil
	}
	return c.want(err)
}

func (c *httpChain) stop(b *testing.B) {
	for i := len(c.stops) - 1; i >= 0; i-- {
		if err := c.stops[i](); err != nil {
			b.Error(err)
		}
	}
}

// chainLeaf is what the last node of a chain does with each call.
type chainLeaf int

const (
	_leafUp   chainLeaf = iota // answers with the body
	_leafDown                  // fails as unavailable, as a callee in an outage does
)

// chainMiddleware is what each node of a chain runs besides yarpc.
type chainMiddleware int

const (
	_bare    chainMiddleware = iota // nothing
	_nop                            // a unary inbound and outbound middleware that only pass the call on
	_errown                         // errown's, as configured by default (admission enforcing)
	_noAdmit                        // errown's, its admission control disabled
)

// nopMiddleware passes every call on. It costs what any yarpc middleware
// costs: the chain yarpc builds around it.
type nopMiddleware struct{}

func (nopMiddleware) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	return h.Handle(ctx, req, resw)
}

func (nopMiddleware) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	return out.Call(ctx, req)
}

// retryOnce is the bare and the nop-middleware chains' retry, with the leaf
// down: a unary outbound middleware that sends a call a second time when
// its first attempt fails as unavailable or internal, at once (no backoff)
// and with no budget, the way a team retries "just once" at every layer.
// Each node's caller thus sends its callee twice what it receives, and
// with every hop retrying the leaf gets 2^hops calls per request. It
// buffers the body to replay it; the failed attempt's response, if any,
// is closed.
type retryOnce struct{}

func (retryOnce) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		r := *req
		r.Body = bytes.NewReader(body)
		res, err := out.Call(ctx, &r)
		if attempt == 2 || !(yarpcerrors.IsUnavailable(err) || yarpcerrors.IsInternal(err)) {
			return res, err
		}
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
	}
}

// leafDownConfig is errown's config for a node of a chain whose leaf is
// down and whose every hop retries once: benchConfig's policy for the
// callee, allowing 2 attempts (one retry) on unavailable and internal, as
// retryOnce does, with a backoff ceiling of 1ns, which full jitter rounds
// to no wait (0 would be the 10ms default), as retryOnce waits none. The
// budget allows one retry per original request (ratio 1; the floor stays
// the default 10 per second): the most this policy can ask for, so it
// never refuses a retry errown's claims allow, at any rate. errown's
// claims let only the leaf's direct caller retry: the leaf gets 2 calls
// per request.
func leafDownConfig(callee string) errown.Config {
	cfg := benchConfig(callee)
	if callee == "" {
		return cfg
	}
	cfg.Retry.Budget = retry.BudgetConfig{Ratio: 1}
	p := &cfg.Retry.Policies[0]
	p.MaxAttempts = 2
	p.RetryableCodes = []string{"unavailable", "internal"}
	p.InitialBackoff, p.MaxBackoff = time.Nanosecond, time.Nanosecond
	return cfg
}

// newHTTPChain starts the chain from its last node up, each node with the
// middleware mw and the last one doing what leaf says, and the client.
//
// With the leaf down, every request fails as unavailable, the same
// failure for every mw, and every hop retries once, as in the incident a
// retry storm is: bare and nop-middleware with retryOnce on every node
// (nop-middleware's outbound middleware passes the call on to it), errown
// with leafDownConfig's policy on every node, whose claims let only the
// leaf's caller retry. The client retries nothing.
func newHTTPChain(b *testing.B, mw chainMiddleware, leaf chainLeaf) *httpChain {
	c := &httpChain{}
	if leaf == _leafDown {
		c.want = yarpcerrors.IsUnavailable
	}
	next := "" // URL of the node below
	for i := len(_chain) - 1; i >= 0; i-- {
		name := _chain[i]
		trans := http.NewTransport(http.MaxIdleConnsPerHost(256))
		cfg := yarpc.Config{Name: name, Inbounds: yarpc.Inbounds{trans.NewInbound("127.0.0.1:0")}}
		var callee string
		if next != "" {
			callee = _chain[i+1]
			cfg.Outbounds = yarpc.Outbounds{callee: {Unary: trans.NewSingleOutbound(next)}}
		}
		var retries middleware.UnaryOutbound // bare's and nop's, with the leaf down
		if leaf == _leafDown {
			retries = retryOnce{}
		}
		switch mw {
		case _bare:
			cfg.OutboundMiddleware.Unary = retries
		case _nop:
			cfg.InboundMiddleware.Unary = nopMiddleware{}
			cfg.OutboundMiddleware.Unary = yarpc.UnaryOutboundMiddleware(nopMiddleware{}, retries)
		case _errown, _noAdmit:
			ecfg := benchConfig(callee)
			if leaf == _leafDown {
				ecfg = leafDownConfig(callee)
			}
			if mw == _noAdmit {
				ecfg.Admission.Mode = inbound.AdmissionDisabled
			}
			em, err := errown.New(ecfg)
			if err != nil {
				b.Fatal(err)
			}
			cfg = em.Apply(cfg)
		}
		d := yarpc.NewDispatcher(cfg)
		d.Register(raw.Procedure(_procedure, c.forward(d, callee, leaf)))
		if err := d.Start(); err != nil {
			b.Fatal(err)
		}
		c.stops = append(c.stops, d.Stop)
		next = "http://" + d.Inbounds()[0].(*http.Inbound).Addr().String()
	}
	trans := http.NewTransport(http.MaxIdleConnsPerHost(256))
	d := yarpc.NewDispatcher(yarpc.Config{
		Name:      "bench-client",
		Outbounds: yarpc.Outbounds{_chain[0]: {Unary: trans.NewSingleOutbound(next)}},
	})
	if err := d.Start(); err != nil {
		b.Fatal(err)
	}
	c.stops = append(c.stops, d.Stop)
	c.client = raw.New(d.ClientConfig(_chain[0]))
	return c
}

// forward is the raw handler of a node of c: it calls callee with the
// body, and answers with callee's answer; the last node (callee "")
// answers with the body or, with the leaf down, counts the call in
// c.leafCalls and fails as unavailable.
func (c *httpChain) forward(d *yarpc.Dispatcher, callee string, leaf chainLeaf) func(context.Context, []byte) ([]byte, error) {
	switch {
	case callee == "" && leaf == _leafDown:
		return func(context.Context, []byte) ([]byte, error) {
			c.leafCalls.Add(1)
			return nil, yarpcerrors.UnavailableErrorf("%s is down", _chain[len(_chain)-1])
		}
	case callee == "":
		return func(_ context.Context, body []byte) ([]byte, error) { return body, nil }
	}
	client := raw.New(d.ClientConfig(callee))
	return func(ctx context.Context, body []byte) ([]byte, error) {
		return client.Call(ctx, _procedure, body)
	}
}

// BenchmarkHTTPChain is the throughput of a 3-node chain of real yarpc
// dispatchers over HTTP on 127.0.0.1 under parallel clients, success path,
// without middleware (bare), with a middleware that only passes calls on
// (nop-middleware, the control) and with errown on every node.
func BenchmarkHTTPChain(b *testing.B) {
	for _, bb := range []struct {
		name string
		mw   chainMiddleware
	}{
		{"bare", _bare},
		{"nop-middleware", _nop},
		{"errown", _errown},
	} {
		b.Run(bb.name, func(b *testing.B) {
			c := newHTTPChain(b, bb.mw, _leafUp)
			defer c.stop(b)
			b.ReportAllocs()
			b.SetParallelism(4) // 4 clients per core: the chain, not the clients, is the bottleneck
			cpu := startCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.call(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			cpu.stop()
		})
	}
}

// BenchmarkHTTPChainPaired compares the bare, the nop-middleware and the
// errown chain in one process, taking turns in short phases (bare, nop,
// errown, errown, nop, bare per op), so that what drifts on a shared
// machine (other tenants, CPU clock, the heap) touches all alike. It
// reports each chain's throughput and CPU per request over all phases,
// and errown's and nop-middleware's throughput as a share of bare's
// (errown/bare-%, nop/bare-%): nop-middleware is the control, what any
// unary middleware costs on this chain. Each op is six phases of 250ms:
// run it with -benchtime Nx.
func BenchmarkHTTPChainPaired(b *testing.B) {
	p := runPairedHTTP(b, _leafUp)
	p.report(b)
}

// BenchmarkHTTPChainPairedAdmission compares errown's chain with its
// admission control off and enforcing (the default), taking turns in
// short phases (off, enforce, enforce, off per op) as HTTPChainPaired
// does: in the steady state admission is to cost nothing that shows. It
// reports each chain's throughput and CPU per request, and the enforcing
// chain's throughput as a share of the other's (admit/off-%). Each op
// is four phases of 250ms: run it with -benchtime Nx.
func BenchmarkHTTPChainPairedAdmission(b *testing.B) {
	p := runPairedChains(b, _leafUp, []chainMiddleware{_noAdmit, _errown}, []int{0, 1, 1, 0})
	b.ReportMetric(p.tput(0), "off-req/s")
	b.ReportMetric(p.tput(1), "admit-req/s")
	b.ReportMetric(100*p.tput(1)/p.tput(0), "admit/off-%")
	b.ReportMetric(float64(p.cpu[0])/float64(p.reqs[0]), "off-cpu-ns/req")
	b.ReportMetric(float64(p.cpu[1])/float64(p.reqs[1]), "admit-cpu-ns/req")
}

// BenchmarkHTTPChainPairedLeafDown is HTTPChainPaired during an outage, in
// the incident a retry storm is: the leaf (svc-c) fails every call as
// unavailable, the same failure for the bare, the nop-middleware and the
// errown chain, every request fails, and every hop retries once (see
// newHTTPChain). Bare yarpc and nop-middleware retry at svc-a and svc-b
// alike (retryOnce), so the leaf gets 2^2 = 4 calls per request; errown
// has a policy allowing one retry at both (leafDownConfig), and its
// claims let only svc-b, the leaf's caller, retry: 2 calls per request.
// Neither waits between attempts, and errown's budget allows every retry
// its claims allow. Besides HTTPChainPaired's figures it reports, per
// chain, the calls the leaf received per request (bare-leaf-req/req,
// nop-leaf-req/req, errown-leaf-req/req). Each op is six phases of 250ms:
// run it with -benchtime Nx. Its name leaves out "Outage", so that -bench
// 'UnaryOverhead|Outage', the in-process targets, does not run it.
func BenchmarkHTTPChainPairedLeafDown(b *testing.B) {
	p := runPairedHTTP(b, _leafDown)
	p.report(b)
	b.ReportMetric(p.leafPerReq(0), "bare-leaf-req/req")
	b.ReportMetric(p.leafPerReq(1), "nop-leaf-req/req")
	b.ReportMetric(p.leafPerReq(2), "errown-leaf-req/req")
}

// pairedHTTP is what runPairedChains measured, per chain over all its phases.
type pairedHTTP struct {
	reqs []int64 // requests completed
	leaf []int64 // calls the leaf received, with the leaf down
	wall []time.Duration
	cpu  []time.Duration
}

// runPairedHTTP starts the bare, the nop-middleware and the errown chain,
// their last nodes doing what leaf says, and runs b.N ops of six phases
// of 250ms (bare, nop, errown, errown, nop, bare).
func runPairedHTTP(b *testing.B, leaf chainLeaf) pairedHTTP {
	return runPairedChains(b, leaf, []chainMiddleware{_bare, _nop, _errown}, []int{0, 1, 2, 2, 1, 0})
}

// runPairedChains starts a chain of each of mws, their last nodes doing what
// leaf says, and runs b.N ops of a 250ms phase of each chain of order, in
// turn (indexes into mws).
func runPairedChains(b *testing.B, leaf chainLeaf, mws []chainMiddleware, order []int) pairedHTTP {
	const phase = 250 * time.Millisecond
	chains := make([]*httpChain, len(mws))
	for i, mw := range mws {
		chains[i] = newHTTPChain(b, mw, leaf)
	}
	for i := len(chains) - 1; i >= 0; i-- {
		defer chains[i].stop(b)
	}
	n := len(chains)
	p := pairedHTTP{reqs: make([]int64, n), leaf: make([]int64, n), wall: make([]time.Duration, n), cpu: make([]time.Duration, n)}
	b.ResetTimer()
	for range b.N {
		for _, k := range order {
			leaf0 := chains[k].leafCalls.Load()
			n, w, c := runPhase(b, chains[k], phase)
			p.reqs[k] += n
			p.leaf[k] += chains[k].leafCalls.Load() - leaf0
			p.wall[k] += w
			p.cpu[k] += c
		}
	}
	b.StopTimer()
	for k, r := range p.reqs {
		if r == 0 {
			b.Fatalf("no requests completed on chain %d of %v: %v", k, mws, p.reqs)
		}
	}
	return p
}

// report reports each chain's req/s and CPU per request, and errown's and
// nop-middleware's throughput as a share of bare's.
func (p pairedHTTP) report(b *testing.B) {
	b.ReportMetric(p.tput(0), "bare-req/s")
	b.ReportMetric(p.tput(1), "nop-req/s")
	b.ReportMetric(p.tput(2), "errown-req/s")
	b.ReportMetric(100*p.tput(2)/p.tput(0), "errown/bare-%")
	b.ReportMetric(100*p.tput(1)/p.tput(0), "nop/bare-%")
	b.ReportMetric(float64(p.cpu[0])/float64(p.reqs[0]), "bare-cpu-ns/req")
	b.ReportMetric(float64(p.cpu[1])/float64(p.reqs[1]), "nop-cpu-ns/req")
	b.ReportMetric(float64(p.cpu[2])/float64(p.reqs[2]), "errown-cpu-ns/req")
}

// tput returns chain k's requests per second over its phases.
func (p pairedHTTP) tput(k int) float64 { return float64(p.reqs[k]) / p.wall[k].Seconds() }

// leafPerReq returns the calls chain k's leaf received per request.
func (p pairedHTTP) leafPerReq(k int) float64 { return float64(p.leaf[k]) / float64(p.reqs[k]) }

// runPhase sends requests through c from 8 clients for d, as
// BenchmarkHTTPChain does, and returns the requests completed with the
// result c wants, the time they took and the process CPU time used.
func runPhase(b *testing.B, c *httpChain, d time.Duration) (int64, time.Duration, time.Duration) {
	var (
		done atomic.Int64
		wg   sync.WaitGroup
	)
	start, cpu0 := time.Now(), cpuTime()
	deadline := start.Add(d)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := c.call(); !c.wanted(err) {
					b.Errorf("unexpected result: %v", err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return done.Load(), time.Since(start), cpuTime() - cpu0
}
