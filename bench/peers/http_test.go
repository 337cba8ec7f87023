package peers

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcerrors"
)

// Services of the HTTP chain: the client calls svc-a, which calls svc-b,
// which calls svc-c.
var _chain = []string{"svc-a", "svc-b", "svc-c"}

// httpChain is a chain of yarpc dispatchers over HTTP on 127.0.0.1 and a
// client of its first node (package bench's, with the peers' arms).
type httpChain struct {
	stops  []func() error
	client raw.Client
	// leafCalls counts the calls the chain's last node received while
	// down.
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

// newHTTPChain starts the chain from its last node up, each node with
// arm's middleware, and the client. With down, the leaf (svc-c) fails
// every call as unavailable, every request fails with it, and every hop
// retries once: bare and nop with retryOnce on every node, each peer with
// its retry middleware on every node, errown with errownConfig's policy
// on every node, whose claims let only the leaf's caller retry. With the
// leaf up, bare and nop retry nothing, the peers and errown keep theirs.
// The client retries nothing.
func newHTTPChain(b *testing.B, arm int, down bool) *httpChain {
	c := &httpChain{}
	if down {
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
		if down {
			retries = retryOnce{}
		}
		switch arm {
		case _bare:
			cfg.OutboundMiddleware.Unary = retries
		case _nop:
			cfg.InboundMiddleware.Unary = nopMiddleware{}
			cfg.OutboundMiddleware.Unary = yarpc.UnaryOutboundMiddleware(nopMiddleware{}, retries)
		case _backoff:
			cfg.OutboundMiddleware.Unary = backoffRetry{}
		case _failsafe:
			cfg.OutboundMiddleware.Unary = newFailsafeRetry(false)
		case _limiter:
			cfg.OutboundMiddleware.Unary = newFailsafeRetry(true)
		case _errown:
			em, err := errown.New(errownConfig(callee))
			if err != nil {
				b.Fatal(err)
			}
			cfg = em.Apply(cfg)
		}
		d := yarpc.NewDispatcher(cfg)
		d.Register(raw.Procedure(_procedure, c.forward(d, callee, down)))
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
// answers with the body or, when down, counts the call in c.leafCalls
// and fails as unavailable.
func (c *httpChain) forward(d *yarpc.Dispatcher, callee string, down bool) func(context.Context, []byte) ([]byte, error) {
	switch {
	case callee == "" && down:
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

// BenchmarkPeersHTTP is the 3-node chain over HTTP on 127.0.0.1 with each
// arm on every node, in one process, taking turns in phases of 250ms (the
// arms in order, then in reverse, per op), 8 clients: with the leaf up
// (steady) and with the leaf failing every call as unavailable and every
// hop retrying once (leafdown; see newHTTPChain).
//
// It reports, per arm, req/s and CPU per request, and, with the leaf
// down, the calls the leaf received per request (4 for bare, nop and a
// peer whose every hop retried; 2 for errown, whose claims let only the
// leaf's caller retry; fewer: a budget refused retries) and each arm's
// extra wall time per request over bare's (-extra-ns/req, the inverses
// of throughputs); then errown/nop-% and errown/bare-% (errown's
// throughput against the nop control's and bare's); in the steady state,
// errown's extra over bare as a multiple of the cheapest peer's, in wall
// time per request (errown/cheapest-x) and in CPU per request
// (errown/cheapest-cpu-x); with the leaf down, where errown costs less
// than bare, its throughput against the best peer's (errown/best-peer-%).
// Each op is twelve phases of 250ms: run it with -benchtime Nx.
func BenchmarkPeersHTTP(b *testing.B) {
	for _, bb := range []struct {
		name string
		down bool
	}{
		{"steady", false},
		{"leafdown", true},
	} {
		b.Run(bb.name, func(b *testing.B) {
			runHTTP(b, bb.down).report(b, bb.down)
		})
	}
}

// httpRun is what runHTTP measured, per arm over all its phases.
type httpRun struct {
	reqs [_arms]int64 // requests completed
	leaf [_arms]int64 // calls the leaf received, with the leaf down
	wall [_arms]time.Duration
	cpu  [_arms]time.Duration
}

// runHTTP starts every arm's chain and runs b.N ops of twelve phases of
// 250ms.
func runHTTP(b *testing.B, down bool) httpRun {
	const phase = 250 * time.Millisecond
	var chains [_arms]*httpChain
	for k := range chains {
		chains[k] = newHTTPChain(b, k, down)
	}
	for k := len(chains) - 1; k >= 0; k-- {
		defer chains[k].stop(b)
	}
	var order []int
	for k := range _arms {
		order = append(order, k)
	}
	for k := _arms - 1; k >= 0; k-- {
		order = append(order, k)
	}
	var r httpRun
	b.ResetTimer()
	for range b.N {
		for _, k := range order {
			leaf0 := chains[k].leafCalls.Load()
			n, w, c := runPhase(b, chains[k], phase)
			r.reqs[k] += n
			r.leaf[k] += chains[k].leafCalls.Load() - leaf0
			r.wall[k] += w
			r.cpu[k] += c
		}
	}
	b.StopTimer()
	for k, n := range r.reqs {
		if n == 0 {
			b.Fatalf("%s: no requests completed", _armNames[k])
		}
	}
	return r
}

func (r httpRun) report(b *testing.B, down bool) {
	for k := range _arms {
		b.ReportMetric(r.tput(k), _armNames[k]+"-req/s")
		b.ReportMetric(r.cpuPerReq(k), _armNames[k]+"-cpu-ns/req")
		if k != _bare {
			b.ReportMetric(r.wallPerReq(k)-r.wallPerReq(_bare), _armNames[k]+"-extra-ns/req")
		}
		if down {
			b.ReportMetric(float64(r.leaf[k])/float64(r.reqs[k]), _armNames[k]+"-leaf-req/req")
		}
	}
	b.ReportMetric(100*r.tput(_errown)/r.tput(_nop), "errown/nop-%")
	b.ReportMetric(100*r.tput(_errown)/r.tput(_bare), "errown/bare-%")
	if down {
		// Every arm but errown costs more than bare here, errown less:
		// a multiple of extras would divide a negative by a positive. So
		// errown's throughput against the best peer's.
		best := 0.0
		for _, k := range _peers {
			best = max(best, r.tput(k))
		}
		b.ReportMetric(100*r.tput(_errown)/best, "errown/best-peer-%")
		return
	}
	b.ReportMetric(r.extraOverCheapest(r.wallPerReq), "errown/cheapest-x")
	b.ReportMetric(r.extraOverCheapest(r.cpuPerReq), "errown/cheapest-cpu-x")
}

// extraOverCheapest returns errown's extra over bare, by cost, as a
// multiple of the cheapest peer's.
func (r httpRun) extraOverCheapest(cost func(k int) float64) float64 {
	cheapest := math.Inf(1)
	for _, k := range _peers {
		cheapest = min(cheapest, cost(k)-cost(_bare))
	}
	return (cost(_errown) - cost(_bare)) / cheapest
}

// wallPerReq returns arm k's wall ns per request over its phases, 8
// clients sending: the inverse of its throughput.
func (r httpRun) wallPerReq(k int) float64 { return 1e9 / r.tput(k) }

// tput returns arm k's requests per second over its phases.
func (r httpRun) tput(k int) float64 { return float64(r.reqs[k]) / r.wall[k].Seconds() }

// cpuPerReq returns arm k's process CPU ns per request over its phases.
func (r httpRun) cpuPerReq(k int) float64 { return float64(r.cpu[k]) / float64(r.reqs[k]) }

// runPhase sends requests through c from 8 clients for d, and returns the
// requests completed with the result c wants, the time they took and the
// process CPU time used.
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
