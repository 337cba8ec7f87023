package wire

import (
	"context"
	"errors"
	"time"

	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// AttemptResult is CallResult for an attempt sent with ctx, judged by the
// clock: an error after ctx's deadline is deadline-exceeded whatever its
// code (yarpc's HTTP outbound returns unknown when net/http sees the
// deadline first). Every decision on an attempt reads this one
// classification.
func AttemptResult(ctx context.Context, res *transport.Response, err error, codeHeader string) (yarpcerrors.Code, Class) {
	if err != nil && Expired(ctx) {
		return yarpcerrors.CodeDeadlineExceeded, Info(yarpcerrors.CodeDeadlineExceeded).Class
	}
	return CallResult(res, err, codeHeader)
}

// HandlerResult is Result for a handler serving with ctx: an error after
// ctx's deadline is deadline-exceeded, as in AttemptResult.
func HandlerResult(ctx context.Context, err error, appErr bool, appCode *yarpcerrors.Code) (yarpcerrors.Code, Class) {
	if err != nil && Expired(ctx) {
		return yarpcerrors.CodeDeadlineExceeded, Info(yarpcerrors.CodeDeadlineExceeded).Class
	}
	return Result(err, appErr, appCode)
}

// Expired reports whether ctx's deadline passed: ctx says so, or the
// deadline is behind time.Now (a transport's timer may fire first). A
// context deadline is wall-clock, so no injected clock is used.
func Expired(ctx context.Context) bool {
	if err := ctx.Err(); err != nil {
		return errors.Is(err, context.DeadlineExceeded)
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// Cancelled reports whether an attempt that ended with err was given up
// by its caller: ctx was cancelled before its deadline (a hedge's loser,
// a fan-out sibling, an inner hop whose caller gave up). It says nothing
// of the callee.
func Cancelled(ctx context.Context, err error) bool {
	return err != nil && errors.Is(ctx.Err(), context.Canceled)
}

// AttemptStorm is ResponseStorm for an attempt; a cancelled one without a
// response counts as the one request it sent, known: nobody waits for it
// and what it served below is out of sight.
func AttemptStorm(res *transport.Response, class Class, header string, cancelled bool) Figures {
	if cancelled && res == nil {
		return KnownFigures(One)
	}
	return ResponseStorm(res, class, header)
}
