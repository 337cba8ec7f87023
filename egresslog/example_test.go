package egresslog_test

import (
	"fmt"

	"github.com/errown/errown/egresslog"
	"go.uber.org/yarpc/yarpcerrors"
)

func ExampleLog() {
	var log egresslog.Log
	log.Append(egresslog.Entry{
		Edge:     egresslog.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "charge"},
		Code:     yarpcerrors.CodeUnavailable,
		Attempts: 2,
		RCS:      true,
	})
	for _, e := range log.Close(nil) {
		fmt.Println(e.Edge, e.Code, e.Attempts, e.RCS)
	}
	fmt.Println("late append kept:", log.Append(egresslog.Entry{}))
	// Output:
	// checkout->payments::charge unavailable 2 true
	// late append kept: false
}
