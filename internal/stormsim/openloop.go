package stormsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/uber-go/tally/v4"
	"go.uber.org/multierr"
	"go.uber.org/yarpc/yarpcerrors"
)

// _arrivalStream is the second word of the PCG seed of the arrival
// schedule, the first being the run's seed: the schedule is a stream of
// its own, apart from the nodes' failure draws.
const _arrivalStream = 0x6172726976616c73 // "arrivals"

// arrivals returns the open-loop arrival schedule: the times, from the
// load's start, of a Poisson process of rate per second over d, drawn
// from seed. The same seed gives the same schedule.
func arrivals(rate float64, d time.Duration, seed uint64) []time.Duration {
	if rate <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, _arrivalStream))
	out := make([]time.Duration, 0, int(rate*d.Seconds()*1.1)+1)
	for t := 0.0; ; {
		t += r.ExpFloat64() / rate
		at := time.Duration(t * float64(time.Second))
		if at >= d {
			return out
		}
		out = append(out, at)
	}
}

// rootBins returns the bins of the root's series: the load's.
func (o Options) rootBins() int {
	return int((o.duration() + o.bin() - 1) / o.bin())
}

// clock returns the clock of an open-loop run: the load's bins, then
// those of a deadline and a second after it, where the last requests
// still reach the nodes.
func (o Options) clock() *clock {
	return &clock{bin: o.bin(), bins: int((o.duration() + o.Timeout + time.Second + o.bin() - 1) / o.bin())}
}

// openOutcomes is how the root requests of an open-loop run ended.
type openOutcomes struct {
	sent, good []int // by bin of the schedule
	failed     []int64
	outcomes   map[string]int
	maxLag     time.Duration
	lag        []time.Duration // by bin of the schedule: the most
	done       int
}

// runOpen sends o's open-loop load at m, with its triggers, and returns
// what it measured, Result.Timeline included.
func (m *mesh) runOpen(ctx context.Context, o Options, c *clock) (Result, error) {
	schedule := arrivals(o.rate(), o.duration(), o.Seed)
	events := m.events(o)
	smp := newSampler(m, c)

	start := time.Now()
	c.begin(start)
	stop, triggered := make(chan struct{}), make(chan struct{})
	var (
		wg      sync.WaitGroup
		trigErr error
	)
	wg.Go(func() { smp.run(start, stop) })
	wg.Go(func() {
		defer close(triggered)
		trigErr = runEvents(ctx, start, events)
	})
	out := m.drive(ctx, o, start, schedule)
	elapsed := time.Since(start)
	<-triggered
	// What is still queued is dropped: every root request has ended.
	for _, n := range m.nodes {
		for _, in := range n.inst {
			if in.capacity != nil {
				in.capacity.setDown(true)
			}
		}
	}
	m.settle(o.Timeout)
	close(stop)
	wg.Wait()

	res := m.result(o, out.done, out.failed, elapsed)
	res.Timeline = m.timeline(o, out, smp)
	var err error
	if trigErr != nil {
		err = fmt.Errorf("stormsim: triggers: %w", trigErr)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = multierr.Append(err, fmt.Errorf("stormsim: stopped after %d of %d requests: %w", out.done, len(schedule), ctxErr))
	}
	return res, err
}

// drive sends a root request at each time of schedule from start (at
// once when late), each with its own deadline o.Timeout, and returns
// when all have ended or ctx is done.
func (m *mesh) drive(ctx context.Context, o Options, start time.Time, schedule []time.Duration) openOutcomes {
	bins := o.rootBins()
	out := openOutcomes{sent: make([]int, bins), good: make([]int, bins), lag: make([]time.Duration, bins), outcomes: make(map[string]int)}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		timer = time.NewTimer(0)
	)
	defer timer.Stop()
	record := func(id int64, b int, err error, code yarpcerrors.Code, took time.Duration) {
		outcome := "ok"
		switch {
		case err != nil:
			outcome = code.String()
		case took > o.Timeout:
			outcome = "late"
		}
		mu.Lock()
		defer mu.Unlock()
		out.done++
		out.sent[b]++
		out.outcomes[outcome]++
		if outcome == "ok" {
			out.good[b]++
		} else {
			out.failed = append(out.failed, id)
		}
		if o.Progress != nil {
			o.Progress(out.done, len(schedule))
		}
	}
	for i, at := range schedule {
		if wait := time.Until(start.Add(at)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		lag := time.Since(start.Add(at))
		id, b := int64(i), min(int(at/o.bin()), bins-1)
		out.maxLag = max(out.maxLag, lag)
		out.lag[b] = max(out.lag[b], lag)
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, o.Timeout)
			sent := time.Now()
			_, err := m.client.Call(cctx, _procedure, []byte(strconv.FormatInt(id, 10)))
			took := time.Since(sent)
			code := rootCode(cctx, err)
			cancel()
			if ctx.Err() == nil { // a request cut short by ctx says nothing
				record(id, b, err, code, took)
			}
		})
	}
	wg.Wait()
	return out
}

