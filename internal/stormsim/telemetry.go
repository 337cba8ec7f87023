package stormsim

import (
	"math"
	"strings"
	"sync"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
)

// Telemetry is what errown at the root service reported of a run's root
// requests through its storm telemetry (inbound.Storm), beside the lab's
// own observation (Result.Radius, the nodes' counts). The radii are over
// the failed root requests, like Radius; Prevented is over every root
// request.
type Telemetry struct {
	// Radius is the storm radius errown reported.
	Radius TelemetryRadius `json:"radius"`
	// CounterfactualRadius is the radius with every hop retrying blind
	// to claims, as errown computed it.
	CounterfactualRadius TelemetryRadius `json:"counterfactualRadius"`
	// Prevented is the requests errown's decisions prevented (in observe
	// mode, would have prevented), summed over the root requests.
	Prevented int64 `json:"prevented"`
	// PreventedPerRequest is Prevented per root request.
	PreventedPerRequest float64 `json:"preventedPerRequest"`
	// PreventedStdErr is the standard error of PreventedPerRequest as a
	// mean over the root requests: under a budget the blind world is an
	// estimate per request, and deep graphs compound it into heavy tails.
	PreventedStdErr float64 `json:"preventedStdErr"`
	// Storms is the number of root requests errown recorded a storm for.
	Storms int `json:"storms"`
	// Unknown is the number of those whose figures errown could not know
	// (a hop below without errown, a lost response): they count in
	// neither the radii nor Prevented.
	Unknown int `json:"unknown"`
	// Onset is the number of those at the incident's onset
	// (inbound.Storm.Onset): sent before the root's errown had seen the
	// incident, so without errown's attempt mark; their Prevented may be
	// low, by at most their own.
	Onset int `json:"onset"`
}

// TelemetryRadius is a radius errown reported.
type TelemetryRadius struct {
	Max  int     `json:"max"`
	Mean float64 `json:"mean"`
}

// telemetryLog sums what the root's errown reports. It is safe for
// concurrent use.
type telemetryLog struct {
	mu                  sync.Mutex
	storms, unknown     int
	onset               int
	prevented           int64
	preventedSq         float64
	radiusSum, blindSum int64
	radiusMax, blindMax int
}

func (l *telemetryLog) record(s inbound.Storm) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.storms++
	if s.Onset {
		l.onset++
	}
	if !s.Known {
		l.unknown++
		return
	}
	l.prevented += int64(s.Prevented)
	l.preventedSq += float64(s.Prevented) * float64(s.Prevented)
	if s.Failed {
		l.radiusSum += int64(s.Radius)
		l.blindSum += int64(s.BlindRadius)
		l.radiusMax = max(l.radiusMax, s.Radius)
		l.blindMax = max(l.blindMax, s.BlindRadius)
	}
}

func (l *telemetryLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.storms, l.unknown, l.onset, l.prevented, l.preventedSq = 0, 0, 0, 0, 0
	l.radiusSum, l.blindSum, l.radiusMax, l.blindMax = 0, 0, 0, 0
}

// telemetry returns what was recorded over requests root requests, of
// which failed failed.
func (l *telemetryLog) telemetry(requests, failed int) *Telemetry {
	l.mu.Lock()
	defer l.mu.Unlock()
	mean := func(sum int64) float64 {
		if failed == 0 {
			return 0
		}
		return float64(sum) / float64(failed)
	}
	t := &Telemetry{
		Radius:               TelemetryRadius{Max: l.radiusMax, Mean: mean(l.radiusSum)},
		CounterfactualRadius: TelemetryRadius{Max: l.blindMax, Mean: mean(l.blindSum)},
		Prevented:            l.prevented,
		Storms:               l.storms,
		Unknown:              l.unknown,
		Onset:                l.onset,
	}
	if requests > 0 {
		n := float64(requests)
		mean := float64(l.prevented) / n
		t.PreventedPerRequest = mean
		if requests > 1 {
			variance := max(0, (l.preventedSq-n*mean*mean)/(n-1))
			t.PreventedStdErr = math.Sqrt(variance / n)
		}
	}
	return t
}

// Served returns the requests every node served per root request, in
// total: measured when the run ran, else expected.
func (r RunReport) Served() float64 {
	total := 0.0
	for _, l := range r.Loads() {
		total += l
	}
	return total
}

// telemetryOf returns a figure function: f of the run's telemetry, NaN for
// a run without (analytic, or a root without errown).
func telemetryOf(f func(*Telemetry) float64) func(RunReport) float64 {
	return func(r RunReport) float64 {
		if r.Result == nil || r.Result.Telemetry == nil {
			return math.NaN()
		}
		return f(r.Result.Telemetry)
	}
}

