package nethttp_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/nethttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// _bound is the buffer bound of the streaming tests.
const _bound = 1024

// A handler that writes past the buffer bound, or flushes, has its
// response sent as it goes: intact, but without errown's claim and storm
// headers. Within the bound the same error goes out claimed.
func TestStreamPastBufferSendsNoClaim(t *testing.T) {
	chunk := strings.Repeat("x", 1000)
	tests := []struct {
		name   string
		status int
		serve  http.HandlerFunc
		body   string
		claim  string // "" for none
	}{
		{
			name:   "failure within the bound",
			status: http.StatusServiceUnavailable,
			serve: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(chunk))
			},
			body:  chunk,
			claim: "claimed",
		},
		{
			name:   "failure past the bound",
			status: http.StatusServiceUnavailable,
			serve: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
				for range 10 {
					_, _ = w.Write([]byte(chunk))
				}
			},
			body: strings.Repeat(chunk, 10),
		},
		{
			name:   "success past the bound",
			status: http.StatusOK,
			serve: func(w http.ResponseWriter, _ *http.Request) {
				for range 10 {
					_, _ = w.Write([]byte(chunk))
				}
			},
			body: strings.Repeat(chunk, 10),
		},
		{
			name:   "failure flushed",
			status: http.StatusServiceUnavailable,
			serve: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("partial "))
				w.(http.Flusher).Flush()
				_, _ = w.Write([]byte("rest"))
			},
			body: "partial rest",
		},
		{
			name:   "failure flushed through a ResponseController",
			status: http.StatusServiceUnavailable,
			serve: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("partial "))
				assert.NoError(t, http.NewResponseController(w).Flush(), "Flush")
				_, _ = w.Write([]byte("rest"))
			},
			body: "partial rest",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaf := startNode(t, nodeConfig{name: "S", errown: true, serve: tt.serve,
				handlerOptions: []nethttp.HandlerOption{nethttp.WithMaxBufferBytes(_bound)}})
			r := get(t, leaf.url)
			assert.Equal(t, tt.status, r.status, "status")
			assert.True(t, r.body == tt.body, "got %d bytes, want %d bytes", len(r.body), len(tt.body))
			assert.Equal(t, tt.claim, r.header.Get(_claim), "claim")
			if tt.claim == "" {
				assert.NotContains(t, r.header, _storm, "a response sent before errown decided carries a storm header %q", r.header.Get(_storm))
			}
			if tt.status >= 400 {
				// errown still decided, and counted the error.
				assert.Equal(t, int64(1), leaf.counter("inbound.claimed", nil), "inbound.claimed")
			}
		})
	}
}

// A failing streaming handler's caller sees no claim: it retries once
// (the missing-claim rule) and passes the error on unclaimed.
func TestStreamingFailureCallerAppliesMissingClaimRule(t *testing.T) {
	big := strings.Repeat("y", 4*_bound)
	s := startNode(t, nodeConfig{name: "S", errown: true,
		handlerOptions: []nethttp.HandlerOption{nethttp.WithMaxBufferBytes(_bound)},
		serve: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(big))
		}})
	b := startNode(t, nodeConfig{name: "B", errown: true, policy: true, callee: s})

	r := get(t, b.url)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "B's status")
	assert.True(t, strings.HasSuffix(r.body, big+"\n"), "B answered %d bytes, want them ending with S's %d bytes", len(r.body), len(big))
	assert.Equal(t, "unclaimed", r.header.Get(_claim), "B's claim")
	assert.Equal(t, map[string]int64{"B": 1, "S": 2}, served(b, s), "served")
	assert.Equal(t, int64(1), b.counter("egress.failures", map[string]string{"claim": "missing"}), "B: egress.failures{claim=missing}")
}

// errown owns its headers: a claim, no-retry or storm header the handler
// set itself or forwarded from its own callee is dropped (and counted),
// and only errown's decision goes out; the handler's other headers,
// application headers included, go out as it set them.
func TestHandlerOwnHeadersDropped(t *testing.T) {
	forward := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			h := w.Header()
			h.Set(_claim, "unclaimed")
			h.Set(_noRetry, "true")
			h.Set(_storm, "9,9,0,0,0")
			h.Set("Rpc-Header-Trace-Tag", "abc")
			h.Set("X-Other", "y")
			w.WriteHeader(status)
			_, _ = w.Write([]byte("body"))
		}
	}
	tests := []struct {
		status int
		claim  string
		storm  string
	}{
		{status: http.StatusInternalServerError, claim: "claimed", storm: "1,1,0,0,0"},
		{status: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			s := startNode(t, nodeConfig{name: "S", errown: true, serve: forward(tt.status)})
			r := get(t, s.url)
			assert.Equal(t, tt.status, r.status, "status (body %q)", r.body)
			assert.Equal(t, "body", r.body, "body")
			for name, want := range map[string]string{
				_claim: tt.claim, _noRetry: "", _storm: tt.storm,
				"Rpc-Header-Trace-Tag": "abc", "X-Other": "y",
			} {
				assert.Equal(t, want, r.header.Get(name), name)
			}
			assert.Equal(t, int64(1), s.counter("inbound.replaced_headers", nil), "inbound.replaced_headers")
		})
	}
}

