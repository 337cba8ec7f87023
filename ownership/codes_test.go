package ownership

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestCodesFollowYARPCFaultTypes(t *testing.T) {
	// Every row's class is yarpc's fault type, except the rows that state
	// a deviation: the one table is anchored on yarpc's, and a departure
	// is deliberate and written down.
	rows := Codes()
	assert.Len(t, rows, int(yarpcerrors.CodeUnauthenticated)+1, "a row for every yarpc code")
	for i, row := range rows {
		assert.Equal(t, yarpcerrors.Code(i), row.Code, "rows in code order")
		var want Class
		switch yarpcerrors.GetFaultTypeFromCode(row.Code) {
		case yarpcerrors.ServerFault:
			want = ClassFailure
		case yarpcerrors.ClientFault:
			want = ClassAnswer
		default:
			want = ClassOK
		}
		if row.Deviation != "" {
			assert.NotEqual(t, want, row.Class, "%v states a deviation it does not make", row.Code)
			continue
		}
		assert.Equal(t, want, row.Class, "%v departs from yarpc without saying why", row.Code)
	}
}

func TestCodeTable(t *testing.T) {
	// The table as errown decides it; DESIGN.md's Terms name these.
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

func TestClassString(t *testing.T) {
	assert.Equal(t, "ok", ClassOK.String())
	assert.Equal(t, "failure", ClassFailure.String())
	assert.Equal(t, "answer", ClassAnswer.String())
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
			code, class = CallResult(res, tt.giveErr)
			assert.Equal(t, tt.wantCode, code, "CallResult")
			assert.Equal(t, tt.wantClass, class, "CallResult")
		})
	}
	code, class := CallResult(nil, nil)
	assert.Equal(t, ok, code)
	assert.Equal(t, ClassOK, class)
}
