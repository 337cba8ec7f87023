package bench

import (
	"bytes"
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
)

// Names of the in-process chain: a caller calls "svc-b", whose handler
// calls "svc-c".
const (
	_caller    = "svc-a"
	_service   = "svc-b"
	_callee    = "svc-c"
	_procedure = "get"
)

var _payload = []byte(`{"key":"some-key","value":"a value of a few dozen bytes"}`)

// memOutbound is a transport.UnaryOutbound that does no I/O: it reads the
// request body, as a transport would, and answers with a fresh response.
type memOutbound struct{}

var _ transport.UnaryOutbound = memOutbound{}

func (memOutbound) Transports() []transport.Transport { return nil }
func (memOutbound) Start() error                      { return nil }
func (memOutbound) Stop() error                       { return nil }
func (memOutbound) IsRunning() bool                   { return true }

func (memOutbound) Call(_ context.Context, req *transport.Request) (*transport.Response, error) {
	if req.Body != nil {
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return nil, err
		}
	}
	return &transport.Response{Body: io.NopCloser(bytes.NewReader(_payload)), BodySize: len(_payload)}, nil
}

// callingHandler makes one outbound call with the handler's ctx, built the
// way yarpc's raw encoding builds it, and writes the answer.
type callingHandler struct {
	out transport.UnaryOutbound
}

func (h callingHandler) Handle(ctx context.Context, _ *transport.Request, resw transport.ResponseWriter) error {
	res, err := h.out.Call(ctx, &transport.Request{
		Caller:    _service,
		Service:   _callee,
		Procedure: _procedure,
		Encoding:  "raw",
		Body:      bytes.NewReader(_payload),
		BodySize:  len(_payload),
	})
	if err != nil {
		return err
	}
	_, err = io.Copy(resw, res.Body)
	if cerr := res.Body.Close(); err == nil {
		err = cerr
	}
	return err
}

// inboundRequest is the request the benchmarks' chains serve: svc-a
// calling svc-b over HTTP, with no errown caller (a root).
func inboundRequest() *transport.Request {
	return &transport.Request{
		Caller:    _caller,
		Service:   _service,
		Procedure: _procedure,
		Encoding:  "raw",
		Transport: "http",
		Headers:   transport.NewHeaders(),
	}
}

// nopResponseWriter is a transport.ResponseWriter that keeps nothing.
type nopResponseWriter struct{}

func (nopResponseWriter) Write(p []byte) (int, error)  { return len(p), nil }
func (nopResponseWriter) AddHeaders(transport.Headers) {}
func (nopResponseWriter) SetApplicationError()         {}

// benchConfig is errown's config for the benchmarks: a retry policy for
// the callee, if any, so that the retry middleware runs its policy path.
func benchConfig(callee string) errown.Config {
	if callee == "" {
		return errown.Config{}
	}
	return errown.Config{Retry: errown.RetryConfig{Policies: []retry.PolicyConfig{{Service: callee, Idempotent: new(true)}}}}
}

// unaryChain returns the inbound handler of the chain whose one outbound
// call goes to callee, with errown's middleware when cfg is not nil,
// started as a dispatcher's owner (or fx) starts it before serving: its
// background work runs, the coarse clock of the retry budgets and of the
// dependency memory among it.
func unaryChain(b *testing.B, cfg *errown.Config, callee transport.UnaryOutbound) transport.UnaryHandler {
	var in middleware.UnaryInbound
	var out middleware.UnaryOutbound
	if cfg != nil {
		mw, err := errown.New(*cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := mw.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := mw.Stop(); err != nil {
				b.Error(err)
			}
		})
		ycfg := mw.Apply(yarpc.Config{Name: _service})
		in, out = ycfg.InboundMiddleware.Unary, ycfg.OutboundMiddleware.Unary
	}
	h := callingHandler{out: middleware.ApplyUnaryOutbound(callee, out)}
	return middleware.ApplyUnaryInbound(h, in)
}

// BenchmarkUnaryOverhead is one in-process unary request through the full
// inbound, egress and retry middleware, around a handler that makes one
// outbound call over a transport that does no I/O. bare is the same chain
// without errown.
func BenchmarkUnaryOverhead(b *testing.B) {
	cfg := benchConfig(_callee)
	for _, bb := range []struct {
		name string
		cfg  *errown.Config
	}{
		{"bare", nil},
		{"errown", &cfg},
	} {
		b.Run(bb.name, func(b *testing.B) {
			h := unaryChain(b, bb.cfg, memOutbound{})
			req := inboundRequest()
			ctx := context.Background()
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				if err := h.Handle(ctx, req, nopResponseWriter{}); err != nil {
					b.Fatal(err)
				}
			}
			cpu.stop()
		})
	}
}

