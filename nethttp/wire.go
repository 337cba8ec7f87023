package nethttp

import (
	"net/http"
	"strings"

	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// Header names of yarpc's HTTP transport (go.uber.org/yarpc/transport/http
// v1.81.0), which this package reads and writes to interoperate with it.
const (
	// _applicationHeaderPrefix prefixes every application header on the
	// wire: errown-claim travels as Rpc-Header-Errown-Claim.
	_applicationHeaderPrefix = "Rpc-Header-"
	// _ttlHeader carries the caller's remaining deadline, in milliseconds
	// (yarpc's Context-TTL-MS, here in canonical form).
	_ttlHeader = "Context-Ttl-Ms"
	// _serviceHeader and _procedureHeader name a yarpc request's callee.
	_serviceHeader   = "Rpc-Service"
	_procedureHeader = "Rpc-Procedure"
	// _errorCodeHeader carries the yarpc code of an error response.
	_errorCodeHeader = "Rpc-Error-Code"
	// _errorMessageHeader carries its message when both the response and
	// the error are returned.
	_errorMessageHeader = "Rpc-Error-Message"
	// A yarpc caller says with _acceptsBothHeader: true that it takes an
	// error response's headers and body along with the error; a server
	// that does says so with _bothHeader: true. Without it, yarpc's HTTP
	// outbound drops the headers, errown's claim among them.
	_acceptsBothHeader = "Rpc-Accepts-Both-Response-Error"
	_bothHeader        = "Rpc-Both-Response-Error"
	_true              = "true"
	// _statusHeader is "error" on a yarpc response that carries an
	// application error (a Thrift exception), whose code, when its IDL
	// gives one, is in _appErrorCodeHeader as a number.
	_statusHeader       = "Rpc-Status"
	_statusError        = "error"
	_appErrorCodeHeader = "Rpc-Application-Error-Code"
)

// _transportName is the transport.Request.Transport of the requests this
// package hands errown: yarpc's name for HTTP.
const _transportName = "http"

// toTransportHeaders returns the application headers in h (those named
// Rpc-Header-<name>) as transport.Headers, as yarpc's HTTP transport reads
// them; a name with several values keeps its first.
func toTransportHeaders(h http.Header) transport.Headers {
	var out transport.Headers
	for k, vs := range h {
		if len(vs) == 0 || !hasPrefixFold(k, _applicationHeaderPrefix) {
			continue
		}
		out = out.With(k[len(_applicationHeaderPrefix):], vs[0])
	}
	return out
}

// setHTTPHeaders sets every header of h in dst as Rpc-Header-<name>.
func setHTTPHeaders(dst http.Header, h transport.Headers) {
	for k, v := range h.Items() {
		dst.Set(_applicationHeaderPrefix+k, v)
	}
}

// hasPrefixFold reports whether s begins with prefix, ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// _statusOfCode is yarpc's HTTP table (transport/http/codes.go,
// _codeToStatusCode), the one table of both directions: where several
// codes share a status, the first listed is the code it reads back as, as
// in yarpc's _statusCodeToCodes (aborted for 409, unknown for 500).
var _statusOfCode = []struct {
	code   yarpcerrors.Code
	status int
}{
	{yarpcerrors.CodeCancelled, 499}, // client closed request (nginx)
	{yarpcerrors.CodeInvalidArgument, http.StatusBadRequest},
	{yarpcerrors.CodeFailedPrecondition, http.StatusBadRequest},
	{yarpcerrors.CodeOutOfRange, http.StatusBadRequest},
	{yarpcerrors.CodeUnauthenticated, http.StatusUnauthorized},
	{yarpcerrors.CodePermissionDenied, http.StatusForbidden},
	{yarpcerrors.CodeNotFound, http.StatusNotFound},
	{yarpcerrors.CodeAborted, http.StatusConflict},
	{yarpcerrors.CodeAlreadyExists, http.StatusConflict},
	{yarpcerrors.CodeResourceExhausted, http.StatusTooManyRequests},
	{yarpcerrors.CodeUnknown, http.StatusInternalServerError},
	{yarpcerrors.CodeInternal, http.StatusInternalServerError},
	{yarpcerrors.CodeDataLoss, http.StatusInternalServerError},
	{yarpcerrors.CodeUnimplemented, http.StatusNotImplemented},
	{yarpcerrors.CodeUnavailable, http.StatusServiceUnavailable},
	{yarpcerrors.CodeDeadlineExceeded, http.StatusGatewayTimeout},
}

// _codeOfStatus reads an error status back as yarpc's HTTP outbound does
// (statusCodeToBestCode), 422 included, which yarpc never answers with.
var _codeOfStatus = codesOfStatuses()

// _statusByCode is _statusOfCode by code, for Status.
var _statusByCode = statusesByCode()

func codesOfStatuses() map[int]yarpcerrors.Code {
	m := map[int]yarpcerrors.Code{http.StatusUnprocessableEntity: yarpcerrors.CodeInvalidArgument}
	for _, row := range _statusOfCode {
		if _, ok := m[row.status]; !ok {
			m[row.status] = row.code
		}
	}
	return m
}

func statusesByCode() map[yarpcerrors.Code]int {
	m := make(map[yarpcerrors.Code]int, len(_statusOfCode))
	for _, row := range _statusOfCode {
		m[row.code] = row.status
	}
	return m
}

// codeFromStatus returns the yarpc code of an HTTP error status as yarpc's
// HTTP outbound reads it without an Rpc-Error-Code header: _codeOfStatus,
// else invalid-argument for a 4xx, unknown for anything else.
func codeFromStatus(status int) yarpcerrors.Code {
	if code, ok := _codeOfStatus[status]; ok {
		return code
	}
	if status >= 400 && status < 500 {
		return yarpcerrors.CodeInvalidArgument
	}
	return yarpcerrors.CodeUnknown
}

// isError reports whether an HTTP status is an error for errown: 400 and
// up. Redirects are not: an HTTP client follows them.
func isError(status int) bool {
	return status >= 400
}

// StatusError is the yarpc error errown classifies a response of error
// status status by: its code as a yarpc service would have answered it,
// from the Rpc-Error-Code header h carries when h is a yarpc service's
// response, else from the status as yarpc's HTTP outbound reads it
// (aborted for 409, unknown for 500, invalid-argument for another 4xx).
func StatusError(status int, h http.Header) error {
	code := codeFromStatus(status)
	if h != nil {
		if v := h.Get(_errorCodeHeader); v != "" {
			var c yarpcerrors.Code
			if err := c.UnmarshalText([]byte(v)); err == nil && c != yarpcerrors.CodeOK {
				code = c
			}
		}
	}
	return yarpcerrors.Newf(code, "HTTP status %d %s", status, http.StatusText(status))
}

// Status returns the HTTP status a yarpc service answers an error of code
// code with (yarpc's HTTP inbound's table): the status a handler writes
// for a yarpc error, so that callers of every kind read the same code.
func Status(code yarpcerrors.Code) int {
	if status, ok := _statusByCode[code]; ok {
		return status
	}
	return http.StatusInternalServerError // ok, or a code yarpc does not know
}
