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

// ending is whether an attempt's end gives anything to judge its callee
// by, beyond its code and claim.
type ending uint8

const (
	// endJudged: the outcome is the callee's, health or overload.
	endJudged ending = iota
	// endCancelled: its caller gave up on it (wire.Cancelled); its slot
	// goes back with no outcome.
	endCancelled
	// endCallersDeadline: it timed out on a caller's deadline shorter
	// than its attempt timeout: no evidence of the callee's overload.
	endCallersDeadline
	// endUnsent: the peer chooser sent it nowhere (calls.ErrNoOtherPeer);
	// it did not leave the process and is no attempt of the call.
	endUnsent
)

// attemptEnding returns how an attempt sent with ctx ended.
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

// giveBack gives back adm, a slot of c's limit (c nil: none).
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

// overloadEvidence reports whether an attempt is evidence of its callee's
// overload, moving the in-flight limit and the shares: it timed out on
// the callee's own behalf (an unclaimed error comes from further below).
// A refusal is not: an admission shed or a rate limiter answered at once,
// holding what it can finish in time, and cutting the caller's limit for
// it would fight that control (two controllers on one queue). A shed's
// claim and pushback still stop every retry above it.
func overloadEvidence(code yarpcerrors.Code, said calleeSaid) bool {
	return said.claim != ownership.ClaimUnclaimed && code == yarpcerrors.CodeDeadlineExceeded
}

// calleeSaid is what an error response said besides its code.
type calleeSaid struct {
	claim   ownership.Claim
	noRetry bool
	shed    bool
}

// answerOf reads what res, an error response with code, says.
func (m *Middleware) answerOf(res *transport.Response, code yarpcerrors.Code) calleeSaid {
	claim, noRetry := wire.ResponseClaim(res, m.hdr.Claim, m.hdr.NoRetry)
	return calleeSaid{claim: claim, noRetry: noRetry, shed: wire.ResponseShed(res, code, claim, noRetry, m.hdr.Shed)}
}

// outcome returns the Outcome of an attempt the callee answered as a.
func (a calleeSaid) outcome(err error, code yarpcerrors.Code, class wire.Class) *Outcome {
	return &Outcome{Err: err, Code: code, Class: class, Claim: a.claim, NoRetry: a.noRetry, Shed: a.shed}
}

// timedAttempt is an attempt's context under a policy's attempt timeout,
// remembering whether the timeout's deadline or the caller's bounds it.
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

// withAttemptTimeout is context.WithTimeout(ctx, d) remembering whose
// deadline bounds it (callersDeadline).
func withAttemptTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithTimeout(ctx, d)
	deadline, _ := actx.Deadline()
	parent, ok := ctx.Deadline()
	return &timedAttempt{Context: actx, deadline: deadline, own: !ok || deadline.Before(parent)}, cancel
}

// callersDeadline reports whether an attempt under an attempt timeout was
// bounded by an earlier deadline (the caller's, or one set below errown's
// retry middleware). Without an attempt timeout, errown expects no time.
func callersDeadline(ctx context.Context) bool {
	t, ok := ctx.Value(timedAttemptKey{}).(*timedAttempt)
	if !ok {
		return false
	}
	d, _ := ctx.Deadline()
	return !t.own || d.Before(t.deadline)
}
