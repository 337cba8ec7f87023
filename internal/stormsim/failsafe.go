package stormsim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/errown/errown/internal/wire"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// DefaultFailsafeBudget is the failsafe-go arm's retry budget: failsafe-go's
// own default, retries at most 20% of the executions in flight (at least
// 3 at once).
const DefaultFailsafeBudget = 0.2

// Failsafe is a peer arm: failsafe-go (github.com/failsafe-go/failsafe-go)
// as a team would put it on a yarpc outbound instead of errown, a yarpc
// outbound middleware running each call through failsafe-go's retry
// policy (the hop's attempts and backoff, retrying the codes ownership's
// table retries by default, the last failure returned) within its retry
// budget, around its adaptive limiter with failsafe-go's defaults. Every
// caller instance has its own executor per callee, as an outbound would.
// Attempts past the budget end the call with the last attempt's error; a
// call the limiter refuses fails resource-exhausted.
type Failsafe struct {
	// Budget is the budget's most retries among the executions in flight,
	// 0 to 1. Default DefaultFailsafeBudget.
	Budget float64
	// Server also runs failsafe-go's adaptive limiter, with its
	// defaults, on every node instance's inbound, as a service shedding
	// for itself: a request it has no permit for fails resource-exhausted
	// at once.
	Server bool
}

// failsafeInbound is the failsafe-go arm's server side at one node
// instance: its adaptive limiter in front of the handler.
type failsafeInbound struct {
	limiter adaptivelimiter.AdaptiveLimiter[any]
}

var _ middleware.UnaryInbound = (*failsafeInbound)(nil)

func newFailsafeInbound() *failsafeInbound {
	return &failsafeInbound{limiter: adaptivelimiter.NewWithDefaults[any]()}
}

// Handle implements middleware.UnaryInbound.
func (f *failsafeInbound) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	permit, ok := f.limiter.TryAcquirePermit()
	if !ok {
		return yarpcerrors.Newf(yarpcerrors.CodeResourceExhausted, "stormsim: failsafe-go: %s: %v", req.Service, adaptivelimiter.ErrExceeded)
	}
	err := h.Handle(ctx, req, resw)
	if ctx.Err() != nil {
		// Its caller went: the duration says nothing of the service.
		permit.Drop()
		return err
	}
	permit.Record()
	return err
}

// failsafeOutbound is the failsafe-go arm's outbound middleware at one
// node instance.
type failsafeOutbound struct {
	cfg      Failsafe
	attempts int

	mu        sync.Mutex
	executors map[string]failsafe.Executor[*transport.Response] // by callee service
}

var _ middleware.UnaryOutbound = (*failsafeOutbound)(nil)

func newFailsafeOutbound(cfg Failsafe, attempts int) *failsafeOutbound {
	if cfg.Budget == 0 {
		cfg.Budget = DefaultFailsafeBudget
	}
	return &failsafeOutbound{cfg: cfg, attempts: attempts, executors: make(map[string]failsafe.Executor[*transport.Response])}
}

// executor returns the executor of calls to service, built on its first
// call.
func (f *failsafeOutbound) executor(service string) failsafe.Executor[*transport.Response] {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.executors[service]; ok {
		return e
	}
	retry := retrypolicy.NewBuilder[*transport.Response]().
		WithMaxAttempts(f.attempts).
		WithDelay(_backoff).
		HandleIf(func(_ *transport.Response, err error) bool { return retriedByDefault(err) }).
		ReturnLastFailure().
		WithBudget(budget.NewBuilder().WithMaxRate(f.cfg.Budget).Build()).
		Build()
	limiter := adaptivelimiter.NewWithDefaults[*transport.Response]()
	e := failsafe.With[*transport.Response](retry, limiter)
	f.executors[service] = e
	return e
}

// retriedByDefault reports whether err is a failure ownership's code
// table retries by default.
func retriedByDefault(err error) bool {
	if err == nil {
		return false
	}
	return wire.Info(yarpcerrors.FromError(err).Code()).RetriedByDefault
}

// Call implements middleware.UnaryOutbound.
func (f *failsafeOutbound) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, yarpcerrors.Newf(yarpcerrors.CodeInternal, "stormsim: read body: %v", err)
		}
		body = b
	}
	var last error // the last attempt's error
	res, err := f.executor(req.Service).WithContext(ctx).GetWithExecution(func(exec failsafe.Execution[*transport.Response]) (*transport.Response, error) {
		attempt := *req
		attempt.Body = bytes.NewReader(body)
		if n := exec.Attempts(); n > 1 {
			// The lab's bookkeeping: the attempt header numbers retries
			// for the nodes' and the recorder's counts.
			h := transport.NewHeadersWithCapacity(req.Headers.Len() + 1)
			for k, v := range req.Headers.Items() {
				h = h.With(k, v)
			}
			attempt.Headers = h.With(_attemptHeader, strconv.Itoa(n))
		}
		res, err := out.Call(exec.Context(), &attempt)
		if err != nil {
			last = err
		}
		return res, err
	})
	switch {
	case errors.Is(err, budget.ErrExceeded) && last != nil:
		return nil, last
	case errors.Is(err, adaptivelimiter.ErrExceeded):
		return nil, yarpcerrors.Newf(yarpcerrors.CodeResourceExhausted, "stormsim: failsafe-go: %v", err)
	}
	return res, err
}
