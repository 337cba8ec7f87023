package wire

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
		// The transports' errors are *yarpcerrors.Status: read the code
		// straight off them; FromError's errors.As costs an allocation.
		var c yarpcerrors.Code
		if st, ok := err.(*yarpcerrors.Status); ok {
			c = st.Code()
		} else {
			c = yarpcerrors.FromError(err).Code()
		}
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
// ApplicationErrorMeta or, where the transport dropped it (gRPC), by the
// code errown's inbound side sent under codeHeader.
func CallResult(res *transport.Response, err error, codeHeader string) (yarpcerrors.Code, Class) {
	if err != nil || res == nil || !res.ApplicationError {
		return Result(err, false, nil)
	}
	var code *yarpcerrors.Code
	if res.ApplicationErrorMeta != nil {
		code = res.ApplicationErrorMeta.Code
	}
	if code == nil {
		if v, ok := res.Headers.Get(codeHeader); ok {
			if c, ok := ParseCode(v); ok {
				code = &c
			}
		}
	}
	return Result(nil, true, code)
}

// FormatCode returns the code header value for an application error with
// code c: its yarpc name, such as "unavailable".
func FormatCode(c yarpcerrors.Code) string {
	return c.String()
}

// ParseCode reads a code header value: exactly the yarpc name of a code
// other than ok, as FormatCode writes it. Anything else (other case,
// padding, numbers, unknown names) is no code at all: the application
// error is then an answer, exactly as without the header.
func ParseCode(v string) (yarpcerrors.Code, bool) {
	if len(v) == 0 || len(v) > _maxCodeName {
		return yarpcerrors.CodeOK, false
	}
	for _, r := range _table[1:] {
		if r.Code.String() == v {
			return r.Code, true
		}
	}
	return yarpcerrors.CodeOK, false
}

// _maxCodeName is the longest yarpc code name ("resource-exhausted").
const _maxCodeName = 19