// A Context-TTL-MS header, which yarpc callers send, bounds the request's
// context; a malformed one is ignored.
func TestHandlerReadsTTL(t *testing.T) {
	left := make(chan time.Duration, 1)
	s := startNode(t, nodeConfig{name: "S", errown: true, serve: func(w http.ResponseWriter, r *http.Request) {
		d, ok := r.Context().Deadline()
		if !ok {
			left <- -1
			return
		}
		left <- time.Until(d)
	}})
	for _, tt := range []struct {
		ttl      string
		min, max time.Duration
	}{
		{ttl: "", min: -1, max: -1},
		{ttl: "abc", min: -1, max: -1},
		{ttl: "-5", min: -1, max: -1},
		{ttl: "3000", min: time.Second, max: 3 * time.Second},
	} {
		h := http.Header{}
		if tt.ttl != "" {
			h.Set("Context-TTL-MS", tt.ttl)
		}
		r := do(t, http.MethodGet, s.url+_path, nil, h)
		assert.Equal(t, http.StatusOK, r.status, "TTL %q: status", tt.ttl)
		got := <-left
		assert.True(t, got >= tt.min && got <= tt.max, "TTL %q: the handler had %v left, want between %v and %v (-1: no deadline)", tt.ttl, got, tt.min, tt.max)
	}
}

// Pushback: a handler that asks its callers not to retry (inbound.
// DoNotRetry) sends errown's no-retry header, and its caller honours it:
// no retry, and its own error goes up unclaimed (a refusal satisfies the
// retry criteria).
func TestPushback(t *testing.T) {
	s := startNode(t, nodeConfig{name: "S", errown: true, serve: func(w http.ResponseWriter, r *http.Request) {
		assert.True(t, inbound.DoNotRetry(r.Context()), "DoNotRetry: the request is not tracked")
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}})
	b := startNode(t, nodeConfig{name: "B", errown: true, policy: true, callee: s})

	r := get(t, b.url)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "B's status")
	assert.Equal(t, "unclaimed", r.header.Get(_claim), "B's claim")
	for _, h := range b.calleeHeaders() {
		assert.Equal(t, "true", h.Get(_noRetry), "S's no-retry header")
	}
	assert.Equal(t, map[string]int64{"B": 1, "S": 1}, served(b, s), "served")
	assert.Equal(t, int64(1), b.counter("retry.denied", map[string]string{"callee": "S", "reason": "pushback"}), "B: retry.denied{reason=pushback}")
}

// Each error status stands for the yarpc code yarpc's HTTP transport reads
// from it, which decides whether the caller retries it (a failure errown
// retries by default) or not (an answer; a failure not retried by
// default), and how the caller counts it.
func TestStatusCodes(t *testing.T) {
	tests := []struct {
		status  int
		retried bool
		failure bool // else an answer
	}{
		{http.StatusBadRequest, false, false},
		{http.StatusUnauthorized, false, false},
		{http.StatusForbidden, false, false},
		{http.StatusNotFound, false, false},
		{http.StatusConflict, false, false},
		{http.StatusTeapot, false, false},
		{http.StatusTooManyRequests, false, true},
		{499, false, false},
		{http.StatusInternalServerError, true, true},
		{http.StatusNotImplemented, false, false},
		{http.StatusBadGateway, true, true},
		{http.StatusServiceUnavailable, true, true},
		{http.StatusGatewayTimeout, true, true},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			s := startNode(t, nodeConfig{name: "S", errown: true, fail: tt.status})
			b := startNode(t, nodeConfig{name: "B", errown: true, policy: true, callee: s})
			r := get(t, b.url)
			assert.Equal(t, tt.status, r.status, "B's status")
			want := int64(1)
			if tt.retried {
				want = 2
			}
			assert.Equal(t, want, s.served.Load(), "S served")
			failures := b.counter("egress.failures", map[string]string{"claim": "claimed"})
			answers := b.counter("egress.answers", nil)
			wantFailures, wantAnswers := int64(0), int64(1)
			if tt.failure {
				wantFailures, wantAnswers = 1, 0
			}
			assert.Equal(t, wantFailures, failures, "B's failures (want a failure: %v)", tt.failure)
			assert.Equal(t, wantAnswers, answers, "B's answers (want a failure: %v)", tt.failure)
		})
	}
}

