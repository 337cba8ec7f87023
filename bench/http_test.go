package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/transport/http"
)

// Services of the HTTP chain: the client calls svc-a, which calls svc-b,
// which calls svc-c.
var _chain = []string{"svc-a", "svc-b", "svc-c"}

// httpChain is a chain of yarpc dispatchers over HTTP on 127.0.0.1 and a
// client of its first node.
type httpChain struct {
	stops  []func() error
	client raw.Client
}

// call sends one request through the chain.
func (c *httpChain) call() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.client.Call(ctx, _procedure, _payload)
	return err
}

func (c *httpChain) stop(b *testing.B) {
	for i := len(c.stops) - 1; i >= 0; i-- {
		if err := c.stops[i](); err != nil {
			b.Error(err)
		}
	}
}

// chainMiddleware is what each node of a chain runs besides yarpc.
type chainMiddleware int

const (
	_bare   chainMiddleware = iota // nothing
	_nop                           // a unary inbound and outbound middleware that only pass the call on
	_errown                        // errown's
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

// newHTTPChain starts the chain from its last node up, each node with the
// middleware mw, and the client.
func newHTTPChain(b *testing.B, mw chainMiddleware) *httpChain {
	c := &httpChain{}
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
		switch mw {
		case _nop:
			cfg.InboundMiddleware.Unary = nopMiddleware{}
			cfg.OutboundMiddleware.Unary = nopMiddleware{}
		case _errown:
			em, err := errown.New(benchConfig(callee))
			if err != nil {
				b.Fatal(err)
			}
			cfg = em.Apply(cfg)
		}
		d := yarpc.NewDispatcher(cfg)
		d.Register(raw.Procedure(_procedure, forward(d, name, callee)))
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

// forward is the raw handler of a node: it calls callee with the body,
// and answers with callee's answer; the last node answers with the body.
func forward(d *yarpc.Dispatcher, name, callee string) func(context.Context, []byte) ([]byte, error) {
	if callee == "" {
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
			c := newHTTPChain(b, bb.mw)
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
	const phase = 250 * time.Millisecond
	chains := [3]*httpChain{newHTTPChain(b, _bare), newHTTPChain(b, _nop), newHTTPChain(b, _errown)}
	for i := len(chains) - 1; i >= 0; i-- {
		defer chains[i].stop(b)
	}
	var (
		reqs [3]int64
		wall [3]time.Duration
		cpu  [3]time.Duration
	)
	b.ResetTimer()
	for range b.N {
		for _, k := range [...]int{0, 1, 2, 2, 1, 0} {
			n, w, c := runPhase(b, chains[k], phase)
			reqs[k] += n
			wall[k] += w
			cpu[k] += c
		}
	}
	b.StopTimer()
	if reqs[0] == 0 || reqs[1] == 0 || reqs[2] == 0 {
		b.Fatalf("no requests completed: bare %d, nop %d, errown %d", reqs[0], reqs[1], reqs[2])
	}
	tput := func(k int) float64 { return float64(reqs[k]) / wall[k].Seconds() }
	b.ReportMetric(tput(0), "bare-req/s")
	b.ReportMetric(tput(1), "nop-req/s")
	b.ReportMetric(tput(2), "errown-req/s")
	b.ReportMetric(100*tput(2)/tput(0), "errown/bare-%")
	b.ReportMetric(100*tput(1)/tput(0), "nop/bare-%")
	b.ReportMetric(float64(cpu[0])/float64(reqs[0]), "bare-cpu-ns/req")
	b.ReportMetric(float64(cpu[1])/float64(reqs[1]), "nop-cpu-ns/req")
	b.ReportMetric(float64(cpu[2])/float64(reqs[2]), "errown-cpu-ns/req")
}

// runPhase sends requests through c from 8 clients for d, as
// BenchmarkHTTPChain does, and returns the requests completed, the time
// they took and the process CPU time used.
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
				if err := c.call(); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return done.Load(), time.Since(start), cpuTime() - cpu0
}
