package errowntest

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/wire"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Attempt is one attempt of one outbound call, as it went on the wire.
type Attempt struct {
	// Caller is the calling service (transport.Request.Caller).
	Caller string
	// Service is the callee service.
	Service string
	// Procedure is the callee procedure.
	Procedure string
	// Attempt is the attempt number the request carried in the attempt
	// header, 1 when the header was absent or unreadable.
	Attempt int
	// Code is the code of the error the attempt ended with,
	// yarpcerrors.CodeOK when it succeeded.
	Code yarpcerrors.Code
	// Claim is the claim header on the response as received, "" when there
	// was no response or no such header.
	Claim string
}

// String returns "caller->service#attempt code claim".
func (a Attempt) String() string {
	claim := a.Claim
	claim = cmp.Or(claim, "-")
	return fmt.Sprintf("%s->%s#%d %v %s", a.Caller, a.Service, a.Attempt, a.Code, claim)
}

// RecorderConfig names the headers a Recorder reads.
type RecorderConfig struct {
	// ClaimHeader is the response header carrying the claim. Default
	// "errown-claim".
	ClaimHeader string
	// AttemptHeader is the request header carrying the attempt number.
	// Default "errown-attempt".
	AttemptHeader string
}

// Recorder is a unary outbound middleware that records every attempt that
// passes through it. Put it innermost, next to the transport, to see each
// attempt a retry middleware makes. It is safe for concurrent use.
type Recorder struct {
	claimHeader   string
	attemptHeader string

	mu       sync.Mutex
	attempts []Attempt
}

var _ middleware.UnaryOutbound = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder(cfg RecorderConfig) *Recorder {
	cfg.ClaimHeader = cmp.Or(cfg.ClaimHeader, defaults.ClaimHeader)
	cfg.AttemptHeader = cmp.Or(cfg.AttemptHeader, defaults.AttemptHeader)
	return &Recorder{
		claimHeader:   transport.CanonicalizeHeaderKey(cfg.ClaimHeader),
		attemptHeader: transport.CanonicalizeHeaderKey(cfg.AttemptHeader),
	}
}

// Call implements middleware.UnaryOutbound.
func (r *Recorder) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	a := Attempt{Caller: req.Caller, Service: req.Service, Procedure: req.Procedure, Attempt: 1}
	if v, ok := req.Headers.Get(r.attemptHeader); ok {
		if n, ok := wire.ParseAttempt(v); ok {
			a.Attempt = n
		}
	}
	res, err := out.Call(ctx, req)
	a.Code = yarpcerrors.FromError(err).Code()
	if res != nil {
		a.Claim, _ = res.Headers.Get(r.claimHeader)
	}
	r.mu.Lock()
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
	return res, err
}

// Attempts returns a copy of every attempt recorded, in the order they
// ended.
func (r *Recorder) Attempts() []Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Attempt(nil), r.attempts...)
}

// Edge returns the attempts caller made to service, in the order they
// ended; nil when there were none.
func (r *Recorder) Edge(caller, service string) []Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	var edge []Attempt
	for _, a := range r.attempts {
		if a.Caller == caller && a.Service == service {
			edge = append(edge, a)
		}
	}
	return edge
}

// Reset forgets every attempt recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = nil
}
