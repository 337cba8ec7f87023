package outbound_test

import (
	"fmt"
	"testing"

	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// exampleT stands in for the *testing.T a test gives errowntest, which calls
// only the methods it defines.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()                           {}
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (t *exampleT) FailNow()                          { panic("test failed") }

func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// A handler reads the claim of the error a call of its returned: this one
// was already retried below, so the handler's own error is unclaimed too.
func ExampleClaim() {
	t := &exampleT{}
	defer t.cleanup()
	ctx, req := errowntest.NewRequestContext(t, "checkout")
	// payments answered unavailable, already retried below it.
	req.Called("payments", "charge", yarpcerrors.UnavailableErrorf("down below"), ownership.ClaimUnclaimed)

	claim, ok := outbound.Claim(ctx, "payments", "charge")
	fmt.Println("payments:", claim, ok)
	fmt.Println("checkout's error goes out", req.End(yarpcerrors.UnavailableErrorf("no payment")).Claim)
	// Output:
	// payments: unclaimed true
	// checkout's error goes out unclaimed
}

// A cache is no RPC, but its failure explains the handler's as a callee's
// would: recorded, it takes part in the claim decision and in what the
// dependency memory learns of the edge checkout→cache.
func ExampleRecord() {
	t := &exampleT{}
	defer t.cleanup()
	ctx, req := errowntest.NewRequestContext(t, "checkout")

	cacheErr := yarpcerrors.UnavailableErrorf("cache is overloaded")
	outbound.Record(ctx, "cache", cacheErr, true) // the handler retried it once already
	got := req.End(yarpcerrors.UnavailableErrorf("no price: %v", cacheErr))
	fmt.Println("checkout's error goes out", got.Claim, "after", got.Failures[0].Attempts, "attempts at", got.Failures[0].Edge.Service)
	// Output:
	// checkout's error goes out unclaimed after 2 attempts at cache
}
