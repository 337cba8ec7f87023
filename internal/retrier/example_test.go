package retrier_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// callee answers each call with the next of errs (nil for success).
// Errors come with a response carrying the claim, as yarpc's HTTP and
// gRPC transports return them.
func callee(claim string, errs ...error) *outboundtest.Outbound {
	script := make([]outboundtest.Step, len(errs))
	for i, err := range errs {
		script[i] = outboundtest.Fail(err, defaults.ClaimHeader, claim)
		if err == nil {
			script[i] = outboundtest.Succeed("ok")
		}
	}
	return outboundtest.New(script...)
}

// call sends one request through mw to out and prints what out got, each
// attempt, and the outcome.
func call(mw *retrier.Middleware, out *outboundtest.Outbound) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req := &transport.Request{Service: "users", Procedure: "Users::get", Body: strings.NewReader(`{"id":1}`)}

	res, err := middleware.ApplyUnaryOutbound(out, mw).Call(ctx, req)
	for _, r := range out.Requests() {
		fmt.Printf("callee got %s (attempt header %q)\n", r.Body, r.Headers[defaults.AttemptHeader])
	}
	if res != nil && res.Body != nil {
		_ = res.Body.Close()
	}
	fmt.Printf("code %v, claim %q\n", yarpcerrors.FromError(err).Code(), claimOf(res))
}

func claimOf(res *transport.Response) string {
	if res == nil {
		return ""
	}
	v, _ := res.Headers.Get(defaults.ClaimHeader)
	return v
}

func Example() {
	mw, err := retrier.New(retry.Config{
		Policies: []retry.PolicyConfig{{Service: "users", MaxAttempts: 3, Idempotent: new(true)}},
	})
	if err != nil {
		panic(err)
	}

	// The callee fails once with its own (claimed) error: retried, and the
	// body is sent again.
	call(mw, callee("claimed", yarpcerrors.UnavailableErrorf("users is restarting"), nil))
	// The callee's error is unclaimed: a retry was already spent below it.
	call(mw, callee("unclaimed", yarpcerrors.UnavailableErrorf("storage is down")))
	// Output:
	// callee got {"id":1} (attempt header "")
	// callee got {"id":1} (attempt header "2")
	// code ok, claim ""
	// callee got {"id":1} (attempt header "")
	// code unavailable, claim "unclaimed"
}

func Example_naive() {
	// No budget, no claims (an old callee): every allowed attempt is spent.
	mw, err := retrier.New(retry.Config{
		Budget:   retry.BudgetConfig{Disabled: true},
		Policies: []retry.PolicyConfig{{Service: "users", MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Idempotent: new(true)}},
	})
	if err != nil {
		panic(err)
	}
	down := yarpcerrors.InternalErrorf("boom")

	call(mw, callee("", down, down, down))
	// Output:
	// callee got {"id":1} (attempt header "")
	// callee got {"id":1} (attempt header "2")
	// callee got {"id":1} (attempt header "3")
	// code internal, claim ""
}

func ExampleBudgetAllows() {
	// 10% of requests, no floor: the tenth request pays for one retry.
	fmt.Println(retrier.BudgetAllows(9, 0, 0.1, 0, 10*time.Second))
	fmt.Println(retrier.BudgetAllows(10, 0, 0.1, 0, 10*time.Second))
	fmt.Println(retrier.BudgetAllows(10, 1, 0.1, 0, 10*time.Second))
	// Output:
	// false
	// true
	// false
}