// A handler that hijacks the connection answers as it likes, errown's
// headers aside.
func TestHandlerHijack(t *testing.T) {
	s := startNode(t, nodeConfig{name: "S", errown: true, serve: func(w http.ResponseWriter, _ *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if !assert.NoError(t, err, "Hijack") {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi")
		_ = brw.Flush()
	}})
	r := get(t, s.url)
	assert.Equal(t, http.StatusOK, r.status, "status (body %q)", r.body)
	assert.Equal(t, "hi", r.body, "body")
}

// Trailers the handler declared reach the caller, after a buffered body.
func TestHandlerTrailers(t *testing.T) {
	s := startNode(t, nodeConfig{name: "S", errown: true, serve: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("data"))
		w.Header().Set("X-Checksum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "7")
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+_path, nil)
	res, err := (&http.Client{Transport: newBase(t)}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var body strings.Builder
	_, err = bufio.NewReader(res.Body).WriteTo(&body)
	require.NoError(t, err)
	assert.Equal(t, "data", body.String(), "body")
	assert.Equal(t, "42", res.Trailer.Get("X-Checksum"), "X-Checksum trailer (trailers %v)", res.Trailer)
	assert.Equal(t, "7", res.Trailer.Get("X-Late"), "X-Late trailer (trailers %v)", res.Trailer)
}

// The handler's procedure is the ServeMux pattern by default, or what
// WithProcedure says: the procedure of its root storms.
func TestHandlerProcedure(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []nethttp.HandlerOption
		want string
	}{
		{name: "mux pattern", want: _pattern},
		{name: "WithProcedure", opts: []nethttp.HandlerOption{nethttp.WithProcedure(func(r *http.Request) string { return "call-" + r.Method })}, want: "call-GET"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startNode(t, nodeConfig{name: "C", fail: http.StatusServiceUnavailable})
			a := startNode(t, nodeConfig{name: "A", errown: true, policy: true, callee: c, handlerOptions: tt.opts})
			get(t, a.url)
			storms := a.rootStorms(t)
			require.Len(t, storms, 1, "root storms %+v", storms)
			assert.Equal(t, tt.want, storms[0].Procedure, "root storm's procedure")
		})
	}
}

// A handler that panics behaves as without errown (net/http aborts the
// response), and errown forgets the request.
func TestHandlerPanic(t *testing.T) {
	s := startNode(t, nodeConfig{name: "S", errown: true, serve: func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler) // net/http's own: aborted without a log line
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+_path, nil)
	res, err := (&http.Client{Transport: newBase(t)}).Do(req)
	if err == nil {
		res.Body.Close()
		assert.Fail(t, "a panicking handler answered", "status %d", res.StatusCode)
	}
	assert.Zero(t, s.mw.Introspect().InFlight, "errown tracks requests in flight after the panic")
}

// A request errown's admission sheds never reaches the handler, and goes
// out as a yarpc service's HTTP inbound answers resource-exhausted: 429,
// its code in Rpc-Error-Code, claimed, with pushback and the shed marker
// naming the reason, not as a handler's empty success.
func TestHandlerShedAnswersAsAnError(t *testing.T) {
	mw := newMiddleware(t, errown.Config{InboundConfig: errown.InboundConfig{Admission: inbound.AdmissionConfig{
		Mode: inbound.AdmissionEnforce, MinLimit: 1, MaxLimit: 1, MaxQueue: 1,
	}}}, nil, nil)
	started, release := make(chan struct{}), make(chan struct{})
	var served atomic.Int32
	srv := httptest.NewServer(nethttp.Handler(mw, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if served.Add(1) == 1 {
			close(started)
			<-release
		}
		_, _ = w.Write([]byte("ok"))
	})))
	defer srv.Close()
	client := &http.Client{Transport: newBase(t)}

	held := make(chan int, 1)
	go func() {
		res, err := client.Get(srv.URL)
		if err != nil {
			held <- 0
			return
		}
		res.Body.Close()
		held <- res.StatusCode
	}()
	<-started

	// Two more first attempts for the queue's one place: one is shed at
	// once (queue_full), the other waits for the held one.
	type answer struct {
		status int
		header http.Header
		body   []byte
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			if err != nil {
				answers <- answer{}
				return
			}
			req.Header.Set("Context-TTL-MS", "10000")
			res, err := client.Do(req)
			if err != nil {
				answers <- answer{}
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			answers <- answer{res.StatusCode, res.Header, body}
		}()
	}
	shed := <-answers
	assert.Equal(t, http.StatusTooManyRequests, shed.status, "body %q", shed.body)
	assert.Equal(t, "resource-exhausted", shed.header.Get("Rpc-Error-Code"))
	assert.Equal(t, "claimed", shed.header.Get(_claim))
	assert.Equal(t, "true", shed.header.Get(_noRetry))
	assert.Equal(t, "queue_full", shed.header.Get("Rpc-Header-Errown-Shed"))
	assert.NotEmpty(t, shed.body, "the shed's message")
	assert.Equal(t, int32(1), served.Load(), "the shed request never reached the handler")

	close(release)
	queued := <-answers
	assert.Equal(t, http.StatusOK, queued.status, "the queued request")
	assert.Equal(t, "ok", string(queued.body))
	assert.Equal(t, http.StatusOK, <-held, "the held request")
}
