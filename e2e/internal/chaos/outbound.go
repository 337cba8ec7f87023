package chaos

import (
	"bytes"
	"context"
	"io"

	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
)

var _ middleware.UnaryOutbound = (*Middleware)(nil)

// Call implements middleware.UnaryOutbound: it runs the call as its drawn
// choice says, each attempt a shallow copy of req (its headers shared,
// as a hedging or retrying middleware shares them) with a reader of its
// own over req's body, read once. A Fallback's attempt goes to
// Alt(req.Procedure). With a Ledger, each attempt's answer is checked as
// out returns it.
func (m *Middleware) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
	}
	id, hasID := ID(body)
	send := func(ctx context.Context, alt bool) (*transport.Response, error) {
		r := *req
		if req.Body != nil {
			r.Body, r.BodySize = bytes.NewReader(body), len(body)
		}
		if alt {
			r.Procedure = Alt(req.Procedure)
		}
		res, err := out.Call(ctx, &r)
		if m.ledger != nil && hasID {
			res = m.checkResponse("chaos attempt", id, []string{r.Procedure}, res, err)
		}
		return res, err
	}
	return Do(ctx, m, send, closeResponse)
}

// checkResponse checks res and err, the answer to request id, with the
// ledger, and returns res with its body read into memory.
func (m *Middleware) checkResponse(where string, id uint64, procedures []string, res *transport.Response, err error) *transport.Response {
	res, a := ReadResponse(res, err)
	m.ledger.Check(where, id, procedures, a)
	return res
}

// ReadResponse returns res, its body read into memory (a read error
// handed on after the bytes read, as the body would have), and what it
// answers with err, for Ledger.Check.
func ReadResponse(res *transport.Response, err error) (*transport.Response, Answer) {
	a := Answer{Err: err}
	if res == nil {
		a.Empty = true
		return nil, a
	}
	a.Echo, _ = res.Headers.Get(EchoHeader)
	if res.Body != nil {
		b, rerr := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if rerr != nil && a.Err == nil {
			a.Err = rerr
		}
		out := *res
		out.Body = bodyOf(b, rerr)
		res, a.Body = &out, b
	}
	return res, a
}

// bodyOf returns a body of b, then rerr when it is not nil.
func bodyOf(b []byte, rerr error) io.ReadCloser {
	if rerr == nil {
		return io.NopCloser(bytes.NewReader(b))
	}
	return io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{rerr}))
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func closeResponse(res *transport.Response) {
	if res != nil && res.Body != nil {
		_ = res.Body.Close()
	}
}
