package nethttp_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
)

// A handler that forwards its callee's errown headers and then flushes
// (httputil.ReverseProxy does for a chunked response) sends them without
// errown's: its caller must not read the callee's claim as this hop's.
func TestFlushedForwardedClaimDropped(t *testing.T) {
	s := startNode(t, nodeConfig{name: "S", errown: true, serve: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(_claim, "claimed")   // forwarded from S's own callee
		w.Header().Set(_storm, "9,9,0,0,0") // forwarded
		w.Header().Set(_noRetry, "false")   // forwarded
		w.WriteHeader(http.StatusServiceUnavailable)
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte("x"))
	}})
	r := get(t, s.url)
	assert.Empty(t, r.header.Get(_claim), "claim on a response sent before errown decided: want none (doc: 'without errown's headers')")
	assert.Empty(t, r.header.Get(_storm), "storm: want none")
}

// Flush before WriteHeader sends 200; a later WriteHeader(503) is
// superfluous on the wire, and errown counts no error either.
func TestFlushThenWriteHeaderCountsNoError(t *testing.T) {
	s := startNode(t, nodeConfig{name: "S", errown: true, serve: func(w http.ResponseWriter, _ *http.Request) {
		w.(http.Flusher).Flush()
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("x"))
	}})
	r := get(t, s.url)
	require.Equal(t, http.StatusOK, r.status, "status")
	assert.Zero(t, s.counter("inbound.claimed", nil), "inbound.claimed for a response that went out 200")
}

type trackBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackBody) Close() error { b.closed.Store(true); return nil }

type fakeBase struct {
	mu        sync.Mutex
	n         int
	bodies    []*trackBody
	reqBodies [][]byte
}

func (f *fakeBase) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	var rb []byte
	if r.Body != nil {
		rb, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	f.reqBodies = append(f.reqBodies, rb)
	b := &trackBody{Reader: strings.NewReader("attempt")}
	f.bodies = append(f.bodies, b)
	h := http.Header{}
	status := http.StatusOK
	if f.n < 3 {
		status = http.StatusServiceUnavailable
		h.Set(_claim, "claimed")
	}
	return &http.Response{StatusCode: status, Header: h, Body: b, ContentLength: -1, Request: r}, nil
}

func TestTransportClosesRetriedBodies(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Second} {
		cfg := errown.Config{Retry: errown.RetryConfig{Budget: retry.BudgetConfig{Disabled: true},
			Policies: []retry.PolicyConfig{{Service: "T", MaxAttempts: 3, InitialBackoff: time.Millisecond,
				MaxBackoff: time.Millisecond, Idempotent: new(true), AttemptTimeout: timeout}}}}
		mw := newMiddleware(t, cfg, tally.NoopScope, nil)
		base := &fakeBase{}
		rt := nethttp.Transport(mw, base, nethttp.WithService(func(*http.Request) string { return "T" }))
		req, _ := http.NewRequest(http.MethodPost, "http://x/y", bytes.NewReader([]byte("payload")))
		res, err := rt.RoundTrip(req)
		require.NoError(t, err)
		require.Equal(t, 3, base.n, "attempts (status %d)", res.StatusCode)
		require.Equal(t, 200, res.StatusCode, "status (attempts %d)", base.n)
		for i, b := range base.reqBodies {
			assert.Equal(t, "payload", string(b), "attempt %d body", i)
		}
		for i, b := range base.bodies[:2] {
			assert.True(t, b.closed.Load(), "timeout %v: retried attempt %d body not closed", timeout, i)
		}
		assert.False(t, base.bodies[2].closed.Load(), "final body closed")
		got, _ := io.ReadAll(res.Body)
		assert.Equal(t, "attempt", string(got), "body")
		res.Body.Close()
		assert.True(t, base.bodies[2].closed.Load(), "final body not closed by Close")
	}
}
