package nethttp

import (
	"context"
	"errors"
	"net/http"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/adapt"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
)

// Attempts returns mw's innermost attempt step as an http.RoundTripper
// around base (http.DefaultTransport when nil). It goes below an
// application's own RoundTripper that sends requests again (a retrying
// RoundTripper, a client library that loops), with Transport above both:
//
//	client := &http.Client{Transport: nethttp.Transport(mw, appRetry(nethttp.Attempts(mw, base)))}
//
// It counts every request the application's RoundTripper sends in the
// call's attempts and storm figures, and does not send a replay errown's
// rules refuse (of an unclaimed error; past the edge's policy, budget,
// pushback or deadline): the replaying RoundTripper gets the previous
// attempt's response back, status, headers and body (read into memory up
// to retry.maxBodyBytes; after a larger one, or a success, a replay goes),
// or its error. Each refusal counts in
// errown.retry.denied{reason=foreign-...}, each replay let through in
// errown.retry.foreign_attempts.
//
// Attempts knows a call by the context Transport gives each attempt's
// request: a request with another context, or without Transport above,
// passes through uncounted. Use one Attempts per Transport.
//
// net/http's Transport may itself resend a request inside one RoundTrip
// of base, which errown sees as one attempt: only on a reused connection
// that returned no byte, and a written request only when replayable (GET,
// HEAD, OPTIONS, TRACE or an Idempotency-Key, with no body or a GetBody).
// No response came, so no claim, and errown's rules would let such a
// retry go within the policy.
func Attempts(mw *errown.Middleware, base http.RoundTripper) http.RoundTripper {
	if mw == nil {
		panic("nethttp: Attempts needs a Middleware")
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &attempts{step: adapt.AttemptsOf(mw), base: base}
}

// attemptKey is the context key under which Transport passes each of
// errown's attempts, as a *transport.Request, down to Attempts.
type attemptKey struct{}

type attempts struct {
	step middleware.UnaryOutbound
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *attempts) RoundTrip(r *http.Request) (*http.Response, error) {
	treq, _ := r.Context().Value(attemptKey{}).(*transport.Request)
	if treq == nil {
		return t.base.RoundTrip(r)
	}
	s := &send{base: t.base, r: r, errownAttempt: treq}
	res, err := t.step.Call(r.Context(), treq, s)
	if !s.sent {
		return s.refused(res, err)
	}
	if s.err != nil {
		return nil, s.err
	}
	if res != nil && res.Body != nil {
		s.res.Body = res.Body // read into memory by the step, or as it came
	}
	return s.res, nil
}

// send is one request Attempts sends to base, as a transport.UnaryOutbound.
type send struct {
	adapt.NoLifecycle

	base          http.RoundTripper
	r             *http.Request
	errownAttempt *transport.Request // the request of errown's attempt

	sent bool
	res  *http.Response
	err  error // base's
}

var _ transport.UnaryOutbound = (*send)(nil)

// Call sends r, with treq's headers when the step stamped a replay with
// its attempt number (errown's own attempt has them already).
func (s *send) Call(ctx context.Context, treq *transport.Request) (*transport.Response, error) {
	s.sent = true
	r := s.r
	if treq != s.errownAttempt {
		r = s.r.WithContext(ctx)
		r.Header = s.r.Header.Clone()
		if r.Header == nil {
			r.Header = make(http.Header, 1)
		}
		setHTTPHeaders(r.Header, treq.Headers)
	}
	s.res, s.err = s.base.RoundTrip(r)
	if s.err != nil {
		return nil, &sendError{status: transportError(ctx, s.err), err: s.err}
	}
	tres, err := transportResponse(s.res)
	if err != nil {
		// The step keeps the error for a refused replay to return, maybe on
		// another goroutine while this response is handed on and changed
		// (call.result): keep a copy nobody touches.
		kept := *s.res
		kept.Header = s.res.Header.Clone()
		kept.Body = nil
		return tres, &sendError{status: err, res: &kept}
	}
	return tres, nil
}

// refused returns what the previous attempt returned, for a replay the
// step refused with res and err (that attempt's, as kept): its HTTP
// response with the kept body, or base's error. The replay's body is
// closed, as a RoundTripper must.
func (s *send) refused(res *transport.Response, err error) (*http.Response, error) {
	if s.r.Body != nil {
		_ = s.r.Body.Close()
	}
	var e *sendError
	if !errors.As(err, &e) {
		// Not an attempt of Attempts': should not happen.
		return nil, err
	}
	if e.res == nil {
		return nil, e.err
	}
	out := *e.res
	out.Header = e.res.Header.Clone()
	out.Body = http.NoBody
	if res != nil && res.Body != nil {
		out.Body = res.Body
	}
	out.Request = s.r
	return &out, nil
}

// sendError is a send's error as errown's step keeps it: the yarpc error
// errown classifies (Unwrap), with base's error response or error, for a
// refused replay to return again.
type sendError struct {
	status error
	res    *http.Response
	err    error
}

func (e *sendError) Error() string { return e.status.Error() }
func (e *sendError) Unwrap() error { return e.status }
