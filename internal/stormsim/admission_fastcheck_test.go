package stormsim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/admission"
	"github.com/stretchr/testify/assert"
)

// The admission fast check (issue 46, item 5): the real admission
// controller in front of the capacity scenario's D, without HTTP, so
// that a change to the controller is judged in under a minute. The
// 9-minute capacity scenario stays the acceptance.
//
// D is the lab's capacityQueue: 2 workers × 5ms, ×10 for a 2s trigger
// (50ms: the 40 requests/s degraded D can serve), Poisson arrivals at
// 240/s, each with the 58ms C's 60ms attempt timeout leaves it at D. A
// request is good when its service ended within its deadline on its
// worker's virtual clock (capacityQueue's, so that a loaded machine's
// late timers neither cut D's capacity nor make its answers late).
// Every arm runs in the same process on the same schedule at once, each
// with a queue of its own, so that what the machine does to timers
// touches them alike; the controller is judged against the fixed-limit
// oracle beside it.
const (
	_fcRate     = 240.0
	_fcDeadline = 58 * time.Millisecond
	_fcSteady   = 1500 * time.Millisecond // before the trigger
	_fcTrigger  = 2 * time.Second
	_fcAfter    = 1500 * time.Millisecond
	_fcBin      = 250 * time.Millisecond
	_fcFactor   = 10
	// _fcBound is what degraded D can serve in time during the trigger:
	// 2 workers, 50ms each.
	_fcBound = 2 * float64(_fcTrigger/time.Second) * float64(time.Second) / (_fcFactor * 5 * float64(time.Millisecond))
)

// _fcNever stands for a run that did not recover, in medians.
const _fcNever = time.Hour

var _fcCapacity = Capacity{Workers: 2, ServiceTime: 5 * time.Millisecond, Queue: 1000}

// fcArm is one way to admit requests in front of D.
type fcArm struct {
	name  string
	admit func(ctx context.Context) (done func(), reason string)
	trace *limitTrace // nil: a fixed limit
}

// limitTrace records a controller's limit as it changes.
type limitTrace struct {
	mu     sync.Mutex
	at     []time.Time
	limits []int
}

func (lt *limitTrace) record(l float64, _ int) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.at, lt.limits = append(lt.at, time.Now()), append(lt.limits, int(l))
}

// during returns the limit at from and the shares of [from, to) spent
// at a limit of 1, 2, 3 and more, from the limit first (before any
// change).
func (lt *limitTrace) during(from, to time.Time, first int) string {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	var spent [4]time.Duration
	l, t := first, from
	for i, at := range lt.at {
		if at.After(from) {
			break
		}
		l = lt.limits[i]
	}
	atStart := l
	add := func(until time.Time) {
		if until.After(t) {
			spent[min(3, max(0, l-1))] += until.Sub(t)
			t = until
		}
	}
	for i, at := range lt.at {
		if at.After(to) {
			break
		}
		add(at)
		l = lt.limits[i]
	}
	add(to)
	total := to.Sub(from)
	return fmt.Sprintf("limit at the start %d; during it 1 %.0f%%, 2 %.0f%%, 3 %.0f%%, more %.0f%%", atStart, 100*float64(spent[0])/float64(total), 100*float64(spent[1])/float64(total), 100*float64(spent[2])/float64(total), 100*float64(spent[3])/float64(total))
}

// fixedLimit is the oracle: at most n requests at D at once, no queue,
// n the true worker count.
func fixedLimit(n int64) func(context.Context) (func(), string) {
	var inflight atomic.Int64
	return func(context.Context) (func(), string) {
		if inflight.Add(1) > n {
			inflight.Add(-1)
			return nil, admission.ReasonQueueFull
		}
		return func() { inflight.Add(-1) }, ""
	}
}

// controlled admits through the real controller, as the ingress
// middleware does for a first attempt.
func controlled(c *admission.Controller) func(context.Context) (func(), string) {
	return func(ctx context.Context) (func(), string) {
		t, reason, ok := c.Admit(ctx, admission.PriorityFirst)
		if !ok {
			return nil, reason
		}
		return func() { c.Done(t) }, ""
	}
}

// controllerArm is the arm of a controller with the inbound defaults and
// the least limit minLimit, its limit traced.
func controllerArm(name string, minLimit int) fcArm {
	d := inbound.DefaultConfig().Admission
	tr := &limitTrace{}
	c := admission.New(admission.Config{MaxQueue: d.MaxQueue, MinLimit: minLimit, MaxLimit: d.MaxLimit, OnLimit: tr.record})
	return fcArm{name: name, admit: controlled(c), trace: tr}
}

