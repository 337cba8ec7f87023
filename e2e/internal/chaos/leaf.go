package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/errown/errown/internal/adapt"
	"github.com/errown/errown/internal/defaults"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Outcome is what a Leaf does with one request.
type Outcome uint8

// The outcomes.
const (
	// Succeed answers at once.
	Succeed Outcome = iota
	// Delay answers after a delay, or fails when the context ends first.
	Delay
	// Fail fails with unavailable.
	Fail
	// Overload fails with resource-exhausted.
	Overload
	// TimeOut fails with deadline-exceeded after a delay.
	TimeOut
	// Block waits for the context to end and fails with its error.
	Block
	_outcomes
)

// Outcomes are all the outcomes, for LeafConfig.Outcomes.
var Outcomes = []Outcome{Succeed, Delay, Fail, Overload, TimeOut, Block}

var _outcomeNames = [...]string{"succeed", "delay", "fail", "overload", "timeout", "block"}

// String names the outcome.
func (o Outcome) String() string {
	if int(o) < len(_outcomeNames) {
		return _outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// LeafConfig configures a Leaf.
type LeafConfig struct {
	// Source draws each request's outcome. Required.
	Source Source
	// Outcomes are the outcomes drawn from, evenly. Default all of them.
	Outcomes []Outcome
	// MaxDelay bounds the delays of Delay and TimeOut. Default 2ms.
	MaxDelay time.Duration
}

// Leaf is the callee below the chaos middleware: it answers each request
// with an outcome drawn from its source, echoing the request's ID and
// procedure in whatever it returns.
type Leaf struct {
	src      Source
	outcomes []Outcome
	maxDelay time.Duration
	served   [_outcomes]atomic.Int64
}

// NewLeaf returns the leaf cfg describes.
func NewLeaf(cfg LeafConfig) (*Leaf, error) {
	if cfg.Source == nil {
		return nil, errors.New("chaos: a leaf's Source is required")
	}
	for _, o := range cfg.Outcomes {
		if o >= _outcomes {
			return nil, fmt.Errorf("chaos: unknown outcome %d in Outcomes (want 0 to %d)", o, _outcomes-1)
		}
	}
	l := &Leaf{src: cfg.Source, outcomes: cfg.Outcomes, maxDelay: cfg.MaxDelay}
	if len(l.outcomes) == 0 {
		l.outcomes = Outcomes
	}
	if l.maxDelay <= 0 {
		l.maxDelay = 2 * time.Millisecond
	}
	return l, nil
}

// Served returns how many requests l answered with each outcome.
func (l *Leaf) Served() map[Outcome]int64 {
	m := make(map[Outcome]int64, _outcomes)
	for o := range _outcomes {
		if n := l.served[o].Load(); n > 0 {
			m[o] = n
		}
	}
	return m
}

// Serve answers request id to procedure as its drawn outcome says: the
// echo as the body, or an error whose message holds it. A handler's
// errown sets the claims.
func (l *Leaf) Serve(ctx context.Context, id uint64, procedure string) ([]byte, error) {
	o := l.outcomes[l.src.Next()%uint64(len(l.outcomes))]
	l.served[o].Add(1)
	echo := Echo(id, procedure)
	switch o {
	case Delay:
		if err := sleep(ctx, scaled(l.src, l.maxDelay)); err != nil {
			return nil, fmt.Errorf("%s %w", echo, err)
		}
	case Fail:
		return nil, yarpcerrors.UnavailableErrorf("%s the leaf is down", echo)
	case Overload:
		return nil, yarpcerrors.ResourceExhaustedErrorf("%s the leaf is overloaded", echo)
	case TimeOut:
		_ = sleep(ctx, scaled(l.src, l.maxDelay))
		return nil, yarpcerrors.DeadlineExceededErrorf("%s the leaf timed out", echo)
	case Block:
		<-ctx.Done()
		return nil, fmt.Errorf("%s %w", echo, ctx.Err())
	}
	return []byte(echo), nil
}

// sleep sleeps d, or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Transport returns l as an in-process yarpc outbound, the callee and the
// wire in one: it reads every header of a request (a transport writes
// them on the wire), its body for the ID, and answers as Serve does, the
// echo also in EchoHeader, a failure with a claim drawn (claimed,
// unclaimed or none, in errown's default claim header), a context that
// ended as yarpc's HTTP outbound reports it ("unknown error from http
// client: context deadline exceeded") or as deadline-exceeded.
func (l *Leaf) Transport() transport.UnaryOutbound { return &leafOutbound{l: l} }

type leafOutbound struct {
	adapt.NoLifecycle
	l *Leaf
}

var _claims = [...]string{"claimed", "unclaimed", ""}

func (o *leafOutbound) Call(ctx context.Context, req *transport.Request) (*transport.Response, error) {
	var size int
	for k, v := range req.Headers.Items() {
		size += len(k) + len(v)
	}
	for k, v := range req.Headers.OriginalItems() {
		size += len(k) + len(v)
	}
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, yarpcerrors.InternalErrorf("chaos: reading the body of %s: %v", req.Procedure, err)
		}
	}
	id, ok := ID(body)
	if !ok {
		return nil, yarpcerrors.InvalidArgumentErrorf("chaos: %s's body of %d bytes carries no ID (headers %d bytes)", req.Procedure, len(body), size)
	}
	echo := Echo(id, req.Procedure)
	h := transport.NewHeadersWithCapacity(2).With(EchoHeader, echo)
	res, err := o.l.Serve(ctx, id, req.Procedure)
	if err == nil {
		return &transport.Response{Headers: h, Body: io.NopCloser(bytes.NewReader(res)), BodySize: len(res)}, nil
	}
	if yarpcerrors.IsStatus(err) {
		if claim := _claims[o.l.src.Next()%uint64(len(_claims))]; claim != "" {
			h = h.With(defaults.ClaimHeader, claim)
		}
		return &transport.Response{Headers: h}, err
	}
	// The context ended.
	if errors.Is(err, context.DeadlineExceeded) && o.l.src.Next()%2 == 0 {
		return &transport.Response{Headers: h}, yarpcerrors.UnknownErrorf("unknown error from http client: %v", err)
	}
	if errors.Is(err, context.Canceled) {
		return &transport.Response{Headers: h}, yarpcerrors.CancelledErrorf("%v", err)
	}
	return &transport.Response{Headers: h}, yarpcerrors.DeadlineExceededErrorf("%v", err)
}
