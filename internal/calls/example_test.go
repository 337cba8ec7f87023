package calls_test

import (
	"fmt"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

func ExampleEgressLog() {
	var log calls.EgressLog
	log.Append(calls.Entry{
		Edge:     ownership.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "charge"},
		Code:     yarpcerrors.CodeUnavailable,
		Class:    wire.ClassFailure,
		Attempts: 2,
		RCS:      true,
	})
	// A call that succeeded is counted, not kept.
	log.Append(calls.Entry{
		Edge:     ownership.Edge{CallerProcedure: "checkout", Service: "users", Procedure: "get"},
		Code:     yarpcerrors.CodeOK,
		Attempts: 1,
	})
	for _, e := range log.Close(nil) {
		fmt.Println(e.Edge, e.Code, e.Attempts, e.RCS)
	}
	fmt.Printf("%+v\n", log.Counts())
	fmt.Println("late append kept:", log.Append(calls.Entry{}), "late:", log.Late())
	log.Release() // the chunk the failure took goes back to the pool
	// Output:
	// checkout->payments::charge unavailable 2 true
	// {Stored:1 Overflow:0 OverflowUnsatisfied:0 NotFailed:1}
	// late append kept: false late: true
}
