package errowntest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc/yarpcerrors"
)

// exampleT stands in for the *testing.T a test would pass: a Mesh and
// NewRequestContext call only the methods it defines.
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

// A chain svc-a → svc-b → svc-c over gRPC where svc-c fails: svc-b retries
// it once and unclaims, svc-a does not retry.
func Example() {
	t := &exampleT{} // in a test: the *testing.T
	defer t.cleanup()

	retries := func(callee string) *errown.Config {
		return &errown.Config{Retry: errown.RetryConfig{
			Budget: retry.BudgetConfig{Ratio: 1},
			Policies: []retry.PolicyConfig{{
				Service: callee, MaxAttempts: 2,
				InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
				Idempotent: new(true),
			}},
		}}
	}
	mesh := errowntest.NewMesh(t)
	c := mesh.Start(errowntest.ServiceConfig{
		Name: "svc-c", Transport: errowntest.GRPC, Errown: &errown.Config{},
		Handler: errowntest.Fail(yarpcerrors.UnavailableErrorf("svc-c is down")),
	})
	mesh.Start(errowntest.ServiceConfig{
		Name: "svc-b", Transport: errowntest.GRPC, Errown: retries("svc-c"),
		Callees: []string{"svc-c"}, Handler: errowntest.Forward,
	})
	mesh.Start(errowntest.ServiceConfig{
		Name: "svc-a", Transport: errowntest.GRPC, Errown: retries("svc-b"),
		Callees: []string{"svc-b"}, Handler: errowntest.Forward,
	})

	reply := mesh.Call(context.Background(), "svc-a", nil)

	fmt.Println("outside caller got:", reply.Code(), reply.Claim)
	fmt.Println("svc-c served:", c.Served())
	for _, a := range mesh.Recorder().Attempts() {
		fmt.Println(a)
	}
	// Output:
	// outside caller got: unavailable unclaimed
	// svc-c served: 2
	// svc-b->svc-c#1 unavailable claimed
	// svc-b->svc-c#2 unavailable claimed
	// svc-a->svc-b#1 unavailable unclaimed
	// outside->svc-a#1 unavailable unclaimed
}
