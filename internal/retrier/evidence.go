package retrier

import (
	"context"
	"errors"
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// ending is what an attempt's end says of its callee, beyond its code
// and claim (wire.AttemptResult, wire.ResponseClaim): whether there is
// anything to judge the callee by.
type ending uint8

const (
	// endJudged: the attempt's outcome is the callee's, health or
	// overload.
	endJudged ending = iota
	// endCancelled: its caller gave up on it (wire.Cancelled), a hedge's
	// loser or an inner hop whose caller gave up first. Neither health
	// nor failure: its slot goes back with no outcome.
	endCancelled
	// endCallersDeadline: it timed out on its caller's deadline, which
	// left it less than its own expected time (the policy's attempt
	// timeout): the caller's doing, no evidence of the callee's overload.
	endCallersDeadline
	// endUnsent: the peer chooser sent it nowhere (calls.ErrNoOtherPeer):
	// the retry of an instance's shed, offered no other instance. It
	// did not leave the process: it is no attempt of the call.
	endUnsent
)

// attemptEnding returns how an attempt sent with ctx that ended with err,
// classified as code, ended (see ending).
func attemptEnding(ctx context.Context, err error, code yarpcerrors.Code) ending {
	switch {
	case err == nil:
		return endJudged
	case errors.Is(err, calls.ErrNoOtherPeer):
		return endUnsent
	case wire.Cancelled(ctx, err):
		return endCancelled
	case code == yarpcerrors.CodeDeadlineExceeded && callersDeadline(ctx):
		return endCallersDeadline
	}
	return endJudged
}

// giveBack gives back the slot adm of c's limit (c nil: none) for an
// attempt that ended as end, with code, its callee having said said.
func giveBack(c *callee, adm admission, end ending, code yarpcerrors.Code, said calleeSaid) {
	if c == nil {
		return
	}
	if end != endJudged {
		c.overload.abandon(adm)
		return
	}
	c.overload.done(adm, overloadEvidence(code, said))
}

// overloadEvidence reports whether an attempt that ended with code, its
// callee having said said, is evidence of the callee's overload, which
// moves the limit on attempts in flight and the overload shares: it
// timed out on the callee's own behalf (an unclaimed error comes from
// further below). A refusal is not, whoever made it: an instance's
// admission shed (marked, or from a version before the marker) or a
// callee's own rate limiter answered at once, holding what it can finish
// in time, and a caller that cut its limit for it would fight that
// control (two controllers on one queue, the caller's cut to half its
// attempts in flight below the callee's workers). A shed's claim and
// pushback still stop every retry above it.
func overloadEvidence(code yarpcerrors.Code, said calleeSaid) bool {
	return said.claim != ownership.ClaimUnclaimed && code == yarpcerrors.CodeDeadlineExceeded
}

// calleeSaid is what a callee's error response said besides its code: its
// claim, its pushback, and whether its instance's admission shed the
// attempt.
type calleeSaid struct {
	claim   ownership.Claim
	noRetry bool
	shed    bool
}

// answerOf reads what res, an error response with code, says
// (wire.ResponseClaim, wire.ResponseShed).
func (m *Middleware) answerOf(res *transport.Response, code yarpcerrors.Code) calleeSaid {
	claim, noRetry := wire.ResponseClaim(res, m.hdr.Claim, m.hdr.NoRetry)
	return calleeSaid{claim: claim, noRetry: noRetry, shed: wire.ResponseShed(res, code, claim, noRetry, m.hdr.Shed)}
}

// outcome returns the Outcome of an attempt that ended with err, code
// and class, its callee having said a.
func (a calleeSaid) outcome(err error, code yarpcerrors.Code, class wire.Class) *Outcome {
	return &Outcome{Err: err, Code: code, Class: class, Claim: a.claim, NoRetry: a.noRetry, Shed: a.shed}
}

// timedAttempt is the context of an attempt under a policy's attempt
// timeout, which remembers whose deadline bounds the attempt: the
// timeout's own, or the caller's, earlier.
type timedAttempt struct {
	context.Context
	deadline time.Time // the attempt's, as the timeout left it
	own      bool      // the timeout's: the caller's deadline is later, or none
}

// timedAttemptKey is the key under which a timedAttempt finds itself.
type timedAttemptKey struct{}

func (t *timedAttempt) Value(key any) any {
	if key == (timedAttemptKey{}) {
		return t
	}
	return t.Context.Value(key)
}

// withAttemptTimeout returns ctx bounded by the attempt timeout d, as
// context.WithTimeout does, remembering whether d or ctx's own deadline
// bounds it (callersDeadline).
func withAttemptTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithTimeout(ctx, d)
	deadline, _ := actx.Deadline()
	parent, ok := ctx.Deadline()
	return &timedAttempt{Context: actx, deadline: deadline, own: !ok || deadline.Before(parent)}, cancel
}

// callersDeadline reports whether an attempt sent with ctx was bounded by
// a deadline shorter than its own expected time: under a policy's attempt
// timeout, whether the caller's deadline (or one set below errown's retry
// middleware) came before the timeout's. Without an attempt timeout
// errown expects no time of an attempt: its timeout is the callee's.
func callersDeadline(ctx context.Context) bool {
	t, ok := ctx.Value(timedAttemptKey{}).(*timedAttempt)
	if !ok {
		return false
	}
	d, _ := ctx.Deadline()
	return !t.own || d.Before(t.deadline)
}