var (
	telemetryRadiusMax       = telemetryOf(func(t *Telemetry) float64 { return float64(t.Radius.Max) })
	telemetryRadiusMean      = telemetryOf(func(t *Telemetry) float64 { return t.Radius.Mean })
	telemetryBlindRadiusMax  = telemetryOf(func(t *Telemetry) float64 { return float64(t.CounterfactualRadius.Max) })
	telemetryBlindRadiusMean = telemetryOf(func(t *Telemetry) float64 { return t.CounterfactualRadius.Mean })
	telemetryPrevented       = telemetryOf(func(t *Telemetry) float64 { return t.PreventedPerRequest })
	telemetryUnknown         = telemetryOf(func(t *Telemetry) float64 { return float64(t.Unknown) })
)

// telemetryFigures are the cross-checks of what errown at the root of run
// reported against what the lab saw: the radius of what happened exactly
// (errown's radius in enforce mode, its counterfactual radius in observe
// mode, where the retries are blind); and, when blind is given,
// prevented requests per root request against the measured difference in
// requests served between blind (the same graph retrying blind to claims)
// and run, within tol of it (0: exactly).
func telemetryFigures(label string, run, blind *RunReport, tol float64, basis string) []Figure {
	radius := run.Radius()
	name, maxOf, meanOf := "storm radius", telemetryRadiusMax, telemetryRadiusMean
	if run.Result != nil && run.Result.Mode == retry.ModeObserve {
		name, maxOf, meanOf = "counterfactual storm radius", telemetryBlindRadiusMax, telemetryBlindRadiusMean
	}
	figs := []Figure{
		measure("max "+name+" reported by the root's errown, "+label, *run, maxOf).within(float64(radius.Max), 0, "the lab's own radius of the same run, exactly"),
		measure("mean "+name+" reported by the root's errown, "+label, *run, meanOf).within(radius.Mean, 1e-9, "the lab's own mean of the same run, exactly"),
		measure("root requests with unknown telemetry, "+label, *run, telemetryUnknown).within(0, 0, "errown runs on every hop: nothing is unknown"),
	}
	if blind != nil {
		diff := blind.Served() - run.Served()
		figs = append(figs, measure("prevented per root request reported by the root's errown, "+label, *run, telemetryPrevented).
			within(diff, sampled(run, tol*math.Max(1, diff)), withOnset(basis)).low(onsetTolerance(run, diff)))
	}
	return figs
}

// onsetTolerance is how far the prevented requests per root request that
// errown at run's root reports may fall short of ref, the prevented
// requests per root request, through the requests at the incident's
// onset: each of them may report as few as none of its own. It is an
// allowance below the reference only (Figure.Low): an onset request's
// figures are never high. (Observe against enforce mode: the enforce
// run's onset lowers the reference, so it widens both sides.)
func onsetTolerance(run *RunReport, ref float64) float64 {
	if run.Result == nil || run.Result.Telemetry == nil || run.Result.Requests == 0 {
		return 0
	}
	return float64(run.Result.Telemetry.Onset) / float64(run.Result.Requests) * math.Abs(ref)
}

// withOnset adds the onset's allowance to a basis.
func withOnset(basis string) string {
	return basis + "; the root requests at the incident's onset (sent unmarked, before the root had seen it) may report as few as none of their own"
}

// observeFigure checks that the prevented requests errown reports in
// observe mode (observe) equal what it prevents in enforce mode (enforce)
// on the same graph, within tol.
func observeFigure(label string, observe, enforce *RunReport, tol float64, basis string) Figure {
	ref := telemetryPrevented(*enforce)
	return measure("prevented per root request reported in observe mode, "+label, *observe, telemetryPrevented).
		within(ref, sampled(enforce, sampled(observe, tol*math.Max(1, ref)))+onsetTolerance(enforce, ref), withOnset(basis)).low(onsetTolerance(observe, ref))
}

// sampled widens a tolerance tol given under a budget (tol > 0) to three
// standard errors of run's prevented figure, where its sample is too small
// for tol: the blind world under a budget is drawn per request. Without a
// budget (tol 0) every figure is exact.
func sampled(run *RunReport, tol float64) float64 {
	if tol == 0 || run.Result == nil || run.Result.Telemetry == nil {
		return tol
	}
	return math.Max(tol, 3*run.Result.Telemetry.PreventedStdErr)
}

// unknownFigure checks that errown at the root of run reported every
// failed root request's telemetry as unknown.
func unknownFigure(label string, run *RunReport, basis string) Figure {
	failed := math.NaN()
	if run.Result != nil {
		failed = float64(run.Result.Failed)
	}
	return measure("root requests with unknown telemetry, "+label, *run, telemetryUnknown).within(failed, 0, basis)
}

// shown returns figs with their prevented figures shown, not judged:
// where the sample cannot hold an estimate to a tolerance.
func shown(figs ...Figure) []Figure {
	for i, f := range figs {
		if strings.HasPrefix(f.Name, "prevented per root request") {
			figs[i].Check = CheckNone
		}
	}
	return figs
}
