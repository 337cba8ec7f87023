package nethttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
)

// echo is a plain net/http service (no errown) that records each request
// it gets and answers the nth with status(n) and "attempt n: <body>".
type echo struct {
	url  string
	mu   sync.Mutex
	reqs []echoRequest
}

type echoRequest struct {
	body, attempt, ttl string
	contentLength      int64
}

func startEcho(t *testing.T, status func(n int) int) *echo {
	e := &echo{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.reqs = append(e.reqs, echoRequest{body: string(b), attempt: r.Header.Get(_attempt), ttl: r.Header.Get("Context-TTL-MS"), contentLength: r.ContentLength})
		n := len(e.reqs)
		e.mu.Unlock()
		w.WriteHeader(status(n))
		_, _ = fmt.Fprintf(w, "attempt %d: %s", n, b)
	}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

func (e *echo) requests() []echoRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]echoRequest(nil), e.reqs...)
}

// failFirst fails the first request with 503 and serves the others.
func failFirst(n int) int {
	if n == 1 {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

func always(status int) func(int) int { return func(int) int { return status } }

// recordingBase is an http.RoundTripper that records what each attempt
// carried for net/http's own re-sends.
type recordingBase struct {
	base    http.RoundTripper
	mu      sync.Mutex
	getBody []string // what GetBody returned, "<nil>" without one
}

func (b *recordingBase) RoundTrip(r *http.Request) (*http.Response, error) {
	got := "<nil>"
	if r.GetBody != nil {
		rc, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		p, _ := io.ReadAll(rc)
		got = string(p)
	}
	b.mu.Lock()
	b.getBody = append(b.getBody, got)
	b.mu.Unlock()
	return b.base.RoundTrip(r)
}

// opaque hides a reader's type: a body of unknown length that only
// reading can copy.
type opaque struct {
	io.Reader
	closed atomic.Bool
}

func (o *opaque) Close() error {
	o.closed.Store(true)
	return nil
}

// client returns an http.Client sending through Transport(mw) to base,
// naming every callee "echo".
func client(mw *errown.Middleware, base http.RoundTripper) *http.Client {
	return &http.Client{Transport: nethttp.Transport(mw, base, nethttp.WithService(func(*http.Request) string { return "echo" }))}
}

func send(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	res, err := c.Do(req)
	require.NoError(t, err, "Do")
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err, "read body")
	return res.StatusCode, string(b)
}

// A retry sends the same body again, whatever its kind, and the caller
// gets the last attempt's response. Each replayed attempt carries a
// GetBody, for net/http's own re-send on a dead connection.
func TestTransportReplaysBody(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		body    func() io.Reader
		want    string
		length  int64 // what the server sees
		getBody string
	}{
		{name: "bytes", method: http.MethodPost, body: func() io.Reader { return strings.NewReader("payload") }, want: "payload", length: 7, getBody: "payload"},
		{name: "unknown length", method: http.MethodPost, body: func() io.Reader { return &opaque{Reader: strings.NewReader("payload")} }, want: "payload", length: 7, getBody: "payload"},
		{name: "none", method: http.MethodGet, body: func() io.Reader { return nil }, want: "", length: 0, getBody: "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEcho(t, failFirst)
			mw := newMiddleware(t, policyConfig("echo", retry.ModeEnforce), nil, nil)
			base := &recordingBase{base: newBase(t)}
			body := tt.body()
			req, err := http.NewRequest(tt.method, e.url, body)
			require.NoError(t, err)
			status, got := send(t, client(mw, base), req)
			assert.Equal(t, http.StatusOK, status, "status (body %q)", got)
			assert.Equal(t, "attempt 2: "+tt.want, got, "body")
			reqs := e.requests()
			require.Len(t, reqs, 2, "the server's requests")
			for i, r := range reqs {
				assert.Equal(t, tt.want, r.body, "attempt %d carried", i+1)
			}
			assert.Equal(t, "2", reqs[1].attempt, "the retry's attempt header")
			assert.Equal(t, tt.length, reqs[1].contentLength, "the retry's Content-Length")
			assert.Equal(t, tt.getBody, base.getBody[1], "the retry's GetBody gave")
			if o, ok := body.(*opaque); ok {
				assert.True(t, o.closed.Load(), "the caller's body was not closed")
			}
		})
	}
}

