package wire

import (
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Result returns the code and class of how a call ended: err's when not
// nil (an OK code in an error reads unknown); else, for an application
// error (a Thrift exception, a protobuf error), its IDL code, or an
// answer without one; else OK. appErr and appCode are what the encoding
// told the ResponseWriter (inbound) or the response's ApplicationError
// and ApplicationErrorMeta.Code (outbound).
func Result(err error, appErr bool, appCode *yarpcerrors.Code) (yarpcerrors.Code, Class) {
	switch {
	case err != nil:
		// Read *yarpcerrors.Status's code directly; FromError allocates.
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

// CallResult is Result for an outbound call's return: err, or res's
// application error coded by its ApplicationErrorMeta or, where the
// transport dropped it (gRPC), by codeHeader from errown's inbound side.
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

// ParseCode reads a code header value: exactly a yarpc code name other
// than ok. Anything else is no code, leaving the application error an
// answer.
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
