// Package release ties the context of one outbound attempt to the response
// it produced: the transport may still stream the body under that context
// after Call has returned, so the context goes only when the body is
// closed.
package release

import (
	"context"
	"io"

	"go.uber.org/yarpc/api/transport"
)

// With ties cancel to res: cancel runs on Close of res's body, or at once
// when there is no body to read. A nil cancel is nothing to tie.
func With(res *transport.Response, cancel context.CancelFunc) {
	if cancel == nil {
		return
	}
	if res == nil || res.Body == nil {
		cancel()
		return
	}
	res.Body = &cancelBody{ReadCloser: res.Body, cancel: cancel}
}

// cancelBody is a response body whose Close also cancels the context of
// the attempt that produced it.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close implements io.Closer.
func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
