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
			req := &transport.Request{
				Caller:    _caller,
				Service:   _service,
				Procedure: _procedure,
				Encoding:  "raw",
				Transport: "http",
				Headers:   transport.NewHeaders(),
			}
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
// taking turns in rounds of 20000 requests (bare, floor, errown, errown,
// floor, bare per op), so that what drifts on a shared machine (other
// tenants, the CPU's clock, the heap) touches all alike. floor is the
// control: bare with a middleware that does nothing but what errown's
// inbound middleware cannot avoid, one allocation of a context node the
// size of errown's per-request state (224 bytes, with pointers), which
// carries the request's log to the egress middleware. It reports each
// chain's ns per request over all rounds and, as the median over the ops
// of each op's own figure, errown's and floor's extra cost as a share of
// bare's (extra/bare-%, floor/bare-%). Run it with -benchtime Nx, N of
// 20 or more.
func BenchmarkUnaryOverheadPaired(b *testing.B) {
	const round = 20000
	cfg := benchConfig(_callee)
	callee := callingHandler{out: memOutbound{}}
	chains := [3]transport.UnaryHandler{
		unaryChain(b, nil, memOutbound{}),
		middleware.ApplyUnaryInbound(callee, floorMiddleware{}),
		unaryChain(b, &cfg, memOutbound{}),
	}
	req := &transport.Request{
		Caller:    _caller,
		Service:   _service,
		Procedure: _procedure,
		Encoding:  "raw",
		Transport: "http",
		Headers:   transport.NewHeaders(),
	}
	ctx := context.Background()
	run := func(h transport.UnaryHandler) time.Duration {
		start := time.Now()
		for range round {
			if err := h.Handle(ctx, req, nopResponseWriter{}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	for _, h := range chains { // warm all up: pools, maps, the heap
		run(h)
	}
	var (
		total         [3]time.Duration
		extra, floors []float64
	)
	b.ResetTimer()
	for range b.N {
		var op [3]time.Duration
		for _, k := range [...]int{0, 1, 2, 2, 1, 0} {
			d := run(chains[k])
			op[k] += d
			total[k] += d
		}
		extra = append(extra, 100*float64(op[2]-op[0])/float64(op[0]))
		floors = append(floors, 100*float64(op[1]-op[0])/float64(op[0]))
	}
	b.StopTimer()
	n := float64(2 * round * b.N)
	b.ReportMetric(float64(total[0].Nanoseconds())/n, "bare-ns/req")
	b.ReportMetric(float64(total[1].Nanoseconds())/n, "floor-ns/req")
	b.ReportMetric(float64(total[2].Nanoseconds())/n, "errown-ns/req")
	b.ReportMetric(median(extra), "extra/bare-%")
	b.ReportMetric(median(floors), "floor/bare-%")
}

// floorMiddleware allocates what errown's inbound middleware allocates per
// request, a context node of its size class, and nothing else.
type floorMiddleware struct{}

// floorNode is a context node of 224 bytes with pointers, errown's size.
type floorNode struct {
	context.Context
	_ [200]byte
	p *int
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
