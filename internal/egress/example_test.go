package egress_test

import (
	"context"
	"fmt"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/egress"
	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/outbound"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

type handlerFunc func(context.Context, *transport.Request, transport.ResponseWriter) error

func (f handlerFunc) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter) error {
	return f(ctx, req, resw)
}

// serve runs h as the inbound middleware would for a request to
// procedure, and prints the claim its error goes out with.
func serve(procedure string, h handlerFunc) {
	in, err := ingress.New(inbound.Config{})
	if err != nil {
		panic(err)
	}
	resw := &transporttest.FakeResponseWriter{}
	_ = in.Handle(context.Background(), &transport.Request{Procedure: procedure, Headers: transport.NewHeaders()}, resw, h)
	claim, _ := resw.Headers.Get("errown-claim")
	fmt.Printf("%s's error goes out %s\n", procedure, claim)
}

// A handler reads the claim of the error a call of its returned: this one
// was already retried below, and so is the handler's own error.
func ExampleClaim() {
	egress, err := egress.New(outbound.Config{})
	if err != nil {
		panic(err)
	}
	// The callee answers every call with an unclaimed error.
	unclaimed := outboundtest.New(outboundtest.Fail(yarpcerrors.UnavailableErrorf("down below"), "errown-claim", "unclaimed"))
	serve("checkout", func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		_, err := egress.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"}, unclaimed)
		claim, _ := outbound.Claim(ctx, "payments", "charge")
		fmt.Println("payments answered", yarpcerrors.FromError(err).Code(), claim)
		return err
	})
	// Output:
	// payments answered unavailable unclaimed
	// checkout's error goes out unclaimed
}

// A cache is no RPC, but its failure explains the handler's as a callee's
// would: recorded, it takes part in the claim decision and in what the
// dependency memory learns of the edge checkout→cache.
func ExampleRecord() {
	serve("checkout", func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
		cacheErr := yarpcerrors.UnavailableErrorf("cache is overloaded")
		outbound.Record(ctx, "cache", cacheErr, true) // the handler retried it once already
		return yarpcerrors.UnavailableErrorf("no price: %v", cacheErr)
	})
	// Output:
	// checkout's error goes out unclaimed
}
