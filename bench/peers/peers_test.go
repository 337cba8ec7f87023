package peers

import (
	"bytes"
	"context"
	"io"

	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// The peers: each a unary outbound middleware that retries a call once
// when its attempt fails as unavailable or internal (retryable), with no
// wait, as a team would write it with that library. Each buffers the body
// once to replay it.

// backoffRetry retries with github.com/cenkalti/backoff/v5: backoff.Retry
// with its zero backoff (no wait, as errown's 1ns ceiling here, which full
// jitter rounds to none, and as failsafe-go's default delay; an
// exponential backoff keeps state, so each call would allocate its own,
// and its timer of 1ns can park the call), at most 2 tries, and any other
// error made permanent.
type backoffRetry struct{}

var _ middleware.UnaryOutbound = backoffRetry{}

func (backoffRetry) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	return backoff.Retry(ctx, func() (*transport.Response, error) {
		r := *req
		r.Body = bytes.NewReader(body)
		res, err := out.Call(ctx, &r)
		if err != nil && !retryable(err) {
			return res, backoff.Permanent(err)
		}
		return res, err
	}, backoff.WithBackOff(&backoff.ZeroBackOff{}), backoff.WithMaxTries(2))
}

// failsafeRetry retries with failsafe-go: an executor built once of a
// retry policy (one retry, no delay, retryable errors only) in a retry
// budget (failsafe-go's default: retries at most 20% of the executions in
// flight, at least 3), and, with limiter, an adaptive concurrency limiter
// around each attempt (failsafe-go's defaults). Each call runs in
// executor.WithContext(ctx). When the budget or the limiter refuses, the
// call returns the last attempt's result, or a resource-exhausted error
// if none ran.
type failsafeRetry struct {
	exec failsafe.Executor[*transport.Response]
}

var _ middleware.UnaryOutbound = failsafeRetry{}

func newFailsafeRetry(limiter bool) failsafeRetry {
	rp := retrypolicy.NewBuilder[*transport.Response]().
		HandleIf(func(_ *transport.Response, err error) bool { return retryable(err) }).
		WithMaxRetries(1).
		WithBudget(budget.New()).
		ReturnLastFailure().
		Build()
	if !limiter {
		return failsafeRetry{exec: failsafe.With[*transport.Response](rp)}
	}
	al := adaptivelimiter.NewWithDefaults[*transport.Response]()
	return failsafeRetry{exec: failsafe.With[*transport.Response](rp, al)}
}

func (f failsafeRetry) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	var (
		last    *transport.Response
		lastErr error
		tried   bool
	)
	res, err := f.exec.WithContext(ctx).Get(func() (*transport.Response, error) {
		r := *req
		r.Body = bytes.NewReader(body)
		last, lastErr = out.Call(ctx, &r)
		tried = true
		return last, lastErr
	})
	if err == nil || err == lastErr {
		return res, err
	}
	if tried { // refused by the budget or the limiter after an attempt
		return last, lastErr
	}
	return nil, yarpcerrors.ResourceExhaustedErrorf("%s: %v", req.Service, err)
}

// readBody buffers a request's body, to replay it.
func readBody(req *transport.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	return io.ReadAll(req.Body)
}
