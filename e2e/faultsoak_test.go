package e2e_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/e2e/internal/chaos"
	"github.com/errown/errown/internal/stormsim"
	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
	"go.uber.org/goleak"
	"go.uber.org/yarpc/yarpcerrors"
)

var (
	_faultSoakRequests = flag.Int("faultsoak.requests", 20000, "requests TestFaultSoak sends (make soak: 5000000)")
	_faultSoakMax      = flag.Duration("faultsoak.max", 0, "how long TestFaultSoak sends new requests at most (0: until faultsoak.requests are sent); the report counts those sent")
	_faultSoakReport   = flag.String("faultsoak.report", "", "directory TestFaultSoak writes its report to (soak.md, soak.svg); none when empty")
)

// _soakCycle is the fault schedule of the soak: each fault for
// _soakFault, then _soakPass of none, in turn, C's restart (down) every
// third turn: faults a tenth of the time, as in Finagle's fault
// injection. Headers over the limit are left to TestFaultMatrix: each
// costs the client 10 MiB read, which would be the heap's story.
var _soakCycle = []netFault{netDown, netReset, netHang, netDown, netSlow, netMalformed, netDown, netTruncated, netReset}

const (
	_soakFault   = 300 * time.Millisecond
	_soakPass    = 2700 * time.Millisecond
	_soakWorkers = 256
	// _soakAttemptC is B's attempt timeout to C in the soak, shorter
	// than the matrix's: a hang holds each request it meets for two of
	// them.
	_soakAttemptC = 400 * time.Millisecond
	// _soakGCPercent is GOGC during the soak.
	_soakGCPercent = 400
	// _soakChaosSeed and _soakChaosDelay are the chaos middleware's at B:
	// its seed, and the bound of its hedges' delays and abandons' timers.
	_soakChaosSeed  = 32
	_soakChaosDelay = 5 * time.Millisecond
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
// The chaos middleware runs at B as B's own outbound middleware, between
// errown's and its innermost step, C echoing each request's ID and
// procedure (the procedure "call" and the fallback's, chaos.Alt's).
// It fails on any request answered other than once, served by A other
// than once (a doubled request; one A never served that its caller's
// deadline answered is counted apart), or tried on C more than the policies
// allow; on any answer delivered to a request it was not for, at B's
// attempts or outside; on a goroutine left behind; and on heap growth
// past 32 MiB between the first turn of the cycle and the end. The
// report gives requests/s, answers by code, late attempts (attempts
// still running when their call returned) and cross deliveries, heap and
// goroutines over time.
func TestFaultSoak(t *testing.T) {
	requests := *_faultSoakRequests
	ignore := goleak.IgnoreCurrent()
	loadStart := loadAvg()
	// The mesh's garbage is most of the soak's CPU: collect it a quarter
	// as often. The heap is compared after a collection, not sampled.
	defer debug.SetGCPercent(debug.SetGCPercent(_soakGCPercent))
	m := newFaultMesh(t, kindHTTP, _faultSlowDelay, requests+1)
	for _, n := range []*yarpcNode{m.a, m.b} {
		n.cfg.Retry.Budget.Ratio = 0.2
		n.cfg.Retry.Overload.Disabled = false
	}
	// A copy: the running B shares the slice's array.
	policies := append([]retry.PolicyConfig(nil), m.b.cfg.Retry.Policies...)
	policies[0].AttemptTimeout = _soakAttemptC
	m.b.cfg.Retry.Policies = policies
	// The chaos middleware at B, C echoing what it answers.
	ledger := new(chaos.Ledger)
	chaosB, err := chaos.New(chaos.Config{Source: chaos.NewSeeded(_soakChaosSeed), MaxDelay: _soakChaosDelay, Ledger: ledger})
	if err != nil {
		t.Fatal(err)
	}
	scopeB := tally.NewTestScope("", nil)
	m.b.chaos, m.b.errownOptions = chaosB, []errown.Option{errown.WithScope(scopeB)}
	c := m.c.(*yarpcNode)
	c.handler, c.procedures = echoLeaf, []string{"call", chaos.Alt("call")}
	// Restart A, B and C with the soak's config (the mesh started them
	// with the matrix's).
	m.must(m.a.stop())
	m.must(m.b.stop())
	m.must(m.c.stop())
	m.must(m.c.start())
	m.must(m.b.start())
	m.must(m.a.start())

	var (
		next    atomic.Uint64
		done    atomic.Int64
		codes   [20]atomic.Int64
		answers = make([]atomic.Int32, requests+1)
		// rootCodes holds each request's answer's code outside.
		rootCodes = make([]atomic.Uint32, requests+1)
		// stopSending ends the sending at faultsoak.max: the requests
		// sent are 1 to next, every one of them answered before the end.
		stopSending atomic.Bool
		wg          sync.WaitGroup
	)
	start := time.Now()
	for range _soakWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if stopSending.Load() {
					return
				}
				id := next.Add(1)
				if id > uint64(requests) {
					return
				}
				code, _, body, err := m.call(id)
				ledger.Check("the outside caller", id, _soakProcedures, chaos.Answer{Body: body, Err: err, Empty: err != nil})
				codes[code].Add(1)
				rootCodes[id].Store(uint32(code))
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
		// cycleHeaps is the heap after a collection at the end of each
		// turn of the cycle, under load.
		cycleHeaps []float64
		// cycleGoroutines are the goroutines at each cycle's end: the
		// requests and attempts then in flight, whose memory the heap
		// there includes.
		cycleGoroutines []int
		restarts        int
		turn            int
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
			if *_faultSoakMax > 0 && now.Sub(start) >= *_faultSoakMax {
				stopSending.Store(true)
			}
			if len(samples)%60 == 0 {
				t.Logf("%v: %d requests answered, %.0f/s over the last second, heap %.1f MiB, %d goroutines",
					now.Sub(start).Round(time.Second), d, samples[len(samples)-1].perSecond, samples[len(samples)-1].heapMiB, runtime.NumGoroutine())
			}
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
			} else {
				if turn > 0 && turn%len(_soakCycle) == 0 {
					// A cycle's end: the heap at the same point of each.
					cycleHeaps = append(cycleHeaps, heap(true))
					cycleGoroutines = append(cycleGoroutines, runtime.NumGoroutine())
				}
				f := _soakCycle[turn%len(_soakCycle)]
				if f == netDown {
					// A connection the proxy still holds from an earlier
					// hang keeps C's graceful shutdown waiting until its
					// timeout: C's listener is closed all the same, and C
					// starts again on its address. Anything else fails.
					if err := m.c.stop(); errors.Is(err, context.DeadlineExceeded) {
						t.Logf("%v: C's graceful stop timed out on a connection the proxy held: %v", time.Since(start).Round(time.Second), err)
					} else {
						m.must(err)
					}
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
	asked := requests
	if sent := int(next.Load()); sent < requests {
		t.Logf("sent %d requests of %d in faultsoak.max, %v", sent, requests, *_faultSoakMax)
		requests = sent
	}
	chaosB.Wait() // the attempts it left running ended
	late := counterValue(scopeB, "errown.retry.late_attempts", map[string]string{"callee": _fc})
	chaosStats := chaosB.Stats()
	idle := heap(true) // every request answered, the mesh still up
	baseline, lastCycle := samples[0].heapMiB, samples[0].heapMiB
	if len(cycleHeaps) > 0 {
		baseline, lastCycle = cycleHeaps[0], cycleHeaps[len(cycleHeaps)-1]
	}

	lost, doubled, over, unreached := 0, 0, 0, 0
	var overIDs, doubledIDs []string
	for id := 1; id <= requests; id++ {
		if answers[id].Load() != 1 {
			lost++
		}
		if m.a.servedOf(uint64(id)) == 0 && yarpcerrors.Code(rootCodes[id].Load()) == yarpcerrors.CodeDeadlineExceeded {
			// The outside caller's deadline passed before A's handler
			// ran (a starved host queues requests in A's transport):
			// nobody in the mesh served it, and nobody answered it but
			// the caller's own deadline.
			unreached++
		} else if m.a.servedOf(uint64(id)) != 1 {
			doubled++
			if len(doubledIDs) < 5 {
				doubledIDs = append(doubledIDs, fmt.Sprintf("request %d: A served %d", id, m.a.servedOf(uint64(id))))
			}
		}
		if int64(m.attempts.of(uint64(id))) > 2*m.b.servedOf(uint64(id)) || m.b.servedOf(uint64(id)) > 2 {
			over++
			if len(overIDs) < 5 {
				overIDs = append(overIDs, fmt.Sprintf("request %d: %d attempts of B's errown, B served %d, C %d",
					id, m.attempts.of(uint64(id)), m.b.servedOf(uint64(id)), c.servedOf(uint64(id))))
			}
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
	t.Logf("fault soak: %d requests in %v (%.0f/s), %d restarts of C, success %.3f%%; answers: %s; heap %.1f MiB after the first cycle, %.1f MiB after the last (%d cycles), %.1f MiB idle at the end, %.1f MiB once stopped; goroutines %d once stopped",
		requests, elapsed.Round(time.Millisecond), float64(requests)/elapsed.Seconds(), restarts, 100*float64(ok)/float64(requests),
		strings.Join(byCode, ", "), baseline, lastCycle, len(cycleHeaps), idle, final, goroutines)
	t.Logf("chaos at B: %v, %d sends; late attempts: %d (errown's retry.late_attempts), %d (the chaos middleware's count); %d answers checked, %d cross deliveries",
		chaosStats.Calls, chaosStats.Sends, late, chaosStats.Late, ledger.Checked(), ledger.Cross())
	t.Logf("%d requests answered deadline-exceeded outside before A's handler ran", unreached)
	if lost > 0 || doubled > 0 || over > 0 {
		t.Errorf("%d requests not answered exactly once, %d served by A other than once (%s), %d tried past the policies (%s)",
			lost, doubled, strings.Join(doubledIDs, "; "), over, strings.Join(overIDs, "; "))
	}
	if n := ledger.Cross(); n > 0 {
		t.Errorf("%d answers delivered to a request they were not for; the first:\n\t%s", n, strings.Join(ledger.Samples(), "\n\t"))
	}
	// A cycle's end measures what is in flight then as well (under chaos,
	// hedges and abandoned attempts vary by thousands, more on a loaded
	// host, whose late timers keep attempts alive longer): the last cycle
	// counts from the third on, and only when no more goroutines were in
	// flight at its end than a quarter over the first's; the idle heap,
	// every request answered and the mesh still up, always.
	end := idle
	if n := len(cycleHeaps); n >= 3 && 4*cycleGoroutines[n-1] <= 5*cycleGoroutines[0] {
		end = max(lastCycle, idle)
	}
	if growth := end - baseline; growth > 32 {
		t.Errorf("heap grew by %.1f MiB from the first cycle's end (%.1f MiB) to the last's (%.1f MiB) or the end (%.1f MiB); goroutines at the cycles' ends %v",
			growth, baseline, lastCycle, idle, cycleGoroutines)
	}
	goleak.VerifyNone(t, ignore)
	if dir := *_faultSoakReport; dir != "" {
		r := soakReport{requests: requests, asked: asked, elapsed: elapsed, restarts: restarts, ok: ok, byCode: byCode, lost: lost, doubled: doubled, over: over, unreached: unreached,
			chaos: chaosStats, late: late, checked: ledger.Checked(), cross: ledger.Cross(),
			cycleHeaps: cycleHeaps, idle: idle, final: final, goroutines: goroutines, loadStart: loadStart, loadEnd: loadAvg()}
		if err := writeSoakReport(dir, r, samples); err != nil {
			t.Fatal(err)
		}
	}
}

// writeSoakReport writes soak.md and soak.svg to dir.
// soakReport is what the soak's report says.
type soakReport struct {
	requests, asked     int // sent, and asked for
	elapsed             time.Duration
	restarts            int
	ok                  int64
	byCode              []string
	lost, doubled, over int
	unreached           int         // answered deadline-exceeded outside before A's handler ran
	chaos               chaos.Stats // the chaos middleware's at B
	late                int64       // B's retry.late_attempts
	checked, cross      int64       // answers checked, delivered to a request they were not for
	cycleHeaps          []float64
	idle, final         float64
	goroutines          int
	loadStart, loadEnd  string
}

// loadAvg is the machine's load average (/proc/loadavg), or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func writeSoakReport(dir string, r soakReport, samples []soakSample) error {
	requests, elapsed, restarts, ok, byCode := r.requests, r.elapsed, r.restarts, r.ok, r.byCode
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
	run := fmt.Sprintf("`make soak SOAK_REQUESTS=%d`", r.asked)
	if r.asked > requests {
		run += fmt.Sprintf(" stopped sending at -faultsoak.max=%v, %d requests sent", *_faultSoakMax, requests)
	}
	fmt.Fprintf(&b, "# Fault soak\n\n%s (TestFaultSoak), %s, Go %s, GOMAXPROCS %d, CPU %s.\n\n",
		run, time.Now().UTC().Format("2006-01-02"), runtime.Version(), runtime.GOMAXPROCS(0), strings.TrimSpace(string(cpu)))
	fmt.Fprintf(&b, "The mesh: outside caller → A (yarpc, HTTP) → B (yarpc, gRPC) → fault proxy → C (yarpc, HTTP), errown on A, B and C "+
		"(budget 20%%, attempts-in-flight limit on, windows %v, B's attempt timeout to C %v), %d requests in flight. Faults cycle between B and C, %v each with %v without: %s; "+
		"down is C stopped and started again on its port, its dependency memory's snapshot written and read. "+
		"B's own outbound middleware, between errown's and its innermost step, is the chaos middleware (e2e/internal/chaos, seed %d): "+
		"per call it hedges, abandons, falls back to another procedure, replays, panics or passes, its delays and timers up to %v; "+
		"C echoes each request's ID and procedure, checked at B's attempts and outside.\n\n",
		_window, _soakAttemptC, _soakWorkers, _soakFault, _soakPass, soakCycleNames(), _soakChaosSeed, _soakChaosDelay)
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| requests | %d |\n| duration | %v |\n| requests/s | %.0f |\n| restarts of C | %d |\n| success | %.3f%% |\n",
		requests, elapsed.Round(time.Second), float64(requests)/elapsed.Seconds(), restarts, 100*float64(ok)/float64(requests))
	fmt.Fprintf(&b, "| answers by code | %s |\n", strings.Join(byCode, ", "))
	fmt.Fprintf(&b, "| requests not answered once / served by A other than once / tried past the policies | %d / %d / %d |\n", r.lost, r.doubled, r.over)
	fmt.Fprintf(&b, "| requests whose caller's deadline passed before A's handler ran (answered deadline-exceeded, served by nobody) | %d |\n", r.unreached)
	fmt.Fprintf(&b, "| chaos calls at B by action / attempts sent | %s / %d |\n", chaosCalls(r.chaos), r.chaos.Sends)
	fmt.Fprintf(&b, "| late attempts: errown's retry.late_attempts at B / the chaos middleware's count | %d / %d |\n", r.late, r.chaos.Late)
	fmt.Fprintf(&b, "| cross-request deliveries (answers checked) | %d (%d) |\n", r.cross, r.checked)
	fmt.Fprintf(&b, "| heap after GC at the end of cycles 1, 2, …, last (%d cycles) | %s MiB |\n"+
		"| heap after GC, all answered / mesh stopped | %.1f / %.1f MiB |\n| heap peak (sampled, GOGC %d) | %.1f MiB |\n| goroutines peak / once stopped | %d / %d |\n"+
		"| machine load average at the start / end (1, 5, 15 min) | %s / %s |\n\n",
		len(r.cycleHeaps), heapSeries(r.cycleHeaps), r.idle, r.final, _soakGCPercent, peakHeap, peakG, r.goroutines, r.loadStart, r.loadEnd)
	b.WriteString("![requests/s, heap and goroutines over time](soak.svg)\n")
	return os.WriteFile(filepath.Join(dir, "soak.md"), []byte(b.String()), 0o644)
}

// chaosCalls lists the calls of s by action, in the actions' order.
func chaosCalls(s chaos.Stats) string {
	var out []string
	for _, a := range chaos.Actions {
		out = append(out, fmt.Sprintf("%v %d", a, s.Calls[a]))
	}
	return strings.Join(out, ", ")
}

// _soakProcedures are the procedures whose echo an answer outside may
// carry: B's call, and a fallback's.
var _soakProcedures = []string{"call", chaos.Alt("call")}

// heapSeries is the first three and the last two of hs.
func heapSeries(hs []float64) string {
	var s []string
	for i, h := range hs {
		if i < 3 || i >= len(hs)-2 {
			s = append(s, fmt.Sprintf("%.1f", h))
		} else if i == 3 {
			s = append(s, "…")
		}
	}
	return strings.Join(s, ", ")
}

func soakCycleNames() string {
	var s []string
	for _, f := range _soakCycle {
		s = append(s, f.String())
	}
	return strings.Join(s, ", ")
}
