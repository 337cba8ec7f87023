package memory

import (
	"github.com/errown/errown/ownership"
	"github.com/uber-go/tally/v4"
)

// gauges are the memory's state: depmem.edges tagged kind, and
// depmem.fleet_healthy: 1 healthy, 0 not, -1 no fleet source.
type gauges struct {
	edges        map[ownership.EdgeKind]tally.Gauge
	fleetHealthy tally.Gauge
}

func newGauges(scope tally.Scope) gauges {
	g := gauges{edges: map[ownership.EdgeKind]tally.Gauge{}, fleetHealthy: scope.Gauge("fleet_healthy")}
	for _, k := range []ownership.EdgeKind{ownership.KindFailClose, ownership.KindFailOpen, ownership.KindUnknown} {
		g.edges[k] = scope.Tagged(map[string]string{"kind": k.String()}).Gauge("edges")
	}
	return g
}

// UpdateGauges sets the edges by kind as view lists them (declarations
// included) and the fleet's health. errown's gauge ticker calls it, off
// the request path.
func (m *Memory) UpdateGauges(view Viewer) {
	counts := map[ownership.EdgeKind]int{}
	for _, e := range view.Edges() {
		counts[e.Kind]++
	}
	for k, gauge := range m.gauges.edges {
		gauge.Update(float64(counts[k]))
	}
	configured, healthy := m.FleetHealthy()
	switch {
	case !configured:
		m.gauges.fleetHealthy.Update(-1)
	case healthy:
		m.gauges.fleetHealthy.Update(1)
	default:
		m.gauges.fleetHealthy.Update(0)
	}
}
