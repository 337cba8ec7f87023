package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// hedging is an application's hedging middleware as teams write it: it
// sends the call, and a second
// attempt after delay unless the first has answered; the first answer
// wins and is returned, and the other attempt, the loser, is cancelled,
// its answer discarded. Each attempt has a context of its own; the
// winner's is released when its response body is closed.
type hedging struct {
	delay time.Duration

	// running counts the attempts under way and the losers until their
	// answers are discarded. Not a WaitGroup: a request its caller gave
	// up on can reach this hop's handler, and hedge, while the test
	// waits (a WaitGroup's first Add must happen before its Wait).
	running atomic.Int64
	calls   atomic.Int64
	hedges  atomic.Int64 // calls that sent the second attempt
}

var _ middleware.UnaryOutbound = (*hedging)(nil)

type hedgeAnswer struct {
	i   int // which attempt
	res *transport.Response
	err error
}

func (h *hedging) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	h.calls.Add(1)
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
	}
	answers := make(chan hedgeAnswer, 2) // buffered: no attempt ever blocks
	var cancels [2]context.CancelFunc
	send := func(i int) {
		actx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		r := *req
		if req.Body != nil {
			r.Body, r.BodySize = bytes.NewReader(body), len(body)
		}
		h.running.Add(1)
		go func() {
			defer h.running.Add(-1)
			res, err := out.Call(actx, &r)
			answers <- hedgeAnswer{i: i, res: res, err: err}
		}()
	}
	send(0)
	timer := time.NewTimer(h.delay)
	defer timer.Stop()
	var won hedgeAnswer
	select {
	case won = <-answers:
	case <-timer.C:
		h.hedges.Add(1)
		send(1)
		won = <-answers
		lost := 1 - won.i
		cancels[lost]()
		h.running.Add(1)
		go func() {
			defer h.running.Add(-1)
			closeBody((<-answers).res)
		}()
	}
	return releasedOnClose(won.res, cancels[won.i]), won.err
}

