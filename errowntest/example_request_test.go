package errowntest_test

import (
	"context"
	"fmt"

	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/outbound"
	"go.uber.org/yarpc/yarpcerrors"
)

// createOrder is a handler under test: it retries its database write
// once itself, tells errown so, and asks its caller not to retry a
// request the database refused twice.
func createOrder(ctx context.Context, write func() error) error {
	err := write()
	retried := false
	if err != nil {
		err, retried = write(), true
	}
	outbound.Record(ctx, "orders-db", err, retried)
	if err != nil {
		inbound.DoNotRetry(ctx)
		return yarpcerrors.UnavailableErrorf("orders-db: %v", err)
	}
	return nil
}

// A handler's use of errown's helpers, tested without a mesh.
func ExampleNewRequestContext() {
	t := &exampleT{}
	defer t.cleanup()

	ctx, req := errowntest.NewRequestContext(t, "orders::create")
	err := createOrder(ctx, func() error { return yarpcerrors.UnavailableErrorf("db down") })
	got := req.End(err)

	fmt.Println("claim:", got.Claim)
	fmt.Println("no-retry:", got.NoRetry)
	fmt.Println("failed calls:", len(got.Failures), "to", got.Failures[0].Edge.Service, "attempts", got.Failures[0].Attempts)
	// Output:
	// claim: unclaimed
	// no-retry: true
	// failed calls: 1 to orders-db attempts 2
}
