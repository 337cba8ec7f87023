package wire

import (
	"go.uber.org/yarpc/yarpcerrors"
)

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
