package peers

// What this file holds is copied from package bench (../unary_test.go,
// ../http_test.go, ../cpu_unix_test.go): that package's helpers live in
// its test files, which another module cannot import. Only what the peer
// benchmarks need is here, unchanged but for the chain's arms.

import (
	"bytes"
	"context"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Names of the in-process chain: a caller calls "svc-b", whose handler
// calls "svc-c".
const (
	_caller    = "svc-a"
	_service   = "svc-b"
	_callee    = "svc-c"
	_procedure = "get"
)

var _payload = []byte(`{"key":"some-key","value":"a value of a few dozen bytes"}`)

// memOutbound is a transport.UnaryOutbound that does no I/O: it reads the
// request body, as a transport would, and answers with a fresh response,
// or, when down, fails as a callee in an outage does, with a fresh
// unavailable error. It counts its calls (the attempts of every arm).
type memOutbound struct {
	down  bool
	calls *int64 // one chain's requests run one at a time
}

var _ transport.UnaryOutbound = memOutbound{}

func (memOutbound) Transports() []transport.Transport { return nil }
func (memOutbound) Start() error                      { return nil }
func (memOutbound) Stop() error                       { return nil }
func (memOutbound) IsRunning() bool                   { return true }

func (o memOutbound) Call(_ context.Context, req *transport.Request) (*transport.Response, error) {
	*o.calls++
	if req.Body != nil {
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return nil, err
		}
	}
	if o.down {
		return &transport.Response{Headers: transport.NewHeaders()}, yarpcerrors.UnavailableErrorf("%s is down", req.Service)
	}
	return &transport.Response{Body: io.NopCloser(bytes.NewReader(_payload)), BodySize: len(_payload)}, nil
}

// callingHandler makes one outbound call with the handler's ctx, built the
// way yarpc's raw encoding builds it, and writes the answer.
type callingHandler struct {
	out transport.UnaryOutbound
}

func (h callingHandler) Handle(ctx context.Context, _ *transport.Request, resw transport.ResponseWriter) error {
	res, err := h.out.Call(ctx, &transport.Request{
		Caller:    _service,
		Service:   _callee,
		Procedure: _procedure,
		Encoding:  "raw",
		Body:      bytes.NewReader(_payload),
		BodySize:  len(_payload),
	})
	if err != nil {
		return err
	}
	_, err = io.Copy(resw, res.Body)
	if cerr := res.Body.Close(); err == nil {
		err = cerr
	}
	return err
}

// inboundRequest is the request the in-process chains serve: svc-a
// calling svc-b over HTTP, with no errown caller (a root).
func inboundRequest() *transport.Request {
	return &transport.Request{
		Caller:    _caller,
		Service:   _service,
		Procedure: _procedure,
		Encoding:  "raw",
		Transport: "http",
		Headers:   transport.NewHeaders(),
	}
}

// nopResponseWriter is a transport.ResponseWriter that keeps nothing.
type nopResponseWriter struct{}

func (nopResponseWriter) Write(p []byte) (int, error)  { return len(p), nil }
func (nopResponseWriter) AddHeaders(transport.Headers) {}
func (nopResponseWriter) SetApplicationError()         {}

// nopMiddleware passes every call on. It costs what any yarpc middleware
// costs: the chain yarpc builds around it.
type nopMiddleware struct{}

var (
	_ middleware.UnaryInbound  = nopMiddleware{}
	_ middleware.UnaryOutbound = nopMiddleware{}
)

func (nopMiddleware) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	return h.Handle(ctx, req, resw)
}

func (nopMiddleware) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	return out.Call(ctx, req)
}

// retryOnce is the bare and the nop-middleware chains' retry where the
// callee fails: a unary outbound middleware that sends a call a second
// time when its first attempt fails as unavailable or internal, at once
// (no backoff) and with no budget, the way a team retries "just once".
// It buffers the body to replay it; the failed attempt's response, if
// any, is closed.
type retryOnce struct{}

var _ middleware.UnaryOutbound = retryOnce{}

func (retryOnce) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		r := *req
		r.Body = bytes.NewReader(body)
		res, err := out.Call(ctx, &r)
		if attempt == 2 || !retryable(err) {
			return res, err
		}
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
	}
}

// retryable reports whether every arm retries err: unavailable and
// internal, the codes errown's policy here retries.
func retryable(err error) bool {
	return yarpcerrors.IsUnavailable(err) || yarpcerrors.IsInternal(err)
}

// errownConfig is errown's config for a caller of callee ("": none) in
// every peer benchmark, success or failure: a policy for the callee
// allowing 2 attempts (one retry) on unavailable and internal, as every
// peer's retry does, with a backoff ceiling of 1ns, which full jitter
// rounds to no wait (0 would be the 10ms default), as the peers wait
// none; a budget of one retry per original request (ratio 1; the floor
// stays the default 10 per second), the most this policy can ask for, so
// it never refuses a retry errown's claims allow. (Package bench's
// leafDownConfig.) Admission runs in its default mode, enforce, unless
// the environment's PEERS_ADMISSION names another (disabled, observe),
// to measure what it costs.
func errownConfig(callee string) errown.Config {
	var c errown.Config
	if callee != "" {
		c.Retry = errown.RetryConfig{
			Budget: retry.BudgetConfig{Ratio: 1},
			Policies: []retry.PolicyConfig{{
				Service:        callee,
				Idempotent:     new(true),
				MaxAttempts:    2,
				RetryableCodes: []string{"unavailable", "internal"},
				InitialBackoff: time.Nanosecond,
				MaxBackoff:     time.Nanosecond,
			}},
		}
	}
	c.Admission.Mode = inbound.AdmissionMode(os.Getenv("PEERS_ADMISSION"))
	return c
}

// cpuTime returns the CPU time the process has used, all threads, user
// and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
