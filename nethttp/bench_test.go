package nethttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/nethttp"
)

// In-process costs, no network: a request served by a handler that
// answers 64 bytes, bare and under Handler, and a call through Transport
// (and Attempts) to a RoundTripper that answers at once.

var _payload = []byte(strings.Repeat("p", 64))

func benchHandler(b *testing.B, h http.Handler) {
	req := httptest.NewRequest(http.MethodGet, "/call", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
	}
}

func BenchmarkHandler(b *testing.B) {
	leaf := func(status int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write(_payload)
		})
	}
	mw, err := errown.New(errown.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("bare/ok", func(b *testing.B) { benchHandler(b, leaf(http.StatusOK)) })
	b.Run("errown/ok", func(b *testing.B) {
		benchHandler(b, nethttp.Handler(mw, leaf(http.StatusOK), nethttp.WithProcedure(func(*http.Request) string { return "call" })))
	})
	b.Run("errown/503", func(b *testing.B) {
		benchHandler(b, nethttp.Handler(mw, leaf(http.StatusServiceUnavailable), nethttp.WithProcedure(func(*http.Request) string { return "call" })))
	})
}

type instant struct{}

func (instant) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

func BenchmarkTransport(b *testing.B) {
	mw, err := errown.New(errown.Config{})
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, rt http.RoundTripper) {
		req := httptest.NewRequest(http.MethodGet, "http://callee/call", nil)
		req.RequestURI = ""
		b.ReportAllocs()
		for b.Loop() {
			res, err := rt.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, instant{}) })
	b.Run("errown", func(b *testing.B) {
		run(b, nethttp.Transport(mw, instant{}, nethttp.WithService(func(*http.Request) string { return "callee" }),
			nethttp.WithProcedure(func(*http.Request) string { return "call" })))
	})
	b.Run("errown/attempts", func(b *testing.B) {
		run(b, nethttp.Transport(mw, nethttp.Attempts(mw, instant{}), nethttp.WithService(func(*http.Request) string { return "callee" }),
			nethttp.WithProcedure(func(*http.Request) string { return "call" })))
	})
}
