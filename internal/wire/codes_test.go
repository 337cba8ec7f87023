package wire

import (
	"errors"
	"testing"

	"github.com/errown/errown/internal/defaults"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestDefaultRetryableCodes(t *testing.T) {
	assert.Equal(t, []yarpcerrors.Code{
		yarpcerrors.CodeUnknown,
		yarpcerrors.CodeDeadlineExceeded,
		yarpcerrors.CodeInternal,
		yarpcerrors.CodeUnavailable,
	}, DefaultRetryableCodes())
	for _, c := range DefaultRetryableCodes() {
		assert.True(t, IsFailure(c) && RetryableByNature(c), "%v: only retryable failures are retried by default", c)
	}
}

func TestResult(t *testing.T) {
	unavailable, notFound, ok := yarpcerrors.CodeUnavailable, yarpcerrors.CodeNotFound, yarpcerrors.CodeOK
	tests := []struct {
		name      string
		giveErr   error
		giveApp   bool
		giveCode  *yarpcerrors.Code
		wantCode  yarpcerrors.Code
		wantClass Class
	}{
		{name: "success", wantCode: ok, wantClass: ClassOK},
		{name: "server fault", giveErr: yarpcerrors.UnavailableErrorf("x"), wantCode: unavailable, wantClass: ClassFailure},
		{name: "client fault", giveErr: yarpcerrors.NotFoundErrorf("x"), wantCode: notFound, wantClass: ClassAnswer},
		{name: "plain error is unknown", giveErr: errors.New("x"), wantCode: yarpcerrors.CodeUnknown, wantClass: ClassFailure},
		{name: "error with code ok is unknown", giveErr: yarpcerrors.Newf(ok, "x"), wantCode: yarpcerrors.CodeUnknown, wantClass: ClassFailure},
		{name: "error wins over the application error", giveErr: yarpcerrors.InternalErrorf("x"), giveApp: true, giveCode: &notFound, wantCode: yarpcerrors.CodeInternal, wantClass: ClassFailure},
		{name: "application error with a server-fault code", giveApp: true, giveCode: &unavailable, wantCode: unavailable, wantClass: ClassFailure},
		{name: "application error with a client-fault code", giveApp: true, giveCode: &notFound, wantCode: notFound, wantClass: ClassAnswer},
		{name: "application error without a code", giveApp: true, wantCode: ok, wantClass: ClassAnswer},
		{name: "application error with code ok", giveApp: true, giveCode: &ok, wantCode: ok, wantClass: ClassAnswer},
		{name: "a code without the marking is ignored", giveCode: &unavailable, wantCode: ok, wantClass: ClassOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, class := Result(tt.giveErr, tt.giveApp, tt.giveCode)
			assert.Equal(t, tt.wantCode, code)
			assert.Equal(t, tt.wantClass, class)

			res := &transport.Response{ApplicationError: tt.giveApp, ApplicationErrorMeta: &transport.ApplicationErrorMeta{Code: tt.giveCode}}
			code, class = CallResult(res, tt.giveErr, defaults.CodeHeader)
			assert.Equal(t, tt.wantCode, code, "CallResult")
			assert.Equal(t, tt.wantClass, class, "CallResult")
		})
	}
	code, class := CallResult(nil, nil, defaults.CodeHeader)
	assert.Equal(t, ok, code)
	assert.Equal(t, ClassOK, class)
}

func TestCallResultCodeHeader(t *testing.T) {
	// gRPC drops a Thrift exception's code; errown's inbound side sends it
	// in the code header, read only when the transport gave none.
	unavailable, notFound := yarpcerrors.CodeUnavailable, yarpcerrors.CodeNotFound
	tests := []struct {
		name      string
		give      *transport.Response
		wantCode  yarpcerrors.Code
		wantClass Class
	}{
		{
			name:      "header read when the meta has no code",
			give:      &transport.Response{ApplicationError: true, ApplicationErrorMeta: &transport.ApplicationErrorMeta{}, Headers: transport.NewHeaders().With("errown-code", "unavailable")},
			wantCode:  unavailable,
			wantClass: ClassFailure,
		},
		{
			name:      "the meta's code wins",
			give:      &transport.Response{ApplicationError: true, ApplicationErrorMeta: &transport.ApplicationErrorMeta{Code: &notFound}, Headers: transport.NewHeaders().With("errown-code", "unavailable")},
			wantCode:  notFound,
			wantClass: ClassAnswer,
		},
		{
			name:      "garbage is no code",
			give:      &transport.Response{ApplicationError: true, Headers: transport.NewHeaders().With("errown-code", "Unavailable")},
			wantCode:  yarpcerrors.CodeOK,
			wantClass: ClassAnswer,
		},
		{
			name:      "ignored without the application error marking",
			give:      &transport.Response{ApplicationErrorMeta: &transport.ApplicationErrorMeta{Code: &unavailable}, Headers: transport.NewHeaders().With("errown-code", "unavailable")},
			wantCode:  yarpcerrors.CodeOK,
			wantClass: ClassOK,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, class := CallResult(tt.give, nil, defaults.CodeHeader)
			assert.Equal(t, tt.wantCode, code)
			assert.Equal(t, tt.wantClass, class)
		})
	}
}

