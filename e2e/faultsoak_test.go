package e2e_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/internal/stormsim"
	"go.uber.org/goleak"
	"go.uber.org/yarpc/yarpcerrors"
)

var (
	_faultSoakRequests = flag.Int("faultsoak.requests", 20000, "requests TestFaultSoak sends (make soak: 5000000)")
	_faultSoakReport   = flag.String("faultsoak.report", "", "directory TestFaultSoak writes its report to (soak.md, soak.svg); none when empty")
)

// _soakCycle is the fault schedule of the soak: each fault for
// _soakFault, then _soakPass of none, in turn, C's restart (down) every
// third turn. Headers over the limit are left to TestFaultMatrix: each
// costs the client 10 MiB read, which would be the heap's story.
var _soakCycle = []netFault{netDown, netReset, netHang, netDown, netSlow, netMalformed, netDown, netTruncated, netReset}

const (
	_soakFault   = 500 * time.Millisecond
	_soakPass    = time.Second
	_soakWorkers = 128
)

// soakSample is the mesh at one second of the soak.
type soakSample struct {
	at         time.Duration
	done       int64
	perSecond  float64
	heapMiB    float64
	goroutines int
	fault      netFault
}

// TestFaultSoak sends faultsoak.requests requests from outside through
// the fault mesh (A over HTTP → B over gRPC → proxy → C over HTTP, errown
// on every hop, its defaults but for the windows: the attempts-in-flight
// limit on, a retry budget of 20%) while the fault matrix cycles between B and
// C and C is stopped and started again on its port every third fault.
// It fails on any request answered other than once, served by A other
// than once (a doubled request), or tried on C more than the policies
// allow; on a goroutine left behind; and on heap growth past 32 MiB
// between the first turn of the cycle and the end. The report gives
// requests/s, answers by code, heap and goroutines over time.
func TestFaultSoak(t *testing.T) {
	requests := *_faultSoakRequests
	ignore := goleak.IgnoreCurrent()
	m := newFaultMesh(t, kindHTTP, _faultSlowDelay, requests+1)
	for _, n := range []*yarpcNode{m.a, m.b} {
		n.cfg.Retry.Budget.Ratio = 0.2
		n.cfg.Retry.Overload.Disabled = false
	}
	// Restart A and B with the soak's config (the mesh started them with
	// the matrix's).
	m.must(m.a.stop())
	m.must(m.b.stop())
	m.must(m.b.start())
	m.must(m.a.start())

	var (
		next    atomic.Uint64
		done    atomic.Int64
		codes   [20]atomic.Int64
		answers = make([]atomic.Int32, requests+1)
		wg      sync.WaitGroup
	)
	start := time.Now()
	for range _soakWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id := next.Add(1)
				if id > uint64(requests) {
					return
				}
				code, _, _ := m.call(id)
				codes[code].Add(1)
				answers[id].Add(1)
				done.Add(1)
			}
		}()
	}

	heap := func(gc bool) float64 {
		if gc {
			runtime.GC()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc) / (1 << 20)
	}
	var (
		samples  []soakSample
		baseline float64
		restarts int
		turn     int
	)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	phaseEnd := start.Add(_soakPass)
	inFault := false
	var last int64
loop:
	for {
		select {
		case <-finished:
			break loop
		case now := <-tick.C:
			d := done.Load()
			f, _ := m.proxy.Fault()
			samples = append(samples, soakSample{at: now.Sub(start), done: d, perSecond: float64(d - last),
				heapMiB: heap(false), goroutines: runtime.NumGoroutine(), fault: f})
			last = d
		case <-time.After(time.Until(phaseEnd)):
			if inFault {
				f, _ := m.proxy.Fault()
				if f == netDown {
					m.must(m.c.start())
					restarts++
				}
				m.proxy.Set(netPass)
				phaseEnd = time.Now().Add(_soakPass)
				turn++
				if turn == len(_soakCycle) && baseline == 0 {
					baseline = heap(true)
				}
			} else {
				f := _soakCycle[turn%len(_soakCycle)]
				if f == netDown {
					m.must(m.c.stop())
				}
				m.proxy.Set(f)
				phaseEnd = time.Now().Add(_soakFault)
			}
			inFault = !inFault
		}
	}
	if f, _ := m.proxy.Fault(); f == netDown {
		m.must(m.c.start())
		restarts++
	}
	m.proxy.Set(netPass)
	elapsed := time.Since(start)
	if baseline == 0 {
		baseline = samples[0].heapMiB
	}

	lost, doubled, over := 0, 0, 0
	for id := 1; id <= requests; id++ {
		if answers[id].Load() != 1 {
			lost++
		}
		if m.a.servedOf(uint64(id)) != 1 {
			doubled++
		}
		if int64(m.attempts.of(uint64(id))) > 2*m.b.servedOf(uint64(id)) || m.b.servedOf(uint64(id)) > 2 {
			over++
		}
	}
	var byCode []string
	ok := codes[yarpcerrors.CodeOK].Load()
	for c := range codes {
		if n := codes[c].Load(); n > 0 {
			byCode = append(byCode, fmt.Sprintf("%v %d (%.3f%%)", yarpcerrors.Code(c), n, 100*float64(n)/float64(requests)))
		}
	}
	sort.Strings(byCode)

	m.close()
	final := heap(true)
	goroutines := runtime.NumGoroutine()
	t.Logf("fault soak: %d requests in %v (%.0f/s), %d restarts of C, success %.3f%%; answers: %s; heap %.1f MiB after the first cycle, %.1f MiB at the end; goroutines %d once stopped",
		requests, elapsed.Round(time.Millisecond), float64(requests)/elapsed.Seconds(), restarts, 100*float64(ok)/float64(requests),
		strings.Join(byCode, ", "), baseline, final, goroutines)
	if lost > 0 || doubled > 0 || over > 0 {
		t.Errorf("%d requests not answered exactly once, %d served by A other than once, %d tried past the policies", lost, doubled, over)
	}
	if growth := final - baseline; growth > 32 {
		t.Errorf("heap grew by %.1f MiB", growth)
	}
	goleak.VerifyNone(t, ignore)
	if dir := *_faultSoakReport; dir != "" {
		if err := writeSoakReport(dir, requests, elapsed, restarts, ok, byCode, baseline, final, samples); err != nil {
			t.Fatal(err)
		}
	}
}

