package retrier_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// scriptedOutbound answers each call with the next of its errors (nil for
// success) and prints what it received. Errors come with a response carrying
// the claim, as yarpc's HTTP and gRPC transports return them.
type scriptedOutbound struct {
	errs  []error
	claim string
	n     int
}

func (o *scriptedOutbound) Transports() []transport.Transport { return nil }
func (o *scriptedOutbound) Start() error                      { return nil }
func (o *scriptedOutbound) Stop() error                       { return nil }
func (o *scriptedOutbound) IsRunning() bool                   { return true }

func (o *scriptedOutbound) Call(_ context.Context, req *transport.Request) (*transport.Response, error) {
	body, _ := io.ReadAll(req.Body)
	attempt, _ := req.Headers.Get(defaults.AttemptHeader)
	fmt.Printf("callee got %s (attempt header %q)\n", body, attempt)
	err := o.errs[o.n]
	o.n++
	if err != nil {
		return &transport.Response{Headers: transport.NewHeaders().With(defaults.ClaimHeader, o.claim)}, err
	}
	return &transport.Response{Body: io.NopCloser(strings.NewReader("ok"))}, nil
}

// call sends one request through mw to out and prints the outcome: the
// callee prints each attempt it gets.
func call(mw *retrier.Middleware, out transport.UnaryOutbound) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req := &transport.Request{Service: "users", Procedure: "Users::get", Body: strings.NewReader(`{"id":1}`)}

	res, err := middleware.ApplyUnaryOutbound(out, mw).Call(ctx, req)
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
	call(mw, &scriptedOutbound{
		errs:  []error{yarpcerrors.UnavailableErrorf("users is restarting"), nil},
		claim: "claimed",
	})
	// The callee's error is unclaimed: a retry was already spent below it.
	call(mw, &scriptedOutbound{
		errs:  []error{yarpcerrors.UnavailableErrorf("storage is down")},
		claim: "unclaimed",
	})
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

	call(mw, &scriptedOutbound{errs: []error{down, down, down}})
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
