package wire

import "go.uber.org/yarpc/yarpcerrors"

// Class says what an error code means for ownership: whether the callee
// failed, or answered.
type Class uint8

const (
	// ClassOK is not an error.
	ClassOK Class = iota
	// ClassFailure: the callee's fault (a server fault): in
	// docs/DESIGN.md's set F, a callee failure for the dependency
	// memory, and a caller ending in one has failed itself.
	ClassFailure
	// ClassAnswer: the request's fault (a client fault): never in F,
	// never a callee failure, and a caller passing it on has not failed.
	ClassAnswer
)

// String returns "ok", "failure" or "answer".
func (c Class) String() string {
	switch c {
	case ClassFailure:
		return "failure"
	case ClassAnswer:
		return "answer"
	default:
		return "ok"
	}
}

// CodeInfo is one row of the code table.
type CodeInfo struct {
	Code yarpcerrors.Code
	// Class of an error with Code.
	Class Class
	// RetryableByNature: the same request sent again could succeed.
	RetryableByNature bool
	// RetriedByDefault: a retry policy that lists no retryable codes
	// retries Code.
	RetriedByDefault bool
	// Deviation says why Class departs from
	// yarpcerrors.GetFaultTypeFromCode; empty when it does not.
	Deviation string
}

// _table is errown's one table of error codes, indexed by code. Class
// follows yarpcerrors.GetFaultTypeFromCode (server fault: failure, client
// fault: answer) except where Deviation says; a test holds every row
// against yarpc. Every other code rule (RCS, the inbound caller-fault
// rule, default retryable codes, which calls are in F) derives from it.
var _table = [...]CodeInfo{
	{Code: yarpcerrors.CodeOK, Class: ClassOK},
	{Code: yarpcerrors.CodeCancelled, Class: ClassAnswer},
	{Code: yarpcerrors.CodeUnknown, Class: ClassFailure, RetryableByNature: true, RetriedByDefault: true},
	{Code: yarpcerrors.CodeInvalidArgument, Class: ClassAnswer},
	{Code: yarpcerrors.CodeDeadlineExceeded, Class: ClassFailure, RetryableByNature: true, RetriedByDefault: true},
	{Code: yarpcerrors.CodeNotFound, Class: ClassAnswer},
	{Code: yarpcerrors.CodeAlreadyExists, Class: ClassAnswer},
	{Code: yarpcerrors.CodePermissionDenied, Class: ClassAnswer},
	{
		Code: yarpcerrors.CodeResourceExhausted, Class: ClassFailure, RetryableByNature: true,
		Deviation: "yarpc calls resource-exhausted a client fault (a quota); a callee shedding load answers with it too, and the request was not wrong, so errown counts it as the callee's failure (overload); it is not retried by default, since a retry feeds the overload",
	},
	{Code: yarpcerrors.CodeFailedPrecondition, Class: ClassAnswer},
	// A conflict a retry of the whole transaction may resolve: the
	// transaction's owner retries it, so no policy does by default.
	{Code: yarpcerrors.CodeAborted, Class: ClassAnswer, RetryableByNature: true},
	{Code: yarpcerrors.CodeOutOfRange, Class: ClassAnswer},
	{Code: yarpcerrors.CodeUnimplemented, Class: ClassAnswer},
	{Code: yarpcerrors.CodeInternal, Class: ClassFailure, RetryableByNature: true, RetriedByDefault: true},
	{Code: yarpcerrors.CodeUnavailable, Class: ClassFailure, RetryableByNature: true, RetriedByDefault: true},
	{Code: yarpcerrors.CodeDataLoss, Class: ClassFailure},
	{Code: yarpcerrors.CodeUnauthenticated, Class: ClassAnswer},
}

// Codes returns the code table, one row per yarpc code in code order.
func Codes() []CodeInfo {
	out := make([]CodeInfo, len(_table))
	copy(out, _table[:])
	return out
}

// Info returns code c's row. A code yarpc does not define is a
// non-retryable failure: its meaning is unknown, and it answered nothing.
func Info(c yarpcerrors.Code) CodeInfo {
	if int(c) < len(_table) {
		return _table[c]
	}
	return CodeInfo{Code: c, Class: ClassFailure}
}

// RetryableByNature reports whether an error with code c could succeed if
// sent again (CodeOK is not retryable).
func RetryableByNature(c yarpcerrors.Code) bool {
	return Info(c).RetryableByNature
}

// DefaultRetryableCodes returns the codes a retry policy that lists none
// retries: the failures that are retryable by nature, except overload.
func DefaultRetryableCodes() []yarpcerrors.Code {
	var out []yarpcerrors.Code
	for _, r := range _table {
		if r.RetriedByDefault {
			out = append(out, r.Code)
		}
	}
	return out
}
