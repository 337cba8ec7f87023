package ingress

import (
	"github.com/errown/errown/inbound"
	"go.uber.org/yarpc/api/transport"
)

// edge is the declared edge of a service (inbound.EdgeConfig): the
// requests that come from outside the mesh, whose headers errown neither
// reads nor writes.
type edge struct {
	transports, procedures, callers map[string]bool
}

// newEdge returns the edge c declares, nil when it declares none.
func newEdge(c inbound.EdgeConfig) *edge {
	if len(c.Transports)+len(c.Procedures)+len(c.Callers) == 0 {
		return nil
	}
	return &edge{transports: set(c.Transports), procedures: set(c.Procedures), callers: set(c.Callers)}
}

// has reports whether req is an edge request; false on a nil edge.
func (e *edge) has(req *transport.Request) bool {
	return e != nil && (e.transports[req.Transport] || e.procedures[req.Procedure] || e.callers[req.Caller])
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
