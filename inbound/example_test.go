package inbound_test

import (
	"fmt"
	"testing"

	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/inbound"
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

// A handler that sheds load asks its caller not to retry: the error
// response carries the no-retry header.
func ExampleDoNotRetry() {
	t := &exampleT{}
	defer t.cleanup()
	ctx, req := errowntest.NewRequestContext(t, "orders::create")

	inbound.DoNotRetry(ctx)
	got := req.End(yarpcerrors.ResourceExhaustedErrorf("queue full"))
	fmt.Println("claim:", got.Claim, "no-retry:", got.NoRetry)
	// Output: claim: claimed no-retry: true
}

// A request that was wrong, answered with a code errown counts as a
// failure: the dependency memory does not learn that this service failed.
func ExampleCallerFault() {
	t := &exampleT{}
	defer t.cleanup()
	ctx, req := errowntest.NewRequestContext(t, "orders::create")

	inbound.CallerFault(ctx)
	got := req.End(yarpcerrors.InternalErrorf("malformed order"))
	fmt.Println("caller's fault:", got.CallerFault)
	// Output: caller's fault: true
}