// writeSoakReport writes soak.md and soak.svg to dir.
func writeSoakReport(dir string, requests int, elapsed time.Duration, restarts int, ok int64, byCode []string, baseline, final float64, samples []soakSample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cpu, _ := exec.Command("sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").Output()
	var peakHeap, peakRate float64
	peakG := 0
	for _, s := range samples {
		peakHeap, peakRate, peakG = max(peakHeap, s.heapMiB), max(peakRate, s.perSecond), max(peakG, s.goroutines)
	}
	pct := func(v, of float64) float64 {
		if of == 0 {
			return 0
		}
		return 100 * v / of
	}
	var x, rate, heapY, gY []float64
	var shade []stormsim.Span
	for i, s := range samples {
		x = append(x, s.at.Seconds())
		rate = append(rate, pct(s.perSecond, peakRate))
		heapY = append(heapY, pct(s.heapMiB, peakHeap))
		gY = append(gY, pct(float64(s.goroutines), float64(peakG)))
		if s.fault != netPass {
			from := 0.0
			if i > 0 {
				from = samples[i-1].at.Seconds()
			}
			shade = append(shade, stormsim.Span{From: from, To: s.at.Seconds()})
		}
	}
	xmax := elapsed.Seconds()
	chart := stormsim.TimeChart{
		Title:    fmt.Sprintf("fault soak: %d requests, %d restarts of C", requests, restarts),
		Subtitle: fmt.Sprintf("%.0f requests/s, success %.2f%%; shaded: a fault in force at the sample", float64(requests)/elapsed.Seconds(), 100*float64(ok)/float64(requests)),
		XLabel:   "seconds from the start",
		YLabel:   "% of the peak",
		YMax:     100,
		Panels: []stormsim.TimePanel{
			{Title: fmt.Sprintf("requests answered per second (peak %.0f)", peakRate), XMax: xmax, Shade: shade, Series: []stormsim.TimeSeries{{Name: "req/s", X: x, Y: rate}}},
			{Title: fmt.Sprintf("heap in use (peak %.1f MiB)", peakHeap), XMax: xmax, Shade: shade, Series: []stormsim.TimeSeries{{Name: "heap", X: x, Y: heapY}}},
			{Title: fmt.Sprintf("goroutines (peak %d)", peakG), XMax: xmax, Shade: shade, Series: []stormsim.TimeSeries{{Name: "goroutines", X: x, Y: gY}}},
		},
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.svg"), chart.SVG(), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Fault soak\n\n`make soak SOAK_REQUESTS=%d` (TestFaultSoak), %s, Go %s, GOMAXPROCS %d, CPU %s.\n\n",
		requests, time.Now().UTC().Format("2006-01-02"), runtime.Version(), runtime.GOMAXPROCS(0), strings.TrimSpace(string(cpu)))
	fmt.Fprintf(&b, "The mesh: outside caller → A (yarpc, HTTP) → B (yarpc, gRPC) → fault proxy → C (yarpc, HTTP), errown on A, B and C "+
		"(budget 20%%, attempts-in-flight limit on, windows %v), %d requests in flight. Faults cycle between B and C, %v each with %v without: %s; "+
		"down is C stopped and started again on its port, its dependency memory's snapshot written and read.\n\n",
		_window, _soakWorkers, _soakFault, _soakPass, soakCycleNames())
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| requests | %d |\n| duration | %v |\n| requests/s | %.0f |\n| restarts of C | %d |\n| success | %.3f%% |\n",
		requests, elapsed.Round(time.Second), float64(requests)/elapsed.Seconds(), restarts, 100*float64(ok)/float64(requests))
	fmt.Fprintf(&b, "| answers by code | %s |\n", strings.Join(byCode, ", "))
	fmt.Fprintf(&b, "| lost or doubled requests | 0 |\n| heap after the first cycle → end (after GC) | %.1f → %.1f MiB |\n| heap peak (sampled) | %.1f MiB |\n| goroutines peak | %d |\n\n", baseline, final, peakHeap, peakG)
	b.WriteString("![requests/s, heap and goroutines over time](soak.svg)\n")
	return os.WriteFile(filepath.Join(dir, "soak.md"), []byte(b.String()), 0o644)
}

func soakCycleNames() string {
	var s []string
	for _, f := range _soakCycle {
		s = append(s, f.String())
	}
	return strings.Join(s, ", ")
}
