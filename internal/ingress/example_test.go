package ingress_test

import (
	"context"
	"fmt"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/ingress"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

type failing struct{}

func (failing) Handle(context.Context, *transport.Request, transport.ResponseWriter) error {
	return yarpcerrors.InternalErrorf("disk full")
}

func ExampleMiddleware() {
	mw, err := ingress.New(inbound.Config{})
	if err != nil {
		panic(err)
	}
	resw := &transporttest.FakeResponseWriter{}
	req := &transport.Request{Service: "store", Procedure: "put", Transport: "http"}
	err = mw.Handle(context.Background(), req, resw, failing{})
	claim, _ := resw.Headers.Get("errown-claim")
	fmt.Println(yarpcerrors.FromError(err).Code(), claim)
	// Output: internal claimed
}
