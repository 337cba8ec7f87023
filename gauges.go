package errown

import (
	"sync"
	"time"

	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
)

// _gaugeInterval is how often the gauges are updated.
const _gaugeInterval = time.Second

// gauges report errown's state, not its events. Each part registers and
// sets its own (ingress.in_flight, depmem.edges and depmem.fleet_healthy,
// retry.budget_left); the root's is errown.mode, 1 for the mode errown runs
// in and 0 for the other. One goroutine updates them all between Start and
// Stop, off the request path.
type gauges struct {
	m    *Middleware
	mode map[retry.Mode]tally.Gauge

	stop chan struct{}
	done sync.WaitGroup
}

func newGauges(m *Middleware, scope tally.Scope) *gauges {
	g := &gauges{m: m, mode: map[retry.Mode]tally.Gauge{}}
	for _, mode := range []retry.Mode{retry.ModeEnforce, retry.ModeObserve} {
		g.mode[mode] = scope.Tagged(map[string]string{"mode": string(mode)}).Gauge("mode")
	}
	return g
}

// update sets every gauge from the middleware's state now.
func (g *gauges) update() {
	active := g.m.modes().Mode
	for mode, gauge := range g.mode {
		if mode == active {
			gauge.Update(1)
		} else {
			gauge.Update(0)
		}
	}
	g.m.inbound.UpdateGauges()
	g.m.memory.UpdateGauges(g.m.kinds)
	g.m.retry.UpdateGauges()
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
