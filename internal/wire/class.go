package wire

import "go.uber.org/yarpc/yarpcerrors"

// Class says what an error code means for ownership: whether the callee
// failed, or answered.
type Class uint8

const (
	// ClassOK is not an error.
	ClassOK Class = iota
	// ClassFailure: the callee's fault (a server fault). A failure is in
	// docs/DESIGN.md's set F, counts as a callee failure in the dependency
	// memory, and a caller ending in one has failed itself.
	ClassFailure
	// ClassAnswer: the request's fault (a client fault). An answer is what
	// the callee had to say about this request: it is never in F, never a
	// callee failure in the dependency memory, and a caller passing it on
	// has not failed either.
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
	// yarpcerrors.GetFaultTypeFromCode (a server fault is a failure, a
	// client fault an answer); empty when it does not.
	Deviation string
}

// _table is errown's one table of error codes, indexed by code. Class
// follows yarpcerrors.GetFaultTypeFromCode (a server fault is a failure, a
// client fault an answer) except where Deviation says otherwise; a test
// holds every row against yarpc's function. Every other rule about codes
// (RCS's retryable-by-nature, the caller-fault rule of the inbound side,
// the default retryable codes of a retry policy, which outbound calls
// are in F) derives from it.
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
	// A conflict that a retry of the whole transaction may resolve: the hop
	// that owns the transaction retries it, so no policy does by default.
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

// Info returns the row of code c. A code yarpc does not define is a
// failure that is not retryable: errown cannot tell what it means, and a
// callee sending it did not answer the request.
func Info(c yarpcerrors.Code) CodeInfo {
	if int(c) < len(_table) {
		return _table[c]
	}
	return CodeInfo{Code: c, Class: ClassFailure}
}

// RetryableByNature reports whether an error with code c could succeed if
// the same request were sent again. CodeOK is not an error and is not
// retryable either.
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
