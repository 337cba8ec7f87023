package depcontract

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/transport/http"
)

// named is a middleware that only passes the call on.
type named struct{ name string }

func (*named) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	return h.Handle(ctx, req, resw)
}

func TestUnaryChainHas(t *testing.T) {
	target, other, another := &named{"target"}, &named{"other"}, &named{"another"}
	tests := []struct {
		name string
		give middleware.UnaryInbound
		want bool
	}{
		{"nil", nil, false},
		{"itself", target, true},
		{"another middleware", other, false},
		{"a func middleware", middleware.UnaryInboundFunc(nil), false},
		{"a chain holding it", yarpc.UnaryInboundMiddleware(other, target), true},
		{"a chain without it", yarpc.UnaryInboundMiddleware(other, another), false},
		{"chains of chains", yarpc.UnaryInboundMiddleware(other, yarpc.UnaryInboundMiddleware(another, target)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := UnaryChainHas(tt.give, target)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestUnaryChainHasOnDispatcher: a dispatcher's chain, which yarpc builds
// with its own observability middleware first, holds the middleware of
// the yarpc.Config it was built from.
func TestUnaryChainHasOnDispatcher(t *testing.T) {
	target, other := &named{"target"}, &named{"other"}
	tests := []struct {
		name string
		give middleware.UnaryInbound
		want bool
	}{
		{"alone", target, true},
		{"in a chain", yarpc.UnaryInboundMiddleware(other, target), true},
		{"absent", other, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := yarpc.NewDispatcher(yarpc.Config{
				Name:              "depcontract-test",
				Inbounds:          yarpc.Inbounds{http.NewTransport().NewInbound("127.0.0.1:0")},
				InboundMiddleware: yarpc.InboundMiddleware{Unary: tt.give},
			})
			got, err := UnaryChainHas(d.InboundMiddleware().Unary, target)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestChainShape: yarpc's chain is the flat slice UnaryChainHas reads; a
// chain type of another shape is ErrMoved, not a silent "absent".
func TestChainShape(t *testing.T) {
	require.NoError(t, checkChainType(_unaryChainType), "yarpc %s's chain", _yarpcVersion)
	assert.Equal(t, reflect.Slice, _unaryChainType.Kind())
	assert.Equal(t, "go.uber.org/yarpc/internal/inboundmiddleware", _unaryChainType.PkgPath())
	for _, give := range []reflect.Type{
		reflect.TypeOf(struct{ Chain []middleware.UnaryInbound }{}),
		reflect.TypeOf([]any{}),
	} {
		assert.ErrorIs(t, checkChainType(give), ErrMoved, "%v", give)
	}
}
