package release

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"go.uber.org/yarpc/api/transport"
)

func TestWith(t *testing.T) {
	t.Run("body: cancelled on close", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		res := &transport.Response{Body: io.NopCloser(strings.NewReader("x"))}
		With(res, cancel)
		if ctx.Err() != nil {
			t.Fatal("cancelled before the body was closed")
		}
		if err := res.Body.Close(); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() == nil {
			t.Fatal("not cancelled when the body was closed")
		}
	})
	t.Run("no body: cancelled at once", func(t *testing.T) {
		for _, res := range []*transport.Response{nil, {}} {
			ctx, cancel := context.WithCancel(context.Background())
			With(res, cancel)
			if ctx.Err() == nil {
				t.Fatalf("%v: not cancelled", res)
			}
		}
	})
	t.Run("no cancel: nothing tied", func(t *testing.T) {
		body := io.NopCloser(strings.NewReader("x"))
		res := &transport.Response{Body: body}
		With(res, nil)
		if res.Body != body {
			t.Fatal("body replaced")
		}
	})
}

func TestCancelBodyPassesCloseError(t *testing.T) {
	errClose := errors.New("close broke")
	cancelled := false
	b := &cancelBody{ReadCloser: closeFunc(func() error { return errClose }), cancel: func() { cancelled = true }}

	if err := b.Close(); !errors.Is(err, errClose) || !cancelled {
		t.Errorf("Close = %v (cancelled %v), want %v and cancelled", err, cancelled, errClose)
	}
}

type closeFunc func() error

func (f closeFunc) Read([]byte) (int, error) { return 0, io.EOF }
func (f closeFunc) Close() error             { return f() }
