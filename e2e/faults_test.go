package e2e_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc/yarpcerrors"
)

// callRecord is one request from outside and its answer.
type callRecord struct {
	id         uint64
	fault      netFault
	gen0, gen1 int64 // the proxy's fault generation at its start and end
	code       yarpcerrors.Code
	claim      string
	start, end time.Time
}

// faultLoad keeps workers calls in flight from outside until stopped.
type faultLoad struct {
	m    *faultMesh
	next atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	records []callRecord
}

func startLoad(m *faultMesh, workers int) *faultLoad {
	l := &faultLoad{m: m, stop: make(chan struct{})}
	for range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				id := l.next.Add(1)
				r := callRecord{id: id, start: time.Now()}
				r.fault, r.gen0 = m.proxy.Fault()
				r.code, r.claim, _, _ = m.call(id)
				_, r.gen1 = m.proxy.Fault()
				r.end = time.Now()
				l.mu.Lock()
				l.records = append(l.records, r)
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// halt stops the workers and returns every record.
func (l *faultLoad) halt() []callRecord {
	close(l.stop)
	l.wg.Wait()
	return l.records
}

// waitFor waits until ok says yes of the records so far, or timeout.
func (l *faultLoad) waitFor(timeout time.Duration, ok func([]callRecord) bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		done := ok(l.records)
		l.mu.Unlock()
		if done {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// atLeast is a waitFor condition: n records ran wholly in generation gen.
func atLeast(n int, gen int64) func([]callRecord) bool {
	return func(rs []callRecord) bool {
		c := 0
		for _, r := range rs {
			if r.gen0 == gen && r.gen1 == gen {
				c++
			}
		}
		return c >= n
	}
}

// outcome is how one request went: the code and claim of its answer, the
// requests B served for it and the attempts B sent to C.
type outcome struct {
	code     yarpcerrors.Code
	claim    string
	servedB  int64
	attempts int
}

func (o outcome) String() string {
	claim := o.claim
	if claim == "" {
		claim = "-"
	}
	return fmt.Sprintf("%v/%s/B%d/C%d", o.code, claim, o.servedB, o.attempts)
}

// tally counts the outcomes of the records that ran wholly under fault
// in generation gen, as "code/claim/Bn/Cn=count" sorted.
func (m *faultMesh) tally(rs []callRecord, gen int64) map[outcome]int {
	out := make(map[outcome]int)
	for _, r := range rs {
		if r.gen0 != gen || r.gen1 != gen {
			continue
		}
		out[outcome{code: r.code, claim: r.claim, servedB: m.b.servedOf(r.id), attempts: m.attempts.of(r.id)}]++
	}
	return out
}

func formatTally(t map[outcome]int) string {
	var s []string
	for o, n := range t {
		s = append(s, fmt.Sprintf("%v=%d", o, n))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// checkEveryRequest holds for every request, whatever fault it met or
// straddled: one answer, before its deadline, served once by A (nobody
// retries A), at most twice by B (A's policy), at most two attempts to C
// in all (only C's direct caller retries C), a code a caller can
// classify, and a claim that is never "claimed" on a failure that began
// below B: unclaimed, or missing where a transport lost it ("unknown"),
// never wrong.
func (m *faultMesh) checkEveryRequest(t *testing.T, rs []callRecord, fault netFault) {
	t.Helper()
	seen := make(map[uint64]bool, len(rs))
	bad := 0
	report := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, r := range rs {
		if seen[r.id] {
			report("request %d answered twice", r.id)
		}
		seen[r.id] = true
		if d := r.end.Sub(r.start); d > _callTTL+time.Second {
			report("request %d answered after %v, past its deadline", r.id, d)
		}
		if n := m.a.servedOf(r.id); n != 1 {
			report("request %d: A served it %d times, want 1", r.id, n)
		}
		if n := m.b.servedOf(r.id); n > 2 {
			report("request %d: B served it %d times, want at most 2", r.id, n)
		}
		limit := 2
		if fault == netTruncated {
			// A body cut short fails when B's encoding reads it, after
			// errown's egress saw a response: B's own failure, as errown
			// sees it, claimed, and A retries B (see faultWant).
			limit = 2 * int(m.b.servedOf(r.id))
		}
		if n := m.attempts.of(r.id); n > limit {
			report("request %d: %d attempts to C, want at most %d", r.id, n, limit)
		}
		if r.code != yarpcerrors.CodeOK && r.claim == "claimed" {
			report("request %d failed with %v claimed by A: the failure began below", r.id, r.code)
		}
	}
	if bad > 0 {
		t.Errorf("%d violations in %d requests", bad, len(rs))
	}
	if n := m.a.Served(); n != int64(len(rs)) {
		t.Errorf("A served %d requests, %d were sent", n, len(rs))
	}
}

// _faultSlowDelay is the slow link's added latency per answer: a third
// of B's attempt timeout to C.
const _faultSlowDelay = 50 * time.Millisecond

// faultCase is one fault of the matrix.
type faultCase struct {
	fault netFault
	kinds []string // of C it applies to
}

// _faultMatrix: every fault on every kind of C; an HTTP response's body
// and headers only where C answers HTTP/1.1.
var _faultMatrix = []faultCase{
	{fault: netDown, kinds: _faultKinds},
	{fault: netReset, kinds: _faultKinds},
	{fault: netHang, kinds: _faultKinds},
	{fault: netSlow, kinds: _faultKinds},
	{fault: netMalformed, kinds: _faultKinds},
	{fault: netTruncated, kinds: []string{kindHTTP, kindNetHTTP}},
	{fault: netBigHeader, kinds: []string{kindHTTP, kindNetHTTP}},
}

// TestFaultMatrix injects each fault of the matrix between B and C while
// 16 requests are in flight from outside, keeps it until at least 40
// requests ran wholly under it (16 of a hang or of headers over the
// limit: pureUnder), removes it and checks, request by request, what
// checkEveryRequest says; then, exactly, how the requests
// that ran wholly under the fault went (faultWant) and that the ones
// after it went as before it: one attempt to C each, answered; and that
// within one window of the fault's end B's retry budget for C counts no
// retry, B's memory of the edge to C holds no failure, and A (the root)
// records no new storm, with nothing restarted but C where the fault is
// C's restart.
func TestFaultMatrix(t *testing.T) {
	for _, fc := range _faultMatrix {
		for _, kind := range fc.kinds {
			t.Run(fc.fault.String()+"/"+kind, func(t *testing.T) {
				runFault(t, kind, fc.fault, 0)
			})
		}
	}
}

// runFault runs one fault of the matrix, held at least hold.
func runFault(t *testing.T, kind string, fault netFault, hold time.Duration) {
	m := newFaultMesh(t, kind, _faultSlowDelay, 0)
	defer m.close()
	runFaultOn(t, m, fault, hold)
}

func runFaultOn(t *testing.T, m *faultMesh, fault netFault, hold time.Duration) {
	kind := m.kind
	load := startLoad(m, 16)
	stopped := false
	defer func() {
		if !stopped {
			load.halt()
		}
	}()

	// Before: the mesh answers.
	_, gen := m.proxy.Fault()
	if !load.waitFor(10*time.Second, atLeast(100, gen)) {
		t.Fatal("no 100 requests answered before the fault")
	}

	// The fault, mid-load.
	faultAt := time.Now()
	if fault == netDown {
		m.must(m.c.stop()) // the requests it had are answered
		m.proxy.Set(netDown)
	} else {
		m.proxy.Set(fault)
	}
	_, faultGen := m.proxy.Fault()
	if n := pureUnder(fault); !load.waitFor(15*time.Second, atLeast(n, faultGen)) {
		t.Fatalf("no %d requests ran wholly under the fault", n)
	}
	time.Sleep(hold)
	duringEdges := m.b.Middleware().Introspect().Dependencies

	// Removed, mid-load.
	if fault == netDown {
		m.must(m.c.start()) // on the same port, its snapshot read again
	}
	m.proxy.Set(netPass)
	ended := time.Now()
	_, afterGen := m.proxy.Fault()

	// Steady state again within one window (and a bucket, and a second
	// for a loaded machine).
	steady := func() string {
		for _, b := range m.b.Middleware().Introspect().Budgets {
			if b.Callee == _fc && b.Retries != 0 {
				return fmt.Sprintf("B's budget for C counts %d retries in its window", b.Retries)
			}
		}
		for _, e := range m.b.Middleware().Introspect().Dependencies {
			if e.CalleeFailures != 0 || e.Kind != ownership.KindUnknown {
				return fmt.Sprintf("B's memory of %v: %d callee failures, kind %v", e.Edge, e.CalleeFailures, e.Kind)
			}
		}
		return ""
	}
	deadline := ended.Add(_window + _window/10 + 2*time.Second)
	var why string
	for why = steady(); why != "" && time.Now().Before(deadline); why = steady() {
		time.Sleep(20 * time.Millisecond)
	}
	steadyAt := time.Now()
	settled := steadyAt.Sub(ended)
	if why != "" {
		t.Errorf("not back to steady state %v after the fault's end: %s", settled, why)
	}
	later := ended.Add(_window)
	if !load.waitFor(10*time.Second, func(rs []callRecord) bool {
		n := 0
		for _, r := range rs {
			if r.gen0 == afterGen && r.start.After(later) {
				n++
			}
		}
		return n >= 50
	}) {
		t.Fatal("no 50 requests answered a window after the fault")
	}
	rs := load.halt()
	stopped = true

	m.checkEveryRequest(t, rs, fault)
	var done []callRecord // before the fault began
	for _, r := range rs {
		if r.end.Before(faultAt) {
			done = append(done, r)
		}
	}
	before, during, after := m.tally(done, gen), m.tally(rs, faultGen), m.tally(rs, afterGen)
	if hold > 0 {
		// The budget's ratio bounds the retries of the whole outage, plus
		// what the window before it had saved.
		var n, retries int
		for _, r := range rs {
			if r.gen1 == faultGen || (r.gen0 <= faultGen && r.end.After(faultAt.Add(-_window))) {
				n++
			}
			if r.gen0 == faultGen && r.gen1 == faultGen {
				retries += m.attempts.of(r.id) - 1
			}
		}
		if limit := int(0.1*float64(n)) + 1; retries > limit {
			t.Errorf("B retried C %d times in the outage, its budget allows %d", retries, limit)
		}
		t.Logf("outage: %d retries of C for %d requests", retries, n)
	}
	t.Logf("%s on %s: before %s; during %s; after %s; steady %v after the fault's end",
		fault, kind, formatTally(before), formatTally(during), formatTally(after), settled.Round(time.Millisecond))
	t.Logf("B's memory during the fault: %+v", duringEdges)
	for _, r := range done {
		if !m.steady(r) {
			t.Errorf("request %d, before the fault, went %v, want %v", r.id, m.outcomeOf(r), _steady)
		}
	}
	m.checkRecovered(t, rs, afterGen, ended)
	if hold == 0 {
		checkOnly(t, "during the fault", during, faultWant(fault, kind)...)
	}
	if failing(fault) {
		if !edgeKind(duringEdges, ownership.KindFailClose) {
			t.Errorf("B's memory of its edge to C during the fault: %+v, want fail-close", duringEdges)
		}
	}
	// A request sent before the fault's end may still meet a retry (a
	// slow link's answer late past its attempt timeout on a loaded
	// machine) and end after the steady state, and so may one whose
	// attempt outlasted its timeout on a healthy link (see steady): a
	// storm is new once the mesh is steady and every such request has
	// ended.
	quietFrom := steadyAt
	for _, r := range rs {
		if (r.gen0 < afterGen || m.loadRetry(r)) && r.end.After(quietFrom) {
			quietFrom = r.end
		}
	}
	for _, st := range m.a.Middleware().Introspect().Storms {
		if st.Known && (st.Radius > 1 || st.Retries > 1) {
			t.Errorf("A's storm record %+v: radius %d, %d retries; only B retried, once", st, st.Radius, st.Retries)
		}
		if st.Time.After(quietFrom.Add(200 * time.Millisecond)) {
			t.Errorf("A recorded a storm %v after the fault's end, once steady (%v) and the requests sent under the fault answered (%v)",
				st.Time.Sub(ended), settled, quietFrom.Sub(ended))
		}
	}
}

// pureUnder is how many requests must run wholly under fault before it
// is removed: 40, or one round of the 16 workers where each request
// waits out its attempts' timeouts (a hang) or reads 10 MiB of headers
// per attempt.
func pureUnder(f netFault) int {
	if f == netHang || f == netBigHeader {
		return 16
	}
	return 40
}

// failing reports whether every call to C under fault fails as errown's
// egress sees it: a body cut short fails later, in B's encoding, so B's
// memory learns nothing of C from it (see faultWant).
func failing(f netFault) bool { return f != netSlow && f != netTruncated }

// edgeKind reports whether B's memory holds its edge to C as k, or as
// unknown for too few samples yet with every one joint (a hang's attempts
// take a second each: the window may hold under MinSamples of them).
func edgeKind(edges []depmem.EdgeView, k ownership.EdgeKind) bool {
	for _, e := range edges {
		if e.Edge.Service != _fc {
			continue
		}
		if e.Kind == k || (e.Kind == ownership.KindUnknown && e.CalleeFailures < 10 && e.JointFailures == e.CalleeFailures) {
			return true
		}
	}
	return false
}

// checkOnly checks that the tallied outcomes are among want.
func checkOnly(t *testing.T, phase string, got map[outcome]int, want ...outcome) {
	t.Helper()
	for o, n := range got {
		if !contains(want, o) {
			t.Errorf("%s: %d requests went %v, want only %v", phase, n, o, want)
		}
	}
}

func contains(os []outcome, o outcome) bool {
	for _, w := range os {
		if w == o {
			return true
		}
	}
	return false
}

// checkRecovered checks that the requests of generation gen (after the
// fault) that started a window after its end all went as before the
// fault: answered, one attempt to C.
func (m *faultMesh) checkRecovered(t *testing.T, rs []callRecord, gen int64, ended time.Time) {
	t.Helper()
	n, timedOut := 0, 0
	for _, r := range rs {
		if r.gen0 != gen || r.start.Before(ended.Add(_window)) {
			continue
		}
		n++
		if m.loadRetry(r) {
			timedOut++
		}
		if !m.steady(r) {
			t.Errorf("request %d, %v after the fault's end, went %v, want %v", r.id, r.start.Sub(ended), m.outcomeOf(r), _steady)
		}
	}
	if n == 0 {
		t.Errorf("no request started a window after the fault's end")
	}
	// A connection the fault left hanging would time out most of the
	// attempts sent on it, not a few.
	if timedOut > n/10 {
		t.Errorf("%d of %d requests a window after the fault's end retried an attempt that outlasted its timeout", timedOut, n)
	} else if timedOut > 0 {
		t.Logf("%d of %d requests a window after the fault's end retried an attempt that outlasted its timeout", timedOut, n)
	}
}

// _steady is how a request goes with no fault: answered, one attempt to C.
var _steady = outcome{code: yarpcerrors.CodeOK, servedB: 1, attempts: 1}

func (m *faultMesh) outcomeOf(r callRecord) outcome {
	return outcome{code: r.code, claim: r.claim, servedB: m.b.servedOf(r.id), attempts: m.attempts.of(r.id)}
}

// steady reports whether r went as a request does with no fault: one
// attempt to C, answered; or, on a loaded machine, a first attempt that
// outlasted its timeout and a retry answered (loadRetry), B's policy
// at work on a healthy link. A failure the fault left behind (a reset,
// a refused connection) is neither.
func (m *faultMesh) steady(r callRecord) bool {
	return m.outcomeOf(r) == _steady || m.loadRetry(r)
}

// loadRetry reports whether r was answered at B's second attempt to C,
// the first having ended at its timeout.
func (m *faultMesh) loadRetry(r callRecord) bool {
	o := m.outcomeOf(r)
	return o == outcome{code: yarpcerrors.CodeOK, servedB: 1, attempts: 2} &&
		m.attempts.firstCode(r.id) == yarpcerrors.CodeDeadlineExceeded
}

// faultWant is how a request that ran wholly under fault goes: B retried
// C once and passed the failure on unclaimed; A, seeing it unclaimed,
// did not retry B. The code is the one C's kind gives the fault (yarpc's
// HTTP and TChannel outbounds call a reset "unknown"; a TChannel client
// waits out garbage to its attempt timeout), every one a code a caller
// can classify. Two faults differ: over a slow link every request is
// answered at its first attempt; a body cut short fails in B's encoding
// after errown's egress took the response for an answer, so B claims its
// failure and A retries B, each of B's tries making its two attempts.
func faultWant(f netFault, kind string) []outcome {
	if f == netSlow {
		return []outcome{{code: yarpcerrors.CodeOK, servedB: 1, attempts: 1}}
	}
	var out []outcome
	for _, c := range faultCodes(f, kind) {
		if f == netTruncated {
			// A connection B had open before the fault meets it
			// mid-answer, fails and is retried: 3 or 4 attempts.
			for n := 2; n <= 4; n++ {
				out = append(out, outcome{code: c, claim: "unclaimed", servedB: 2, attempts: n})
			}
			continue
		}
		out = append(out, outcome{code: c, claim: "unclaimed", servedB: 1, attempts: 2})
	}
	if f == netBigHeader {
		// On a loaded machine the first attempt's 10 MiB of header may
		// take the whole of A's attempt to B: no time is left for B's
		// retry.
		out = append(out, outcome{code: yarpcerrors.CodeDeadlineExceeded, claim: "unclaimed", servedB: 1, attempts: 1})
	}
	return out
}

// faultCodes are the codes a request that ran wholly under f fails with
// when C is of kind.
func faultCodes(f netFault, kind string) []yarpcerrors.Code {
	timeout := yarpcerrors.CodeDeadlineExceeded
	unavailable := yarpcerrors.CodeUnavailable
	unknown := yarpcerrors.CodeUnknown
	switch {
	case f == netHang && kind == kindNetHTTP:
		return []yarpcerrors.Code{unavailable} // B's handler calls any client error unavailable
	case f == netHang:
		return []yarpcerrors.Code{timeout}
	case f == netBigHeader:
		// Reading 10 MiB of header may outlast the attempt.
		return []yarpcerrors.Code{unknown, unavailable, timeout}
	case kind == kindTChannel && f == netMalformed:
		// The client waits on garbage until its attempt times out, or
		// until the proxy resets the connection it wrote the garbage on.
		return []yarpcerrors.Code{unknown, timeout}
	case (kind == kindGRPC || kind == kindGRPCGo) && f == netMalformed:
		// A call on the connection that met garbage fails unavailable;
		// one held while the client connects again (gRPC holds calls
		// while it connects, and each new connection meets the garbage)
		// may end at its attempt timeout instead.
		return []yarpcerrors.Code{unavailable, timeout}
	case kind == kindTChannel && f == netDown:
		return []yarpcerrors.Code{unknown, timeout} // a connection in the making when C stopped
	case kind == kindHTTP || kind == kindTChannel:
		return []yarpcerrors.Code{unknown}
	default:
		return []yarpcerrors.Code{unavailable}
	}
}

// TestLongOutage stops C for four windows of B's retry budget and
// dependency memory, on the real clock, while B's budget allows retries
// for 10% of its requests (no floor): the budget runs dry and stays
// within its allowance throughout; once C is back (on its port, its
// snapshot read), within one window the budget counts no retry, B's
// memory of C holds no failure and its kind is unknown again, A records
// no new storm, and every request is answered at its first attempt, with
// nothing restarted. (The same on a fake clock, hours long: the retry and
// depmem packages' own tests.)
func TestLongOutage(t *testing.T) {
	m := newFaultMesh(t, kindHTTP, _faultSlowDelay, 0)
	defer m.close()
	m.must(m.a.stop())
	m.must(m.b.stop())
	m.b.cfg.Retry.Budget = retry.BudgetConfig{Ratio: 0.1, NoFloor: true, Window: _window}
	m.must(m.b.start())
	m.must(m.a.start())
	runFaultOn(t, m, netDown, 4*_window)
	for _, b := range m.b.Middleware().Introspect().Budgets {
		if b.Callee == _fc && b.Allowed != 0.1*float64(b.Requests) {
			t.Errorf("B's budget for C allows %.1f retries for %d requests, want 10%%", b.Allowed, b.Requests)
		}
	}
}
