package chaos

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// RoundTripper returns m as an http.RoundTripper around next, for
// nethttp.Transport(mw, m.RoundTripper(nethttp.Attempts(mw, base))): each
// attempt is a clone of the request with its context, a body of its own
// over the request's, read once, and a GetBody. A Fallback's attempt goes
// to the path with AltSuffix. With a Ledger, each attempt's answer to a
// request whose body is an ID is checked as next returns it, against the
// path it went to.
func (m *Middleware) RoundTripper(next http.RoundTripper) http.RoundTripper {
	return &roundTripper{m: m, next: next}
}

type roundTripper struct {
	m    *Middleware
	next http.RoundTripper
}

func (t *roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	id, hasID := ID(body)
	send := func(ctx context.Context, alt bool) (*http.Response, error) {
		a := r.Clone(ctx)
		if body != nil {
			a.Body = io.NopCloser(bytes.NewReader(body))
			a.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			a.ContentLength = int64(len(body))
		}
		if alt {
			a.URL.Path += AltSuffix
		}
		res, err := t.next.RoundTrip(a)
		if t.m.ledger != nil && hasID {
			var ans Answer
			res, ans = ReadHTTPResponse(res, err)
			t.m.ledger.Check("chaos attempt", id, []string{a.URL.Path}, ans)
		}
		return res, err
	}
	return Do(r.Context(), t.m, send, func(res *http.Response) {
		if res != nil {
			_ = res.Body.Close()
		}
	})
}

// ReadHTTPResponse returns res, its body read into memory (a read error
// handed on after the bytes read), and what it
// answers with err, for Ledger.Check.
func ReadHTTPResponse(res *http.Response, err error) (*http.Response, Answer) {
	a := Answer{Err: err}
	if res == nil {
		a.Empty = true
		return nil, a
	}
	a.Echo = res.Header.Get(EchoHeader)
	b, rerr := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if rerr != nil && a.Err == nil {
		a.Err = rerr
	}
	res.Body = bodyOf(b, rerr)
	a.Body = b
	if res.StatusCode >= 400 {
		// An error status: its body is the error's message, and no
		// success needs an echo.
		a.Empty = true
	}
	return res, a
}