// event is one change of a trigger: its start or its end.
type event struct {
	at time.Duration
	do func() error
}

// events returns the changes of every trigger of m's topology, in time
// order.
func (m *mesh) events(o Options) []event {
	var events []event
	for i, gn := range m.g.nodes {
		n := m.nodes[i]
		for _, tr := range gn.triggers {
			hit := n.inst // the instances the trigger hits
			if tr.Instances > 0 {
				hit = hit[:tr.Instances]
			}
			for k, in := range hit {
				var on, off func() error
				switch tr.Kind {
				case TriggerSlow:
					factor := tr.Factor
					on = func() error { in.capacity.setFactor(factor); return nil }
					off = func() error { in.capacity.setFactor(1); return nil }
				case TriggerFail:
					on = func() error { in.failing.Store(true); return nil }
					off = func() error { in.failing.Store(false); return nil }
				case TriggerCrash:
					on = func() error { return m.crash(i, k) }
					off = func() error { return m.restart(o, i, k) }
				}
				events = append(events, event{at: tr.At, do: on}, event{at: tr.End(), do: off})
			}
		}
	}
	sort.SliceStable(events, func(a, b int) bool { return events[a].at < events[b].at })
	return events
}

// runEvents runs events, each at its time from start, until all have run
// or ctx is done.
func runEvents(ctx context.Context, start time.Time, events []event) error {
	var err error
	timer := time.NewTimer(0)
	defer timer.Stop()
	for _, e := range events {
		if wait := time.Until(start.Add(e.at)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return err
			case <-timer.C:
			}
		}
		err = multierr.Append(err, e.do())
	}
	return err
}

// crash stops instance k of yarpc node i: its dispatcher and its errown,
// its queued requests lost.
func (m *mesh) crash(i, k int) error {
	in := m.nodes[i].inst[k]
	in.down.Store(true)
	if q := in.capacity; q != nil {
		q.setDown(true)
	}
	err := m.procs[i][k].Stop()
	if k == 0 {
		m.errown[i] = nil
	}
	if err != nil {
		return fmt.Errorf("crash %s: %w", m.instanceName(i, k), err)
	}
	return nil
}

// instanceName names instance k of node i: the node's name when it runs
// one, else e.g. "C#2" for the second of C's.
func (m *mesh) instanceName(i, k int) string {
	if m.g.nodes[i].instances == 1 {
		return m.nodes[i].name
	}
	return fmt.Sprintf("%s#%d", m.nodes[i].name, k+1)
}

// _restartTries is how often restart tries to listen on the crashed
// node's port again, 50ms apart: another process may hold it a moment.
const _restartTries = 20

