package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// _claimed are the headers of a callee's error response that claims the
// failure, as errown on the callee sends them.
var _claimed = func() transport.Headers {
	v, _ := wire.FormatClaim(ownership.ClaimClaimed)
	return transport.NewHeaders().With(defaults.ClaimHeader, v)
}()

// downOutbound is a transport.UnaryOutbound that does no I/O and fails
// every call as a callee in an outage does through yarpc's HTTP outbound:
// a fresh unavailable error, with a response that carries the callee's
// headers (its claim) and no body.
type downOutbound struct{ memOutbound }

var _ transport.UnaryOutbound = downOutbound{}

func (downOutbound) Call(_ context.Context, req *transport.Request) (*transport.Response, error) {
	if req.Body != nil {
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return nil, err
		}
	}
	return &transport.Response{Headers: _claimed}, yarpcerrors.UnavailableErrorf("%s is down", req.Service)
}

// BenchmarkOutage is UnaryOverhead's request with its one outbound call
// failing: the callee is down and claims the failure, so every request
// fails, errown's error path runs on each (egress log entry, claim
// decision, the operators' list of decisions, the dependency memory's
// observation) and each observation lands on the same edge. It runs with
// GOMAXPROCS 1 and 2 (b.RunParallel), bare and errown, and reports req/s
// beside ns/op.
//
// The edge has no retry policy: the benchmark measures errown's error
// path, not retries, which sleep their backoff; a policy whose budget is
// spent would add the retry budget's refusal (retrier.Middleware) to it.
func BenchmarkOutage(b *testing.B) {
	var cfg errown.Config // no retry policy for the callee
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("gomaxprocs=%d", procs), func(b *testing.B) {
			for _, bb := range []struct {
				name string
				cfg  *errown.Config
			}{
				{"bare", nil},
				{"errown", &cfg},
			} {
				b.Run(bb.name, func(b *testing.B) {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					runOutage(b, unaryChain(b, bb.cfg, downOutbound{}))
				})
			}
		})
	}
}

// runOutage sends requests through h from GOMAXPROCS goroutines; each
// must fail as unavailable.
func runOutage(b *testing.B, h transport.UnaryHandler) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		req := inboundRequest()
		for pb.Next() {
			if err := h.Handle(ctx, req, nopResponseWriter{}); !yarpcerrors.IsUnavailable(err) {
				b.Errorf("got %v, want unavailable", err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	cpu.stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

// BenchmarkOutagePaired puts the success path and the outage path side by
// side in one process: UnaryOverhead's chains (bare and errown, the one
// call succeeding) and Outage's (bare and errown, the one call failing),
// taking turns as UnaryOverheadPaired's do, one request at a time. Both
// errown chains have the same retry policy for the callee, but the
// outage chain's does not retry unavailable (its retryable codes are
// internal only): the policy path runs on both, and the outage path
// measures errown's error path, not retries (see Outage). It reports
// errown's extra ns per request on each path and their ratio over all
// ops (outage/success-x). Run it with -benchtime Nx, N of 20 or more.
func BenchmarkOutagePaired(b *testing.B) {
	success := benchConfig(_callee)
	outage := benchConfig(_callee)
	outage.Retry.Policies[0].RetryableCodes = []string{"internal"}
	down := func(err error) bool { return yarpcerrors.IsUnavailable(err) }
	p := runPaired(b, []pairedChain{
		{h: unaryChain(b, nil, memOutbound{})},
		{h: unaryChain(b, &success, memOutbound{})},
		{h: unaryChain(b, nil, downOutbound{}), want: down},
		{h: unaryChain(b, &outage, downOutbound{}), want: down},
	})
	successExtra, outageExtra := p.nsPerReq(1)-p.nsPerReq(0), p.nsPerReq(3)-p.nsPerReq(2)
	b.ReportMetric(successExtra, "success-extra-ns/req")
	b.ReportMetric(outageExtra, "outage-extra-ns/req")
	b.ReportMetric(outageExtra/successExtra, "outage/success-x")
}
