package retrier

import (
	"bytes"
	"context"
	"io"
	"strings"

	"go.uber.org/yarpc/api/transport"
)

// replay holds a request body so every attempt can send it.
type replay struct {
	// buf is the whole body when replayable, unless at is set.
	buf []byte
	// snap, when reader is set, is a copy of the caller's *bytes.Reader
	// taken before the first attempt: each retry reads its own copy,
	// size bytes over the same (never written) bytes, without moving or
	// racing with the caller's reader, which a transport may still read.
	snap   bytes.Reader
	reader bool
	size   int
	// once, when not nil, is the only body: over the cap (or a read
	// failed), the call is sent once with what was read then the rest
	// (or the read error).
	once io.Reader
	// nilBody: no body; attempts get none.
	nilBody bool
	// inPlace: the first attempt is the caller's request, untouched.
	inPlace bool
}

// bufferBody keeps body for replay, reading up to limit+1 bytes, except
// yarpc's encodings' *bytes.Reader and *bytes.Buffer, kept without a
// copy: reading them never overwrites their bytes, so each attempt reads
// them again with its own reader.
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
		// The transport's own read would have met the same failure.
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
// req with its own body reader and, from attempt 2, headers with
// attemptHeader set. req is never changed. The copy and its reader are
// one allocation, never reused: middleware and transport may keep them.
func (r *replay) request(req *transport.Request, n int, attemptHeader, attemptValue string) *transport.Request {
	a := &attemptRequest{req: *req}
	switch {
	case r.nilBody:
	case r.once != nil:
		a.req.Body = r.once
	case r.reader:
		// A *bytes.Reader keeps the length visible to transports (HTTP
		// sends a Content-Length, not chunks).
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

// attemptRequest is an attempt's request and body reader, one allocation.
type attemptRequest struct {
	req  transport.Request
	body bytes.Reader
}

// headersWith returns a copy of h, with exact capacity, with k (canonical)
// set to v: transport.Headers.With would change maps shared with h.
func headersWith(h transport.Headers, k, v string) transport.Headers {
	n := h.Len() + 1
	if _, ok := h.Items()[k]; ok {
		n--
	}
	if n == 1 {
		// Only k, which v replaces (a marked call's retry).
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
		// Original keys differing only in case share one canonical
		// entry; keep h's value for it.
		for ck, cv := range h.Items() {
			if got, _ := c.Get(ck); got != cv && ck != k {
				c = c.With(ck, cv)
			}
		}
	}
	return c.With(k, v)
}

// isKey reports whether the original key ok canonicalizes to k.
func isKey(ok, k string) bool {
	return strings.EqualFold(ok, k) && transport.CanonicalizeHeaderKey(ok) == k
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// discard closes a dropped response's body and cancels its context.
func discard(res *transport.Response, cancel context.CancelFunc) {
	if res != nil && res.Body != nil {
		_ = res.Body.Close() // the response is dropped; nothing to do about a close error
	}
	if cancel != nil {
		cancel()
	}
}
