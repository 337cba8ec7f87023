package ingress

import (
	"testing"

	"github.com/errown/errown/inbound"
	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/api/transport"
)

func TestEdgeHas(t *testing.T) {
	declared := newEdge(inbound.EdgeConfig{Transports: []string{"http"}, Procedures: []string{"Orders::get"}, Callers: []string{"gateway"}})
	tests := []struct {
		name string
		edge *edge
		give transport.Request
		want bool
	}{
		{name: "none declared", edge: newEdge(inbound.EdgeConfig{}), give: transport.Request{Transport: "http", Procedure: "Orders::get", Caller: "gateway"}},
		{name: "by transport", edge: declared, give: transport.Request{Transport: "http", Procedure: "Orders::put", Caller: "frontend"}, want: true},
		{name: "by procedure", edge: declared, give: transport.Request{Transport: "grpc", Procedure: "Orders::get", Caller: "frontend"}, want: true},
		{name: "by caller", edge: declared, give: transport.Request{Transport: "grpc", Procedure: "Orders::put", Caller: "gateway"}, want: true},
		{name: "none matches", edge: declared, give: transport.Request{Transport: "grpc", Procedure: "Orders::put", Caller: "frontend"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.edge.has(&tt.give))
		})
	}
	assert.Nil(t, newEdge(inbound.EdgeConfig{}), "nothing declared: no edge, one nil check per request")
}