// fcFigures is what one arm measured in one run.
type fcFigures struct {
	duringGood int     // answers in time whose service ended during the trigger
	share      float64 // duringGood ÷ _fcBound
	recovery   time.Duration
	recovered  bool
	steadyShed int // shed before the trigger
	// steadyReasons counts them by reason.
	steadyReasons map[string]int
	steadyGood    float64
	afterShares   []float64 // goodput per bin after the trigger
	duringBins    []int     // answers in time per bin of the trigger, by arrival
	limits        string    // the controller's limit during the trigger
}

// fcRun is one run's outcomes of one arm, by bin of the schedule.
type fcRun struct {
	mu         sync.Mutex
	sent, good []int
	shed       []int
	duringGood int
	// steadyReasons counts the sheds before the trigger by reason.
	steadyReasons map[string]int
}

func runFastCheck(seed uint64, leave bool, arms []fcArm) []fcFigures {
	total := _fcSteady + _fcTrigger + _fcAfter
	bins := int(total / _fcBin)
	schedule := arrivals(_fcRate, total, seed)
	queues := make([]*capacityQueue, len(arms))
	runs := make([]*fcRun, len(arms))
	for i := range arms {
		queues[i] = newCapacityQueue("D", _fcCapacity, leave, nil)
		runs[i] = &fcRun{sent: make([]int, bins), good: make([]int, bins), shed: make([]int, bins), steadyReasons: make(map[string]int)}
	}
	start := time.Now()
	trigStart, trigEnd := start.Add(_fcSteady), start.Add(_fcSteady+_fcTrigger)
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(time.Until(trigStart))
		for _, q := range queues {
			q.setFactor(_fcFactor)
		}
		time.Sleep(time.Until(trigEnd))
		for _, q := range queues {
			q.setFactor(1)
		}
	})
	for _, at := range schedule {
		time.Sleep(time.Until(start.Add(at)))
		bin := int(at / _fcBin)
		for i, arm := range arms {
			wg.Go(func() {
				ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(_fcDeadline))
				defer cancel()
				deadline, _ := ctx.Deadline()
				r := runs[i]
				done, reason := arm.admit(ctx)
				if done == nil {
					r.mu.Lock()
					r.sent[bin]++
					r.shed[bin]++
					if bin < int(_fcSteady/_fcBin) {
						r.steadyReasons[reason]++
					}
					r.mu.Unlock()
					return
				}
				end, err := queues[i].serveTimed(ctx)
				done()
				r.mu.Lock()
				defer r.mu.Unlock()
				r.sent[bin]++
				if err != nil || end.After(deadline) {
					return
				}
				r.good[bin]++
				if !end.Before(trigStart) && end.Before(trigEnd) {
					r.duringGood++
				}
			})
		}
	}
	wg.Wait()

	out := make([]fcFigures, len(arms))
	steadyBins, afterBin := int(_fcSteady/_fcBin), int((_fcSteady+_fcTrigger)/_fcBin)
	for i, r := range runs {
		f := fcFigures{duringGood: r.duringGood, share: float64(r.duringGood) / _fcBound, steadyReasons: r.steadyReasons}
		var sent, good int
		for b := range steadyBins {
			f.steadyShed += r.shed[b]
			sent, good = sent+r.sent[b], good+r.good[b]
		}
		f.steadyGood = float64(good) / float64(max(1, sent))
		f.duringBins = r.good[steadyBins:afterBin]
		for b := afterBin; b < bins; b++ {
			f.afterShares = append(f.afterShares, float64(r.good[b])/float64(max(1, r.sent[b])))
		}
		// Recovered: from the first bin after which every bin to the
		// run's end has goodput at least 95%.
		for k := range f.afterShares {
			if !slices.ContainsFunc(f.afterShares[k:], func(g float64) bool { return g < 0.95 }) {
				f.recovery, f.recovered = time.Duration(k)*_fcBin, true
				break
			}
		}
		if tr := arms[i].trace; tr != nil {
			f.limits = tr.during(trigStart, trigEnd, 8)
		}
		out[i] = f
	}
	return out
}

