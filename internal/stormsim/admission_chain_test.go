package stormsim

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/admission"
	"github.com/stretchr/testify/assert"
)

// The admission fast check on a chain (issue 46, item 3): A → B → C,
// each with the real admission controller in front, C the fast check's
// capacity queue (2 workers × 5ms, ×10 for the trigger), A and B doing
// no work of their own. The root's deadline is _chainDeadline, which A
// hands to B; B gives C _fcDeadline at most (its attempt timeout). Two
// arms run on the same schedule at once: in "whole" A and B judge each
// answer on its whole latency (Done), as admission did before; in "own"
// on their own time (DoneOwn, less the time their call below took), and
// park their slot while they wait on it, as the inbound middleware does
// now. Only C is the bottleneck, so only C
// should shed. A third arm, "unparked", judges its own time but counts
// the requests waiting on the call below against A's and B's limits, as
// the first cut of this did.
const _chainDeadline = 80 * time.Millisecond

// chainHop is one service of the chain: its controller and its sheds.
type chainHop struct {
	ctl                  *admission.Controller
	steadyShed, trigShed int
}

// chainArm is one run of the chain: A, B and C, and C's queue.
type chainArm struct {
	name  string
	own   bool // A and B judge their own time
	park  bool // A and B park their slot while they call below
	hops  [3]*chainHop
	queue *capacityQueue

	mu         sync.Mutex
	duringGood int
}

func newChainArm(name string, own, park bool) *chainArm {
	d := inbound.DefaultConfig().Admission
	a := &chainArm{name: name, own: own, park: park, queue: newCapacityQueue("C", _fcCapacity, false, nil)}
	for i := range a.hops {
		a.hops[i] = &chainHop{ctl: admission.New(admission.Config{MaxQueue: d.MaxQueue, MinLimit: d.MinLimit, MaxLimit: d.MaxLimit})}
	}
	return a
}

// visit serves the request of ctx at hop i and below, as that hop's
// inbound middleware would: admitted, or shed and counted in phase
// (0 steady, 1 the trigger and after). It returns when C's service
// ended (zero: not served) and C's deadline.
func (a *chainArm) visit(ctx context.Context, i, phase int) (time.Time, time.Time) {
	h := a.hops[i]
	t, _, ok := h.ctl.Admit(ctx, admission.PriorityFirst)
	if !ok {
		a.mu.Lock()
		if phase == 0 {
			h.steadyShed++
		} else {
			h.trigShed++
		}
		a.mu.Unlock()
		return time.Time{}, time.Time{}
	}
	if i == len(a.hops)-1 {
		defer h.ctl.Done(t)
		deadline, _ := ctx.Deadline()
		end, err := a.queue.serveTimed(ctx)
		if err != nil {
			return time.Time{}, deadline
		}
		return end, deadline
	}
	next := ctx
	if i == 1 { // B's attempt timeout to C
		var cancel context.CancelFunc
		next, cancel = context.WithTimeout(ctx, _fcDeadline)
		defer cancel()
	}
	if a.park {
		h.ctl.Park()
	}
	start := time.Now()
	end, deadline := a.visit(next, i+1, phase)
	callees := time.Since(start)
	if a.park {
		h.ctl.Unpark()
	}
	if a.own {
		h.ctl.DoneOwn(t, callees)
	} else {
		h.ctl.Done(t)
	}
	return end, deadline
}

// runAdmissionChain runs the arms on one Poisson schedule at _fcRate, the
// trigger as in the fast check.
func runAdmissionChain(seed uint64, arms []*chainArm) {
	total := _fcSteady + _fcTrigger + _fcAfter
	schedule := arrivals(_fcRate, total, seed)
	start := time.Now()
	trigStart, trigEnd := start.Add(_fcSteady), start.Add(_fcSteady+_fcTrigger)
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(time.Until(trigStart))
		for _, a := range arms {
			a.queue.setFactor(_fcFactor)
		}
		time.Sleep(time.Until(trigEnd))
		for _, a := range arms {
			a.queue.setFactor(1)
		}
	})
	for _, at := range schedule {
		time.Sleep(time.Until(start.Add(at)))
		phase := 0
		if at >= _fcSteady {
			phase = 1
		}
		for _, a := range arms {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), _chainDeadline)
				defer cancel()
				end, deadline := a.visit(ctx, 0, phase)
				if end.IsZero() || end.After(deadline) || end.Before(trigStart) || !end.Before(trigEnd) {
					return
				}
				a.mu.Lock()
				a.duringGood++
				a.mu.Unlock()
			})
		}
	}
	wg.Wait()
}

// TestAdmissionChainFastCheck: on A → B → C, with A and B judging their
// own time, only C sheds, and the root's goodput during the trigger is
// at least what it is when every hop judges its callees' time as its
// own. Figures per hop are logged for both arms.
func TestAdmissionChainFastCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("about 15s of open-loop load")
	}
	seeds := []uint64{1, 2, 3}
	share := map[string][]float64{}
	for _, seed := range seeds {
		arms := []*chainArm{newChainArm("whole", false, false), newChainArm("unparked", true, false), newChainArm("own", true, true)}
		runAdmissionChain(seed, arms)
		for _, a := range arms {
			s := float64(a.duringGood) / _fcBound
			share[a.name] = append(share[a.name], s)
			t.Logf("seed %d %-8s: during %3d good = %.3f of the bound; shed steady/trigger and after: A %d/%d, B %d/%d, C %d/%d",
				seed, a.name, a.duringGood, s,
				a.hops[0].steadyShed, a.hops[0].trigShed, a.hops[1].steadyShed, a.hops[1].trigShed, a.hops[2].steadyShed, a.hops[2].trigShed)
		}
		own := arms[2]
		for i, name := range []string{"A", "B"} {
			assert.Zero(t, own.hops[i].steadyShed+own.hops[i].trigShed, "seed %d: own time: %s, above the bottleneck, shed", seed, name)
		}
		assert.Zero(t, own.hops[2].steadyShed, "seed %d: own time: C shed in the steady state", seed)
		assert.Positive(t, own.hops[2].trigShed, "seed %d: own time: C, the bottleneck, shed nothing", seed)
	}
	medians := map[string]float64{}
	for name, v := range share {
		medians[name] = medianOf(v)
	}
	t.Logf("medians: whole %.3f of the bound, unparked %.3f, own %.3f", medians["whole"], medians["unparked"], medians["own"])
	// A margin for a loaded host: the arms run side by side, each with
	// its own C.
	assert.GreaterOrEqual(t, medians["own"], 0.9*medians["whole"], "own time: goodput during the trigger ÷ whole's, medians")
	assert.Positive(t, medians["own"], "own time: no goodput during the trigger")
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