func TestParseCode(t *testing.T) {
	for _, row := range Codes()[1:] {
		got, ok := ParseCode(FormatCode(row.Code))
		assert.True(t, ok, "%v", row.Code)
		assert.Equal(t, row.Code, got)
	}
	for _, v := range []string{"", "ok", "Unavailable", " unavailable", "unavailable ", "14", "unavailable\x00", "resource-exhausted-x", "nope"} {
		_, ok := ParseCode(v)
		assert.False(t, ok, "%q", v)
	}
}

func FuzzParseCode(f *testing.F) {
	for _, s := range []string{"unavailable", "not-found", "", "ok", "UNAVAILABLE", "resource-exhausted"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		c, ok := ParseCode(v)
		if !ok {
			require.Equal(t, yarpcerrors.CodeOK, c, "ParseCode(%q), false; want ok on failure", v)
			return
		}
		require.NotEqual(t, yarpcerrors.CodeOK, c, "ParseCode(%q) = %v, which does not format back", v, c)
		require.Equal(t, v, FormatCode(c), "ParseCode(%q) = %v, which does not format back", v, c)
	})
}

func TestCodeTable(t *testing.T) {
	// The table as errown decides it; docs/DESIGN.md's Terms name these.
	tests := []struct {
		give          yarpcerrors.Code
		wantClass     Class
		wantRetryable bool
		wantDefault   bool
	}{
		{yarpcerrors.CodeOK, ClassOK, false, false},
		{yarpcerrors.CodeCancelled, ClassAnswer, false, false},
		{yarpcerrors.CodeUnknown, ClassFailure, true, true},
		{yarpcerrors.CodeInvalidArgument, ClassAnswer, false, false},
		{yarpcerrors.CodeDeadlineExceeded, ClassFailure, true, true},
		{yarpcerrors.CodeNotFound, ClassAnswer, false, false},
		{yarpcerrors.CodeAlreadyExists, ClassAnswer, false, false},
		{yarpcerrors.CodePermissionDenied, ClassAnswer, false, false},
		{yarpcerrors.CodeResourceExhausted, ClassFailure, true, false},
		{yarpcerrors.CodeFailedPrecondition, ClassAnswer, false, false},
		{yarpcerrors.CodeAborted, ClassAnswer, true, false},
		{yarpcerrors.CodeOutOfRange, ClassAnswer, false, false},
		{yarpcerrors.CodeUnimplemented, ClassAnswer, false, false},
		{yarpcerrors.CodeInternal, ClassFailure, true, true},
		{yarpcerrors.CodeUnavailable, ClassFailure, true, true},
		{yarpcerrors.CodeDataLoss, ClassFailure, false, false},
		{yarpcerrors.CodeUnauthenticated, ClassAnswer, false, false},
		{yarpcerrors.Code(99), ClassFailure, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.give.String(), func(t *testing.T) {
			info := Info(tt.give)
			assert.Equal(t, tt.wantClass, info.Class)
			assert.Equal(t, tt.wantClass == ClassFailure, IsFailure(tt.give))
			assert.Equal(t, tt.wantRetryable, RetryableByNature(tt.give))
			assert.Equal(t, tt.wantDefault, info.RetriedByDefault)
		})
	}
}

// IsFailure reports whether an error with code c is the callee's failure
// rather than its answer.
func IsFailure(c yarpcerrors.Code) bool {
	return Info(c).Class == ClassFailure
}
