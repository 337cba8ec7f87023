package stormsim

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/errown/errown/internal/wire"
	"github.com/uber-go/tally/v4"
	"go.uber.org/multierr"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Defaults of Throttle.
const (
	// DefaultThrottleK is the book's K: a callee may get about twice the
	// requests it accepts.
	DefaultThrottleK = 2
	// DefaultThrottleWindow is the window requests and accepts count
	// over. The book uses two minutes of history, longer than a whole run
	// of the lab; 2s keeps the same proportion to the lab's seconds-long
	// triggers.
	DefaultThrottleWindow = 2 * time.Second
	// DefaultThrottleBuckets is the parts the window slides by (200ms
	// each by default).
	DefaultThrottleBuckets = 10
)

// Throttle configures client-side adaptive throttling (Google SRE book,
// "Handling Overload", "Client-Side Throttling"; Envoy's admission
// control is the same rule): each hop keeps, per callee service and over
// a sliding window, the requests it attempted and those the callee
// accepted, and rejects a new attempt locally, with an unavailable error,
// with the probability ThrottleRejection gives. It sits below the hop's
// retry middleware, as a client's channel does: every attempt that would
// leave the process counts, retries included, and one rejected locally
// reaches nobody (the retry middleware may retry it, through the
// throttle again). An attempt is accepted when it succeeds or its error
// is the callee's answer (not a failure in ownership's code table); a
// failure, its own per-attempt timeout included, is not.
type Throttle struct {
	// K is the requests per accept the callee may get before the throttle
	// rejects any, at least 1. Default DefaultThrottleK.
	K float64
	// Window is the sliding window of the counts, at least 10ms. Default
	// DefaultThrottleWindow.
	Window time.Duration
	// Buckets is the parts the window slides by, 1 to 1000. Default
	// DefaultThrottleBuckets.
	Buckets int
}

func (t Throttle) withDefaults() Throttle {
	t.K = cmp.Or(t.K, DefaultThrottleK)
	t.Window = cmp.Or(t.Window, DefaultThrottleWindow)
	t.Buckets = cmp.Or(t.Buckets, DefaultThrottleBuckets)
	return t
}

func (t Throttle) validate() error {
	t = t.withDefaults()
	var err error
	if !(t.K >= 1 && t.K <= 1000) { // also rejects NaN
		err = multierr.Append(err, fmt.Errorf("k: must be between 1 and 1000, got %v", t.K))
	}
	if t.Window < 10*time.Millisecond {
		err = multierr.Append(err, fmt.Errorf("window: must be at least 10ms, got %v", t.Window))
	}
	if t.Buckets < 1 || t.Buckets > 1000 {
		err = multierr.Append(err, fmt.Errorf("buckets: must be between 1 and 1000, got %d", t.Buckets))
	}
	return err
}

// ThrottleRejection is the probability with which client-side adaptive
// throttling rejects a request locally, given the requests attempted and
// those the backend accepted over its window: max(0, (requests −
// k·accepts) / (requests + 1)).
func ThrottleRejection(requests, accepts, k float64) float64 {
	return max(0, (requests-k*accepts)/(requests+1))
}

// throttle is one hop's adaptive throttle (Throttle), an outbound
// middleware. It is safe for concurrent use.
type throttle struct {
	cfg      Throttle
	node     string
	rejected tally.Scope // its counters, by callee

	mu      sync.Mutex
	rand    *rand.Rand // seeded by the run's seed and the node
	callees map[string]*throttleCallee
}

var _ middleware.UnaryOutbound = (*throttle)(nil)

// throttleCallee is the window of one callee.
type throttleCallee struct {
	requests, accepts []float64 // by bucket, a ring
	bucket            int64     // the bucket number (time ÷ bucket width) of the newest
	rejected          tally.Counter
}

func newThrottle(cfg Throttle, node string, seed uint64, scope tally.Scope) *throttle {
	h := fnv.New64a()
	_, _ = h.Write([]byte("throttle/" + node)) // a hash.Hash never fails to write
	return &throttle{
		cfg:      cfg.withDefaults(),
		node:     node,
		rejected: scope.SubScope("throttle"),
		rand:     rand.New(rand.NewPCG(seed, h.Sum64())),
		callees:  make(map[string]*throttleCallee),
	}
}

// Call implements middleware.UnaryOutbound.
func (t *throttle) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	c, reject := t.attempt(req.Service, time.Now())
	if reject {
		c.rejected.Inc(1)
		return nil, yarpcerrors.Newf(yarpcerrors.CodeUnavailable, "stormsim: %s throttles its calls to %s", t.node, req.Service)
	}
	res, err := out.Call(ctx, req)
	if err == nil || wire.Info(yarpcerrors.FromError(err).Code()).Class != wire.ClassFailure {
		t.accept(c, time.Now())
	}
	return res, err
}

// attempt counts a request to service at now and draws whether to reject
// it.
func (t *throttle) attempt(service string, now time.Time) (*throttleCallee, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.callees[service]
	if c == nil {
		c = &throttleCallee{
			requests: make([]float64, t.cfg.Buckets),
			accepts:  make([]float64, t.cfg.Buckets),
			rejected: t.rejected.Tagged(map[string]string{"callee": service}).Counter("rejected"),
		}
		t.callees[service] = c
	}
	b := t.slide(c, now)
	requests, accepts := sum(c.requests), sum(c.accepts)
	c.requests[b]++
	return c, t.rand.Float64() < ThrottleRejection(requests, accepts, t.cfg.K)
}

func (t *throttle) accept(c *throttleCallee, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.accepts[t.slide(c, now)]++
}

// slide moves c's window to now and returns the index of now's bucket.
func (t *throttle) slide(c *throttleCallee, now time.Time) int {
	width := int64(t.cfg.Window) / int64(t.cfg.Buckets)
	b := now.UnixNano() / width
	n := int64(len(c.requests))
	if b > c.bucket {
		for k := c.bucket + 1; k <= b && k <= c.bucket+n; k++ {
			c.requests[k%n], c.accepts[k%n] = 0, 0
		}
		c.bucket = b
	}
	// An accept counted after a newer request slid the window lands in
	// the newest bucket.
	return int(c.bucket % n)
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}
