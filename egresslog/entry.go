package egresslog

import (
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// Entry is one logical outbound call: all of its attempts together.
type Entry struct {
	Edge Edge
	// Code is yarpcerrors.CodeOK for a call that succeeded.
	Code yarpcerrors.Code
	// Claim is the callee's claim on the final error response.
	Claim ownership.Claim
	// RCS reports whether the retry criteria were satisfied (only meaningful
	// when Code is not CodeOK).
	RCS bool
	// Attempts made, the first one included.
	Attempts int
}

// Failed reports whether the call ended in error.
func (e Entry) Failed() bool {
	return e.Code != yarpcerrors.CodeOK
}
