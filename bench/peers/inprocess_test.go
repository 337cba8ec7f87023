package peers

import (
	"context"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/errown/errown"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// The arms of every peer benchmark, in the order they run, and their
// names in the metrics.
const (
	_bare = iota
	_nop
	_backoff
	_failsafe
	_limiter
	_errown
	_arms
)

var _armNames = [_arms]string{"bare", "nop", "backoff", "failsafe", "limiter", "errown"}

// _peers are the arms errown is compared with: the retry libraries.
var _peers = []int{_backoff, _failsafe, _limiter}

// _round is how many requests an in-process arm serves in one turn: long
// enough for the clock, short enough that a busy neighbour's few hundred
// milliseconds land on every arm alike.
const _round = 20000

// inProcessArm is one in-process chain: the handler and its outbound's
// count of calls.
type inProcessArm struct {
	h     transport.UnaryHandler
	calls *int64
}

// newInProcessArm returns arm's chain of UnaryOverhead's shape (package
// bench): an inbound request whose handler makes one outbound call, with
// arm's middleware, to a transport that does no I/O and, when down, fails
// every call as unavailable. bare and nop retry with retryOnce when the
// callee is down (a hand-written loop, the least a retry costs) and with
// nothing when it is up; the peers and errown retry with the same
// middleware on both paths. errown is started, as in production (its
// coarse clock runs).
func newInProcessArm(b *testing.B, arm int, down bool) inProcessArm {
	calls := new(int64)
	var (
		in  middleware.UnaryInbound
		out middleware.UnaryOutbound
	)
	switch arm {
	case _bare:
		if down {
			out = retryOnce{}
		}
	case _nop:
		in, out = nopMiddleware{}, nopMiddleware{}
		if down {
			out = yarpc.UnaryOutboundMiddleware(nopMiddleware{}, retryOnce{})
		}
	case _backoff:
		out = backoffRetry{}
	case _failsafe:
		out = newFailsafeRetry(false)
	case _limiter:
		out = newFailsafeRetry(true)
	case _errown:
		mw, err := errown.New(errownConfig(_callee))
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
	h := callingHandler{out: middleware.ApplyUnaryOutbound(memOutbound{down: down, calls: calls}, out)}
	return inProcessArm{h: middleware.ApplyUnaryInbound(h, in), calls: calls}
}

// BenchmarkPeers is the in-process chain with each arm (bare, nop, a retry
// middleware on cenkalti/backoff v5, failsafe-go's retry policy in its
// budget, the same with its adaptive limiter, errown) in one process,
// taking turns in rounds of _round sequential requests (the arms in
// order, then in reverse, per op), on the success path and with the
// callee failing every call as unavailable, every arm retrying once.
//
// It reports, per arm, ns per request (bare) or extra ns per request over
// bare, allocations per request, and the attempts its callee received
// per request (the arms must do the same work: 1 on success, 2 failing;
// the benchmark fails otherwise); then errown's extra as a multiple of
// the cheapest peer's (errown/cheapest-x: the peer of least extra in each
// op, the median over the ops) and the cheapest peer's allocations
// (cheapest-allocs/req: the least of the peers'). It reports the same by
// the process's CPU time in each turn (-extra-cpu-ns/req,
// errown/cheapest-cpu-x), which a loaded machine's neighbours touch less
// than wall time: a turn the scheduler leaves waiting takes longer, not
// more CPU. Run it with -benchtime Nx, N of 10 or more.
func BenchmarkPeers(b *testing.B) {
	for _, bb := range []struct {
		name string
		down bool
	}{
		{"success", false},
		{"failing", true},
	} {
		b.Run(bb.name, func(b *testing.B) {
			var arms [_arms]inProcessArm
			for k := range arms {
				arms[k] = newInProcessArm(b, k, bb.down)
			}
			want := func(err error) bool { return err == nil }
			attempts := 1.0
			if bb.down {
				want, attempts = yarpcerrors.IsUnavailable, 2
			}
			runInProcess(b, arms, want, attempts).report(b)
		})
	}
}

// inProcessRun is what runInProcess measured: per op, each arm's time
// and the process's CPU time for its two turns, and over all ops each
// arm's allocations.
type inProcessRun struct {
	ops    [][_arms]time.Duration
	cpu    [][_arms]time.Duration
	allocs [_arms]uint64
	reqs   int64 // per arm
}

// runInProcess runs b.N ops, each a turn of every arm in order and then
// in reverse, after one warm-up turn each, checking every request's
// result with want and every arm's attempts per request against attempts.
func runInProcess(b *testing.B, arms [_arms]inProcessArm, want func(error) bool, attempts float64) inProcessRun {
	req := inboundRequest()
	ctx := context.Background()
	var ms runtime.MemStats
	turn := func(a inProcessArm) (time.Duration, time.Duration, uint64) {
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		start, cpu0 := time.Now(), cpuTime()
		for range _round {
			if err := a.h.Handle(ctx, req, nopResponseWriter{}); !want(err) {
				b.Fatalf("unexpected result: %v", err)
			}
		}
		d, c := time.Since(start), cpuTime()-cpu0
		runtime.ReadMemStats(&ms)
		return d, c, ms.Mallocs - m0
	}
	for k, a := range arms { // warm up: pools, maps, the heap; and check the work
		*a.calls = 0
		turn(a)
		if got := float64(*a.calls) / _round; got != attempts {
			b.Fatalf("%s: %v attempts per request, want %v", _armNames[k], got, attempts)
		}
	}
	var order []int
	for k := range _arms {
		order = append(order, k)
	}
	for k := _arms - 1; k >= 0; k-- {
		order = append(order, k)
	}
	var r inProcessRun
	for _, a := range arms {
		*a.calls = 0
	}
	b.ResetTimer()
	for range b.N {
		var op, cpu [_arms]time.Duration
		for _, k := range order {
			d, c, n := turn(arms[k])
			op[k] += d
			cpu[k] += c
			r.allocs[k] += n
		}
		r.ops = append(r.ops, op)
		r.cpu = append(r.cpu, cpu)
	}
	b.StopTimer()
	r.reqs = int64(2 * _round * b.N)
	for k, a := range arms {
		got := float64(*a.calls) / float64(r.reqs)
		b.ReportMetric(got, _armNames[k]+"-attempts/req")
		if got != attempts {
			b.Errorf("%s: %v attempts per request, want %v", _armNames[k], got, attempts)
		}
	}
	return r
}

// nsPerReq returns arm k's ns per request in op.
func nsPerReq(op [_arms]time.Duration, k int) float64 {
	return float64(op[k].Nanoseconds()) / (2 * _round)
}

func (r inProcessRun) report(b *testing.B) {
	reportTimes(b, r.ops, "", "errown/cheapest-x")
	reportTimes(b, r.cpu, "cpu-", "errown/cheapest-cpu-x")
	cheapest := math.Inf(1)
	for k := range _arms {
		a := float64(r.allocs[k]) / float64(r.reqs)
		b.ReportMetric(a, _armNames[k]+"-allocs/req")
		if slices.Contains(_peers, k) {
			cheapest = min(cheapest, a)
		}
	}
	b.ReportMetric(cheapest, "cheapest-allocs/req")
}

// reportTimes reports, from ops (wall or CPU time per op), bare's ns per
// request, each other arm's extra and errown's extra as a multiple of the
// cheapest peer's (in ratio), each a median over the ops, the units of
// the ns metrics prefixed with kind.
func reportTimes(b *testing.B, ops [][_arms]time.Duration, kind, ratio string) {
	b.ReportMetric(medianOf(ops, func(op [_arms]time.Duration) float64 { return nsPerReq(op, _bare) }), "bare-"+kind+"ns/req")
	for k := _nop; k < _arms; k++ {
		b.ReportMetric(medianOf(ops, func(op [_arms]time.Duration) float64 { return nsPerReq(op, k) - nsPerReq(op, _bare) }), _armNames[k]+"-extra-"+kind+"ns/req")
	}
	b.ReportMetric(medianOf(ops, func(op [_arms]time.Duration) float64 {
		bare := nsPerReq(op, _bare)
		cheapest := math.Inf(1)
		for _, k := range _peers {
			cheapest = min(cheapest, nsPerReq(op, k)-bare)
		}
		return (nsPerReq(op, _errown) - bare) / cheapest
	}), ratio)
}

// medianOf returns the median over ops of f of each op's times.
func medianOf(ops [][_arms]time.Duration, f func(op [_arms]time.Duration) float64) float64 {
	xs := make([]float64, len(ops))
	for i, op := range ops {
		xs[i] = f(op)
	}
	return median(xs)
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