// wait waits, up to within, until no attempt is under way and every
// loser's answer was discarded, and reports whether that came.
func (h *hedging) wait(within time.Duration) bool {
	for deadline := time.Now().Add(within); h.running.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

func closeBody(res *transport.Response) {
	if res != nil && res.Body != nil {
		_ = res.Body.Close()
	}
}

// releasedOnClose returns res, whose body's Close also calls cancel; with
// no body, cancel is called at once.
func releasedOnClose(res *transport.Response, cancel context.CancelFunc) *transport.Response {
	if res == nil || res.Body == nil {
		cancel()
		return res
	}
	out := *res
	out.Body = cancelOnClose{ReadCloser: res.Body, cancel: cancel}
	return &out
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// countingLeaf is the leaf's Handler: it counts its requests by body (the
// root request's ID, which every hop forwards) and fails each with
// unavailable, after delay.
type countingLeaf struct {
	delay time.Duration

	mu     sync.Mutex
	byRoot map[string]int
}

func (l *countingLeaf) handle(ctx context.Context, _ *errowntest.Client, body []byte) ([]byte, error) {
	l.mu.Lock()
	l.byRoot[string(body)]++
	l.mu.Unlock()
	if l.delay > 0 {
		t := time.NewTimer(l.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return nil, yarpcerrors.UnavailableErrorf("%s", _leafDown)
}

// _leafDown is D's error message.
const _leafDown = "svc-d is down"

func (l *countingLeaf) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.byRoot))
	for k, v := range l.byRoot {
		out[k] = v
	}
	return out
}

const (
	// _hedgeRoots are the root requests of each hedging run, sent
	// _hedgeWorkers at a time.
	_hedgeRoots   = 300
	_hedgeWorkers = 8
	// _hedgeDelay is each hop's hedging delay.
	_hedgeDelay = 2 * time.Millisecond
	// _hedgeRatio is the budget ratio of the budgeted run.
	_hedgeRatio = 0.1
)

// netHTTPReuse reports whether err is the failure Go's net/http gives a
// request on a keep-alive connection that a cancelled request (another
// call's hedge loser) closed under it: "context canceled" though the
// request's own context was live. yarpc's HTTP error responses have empty
// bodies, the case of golang/go#41600, which go1.26 still shows. errown
// reads it as what it is to the hop, a transport failure (unknown).
func netHTTPReuse(err error) bool {
	st := yarpcerrors.FromError(err)
	return st.Code() == yarpcerrors.CodeUnknown &&
		strings.HasPrefix(st.Message(), "unknown error from http client: ") &&
		strings.HasSuffix(st.Message(), ": context canceled")
}

// Hedging at every hop: A→B→C→D over real dispatchers, an application's
// hedging middleware (a second attempt after 2ms, the first answer wins,
// the loser is cancelled) between errown's retry middleware and its
// innermost step at A, B and C, each with a policy of two attempts; D
// fails every request with unavailable. 300 root requests, 8 at a time.
//
// The bound: a hop's attempts of one call are errown's own, any other
// middleware's replays and its hedges. The first two are held together
// to the policy's maxAttempts (2); hedges, attempts sent while another
// attempt of the call is under way, count apart, so that they never take
// the attempt a failure's retry needs, and are held to maxAttempts-1 (1)
// per call. A hop sends at most 2·2-1 = 3 attempts per call it makes, and
// D serves at most 3³ = 27 requests per root request (the budget
// disabled). (Before, hedges took the policy's attempts, the bound was 2
// per hop and 2³ = 8, and a hedge sent left a failure no retry: with one
// bad instance of three, users lost a quarter of their requests;
// partial_test.go's TestPartialFailureWithHedger.) With a budget, each
// attempt past a call's first withdraws from it, hedges up to half of
// it, and only a call that succeeds gives its withdrawals back: a hop
// sends at most 1 + ratio attempts per call it makes (no floor, no call
// succeeds), D at most 1.1³ per root request, as before.
//
// Every root request ends with D's unavailable: a hedge's cancelled loser
// is never its call's answer. (Before, errown kept the loser's outcome as
// the call's last and a refused replay, or a hedge held back, answered
// with it: a cancellation nobody above made reached the root.) Over HTTP a
// root request may end instead with the failure netHTTPReuse describes,
// Go's net/http's doing: the test counts those apart, and fails on any
// other code.
func TestHedgingBoundPerCallPath(t *testing.T) {
	tests := []struct {
		name   string
		delay  time.Duration // D's, before it fails
		budget retry.BudgetConfig
		// perHop bounds the requests a hop's callee serves per request
		// the hop serves.
		perHop float64
		// minMean is a floor for D's requests per root request: 2
		// without hedges (C's own retry of D's claimed failure), over 2
		// only with them.
		minMean float64
		// transports the case runs over, default _transports.
		transports []string
	}{
		{name: "at-once", budget: retry.BudgetConfig{Disabled: true}, perHop: 3, minMean: 1.9},
		// Every hop hedges (on one transport: under -race each run
		// takes half a minute).
		{name: "after-3ms", delay: 3 * time.Millisecond, budget: retry.BudgetConfig{Disabled: true}, perHop: 3, minMean: 4, transports: []string{errowntest.HTTP}},
		// The budget binds instead.
		{name: "budgeted", delay: 3 * time.Millisecond, budget: retry.BudgetConfig{Ratio: _hedgeRatio, NoFloor: true}, perHop: 1 + _hedgeRatio, minMean: 1.15},
	}
	for _, tt := range tests {
		transports := tt.transports
		if transports == nil {
			transports = _transports
		}
		for _, tr := range transports {
			t.Run(tt.name+"/"+tr, func(t *testing.T) {
				leaf := &countingLeaf{delay: tt.delay, byRoot: make(map[string]int)}
				mesh := errowntest.NewMesh(t)
				hedgers := map[string]*hedging{}
				start := func(name string, h errowntest.Handler, callees ...string) {
					cfg := stormConfig(retry.ModeEnforce, callees...)
					cfg.Retry.Budget = tt.budget
					// Admission off: the test bounds what the hedges
					// send D, which D's shedding would hide.
					cfg.Admission.Mode = inbound.AdmissionDisabled
					sc := errowntest.ServiceConfig{Name: name, Transport: tr, Errown: cfg, Callees: callees, Handler: h}
					if len(callees) > 0 {
						hedgers[name] = &hedging{delay: _hedgeDelay}
						sc.ExtraOutbound = hedgers[name]
					}
					mesh.Start(sc)
				}
				start(_d, leaf.handle)
				start(_c, errowntest.Forward, _d)
				start(_b, errowntest.Forward, _c)
				start(_a, errowntest.Forward, _b)

				var (
					next   atomic.Int64
					mu     sync.Mutex
					codes  = map[yarpcerrors.Code]int{}
					errs   = make(map[int64]error, _hedgeRoots)
					reused int      // root requests that ended as netHTTPReuse says
					bad    []string // the first root requests that ended otherwise
					wg     sync.WaitGroup
				)
				for range _hedgeWorkers {
					wg.Go(func() {
						for {
							i := next.Add(1)
							if i > _hedgeRoots {
								return
							}
							reply := mesh.Call(callCtx(t), _a, fmt.Appendf(nil, "root-%d", i))
							mu.Lock()
							errs[i] = reply.Err
							switch {
							case reply.Code() == _unavail && strings.Contains(yarpcerrors.FromError(reply.Err).Message(), _leafDown):
								codes[_unavail]++
							case tr == errowntest.HTTP && netHTTPReuse(reply.Err):
								reused++
							default:
								codes[reply.Code()]++
								if len(bad) < 5 {
									bad = append(bad, fmt.Sprintf("root-%d: %v (claim %q)", i, reply.Err, reply.Claim))
								}
							}
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				for _, n := range []string{_a, _b, _c} {
					require.True(t, hedgers[n].wait(testtime.Scale(30*time.Second)), "%s's hedges still under way", n)
				}

				byRoot := leaf.counts()
				total, most := 0, 0
				for _, n := range byRoot {
					total += n
					most = max(most, n)
				}
				served := servedBy(mesh, _a, _b, _c, _d)
				mean := float64(total) / _hedgeRoots
				t.Logf("D served %d for %d root requests (%.2f each, at most %d); served %v; hedges A %d/%d, B %d/%d, C %d/%d; codes %v, %d net/http reuse failures",
					total, _hedgeRoots, mean, most, served,
					hedgers[_a].hedges.Load(), hedgers[_a].calls.Load(), hedgers[_b].hedges.Load(), hedgers[_b].calls.Load(),
					hedgers[_c].hedges.Load(), hedgers[_c].calls.Load(), codes, reused)

				assert.Equal(t, map[yarpcerrors.Code]int{_unavail: _hedgeRoots - reused}, codes,
					"the root requests' codes but D's unavailable (%q); the first:\n\t%v", _leafDown, strings.Join(bad, "\n\t"))
				require.Equal(t, int64(_hedgeRoots), served[_a], "A's requests")
				for _, hop := range [][2]string{{_a, _b}, {_b, _c}, {_c, _d}} {
					assert.LessOrEqual(t, float64(served[hop[1]]), tt.perHop*float64(served[hop[0]])+1e-6,
						"%s's requests for %d of %s's: over the hop's bound of %v per call", hop[1], served[hop[0]], hop[0], tt.perHop)
				}
				bound := tt.perHop * tt.perHop * tt.perHop
				assert.LessOrEqual(t, mean, bound+1e-6, "D's requests per root request")
				if tt.budget.Disabled {
					// Without a budget the bound holds for each root
					// request, not only on average.
					for root, n := range byRoot {
						assert.LessOrEqual(t, n, int(bound), "D's requests for %s", root)
					}
				}
				// Every root request reaches D, but one net/http failed
				// on its way (netHTTPReuse): that may have failed it at A
				// before any hop sent it further, the budget refusing A's
				// retry.
				var missing []string
				roots := make(map[string]bool, _hedgeRoots)
				for i := 1; i <= _hedgeRoots; i++ {
					root := fmt.Sprintf("root-%d", i)
					roots[root] = true
					if byRoot[root] == 0 && !(tr == errowntest.HTTP && netHTTPReuse(errs[int64(i)])) {
						missing = append(missing, fmt.Sprintf("%s (%v)", root, errs[int64(i)]))
					}
				}
				assert.Empty(t, missing, "root requests that never reached D")
				var others []string
				for body := range byRoot {
					if !roots[body] {
						others = append(others, body)
					}
				}
				assert.Empty(t, others, "bodies D saw: only the root requests'")
				assert.GreaterOrEqual(t, mean, tt.minMean, "D's requests per root request: too few to have hedged")
			})
		}
	}
}