// TestAdmissionFastCheck runs the controller and the fixed-limit oracle
// side by side, serve and leave, 3 seeds, and judges the medians: goodput
// during the trigger as a share of the bound and against the oracle,
// recovery after the trigger, sheds in the steady state. The controller
// runs twice: with the inbound defaults (whose least limit, 2, happens
// to be D's worker count) and with a least limit of 1, where it must
// find the worker count itself. The targets are asserted on the
// defaults; with a least limit of 1 only recovery and the steady state
// are: a late answer admitted beside one other (a late timer on a loaded
// machine, or an answer of the trigger's onset) can take the limit to 1,
// and at 50ms a request it grows back by 1/32 an answer, some 1.6s. Its
// goodput is logged.
func TestAdmissionFastCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("about 30s of open-loop load")
	}
	type want struct {
		share, vsOracle float64       // at least, the medians
		recovery        time.Duration // at most, the median
		steadyShed      int           // at most, in every run
	}
	tests := []struct {
		mode  string
		leave bool
		want  map[string]want // by arm; the oracle is judged by nothing
	}{
		// Issue 46's targets, on the defaults: 0.75 of the bound, 0.9×
		// the oracle. The gradient limit before this controller got,
		// medians: serve 0.46 of the bound (0.51× the oracle), 0.24 with
		// a least limit of 1; leave 0.63 (0.68×) and 0.34; recovery
		// 250ms; nothing shed in the steady state. Serving abandoned
		// requests, this controller's medians were 0.84-0.85 of the
		// bound, 0.92-0.93× the oracle (the trigger's first bin served
		// 2-3 of 10: the steady limit let 8 into D before its first slow
		// answer); holding the limit while answers pause (held),
		// 0.91-0.925 of the bound, 1.00-1.01× the oracle, nine runs
		// (2-core AMD EPYC, load average 0.3-1.8; first bin 4-6). Serve
		// is held to the targets: 0.16 and 0.1 under the least median.
		{mode: "serve", want: map[string]want{
			"defaults": {share: 0.75, vsOracle: 0.9, recovery: _fcBin},
			"min1":     {recovery: _fcBin},
		}},
		{mode: "leave", leave: true, want: map[string]want{
			"defaults": {share: 0.75, vsOracle: 0.9, recovery: _fcBin},
			"min1":     {recovery: _fcBin},
		}},
	}
	seeds := []uint64{1, 2, 3}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			names := []string{"oracle", "defaults", "min1"}
			figs := make(map[string][]fcFigures)
			for _, seed := range seeds {
				arms := []fcArm{
					{name: "oracle", admit: fixedLimit(int64(_fcCapacity.Workers))},
					controllerArm("defaults", inbound.DefaultConfig().Admission.MinLimit),
					controllerArm("min1", 1),
				}
				got := runFastCheck(seed, tt.leave, arms)
				oracle := got[0] // a limit right for the trigger only: it sheds a quarter of the steady state (Erlang-B)
				for i, f := range got {
					figs[names[i]] = append(figs[names[i]], f)
					t.Logf("%s seed %d %-8s: during %3d good = %.3f of the bound, %.2f× the oracle, by bin %v; recovery %s; steady: %d shed %v, goodput %.3f; after, by bin: %s; %s",
						tt.mode, seed, names[i], f.duringGood, f.share, f.share/math.Max(oracle.share, 1e-9), f.duringBins, recoveryString(f), f.steadyShed, f.steadyReasons, f.steadyGood, sharesString(f.afterShares), f.limits)
				}
			}
			oracle := median(figs["oracle"], func(f fcFigures) float64 { return f.share })
			for _, name := range names[1:] {
				w := tt.want[name]
				share := median(figs[name], func(f fcFigures) float64 { return f.share })
				rec := time.Duration(median(figs[name], func(f fcFigures) float64 {
					if !f.recovered {
						return float64(_fcNever)
					}
					return float64(f.recovery)
				}))
				t.Logf("%s %-8s medians: %.3f of the bound (oracle %.3f), %.2f× the oracle, recovery %v", tt.mode, name, share, oracle, share/math.Max(oracle, 1e-9), rec)
				assert.GreaterOrEqual(t, share, w.share, "%s %s: goodput during the trigger ÷ the bound, median", tt.mode, name)
				assert.GreaterOrEqual(t, share/math.Max(oracle, 1e-9), w.vsOracle, "%s %s: goodput during the trigger ÷ the oracle's, medians", tt.mode, name)
				assert.LessOrEqual(t, rec, w.recovery, "%s %s: recovery after the trigger, median", tt.mode, name)
				for i, f := range figs[name] {
					assert.LessOrEqual(t, f.steadyShed, w.steadyShed, "%s %s seed %d: shed in the steady state", tt.mode, name, seeds[i])
				}
			}
		})
	}
}

func median(fs []fcFigures, of func(fcFigures) float64) float64 {
	v := make([]float64, len(fs))
	for i, f := range fs {
		v[i] = of(f)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func recoveryString(f fcFigures) string {
	if !f.recovered {
		return "not within " + _fcAfter.String()
	}
	return f.recovery.String()
}

func sharesString(v []float64) string {
	s := ""
	for _, g := range v {
		s += fmt.Sprintf(" %.2f", g)
	}
	return s
}
