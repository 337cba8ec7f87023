package errown

import (
	"sync"
	"time"

	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
)

// _gaugeInterval is how often the gauges are updated.
const _gaugeInterval = time.Second

// gauges report errown's state, not its events: the mode, requests in
// flight, edges by kind, retry budget left per callee, and the fleet
// source's health.
// They are updated by one goroutine between Start and Stop, off the
// request path.
type gauges struct {
	m *Middleware

	mode         map[retry.Mode]tally.Gauge // 1 for the mode errown runs in, 0 for the other
	inFlight     tally.Gauge
	edges        map[ownership.EdgeKind]tally.Gauge
	fleetHealthy tally.Gauge
	budgetLeft   map[string]tally.Gauge // by callee, from the configured policies

	stop chan struct{}
	done sync.WaitGroup
}

func newGauges(m *Middleware, scope tally.Scope) *gauges {
	g := &gauges{
		m:            m,
		mode:         map[retry.Mode]tally.Gauge{},
		inFlight:     scope.SubScope("ingress").Gauge("in_flight"),
		edges:        map[ownership.EdgeKind]tally.Gauge{},
		fleetHealthy: scope.SubScope("depmem").Gauge("fleet_healthy"),
		budgetLeft:   map[string]tally.Gauge{},
	}
	for _, mode := range []retry.Mode{retry.ModeEnforce, retry.ModeObserve} {
		g.mode[mode] = scope.Tagged(map[string]string{"mode": string(mode)}).Gauge("mode")
	}
	for _, k := range []ownership.EdgeKind{ownership.KindFailClose, ownership.KindFailOpen, ownership.KindUnknown} {
		g.edges[k] = scope.SubScope("depmem").Tagged(map[string]string{"kind": k.String()}).Gauge("edges")
	}
	for _, b := range m.retry.Budgets() {
		g.budgetLeft[b.Callee] = scope.SubScope("retry").Tagged(map[string]string{"callee": b.Callee}).Gauge("budget_left")
	}
	return g
}

// update sets every gauge from the middleware's state now.
func (g *gauges) update() {
	active := g.m.Modes().Mode
	for mode, gauge := range g.mode {
		if mode == active {
			gauge.Update(1)
		} else {
			gauge.Update(0)
		}
	}
	g.inFlight.Update(float64(g.m.InFlight()))
	counts := map[ownership.EdgeKind]int{}
	for _, e := range g.m.kinds.Edges() {
		counts[e.Kind]++
	}
	for k, gauge := range g.edges {
		gauge.Update(float64(counts[k]))
	}
	configured, healthy := g.m.memory.FleetHealthy()
	switch {
	case !configured:
		g.fleetHealthy.Update(-1) // no fleet source
	case healthy:
		g.fleetHealthy.Update(1)
	default:
		g.fleetHealthy.Update(0)
	}
	for _, b := range g.m.retry.Budgets() {
		if gauge, ok := g.budgetLeft[b.Callee]; ok && !b.Disabled {
			gauge.Update(b.Allowed - float64(b.Retries))
		}
	}
}

func (g *gauges) start(interval time.Duration) {
	g.stop = make(chan struct{})
	g.done.Add(1)
	go func() {
		defer g.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			g.update()
			select {
			case <-g.stop:
				return
			case <-t.C:
			}
		}
	}()
}

func (g *gauges) halt() {
	if g.stop == nil {
		return
	}
	close(g.stop)
	g.done.Wait()
	g.stop = nil
	g.update()
}
