package ingress_test

import (
	"fmt"

	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

func ExampleDecide() {
	// The handler failed after a call over a hard dependency failed, and a
	// retry of that call was already attempted: the error is not ours.
	retried := wire.RetryCriteriaSatisfied(wire.CallOutcome{
		Attempts: 2, Callee: ownership.ClaimClaimed, Code: yarpcerrors.CodeUnavailable,
	})
	fmt.Println(ingress.Decide([]ingress.Failure{{Kind: ownership.KindFailClose, RCS: retried}}, true))

	// Nobody has retried the failed call yet: claim it, so our caller does.
	fmt.Println(ingress.Decide([]ingress.Failure{{Kind: ownership.KindFailClose, RCS: false}}, true))

	// Only a soft dependency failed: the error began here.
	fmt.Println(ingress.Decide([]ingress.Failure{{Kind: ownership.KindFailOpen, RCS: true}}, true))
	// Output:
	// unclaimed
	// claimed
	// claimed
}