// A body over errown's retry.maxBodyBytes is sent once, whole, and never
// retried; the caller gets the response of that one attempt.
func TestTransportBodyTooLarge(t *testing.T) {
	e := startEcho(t, always(http.StatusServiceUnavailable))
	scope := tally.NewTestScope("", nil)
	cfg := policyConfig("echo", retry.ModeEnforce)
	cfg.Retry.MaxBodyBytes = 8
	mw := newMiddleware(t, cfg, scope, nil)
	payload := strings.Repeat("z", 100)
	body := &opaque{Reader: strings.NewReader(payload)}
	req, err := http.NewRequest(http.MethodPut, e.url, body)
	require.NoError(t, err)
	status, got := send(t, client(mw, newBase(t)), req)
	assert.Equal(t, http.StatusServiceUnavailable, status, "status (body %q)", got)
	assert.Equal(t, "attempt 1: "+payload, got, "body")
	reqs := e.requests()
	if assert.Len(t, reqs, 1, "the server got %+v, want one request with the whole body", reqs) {
		assert.Equal(t, payload, reqs[0].body, "the server got %+v, want one request with the whole body", reqs)
	}
	key := tally.KeyForPrefixedStringMap("errown.retry.denied", map[string]string{"callee": "echo", "reason": "body-too-large"})
	if c := scope.Snapshot().Counters()[key]; assert.NotNil(t, c, "retry.denied{reason=body-too-large}") {
		assert.Equal(t, int64(1), c.Value(), "retry.denied{reason=body-too-large}")
	}
	assert.True(t, body.closed.Load(), "the caller's body was not closed")
}

// Without a policy for the callee errown sends the request once, and an
// error status comes back as a response, never an error.
func TestTransportNoPolicy(t *testing.T) {
	e := startEcho(t, always(http.StatusInternalServerError))
	mw := newMiddleware(t, policyConfig("", retry.ModeEnforce), nil, nil)
	req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader("x"))
	status, got := send(t, client(mw, newBase(t)), req)
	assert.Equal(t, http.StatusInternalServerError, status, "status (body %q)", got)
	assert.Equal(t, "attempt 1: x", got, "body")
	assert.Len(t, e.requests(), 1, "the server's requests")
}

// An attempt that gets no response is retried like a yarpc call that
// failed unknown; when the last one fails too, the caller gets base's own
// error.
func TestTransportConnectionError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	scope := tally.NewTestScope("", nil)
	mw := newMiddleware(t, policyConfig("echo", retry.ModeEnforce), scope, nil)
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	res, err := client(mw, newBase(t)).Do(req)
	if err == nil {
		res.Body.Close()
	}
	require.Error(t, err, "no error from a closed server")
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "want base's connection refused")
	key := tally.KeyForPrefixedStringMap("errown.retry.attempts", map[string]string{"callee": "echo"})
	if c := scope.Snapshot().Counters()[key]; assert.NotNil(t, c, "retry.attempts") {
		assert.Equal(t, int64(1), c.Value(), "retry.attempts")
	}
}

// Each attempt carries the time left before the context's deadline, as
// yarpc's HTTP outbound does.
func TestTransportSendsTTL(t *testing.T) {
	e := startEcho(t, always(http.StatusOK))
	mw := newMiddleware(t, policyConfig("", retry.ModeEnforce), nil, nil)
	c := client(mw, newBase(t))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
	send(t, c, req)
	req, _ = http.NewRequest(http.MethodGet, e.url, nil)
	send(t, c, req)

	reqs := e.requests()
	ms, err := strconv.Atoi(reqs[0].ttl)
	assert.True(t, err == nil && ms > 1000 && ms <= 3000, "with a 3s deadline: Context-TTL-MS %q", reqs[0].ttl)
	assert.Empty(t, reqs[1].ttl, "without a deadline: Context-TTL-MS, want none")
}

// By default the callee is named by the request's host and the procedure
// by its method and path: a policy for one procedure retries it and
// leaves the others alone.
func TestTransportDefaultNames(t *testing.T) {
	e := startEcho(t, always(http.StatusServiceUnavailable))
	host := strings.TrimPrefix(e.url, "http://")
	cfg := policyConfig(host, retry.ModeEnforce)
	cfg.Retry.Policies[0].Procedure = "GET /retry"
	mw := newMiddleware(t, cfg, nil, nil)
	c := &http.Client{Transport: nethttp.Transport(mw, newBase(t))}
	for _, path := range []string{"/retry", "/other", "/retry/"} {
		req, _ := http.NewRequest(http.MethodGet, e.url+path, nil)
		res, err := c.Do(req)
		require.NoError(t, err)
		assert.Same(t, req, res.Request, "the response's Request is not the caller's")
		res.Body.Close()
	}
	assert.Len(t, e.requests(), 4, "the server's requests") // GET /retry twice, the others once
}
