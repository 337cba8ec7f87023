package bench

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown"
	"go.uber.org/yarpc"
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

func (c *httpChain) stop(b *testing.B) {
	for i := len(c.stops) - 1; i >= 0; i-- {
		if err := c.stops[i](); err != nil {
			b.Error(err)
		}
	}
}

// newHTTPChain starts the chain from its last node up, each node with
// errown's middleware when withErrown is set, and the client.
func newHTTPChain(b *testing.B, withErrown bool) *httpChain {
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
		if withErrown {
			mw, err := errown.New(benchConfig(callee))
			if err != nil {
				b.Fatal(err)
			}
			cfg = mw.Apply(cfg)
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
// without (bare) and with errown on every node.
func BenchmarkHTTPChain(b *testing.B) {
	for _, bb := range []struct {
		name   string
		errown bool
	}{
		{"bare", false},
		{"errown", true},
	} {
		b.Run(bb.name, func(b *testing.B) {
			c := newHTTPChain(b, bb.errown)
			defer c.stop(b)
			b.ReportAllocs()
			b.SetParallelism(4) // 4 clients per core: the chain, not the clients, is the bottleneck
			cpu := startCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_, err := c.client.Call(ctx, _procedure, _payload)
					cancel()
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			cpu.stop()
		})
	}
}
