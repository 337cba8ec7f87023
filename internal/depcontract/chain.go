package depcontract

import (
	"fmt"
	"reflect"

	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
)

// _unaryChainType is the type of yarpc's unary inbound chains
// (internal/inboundmiddleware.unaryChain in v1.81.0, a flat slice of
// middleware.UnaryInbound: UnaryChain flattens chains of chains), taken
// from a chain yarpc builds rather than named.
var _unaryChainType = reflect.TypeOf(yarpc.UnaryInboundMiddleware(
	middleware.UnaryInboundFunc(nil), middleware.UnaryInboundFunc(nil),
))

var _unaryInboundType = reflect.TypeFor[middleware.UnaryInbound]()

// UnaryChainHas reports whether mw, a dispatcher's unary inbound
// middleware (Dispatcher.InboundMiddleware().Unary), is target or a yarpc
// chain holding target. yarpc offers no way to list a chain's middleware:
// it reflects on the chain's type, and returns an error wrapping ErrMoved
// when that type is no longer a slice of middleware.UnaryInbound.
func UnaryChainHas(mw, target middleware.UnaryInbound) (bool, error) {
	if mw == nil {
		return false, nil
	}
	if mw == target {
		return true, nil
	}
	if reflect.TypeOf(mw) != _unaryChainType {
		return false, nil // a middleware of its own, not a chain
	}
	if err := checkChainType(_unaryChainType); err != nil {
		return false, err
	}
	v := reflect.ValueOf(mw)
	for i := range v.Len() {
		e, _ := v.Index(i).Interface().(middleware.UnaryInbound)
		if ok, err := UnaryChainHas(e, target); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// checkChainType returns nil when t is a slice of middleware.UnaryInbound,
// as yarpc's chain is in v1.81.0.
func checkChainType(t reflect.Type) error {
	if t.Kind() != reflect.Slice || t.Elem() != _unaryInboundType {
		return fmt.Errorf("%w: yarpc's unary inbound chain is %v, no longer a slice of middleware.UnaryInbound as in yarpc %s: "+
			"errown cannot see whether its middleware is on the dispatcher", ErrMoved, t, _yarpcVersion)
	}
	return nil
}
