package release

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
)

func TestWith(t *testing.T) {
	t.Run("body: cancelled on close", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		res := &transport.Response{Body: io.NopCloser(strings.NewReader("x"))}
		With(res, cancel)
		require.NoError(t, ctx.Err(), "cancelled before the body was closed")
		require.NoError(t, res.Body.Close())
		require.Error(t, ctx.Err(), "not cancelled when the body was closed")
	})
	t.Run("no body: cancelled at once", func(t *testing.T) {
		for _, res := range []*transport.Response{nil, {}} {
			ctx, cancel := context.WithCancel(context.Background())
			With(res, cancel)
			require.Error(t, ctx.Err(), "%v: not cancelled", res)
		}
	})
	t.Run("no cancel: nothing tied", func(t *testing.T) {
		body := io.NopCloser(strings.NewReader("x"))
		res := &transport.Response{Body: body}
		With(res, nil)
		require.True(t, res.Body == body, "body replaced")
	})
}

func TestCancelBodyPassesCloseError(t *testing.T) {
	errClose := errors.New("close broke")
	cancelled := false
	b := &cancelBody{ReadCloser: closeFunc(func() error { return errClose }), cancel: func() { cancelled = true }}

	assert.ErrorIs(t, b.Close(), errClose, "Close")
	assert.True(t, cancelled, "Close did not cancel")
}

type closeFunc func() error

func (f closeFunc) Read([]byte) (int, error) { return 0, io.EOF }
func (f closeFunc) Close() error             { return f() }
