package ownership

import (
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Result returns the code and class of how a call ended, as a middleware
// sees it: err when it is not nil (an error that says it is OK is still an
// error: unknown); else, for a response marked as an application error (a
// Thrift exception, a protobuf error), the code its IDL gave it, and an
// answer when it has none; else OK.
//
// On the inbound side appErr and appCode are what the encoding told the
// ResponseWriter; on the outbound side they are the response's
// ApplicationError and ApplicationErrorMeta.Code.
func Result(err error, appErr bool, appCode *yarpcerrors.Code) (yarpcerrors.Code, Class) {
	switch {
	case err != nil:
		c := yarpcerrors.FromError(err).Code()
		if c == yarpcerrors.CodeOK {
			c = yarpcerrors.CodeUnknown
		}
		return c, Info(c).Class
	case appErr && appCode != nil && *appCode != yarpcerrors.CodeOK:
		return *appCode, Info(*appCode).Class
	case appErr:
		return yarpcerrors.CodeOK, ClassAnswer
	default:
		return yarpcerrors.CodeOK, ClassOK
	}
}

// CallResult is Result for what an outbound call returned: err, or the
// application error res is marked with, by the code in its
// ApplicationErrorMeta.
func CallResult(res *transport.Response, err error) (yarpcerrors.Code, Class) {
	if err != nil || res == nil {
		return Result(err, false, nil)
	}
	var code *yarpcerrors.Code
	if res.ApplicationErrorMeta != nil {
		code = res.ApplicationErrorMeta.Code
	}
	return Result(nil, res.ApplicationError, code)
}
