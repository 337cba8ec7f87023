package exampleapp

import (
	"context"

	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// Frontend registers frontend::checkout, which calls orders::place.
func Frontend(d *yarpc.Dispatcher, s *Switch) {
	orders := raw.New(d.ClientConfig("orders"))
	d.Register(raw.Procedure("checkout", func(ctx context.Context, body []byte) ([]byte, error) {
		if s.Broken() {
			return nil, yarpcerrors.UnavailableErrorf("frontend is broken")
		}
		return orders.Call(ctx, "place", body)
	}))
}

// Orders registers orders::place, which calls inventory::reserve.
func Orders(d *yarpc.Dispatcher, s *Switch) {
	inventory := raw.New(d.ClientConfig("inventory"))
	d.Register(raw.Procedure("place", func(ctx context.Context, body []byte) ([]byte, error) {
		if s.Broken() {
			return nil, yarpcerrors.UnavailableErrorf("orders is broken")
		}
		reserved, err := inventory.Call(ctx, "reserve", body)
		if err != nil {
			return nil, err
		}
		return append([]byte("order placed, "), reserved...), nil
	}))
}

// Inventory registers inventory::reserve, which calls nobody.
func Inventory(d *yarpc.Dispatcher, s *Switch) {
	d.Register(raw.Procedure("reserve", func(_ context.Context, body []byte) ([]byte, error) {
		if s.Broken() {
			return nil, yarpcerrors.UnavailableErrorf("inventory is broken")
		}
		return append([]byte("reserved "), body...), nil
	}))
}
