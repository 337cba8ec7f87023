package wire

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// lateTimer is a context whose deadline has passed while its own timer
// has not fired yet: a transport's timer, set from the same deadline, can
// fire first.
type lateTimer struct{ context.Context }

func (lateTimer) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func contexts(t *testing.T) (live, expired, cancelled, late context.Context) {
	live, cancelLive := context.WithTimeout(context.Background(), time.Hour)
	t.Cleanup(cancelLive)
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	cancelExpired()
	cancelled, cancel := context.WithTimeout(context.Background(), time.Hour)
	cancel()
	return live, expired, cancelled, lateTimer{context.Background()}
}

func TestAttemptResult(t *testing.T) {
	live, expired, cancelled, late := contexts(t)
	httpTimeout := yarpcerrors.UnknownErrorf("unknown error from http client: Post \"http://x\": context deadline exceeded")
	appCode := yarpcerrors.CodeNotFound
	tests := []struct {
		name      string
		ctx       context.Context
		res       *transport.Response
		err       error
		wantCode  yarpcerrors.Code
		wantClass Class
	}{
		{"unknown after the deadline", expired, nil, httpTimeout, yarpcerrors.CodeDeadlineExceeded, ClassFailure},
		{"unknown before the deadline", live, nil, httpTimeout, yarpcerrors.CodeUnknown, ClassFailure},
		{"unavailable after the deadline", expired, nil, yarpcerrors.UnavailableErrorf("down"), yarpcerrors.CodeDeadlineExceeded, ClassFailure},
		{"a plain error once the deadline passed, the context's timer not yet fired", late, nil, errors.New("timeout"), yarpcerrors.CodeDeadlineExceeded, ClassFailure},
		{"cancelled before the deadline", cancelled, nil, yarpcerrors.CancelledErrorf("gone"), yarpcerrors.CodeCancelled, ClassAnswer},
		{"a success after the deadline", expired, &transport.Response{}, nil, yarpcerrors.CodeOK, ClassOK},
		{"an application error after the deadline", expired, &transport.Response{ApplicationError: true, ApplicationErrorMeta: &transport.ApplicationErrorMeta{Code: &appCode}}, nil, yarpcerrors.CodeNotFound, ClassAnswer},
		{"no deadline", context.Background(), nil, httpTimeout, yarpcerrors.CodeUnknown, ClassFailure},
	}
	for _, tt := range tests {
		code, class := AttemptResult(tt.ctx, tt.res, tt.err, "errown-code")
		assert.Equal(t, tt.wantCode, code, tt.name)
		assert.Equal(t, tt.wantClass, class, tt.name)
	}
}

func TestHandlerResult(t *testing.T) {
	live, expired, _, _ := contexts(t)
	err := yarpcerrors.UnknownErrorf("context deadline exceeded")
	code, class := HandlerResult(expired, err, false, nil)
	assert.Equal(t, yarpcerrors.CodeDeadlineExceeded, code, "after the deadline")
	assert.Equal(t, ClassFailure, class)
	code, _ = HandlerResult(live, err, false, nil)
	assert.Equal(t, yarpcerrors.CodeUnknown, code, "before it")
	code, class = HandlerResult(expired, nil, false, nil)
	assert.Equal(t, yarpcerrors.CodeOK, code, "a success after it")
	assert.Equal(t, ClassOK, class)
}

func TestCancelled(t *testing.T) {
	live, expired, cancelled, _ := contexts(t)
	err := yarpcerrors.CancelledErrorf("gone")
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"cancelled, with an error", cancelled, err, true},
		{"cancelled, a success", cancelled, nil, false},
		{"past the deadline", expired, err, false},
		{"live: the callee's own cancellation", live, err, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Cancelled(tt.ctx, tt.err), tt.name)
	}
}

func TestAttemptStorm(t *testing.T) {
	res := &transport.Response{Headers: transport.NewHeaders().With("errown-storm", "3,5,0,0,1")}
	tests := []struct {
		name      string
		res       *transport.Response
		class     Class
		cancelled bool
		want      Figures
	}{
		{"cancelled, no response: the one request it sent", nil, ClassFailure, true, KnownFigures(One)},
		{"cancelled, with a response: its figures", res, ClassFailure, true, KnownFigures(Storm{Served: 3, Blind: 5, BlindRadius: 1})},
		{"a timeout, no response: unknown", nil, ClassFailure, false, Figures{}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, AttemptStorm(tt.res, tt.class, "errown-storm", tt.cancelled), tt.name)
	}
}