// BenchmarkUnaryOverheadPaired is UnaryOverhead's chains in one process,
// taking turns in rounds of _pairedRound requests (bare, floor, errown, errown,
// floor, bare per op), so that what drifts on a shared machine (other
// tenants, the CPU's clock, the heap) touches all alike. floor is the
// control: bare with a middleware that does nothing but what errown's
// inbound middleware cannot avoid, one allocation of a context node the
// size of errown's per-request state (160 bytes, with pointers), which
// carries the request's log to the egress middleware. It reports each
// chain's ns per request over all rounds and, as the median over the ops
// of each op's own figure, errown's and floor's extra cost as a share of
// bare's (extra/bare-%, floor/bare-%). Run it with -benchtime Nx, N of
// 20 or more.
func BenchmarkUnaryOverheadPaired(b *testing.B) {
	cfg := benchConfig(_callee)
	p := runPaired(b, []pairedChain{
		{h: unaryChain(b, nil, memOutbound{})},
		{h: middleware.ApplyUnaryInbound(callingHandler{out: memOutbound{}}, floorMiddleware{})},
		{h: unaryChain(b, &cfg, memOutbound{})},
	})
	b.ReportMetric(p.nsPerReq(0), "bare-ns/req")
	b.ReportMetric(p.nsPerReq(1), "floor-ns/req")
	b.ReportMetric(p.nsPerReq(2), "errown-ns/req")
	b.ReportMetric(p.medianOf(func(op []time.Duration) float64 { return 100 * float64(op[2]-op[0]) / float64(op[0]) }), "extra/bare-%")
	b.ReportMetric(p.medianOf(func(op []time.Duration) float64 { return 100 * float64(op[1]-op[0]) / float64(op[0]) }), "floor/bare-%")
}

// _pairedRound is how many requests a chain serves in one turn of a
// paired benchmark: long enough for the clock, short enough that a few
// hundred milliseconds of a busy neighbour land on every chain alike.
const _pairedRound = 20000

// pairedChain is one chain of a paired benchmark, and what each of its
// requests must return (nil for success).
type pairedChain struct {
	h    transport.UnaryHandler
	want func(error) bool
}

// paired is what runPaired measured: per op, each chain's time for its
// two turns.
type paired struct {
	ops   [][]time.Duration
	total []time.Duration
}

// runPaired runs b.N ops, each op a turn of every chain in order and then
// in reverse order (ABCCBA), _pairedRound sequential requests a turn, after
// one warm-up turn each.
func runPaired(b *testing.B, chains []pairedChain) paired {
	req := inboundRequest()
	ctx := context.Background()
	run := func(c pairedChain) time.Duration {
		start := time.Now()
		for range _pairedRound {
			err := c.h.Handle(ctx, req, nopResponseWriter{})
			if (c.want == nil && err != nil) || (c.want != nil && !c.want(err)) {
				b.Fatalf("unexpected result: %v", err)
			}
		}
		return time.Since(start)
	}
	for _, c := range chains { // warm all up: pools, maps, the heap
		run(c)
	}
	order := make([]int, 0, 2*len(chains))
	for k := range chains {
		order = append(order, k)
	}
	for k := len(chains) - 1; k >= 0; k-- {
		order = append(order, k)
	}
	p := paired{total: make([]time.Duration, len(chains))}
	b.ResetTimer()
	for range b.N {
		op := make([]time.Duration, len(chains))
		for _, k := range order {
			d := run(chains[k])
			op[k] += d
			p.total[k] += d
		}
		p.ops = append(p.ops, op)
	}
	b.StopTimer()
	return p
}

// nsPerReq returns chain k's time per request over all ops.
func (p paired) nsPerReq(k int) float64 {
	return float64(p.total[k].Nanoseconds()) / float64(2*_pairedRound*len(p.ops))
}

// medianOf returns the median over the ops of f of each op's times.
func (p paired) medianOf(f func(op []time.Duration) float64) float64 {
	xs := make([]float64, len(p.ops))
	for i, op := range p.ops {
		xs[i] = f(op)
	}
	return median(xs)
}

// floorMiddleware allocates what errown's inbound middleware allocates per
// request, a context node of its size class, and nothing else.
type floorMiddleware struct{}

// floorNode is a context node of 160 bytes with pointers, errown's size
// (package inbound's TestTrackedRequestSize holds errown's to it).
type floorNode struct {
	context.Context
	_ [18]*byte
}

func (floorMiddleware) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	return h.Handle(&floorNode{Context: ctx}, req, resw)
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
