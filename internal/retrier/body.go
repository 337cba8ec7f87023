package retrier

import (
	"bytes"
	"context"
	"io"
	"strings"

	"go.uber.org/yarpc/api/transport"
)

// replay holds a request body so that every attempt can send it again.
type replay struct {
	// buf is the whole body when replayable, unless at is set.
	buf []byte
	// snap, when reader is set, is a copy of the caller's *bytes.Reader
	// taken before the first attempt read it: each retry reads a copy of
	// it, size bytes from where the caller's reader stood, over the same
	// bytes (a bytes.Reader never writes them), neither moving nor racing
	// with the caller's reader, which a transport may still read.
	snap   bytes.Reader
	reader bool
	size   int
	// once, when not nil, is the only body there is: the body was larger
	// than the cap (or reading it failed), so the call is sent once with
	// what was read followed by the rest (or by the read error).
	once io.Reader
	// nilBody: the request had no body; attempts get none either.
	nilBody bool
	// inPlace: the first attempt is the caller's request itself, untouched,
	// because nothing of its body had to be read to keep it.
	inPlace bool
}

// bufferBody keeps body for replay by reading up to limit+1 bytes of it,
// except for the bodies yarpc's encodings build (*bytes.Reader,
// *bytes.Buffer), kept without a copy: reading them never overwrites their
// bytes, so the first attempt sends the caller's body as it is and later
// attempts read the same bytes again, each with its own reader.
func bufferBody(body io.Reader, limit int) replay {
	switch b := body.(type) {
	case nil:
		return replay{nilBody: true, inPlace: true}
	case *bytes.Reader:
		if b.Len() > limit {
			return replay{once: b, inPlace: true}
		}
		return replay{snap: *b, reader: true, size: b.Len(), inPlace: true}
	case *bytes.Buffer:
		if b.Len() > limit {
			return replay{once: b, inPlace: true}
		}
		return replay{buf: b.Bytes(), inPlace: true}
	}
	buf, err := io.ReadAll(io.LimitReader(body, int64(limit)+1))
	switch {
	case err != nil:
		// Hand the transport the same failure it would have met reading
		// the body itself.
		return replay{once: io.MultiReader(bytes.NewReader(buf), errReader{err})}
	case len(buf) > limit:
		return replay{once: io.MultiReader(bytes.NewReader(buf), body)}
	default:
		return replay{buf: buf}
	}
}

// replayable reports whether the body can be sent more than once.
func (r replay) replayable() bool {
	return r.once == nil
}

// request returns the request for attempt n (1-based): a shallow copy of
// req with its own body reader and, from the second attempt on, a copy of
// the headers with attemptHeader set to n. req is never changed. When
// inPlace is set the first attempt needs no copy: send req itself. The
// copy and its reader are one allocation, made for the attempt and never
// reused: the middleware and transport below may keep them.
func (r *replay) request(req *transport.Request, n int, attemptHeader, attemptValue string) *transport.Request {
	a := &attemptRequest{req: *req}
	switch {
	case r.nilBody:
	case r.once != nil:
		a.req.Body = r.once
	case r.reader:
		// A *bytes.Reader, as the caller gave it: a body whose length
		// every transport can see (HTTP sends a Content-Length rather
		// than chunks).
		a.body = r.snap
		a.req.Body, a.req.BodySize = &a.body, r.size
	default:
		a.body.Reset(r.buf)
		a.req.Body, a.req.BodySize = &a.body, len(r.buf)
	}
	if n > 1 {
		a.req.Headers = headersWith(req.Headers, attemptHeader, attemptValue)
	}
	return &a.req
}

// attemptRequest is an attempt's request and the reader of its body,
// allocated together.
type attemptRequest struct {
	req  transport.Request
	body bytes.Reader
}

// headersWith returns a copy of h with k (canonical) set to v, leaving h
// alone: transport.Headers.With changes the maps it shares with h. The
// copy has the exact capacity it needs.
func headersWith(h transport.Headers, k, v string) transport.Headers {
	n := h.Len() + 1
	if _, ok := h.Items()[k]; ok {
		n--
	}
	if n == 1 {
		// Nothing of h's to keep but k, which v replaces (a marked
		// call's retry: its headers are the attempt header alone).
		return transport.NewHeaders().With(k, v)
	}
	c := transport.NewHeadersWithCapacity(n)
	copied := 0
	for ok, ov := range h.OriginalItems() {
		if !isKey(ok, k) {
			c, copied = c.With(ok, ov), copied+1
		}
	}
	if c.Len() != copied {
		// Original keys that differ only in case share one canonical
		// entry; keep the value h has for it.
		for ck, cv := range h.Items() {
			if got, _ := c.Get(ck); got != cv && ck != k {
				c = c.With(ck, cv)
			}
		}
	}
	return c.With(k, v)
}

// isKey reports whether the original header key ok is the canonical key
// k, lower-casing ok only when it may be.
func isKey(ok, k string) bool {
	return strings.EqualFold(ok, k) && transport.CanonicalizeHeaderKey(ok) == k
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// discard closes the body of a response that will not be returned and
// cancels its attempt's context.
func discard(res *transport.Response, cancel context.CancelFunc) {
	if res != nil && res.Body != nil {
		_ = res.Body.Close() // the response is dropped; nothing to do about a close error
	}
	if cancel != nil {
		cancel()
	}
}
