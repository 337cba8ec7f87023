package wire

import (
	"context"
	"errors"
	"time"

	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// AttemptResult is CallResult for an attempt sent with ctx, judged by the
// clock rather than by the transport's wording: an attempt that ended
// with an error once ctx's deadline had passed timed out, and is
// deadline-exceeded whatever code its error carries. yarpc's HTTP
// outbound, for one, returns unknown ("unknown error from http client:
// ... context deadline exceeded") when net/http sees the deadline before
// the outbound does. Every decision on an attempt (its claim, a retry, the
// overload limit, the metrics) reads this one classification.
func AttemptResult(ctx context.Context, res *transport.Response, err error, codeHeader string) (yarpcerrors.Code, Class) {
	if err != nil && Expired(ctx) {
		return yarpcerrors.CodeDeadlineExceeded, Info(yarpcerrors.CodeDeadlineExceeded).Class
	}
	return CallResult(res, err, codeHeader)
}

// HandlerResult is Result for a handler that served a request with ctx:
// an error it returned once ctx's deadline had passed is
// deadline-exceeded, as AttemptResult has it for the caller.
func HandlerResult(ctx context.Context, err error, appErr bool, appCode *yarpcerrors.Code) (yarpcerrors.Code, Class) {
	if err != nil && Expired(ctx) {
		return yarpcerrors.CodeDeadlineExceeded, Info(yarpcerrors.CodeDeadlineExceeded).Class
	}
	return Result(err, appErr, appCode)
}

// Expired reports whether ctx's deadline has passed: ctx says so, or its
// deadline is behind the clock (a transport's own timer, set from the
// same deadline, may fire a moment before the context's). A context's
// deadline is wall-clock time by construction: it is read against
// time.Now, not an injected clock.
func Expired(ctx context.Context) bool {
	if err := ctx.Err(); err != nil {
		return errors.Is(err, context.DeadlineExceeded)
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// Cancelled reports whether an attempt sent with ctx that ended with err
// was given up on by its caller: it ended with an error after ctx was
// cancelled before its deadline (a hedge's loser, a fan-out's sibling,
// an inner hop whose own caller gave up first). Such an attempt says
// nothing of the callee, neither its health nor its failure.
func Cancelled(ctx context.Context, err error) bool {
	return err != nil && errors.Is(ctx.Err(), context.Canceled)
}

// AttemptStorm is ResponseStorm for an attempt that cancelled reports
// (Cancelled) its caller gave up on: without a response it counts as the
// one request it sent, known. What it served below is out of sight, and
// nobody waits for it: a request that abandoned a call keeps its figures.
func AttemptStorm(res *transport.Response, class Class, header string, cancelled bool) Figures {
	if cancelled && res == nil {
		return KnownFigures(One)
	}
	return ResponseStorm(res, class, header)
}