// restart starts crashed instance k of yarpc node i again on its
// address, with a fresh errown (a restarted process).
func (m *mesh) restart(o Options, i, k int) error {
	p := m.procs[i][k]
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	in := m.nodes[i].inst[k]
	if q := in.capacity; q != nil {
		q.setDown(false)
	}
	in.down.Store(false)
	var err error
	for range _restartTries {
		if _, err = m.serve(o, i, k, addr); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("restart %s on %s: %w", m.instanceName(i, k), addr, err)
}

// visits returns, for each node, the requests one root request sends it
// when nothing fails and nothing retries.
func (g *graph) visits() []float64 {
	v := make([]float64, len(g.nodes))
	v[0] = 1
	for k := len(g.order) - 1; k >= 0; k-- { // callers first
		i := g.order[k]
		for _, c := range g.nodes[i].calls {
			v[c.child] += v[i] * float64(c.times)
		}
	}
	return v
}

// timeline returns the Timeline of an open-loop run.
func (m *mesh) timeline(o Options, out openOutcomes, smp *sampler) *Timeline {
	t := &Timeline{
		BinMS:     float64(o.bin()) / float64(time.Millisecond),
		Rate:      o.rate(),
		DurationS: o.duration().Seconds(),
		DeadlineS: o.Timeout.Seconds(),
		Sent:      out.sent,
		Good:      out.good,
		Goodput:   make(Ratios, len(out.sent)),
		Retries:   m.retries.values(),
		Refused:   smp.refused(),
		Outcomes:  out.outcomes,
		MaxLagMS:  float64(out.maxLag) / float64(time.Millisecond),
		LagMS:     make([]float64, len(out.lag)),
	}
	for b, l := range out.lag {
		t.LagMS[b] = float64(l) / float64(time.Millisecond)
	}
	for b, n := range out.sent {
		t.Goodput[b] = ratio(float64(out.good[b]), float64(n))
	}
	visits := m.g.visits()
	for i, gn := range m.g.nodes {
		for _, tr := range gn.triggers {
			t.Triggers = append(t.Triggers, TriggerWindow{Node: gn.name, Kind: tr.Kind, FromS: tr.At.Seconds(), ToS: tr.End().Seconds(), Factor: tr.Factor})
		}
		if s := m.series[i]; s != nil {
			t.Nodes = append(t.Nodes, s.timeline(gn.name, visits[i], gn.capacity != nil))
		}
	}
	sort.SliceStable(t.Triggers, func(a, b int) bool { return t.Triggers[a].FromS < t.Triggers[b].FromS })
	t.summarize(out.done)
	return t
}

// sampler reads, at the end of every bin, the nodes' metrics of refused
// retries and the queues' lengths.
type sampler struct {
	m *mesh
	c *clock
	// readings are the totals by reason at each bin's end; bins the bin
	// each reading closes.
	mu       sync.Mutex
	readings []map[string]int64
	bins     []int
}

func newSampler(m *mesh, c *clock) *sampler { return &sampler{m: m, c: c} }

// run reads at every bin's end from start until stop is closed, then
// once more.
func (s *sampler) run(start time.Time, stop <-chan struct{}) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	s.read(-1)
	for k := 1; k <= s.c.bins; k++ {
		timer.Reset(time.Until(start.Add(time.Duration(k) * s.c.bin)))
		select {
		case <-stop:
			s.read(s.c.bins - 1)
			return
		case <-timer.C:
			s.read(k - 1)
		}
	}
	<-stop
	s.read(s.c.bins - 1)
}

// read records the totals, closing bin b.
func (s *sampler) read(b int) {
	totals := make(map[string]int64)
	for _, scope := range s.m.scopes {
		refusals(scope, totals)
	}
	for _, n := range s.m.nodes {
		queued, capacity := 0, false
		for _, in := range n.inst {
			if in.capacity != nil {
				queued += in.capacity.length()
				capacity = true
			}
		}
		if capacity {
			n.series.queued(queued)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readings = append(s.readings, totals)
	s.bins = append(s.bins, b)
}

// refused returns the refusals by reason per bin.
func (s *sampler) refused() map[string][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]int64)
	for k := 1; k < len(s.readings); k++ {
		for reason, total := range s.readings[k] {
			if d := total - s.readings[k-1][reason]; d != 0 {
				if out[reason] == nil {
					out[reason] = make([]int64, s.c.bins)
				}
				out[reason][s.bins[k]] += d
			}
		}
	}
	return out
}

// refusals adds to totals a node's refused retries by reason: its retry
// middleware's retry.denied counters by their reason, retry.suppressed
// (suppressed) and its adaptive throttle's local rejections (throttled);
// and the requests errown's admission shed (shed; in enforce mode only:
// observe mode sheds nothing).
func refusals(scope tally.TestScope, totals map[string]int64) {
	for _, c := range scope.Snapshot().Counters() {
		switch name := c.Name(); {
		case strings.HasSuffix(name, "inbound.shed") && c.Tags()["mode"] == string(inbound.AdmissionEnforce):
			totals["shed"] += c.Value()
		case strings.HasSuffix(name, "retry.denied"):
			totals[c.Tags()["reason"]] += c.Value()
		case strings.HasSuffix(name, "retry.suppressed"):
			totals["suppressed"] += c.Value()
		case strings.HasSuffix(name, "throttle.rejected"):
			totals["throttled"] += c.Value()
		}
	}
}
