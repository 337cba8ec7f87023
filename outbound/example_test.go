package outbound_test

import (
	"context"
	"fmt"

	"github.com/errown/errown/ingresslog"
	"github.com/errown/errown/outbound"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// unclaimedCallee answers every call with an unclaimed error.
type unclaimedCallee struct{ transport.UnaryOutbound }

func (unclaimedCallee) Call(context.Context, *transport.Request) (*transport.Response, error) {
	res := &transport.Response{Headers: transport.NewHeaders().With("errown-claim", "unclaimed")}
	return res, yarpcerrors.UnavailableErrorf("down below")
}

func ExampleMiddleware() {
	mw, err := outbound.New(outbound.Config{})
	if err != nil {
		panic(err)
	}
	logs, err := ingresslog.New(ingresslog.Config{})
	if err != nil {
		panic(err)
	}
	// The inbound middleware opens a log per request and puts it in the
	// handler's context; the handler's outbound calls carry that context.
	log := logs.Open("checkout")
	ctx := ingresslog.NewContext(context.Background(), log)
	_, _ = mw.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"}, unclaimedCallee{})
	for _, e := range log.Egress.Close(nil) {
		fmt.Println(e.Edge, e.Code, e.Claim, "rcs:", e.RCS)
	}
	// Output: checkout->payments::charge unavailable unclaimed rcs: true
}
