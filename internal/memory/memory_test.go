package memory

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/multierr"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var (
	edgeA = ownership.Edge{CallerProcedure: "checkout", Service: "payments", Procedure: "charge"}
	edgeB = ownership.Edge{CallerProcedure: "checkout", Service: "cache", Procedure: "get"}
)

func newMemory(t *testing.T, cfg depmem.Config, opts ...Option) (*Memory, *fakeClock) {
	clock := newFakeClock()
	m, err := NewMemory(cfg, append([]Option{withClock(clock.Now)}, opts...)...)
	require.NoError(t, err)
	return m, clock
}

func observe(m *Memory, e ownership.Edge, failures, joint int) {
	for i := 0; i < failures; i++ {
		m.Observe(e, i < joint)
	}
}

func TestMemoryLearns(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{MinSamples: 10})
	assert.Equal(t, ownership.KindUnknown, m.Kind(edgeA), "nothing seen yet")
	observe(m, edgeA, 9, 9)
	assert.Equal(t, ownership.KindUnknown, m.Kind(edgeA), "below minimum samples")
	observe(m, edgeA, 1, 1)
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeA))

	observe(m, edgeB, 20, 2)
	assert.Equal(t, ownership.KindFailOpen, m.Kind(edgeB))
	assert.Equal(t, []depmem.EdgeView{
		{Edge: edgeB, Kind: ownership.KindFailOpen, Ratio: 0.1, CalleeFailures: 20, JointFailures: 2, Source: depmem.SourceLocal},
		{Edge: edgeA, Kind: ownership.KindFailClose, Ratio: 1, CalleeFailures: 10, JointFailures: 10, Source: depmem.SourceLocal},
	}, m.Edges())
}

func TestMemoryWindowForgets(t *testing.T) {
	m, clock := newMemory(t, depmem.Config{Window: 10 * time.Minute, Buckets: 10, MinSamples: 10})
	observe(m, edgeA, 10, 10)
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeA))
	clock.Add(9 * time.Minute)
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeA), "still inside the window")
	observe(m, edgeA, 10, 0) // the edge turns soft
	assert.Equal(t, ownership.KindUnknown, m.Kind(edgeA), "ratio 0.5 between the thresholds")
	clock.Add(time.Minute + time.Second)
	assert.Equal(t, ownership.KindFailOpen, m.Kind(edgeA), "the old hard failures left the window")
	clock.Add(10 * time.Minute)
	assert.Equal(t, ownership.KindUnknown, m.Kind(edgeA), "everything left the window")
}

func TestMemoryHysteresisHoldsKind(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{MinSamples: 10})
	observe(m, edgeA, 100, 80)
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeA))
	observe(m, edgeA, 4, 2) // 82/104 = 0.788: below 0.8, above 0.75
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeA))
	observe(m, edgeA, 20, 0) // 82/124 = 0.66
	assert.Equal(t, ownership.KindUnknown, m.Kind(edgeA))
}

func TestMemoryReadsArePure(t *testing.T) {
	// The same observations give the same kinds whether or not anyone read
	// the kind in between (the gauges' ticker, the debug page): only
	// observations move the hysteresis.
	type step struct {
		failures, joint int
		read            bool
	}
	script := []step{
		{failures: 9, joint: 0},             // fail-open once classified...
		{failures: 1, joint: 0, read: true}, // ...here: ratio 0 over 10
		{failures: 2, joint: 2, read: true}, // 2/12 = 0.17
		{failures: 1, joint: 1, read: true}, // 3/13 = 0.23: held fail-open by hysteresis (≤ 0.25)
		{failures: 1, joint: 1, read: true}, // 4/14 = 0.29: unknown
	}
	run := func(reads bool) []depmem.EdgeView {
		m, clock := newMemory(t, depmem.Config{MinSamples: 10})
		for _, st := range script {
			observe(m, edgeA, st.failures, st.joint)
			if reads && st.read {
				for i := 0; i < 3; i++ {
					_ = m.Kind(edgeA)
					_ = m.Edges()
				}
			}
			clock.Add(time.Second)
		}
		return m.Edges()
	}
	withReads, without := run(true), run(false)
	assert.Equal(t, without, withReads)

	m, _ := newMemory(t, depmem.Config{MinSamples: 10})
	var kinds []ownership.EdgeKind
	for _, st := range script {
		observe(m, edgeA, st.failures, st.joint)
		kinds = append(kinds, m.Kind(edgeA))
	}
	assert.Equal(t, []ownership.EdgeKind{
		ownership.KindUnknown, ownership.KindFailOpen, ownership.KindFailOpen, ownership.KindFailOpen, ownership.KindUnknown,
	}, kinds)

	// Without reads, the old code classified 3/13 from "unknown" (no
	// hysteresis) and 4/14 alike: the sequence above must hold without
	// them too.
	m, _ = newMemory(t, depmem.Config{MinSamples: 10})
	for _, st := range script[:4] {
		observe(m, edgeA, st.failures, st.joint)
	}
	assert.Equal(t, ownership.KindFailOpen, m.Kind(edgeA), "held by the hysteresis its observations built")
}

func TestStaticOverridesMemory(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{MinSamples: 1})
	observe(m, edgeA, 10, 10)
	s, err := NewStatic([]depmem.Declaration{{Service: "payments", Kind: new(ownership.KindFailOpen)}}, m)
	require.NoError(t, err)
	assert.Equal(t, ownership.KindFailOpen, s.Kind(edgeA))
	observe(m, edgeB, 10, 10)
	assert.Equal(t, ownership.KindFailClose, s.Kind(edgeB), "undeclared edges come from the memory")
}

func TestMemoryDisabled(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{Disabled: true, MinSamples: 1})
	observe(m, edgeA, 10, 10)
	assert.Equal(t, ownership.KindUnknown, m.Kind(edgeA))
	assert.Empty(t, m.Edges())
}

func TestMemoryMaxEdgesAndMetrics(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m, _ := newMemory(t, depmem.Config{MaxEdges: 1, MinSamples: 1}, WithSinks(obs.Sinks{Scope: scope}))
	observe(m, edgeA, 3, 1)
	observe(m, edgeB, 2, 0)
	snap := scope.Snapshot().Counters()
	tags := "callee_procedure=charge,callee_service=payments,caller_procedure=checkout"
	assert.Equal(t, int64(3), snap["depmem.callee_failures+"+tags].Value())
	assert.Equal(t, int64(1), snap["depmem.joint_failures+"+tags].Value())
	assert.Equal(t, int64(2), snap["depmem.edges_overflow+"].Value())
	assert.Len(t, m.Edges(), 1)
	assert.Equal(t, ownership.KindUnknown, m.Kind(edgeB))
}

func TestMemoryEvictsIdleEdgesForNewOnes(t *testing.T) {
	scope := tally.NewTestScope("", nil)
	m, clock := newMemory(t, depmem.Config{MaxEdges: 1, MinSamples: 1, Window: 10 * time.Minute, Buckets: 10}, WithSinks(obs.Sinks{Scope: scope}))
	counter := func(name string) int64 { return scope.Snapshot().Counters()["depmem."+name+"+"].Value() }
	observe(m, edgeA, 3, 3)

	clock.Add(9 * time.Minute)
	observe(m, edgeB, 1, 1)
	assert.Equal(t, int64(1), counter("edges_overflow"), "edgeA was observed inside the window: nothing to evict")
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeA))

	clock.Add(time.Minute)
	observe(m, edgeB, 2, 2)
	assert.Equal(t, int64(1), counter("edges_overflow"), "edgeA left the window: evicted for edgeB")
	assert.Equal(t, int64(1), counter("edges_evicted"))
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeB), "edgeB is learned")
	assert.Equal(t, ownership.KindUnknown, m.Kind(edgeA))
	assert.Equal(t, []depmem.EdgeView{{Edge: edgeB, Kind: ownership.KindFailClose, Ratio: 1, CalleeFailures: 2, JointFailures: 2, Source: depmem.SourceLocal}}, m.Edges())

	// Seen again once edgeB is idle, edgeA counts on in its old series:
	// tally keeps one series per edge ever seen.
	clock.Add(10 * time.Minute)
	observe(m, edgeA, 1, 0)
	tags := "callee_procedure=charge,callee_service=payments,caller_procedure=checkout"
	assert.Equal(t, int64(4), scope.Snapshot().Counters()["depmem.callee_failures+"+tags].Value())
	assert.Equal(t, int64(2), counter("edges_evicted"))
}

func TestMemoryEvictionScansOnlyWhenAnEdgeCanBeIdle(t *testing.T) {
	// A full memory with nothing idle drops new edges without scanning
	// until the least recently observed edge can have left the window.
	m, clock := newMemory(t, depmem.Config{MaxEdges: 2, MinSamples: 1, Window: 10 * time.Minute, Buckets: 10})
	observe(m, edgeA, 1, 1)
	clock.Add(5 * time.Minute)
	observe(m, edgeB, 1, 1)
	edgeC := ownership.Edge{CallerProcedure: "checkout", Service: "stock", Procedure: "reserve"}
	observe(m, edgeC, 1, 1)
	assert.Len(t, m.Edges(), 2, "nothing idle: dropped")
	m.mu.RLock()
	assert.Equal(t, m.slice()+5, m.noIdleBefore, "edgeA goes idle 5 minutes later")
	m.mu.RUnlock()

	clock.Add(4 * time.Minute)
	observe(m, edgeC, 1, 1)
	assert.Len(t, m.Edges(), 2, "still nothing idle")
	clock.Add(time.Minute)
	observe(m, edgeC, 1, 1)
	assert.Equal(t, []ownership.Edge{edgeB, edgeC}, viewEdges(m.Edges()), "edgeA evicted the slice it went idle")
}

func TestMemorySnapshotAfterEviction(t *testing.T) {
	// A snapshot holds the edges tracked, not the evicted ones, and a
	// restore into a full memory evicts idle edges to make room.
	edgeC := ownership.Edge{CallerProcedure: "checkout", Service: "stock", Procedure: "reserve"}
	m, clock := newMemory(t, depmem.Config{MaxEdges: 2, MinSamples: 1})
	observe(m, edgeA, 2, 2)
	clock.Add(depmem.DefaultConfig().Window)
	observe(m, edgeB, 2, 0)
	observe(m, edgeC, 2, 2) // evicts edgeA
	snap := m.Snapshot()
	require.Len(t, snap.Edges, 2)
	assert.Equal(t, []ownership.Edge{edgeB, edgeC}, []ownership.Edge{snap.Edges[0].Edge, snap.Edges[1].Edge})

	scope := tally.NewTestScope("", nil)
	restored, restoredClock := newMemory(t, depmem.Config{MaxEdges: 2, MinSamples: 1}, WithSinks(obs.Sinks{Scope: scope}))
	observe(restored, edgeA, 1, 1) // idle by the time of the restore
	restoredClock.Add(depmem.DefaultConfig().Window)
	require.Equal(t, clock.Now(), restoredClock.Now())
	require.NoError(t, restored.Restore(&snap))
	assert.Equal(t, []depmem.EdgeView{
		{Edge: edgeB, Kind: ownership.KindFailOpen, CalleeFailures: 2, Source: depmem.SourceLocal},
		{Edge: edgeC, Kind: ownership.KindFailClose, Ratio: 1, CalleeFailures: 2, JointFailures: 2, Source: depmem.SourceLocal},
	}, restored.Edges())
	counters := scope.Snapshot().Counters()
	assert.Equal(t, int64(1), counters["depmem.edges_evicted+"].Value())
	assert.Equal(t, int64(0), counters["depmem.edges_overflow+"].Value())
}

func viewEdges(vs []depmem.EdgeView) []ownership.Edge {
	out := make([]ownership.Edge, len(vs))
	for i, v := range vs {
		out[i] = v.Edge
	}
	return out
}

// churnEdge is the i-th edge of a churn.
func churnEdge(i int) ownership.Edge {
	return ownership.Edge{CallerProcedure: "checkout", Service: "callee-" + strconv.Itoa(i), Procedure: "get"}
}

// churn observes the edges from up to to, a round of maxEdges at a time,
// each round minSamples times and failing the caller, and moves the clock
// a window on after each round, so that each round's edges age out before
// the next. It reports the first edge whose kind was not learned.
func churn(m *Memory, clock *fakeClock, from, to, maxEdges, minSamples int, window time.Duration) (ownership.Edge, bool) {
	for round := from; round < to; round += maxEdges {
		end := min(round+maxEdges, to)
		for i := round; i < end; i++ {
			observe(m, churnEdge(i), minSamples, minSamples)
		}
		for i := round; i < end; i++ {
			if m.Kind(churnEdge(i)) != ownership.KindFailClose {
				return churnEdge(i), false
			}
		}
		clock.Add(window)
	}
	return ownership.Edge{}, true
}

func TestMemoryChurnKeepsLearning(t *testing.T) {
	const maxEdges, churned, minSamples, window = 1000, 10_000, 3, 10 * time.Minute
	scope := tally.NewTestScope("", nil)
	m, clock := newMemory(t, depmem.Config{MaxEdges: maxEdges, MinSamples: minSamples, Window: window}, WithSinks(obs.Sinks{Scope: scope}))

	notLearned, ok := churn(m, clock, 0, churned, maxEdges, minSamples, window)
	require.True(t, ok, "edge %v not learned", notLearned)

	m.mu.RLock()
	assert.LessOrEqual(t, len(m.edges), maxEdges)
	m.mu.RUnlock()
	counters := scope.Snapshot().Counters()
	assert.Equal(t, int64(0), counters["depmem.edges_overflow+"].Value(), "no observation dropped")
	assert.Equal(t, int64(churned-maxEdges), counters["depmem.edges_evicted+"].Value())
	assert.Equal(t, ownership.KindUnknown, m.Kind(churnEdge(0)), "the first edges are forgotten")
}

func TestMemoryChurnHeapStaysFlat(t *testing.T) {
	// The memory's state is bounded by MaxEdges: after 10,000 distinct
	// edges have gone through a memory of 1,000, the heap holds about what
	// it held with the first 1,000. That holds for tally's state too, with
	// the default no-op scope and with a reporting scope, which drops the
	// scopes of evicted edges at its next report. (A test scope keeps
	// every scope it made: not measured here.)
	const maxEdges, churned, minSamples, window = 1000, 10_000, 3, 10 * time.Minute
	tests := []struct {
		name  string
		scope func(t *testing.T) tally.Scope
	}{
		{name: "no-op scope", scope: func(*testing.T) tally.Scope { return tally.NoopScope }},
		{name: "reporting scope", scope: func(t *testing.T) tally.Scope {
			scope, closer := tally.NewRootScope(tally.ScopeOptions{Reporter: tally.NullStatsReporter}, 50*time.Millisecond)
			t.Cleanup(func() { assert.NoError(t, closer.Close()) })
			return scope
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			heap := func() uint64 {
				testtime.Sleep(120 * time.Millisecond) // a report or more
				var s runtime.MemStats
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&s)
				return s.HeapAlloc
			}
			scope := tt.scope(t)
			start := heap()
			m, clock := newMemory(t, depmem.Config{MaxEdges: maxEdges, MinSamples: minSamples, Window: window}, WithSinks(obs.Sinks{Scope: scope}))
			_, ok := churn(m, clock, 0, maxEdges, maxEdges, minSamples, window)
			require.True(t, ok)
			full := heap()
			_, ok = churn(m, clock, maxEdges, churned, maxEdges, minSamples, window)
			require.True(t, ok)
			after := heap()
			runtime.KeepAlive(m)

			perRound := int64(full) - int64(start) // what maxEdges edges cost
			growth := int64(after) - int64(full)
			t.Logf("heap: %d B with %d edges, growth %d B after churning %d edges", perRound, maxEdges, growth, churned)
			// Keeping every churned edge would grow the heap by 9 rounds'
			// worth; allow half of one for noise.
			assert.Less(t, growth, perRound/2, "heap grows with the edges churned")
		})
	}
}

func TestMemoryConcurrentChurn(t *testing.T) {
	// Observations of new edges evicting idle ones while others observe,
	// read and snapshot: run with -race.
	const maxEdges = 50
	m, clock := newMemory(t, depmem.Config{MaxEdges: maxEdges, MinSamples: 1, Window: 10 * time.Second, Buckets: 10})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				m.Observe(churnEdge(w*1000+i), true)
				m.Observe(edgeA, i%2 == 0)
				if i%50 == 0 {
					clock.Add(10 * time.Second)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			_ = m.Kind(edgeA)
			_ = m.Edges()
			_ = m.Snapshot()
		}
	}()
	wg.Wait()
	m.mu.RLock()
	defer m.mu.RUnlock()
	assert.LessOrEqual(t, len(m.edges), maxEdges)
}

func TestMemoryConcurrentObserveAcrossRotations(t *testing.T) {
	// Rounds of goroutines observing one edge at once, the first of each
	// round in a bucket that still holds a slice that left the window
	// (the clock moves one bucket, sometimes three, between rounds), while
	// others read and snapshot: no observation is lost or counted twice,
	// and the window holds exactly the last rounds'. Run with -race.
	const goroutines, perGoroutine, buckets = 4, 200, 10
	m, clock := newMemory(t, depmem.Config{Window: buckets * time.Second, Buckets: buckets, MinSamples: 1})
	type round struct {
		slice           int64
		failures, joint int64
	}
	var rounds []round
	for r := 0; r < 3*buckets; r++ {
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perGoroutine; i++ {
					m.Observe(edgeA, i%5 != 0)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				_ = m.Kind(edgeA)
				_ = m.Edges()
				_ = m.Snapshot()
			}
		}()
		wg.Wait()
		now := m.slice()
		rounds = append(rounds, round{slice: now, failures: goroutines * perGoroutine, joint: goroutines * perGoroutine * 4 / 5})
		var want depmem.EdgeView
		want.Edge, want.Source, want.Kind = edgeA, depmem.SourceLocal, ownership.KindFailClose
		for _, r := range rounds {
			if r.slice > now-buckets {
				want.CalleeFailures += r.failures
				want.JointFailures += r.joint
			}
		}
		want.Ratio = Ratio(want.CalleeFailures, want.JointFailures)
		require.Equal(t, []depmem.EdgeView{want}, m.Edges(), "round %d", r)
		step := time.Second
		if r%7 == 6 {
			step = 3 * time.Second
		}
		clock.Add(step)
	}
}

func TestMemoryConcurrentEvictionKeepsObservations(t *testing.T) {
	// Each round starts with every edge idle, the memory full; while
	// goroutines observe edgeA, a new edge evicts the idle ones. Whether
	// edgeA is evicted before its first observation of the round or not,
	// no observation of it is lost to an evicted state. Run with -race.
	const goroutines, perGoroutine, window = 4, 100, 10 * time.Second
	scope := tally.NewTestScope("", nil)
	m, clock := newMemory(t, depmem.Config{MaxEdges: 2, MinSamples: 1, Window: window, Buckets: 10}, WithSinks(obs.Sinks{Scope: scope}))
	m.Observe(edgeA, true)
	m.Observe(churnEdge(0), true) // full
	for r := 1; r <= 50; r++ {
		clock.Add(window) // everything idle
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perGoroutine; i++ {
					m.Observe(edgeA, true)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Observe(churnEdge(r), true) // evicts what is idle, and takes a place
		}()
		wg.Wait()
		v, ok := m.classify(edgeA)
		require.True(t, ok, "round %d", r)
		require.Equal(t, int64(goroutines*perGoroutine), v.CalleeFailures, "round %d", r)
		m.mu.RLock()
		require.LessOrEqual(t, len(m.edges), 2)
		m.mu.RUnlock()
	}
	assert.Equal(t, int64(0), scope.Snapshot().Counters()["depmem.edges_overflow+"].Value(), "nothing dropped")
}

func TestMemoryObserveDoesNotAllocateOnKnownEdge(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{})
	m.Observe(edgeA, true)
	allocs := testing.AllocsPerRun(1000, func() {
		m.Observe(edgeA, true)
		m.Observe(edgeA, false)
	})
	assert.Equal(t, 0.0, allocs)
}

func TestMemoryConcurrent(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{MinSamples: 1})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				m.Observe(edgeA, i%2 == 0)
				m.Kind(edgeA)
			}
		}()
	}
	wg.Wait()
	v := m.Edges()
	require.Len(t, v, 1)
	assert.Equal(t, int64(1000), v[0].CalleeFailures)
	assert.Equal(t, int64(500), v[0].JointFailures)
}

func TestStaticEdgesView(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{MinSamples: 1})
	observe(m, edgeA, 4, 4)
	observe(m, edgeB, 4, 0)
	s, err := NewStatic([]depmem.Declaration{{Service: "cache", Kind: new(ownership.KindFailClose)}}, m)
	require.NoError(t, err)
	assert.Equal(t, []depmem.EdgeView{
		{Edge: ownership.Edge{CallerProcedure: "*", Service: "cache", Procedure: "*"}, Kind: ownership.KindFailClose, Source: depmem.SourceStatic},
		{Edge: edgeA, Kind: ownership.KindFailClose, Ratio: 1, CalleeFailures: 4, JointFailures: 4, Source: depmem.SourceLocal},
	}, s.Edges(), "the learned cache edge is hidden by the declaration")
}

// Learn is Kind then Observe: it returns the kind Kind read before the
// failure, and leaves the edge's kind where an observation of the counts
// with the failure in moves it (Classify from the kind before), over a
// random run of failures on a few edges, across the hysteresis band,
// evictions (MaxEdges 2) and the window sliding.
func TestMemoryLearnIsKindThenObserve(t *testing.T) {
	m, clock := newMemory(t, depmem.Config{MinSamples: 5, MaxEdges: 2, Window: time.Minute, Buckets: 6})
	edges := []ownership.Edge{edgeA, edgeB, {CallerProcedure: "checkout", Service: "ledger", Procedure: "post"}}
	stored := func(e ownership.Edge) ownership.EdgeKind {
		if s := m.edge(e); s != nil {
			return s.loadKind()
		}
		return ownership.KindUnknown
	}
	view := func(e ownership.Edge) (depmem.EdgeView, bool) {
		for _, v := range m.Edges() {
			if v.Edge == e {
				return v, true
			}
		}
		return depmem.EdgeView{}, false // no room: dropped
	}
	rng := rand.New(rand.NewPCG(1, 2))
	moves, dropped := 0, 0
	for i := range 10000 {
		e := edges[rng.IntN(len(edges))]
		// Stretches of mostly hard then mostly soft failures: the kinds
		// cross the thresholds both ways.
		callerFailed := rng.IntN(20) > 0
		if i/40%2 == 1 {
			callerFailed = rng.IntN(20) == 0
		}
		want, prev := m.Kind(e), stored(e)
		got := m.Learn(e, callerFailed)
		require.Equal(t, want, got, "failure %d on %v: Kind's, before the failure", i, e)
		v, tracked := view(e)
		if !tracked {
			dropped++
			continue
		}
		after := Classify(prev, v.CalleeFailures, v.JointFailures, m.thresholds)
		require.Equal(t, after, stored(e), "failure %d on %v: the kind the observation left (%+v)", i, e, v)
		if after != prev {
			moves++
		}
		if rng.IntN(50) == 0 {
			clock.Add(time.Duration(rng.IntN(40)) * time.Second)
		}
	}
	assert.Greater(t, moves, 50, "kinds moved often enough to compare")
	assert.Positive(t, dropped, "some failures found the memory full")
}

// Static learns through to its memory: declared edges keep their kind but
// are observed too, undeclared ones take the memory's.
func TestStaticLearn(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{MinSamples: 3})
	s, err := NewStatic([]depmem.Declaration{{Service: "cache", Kind: new(ownership.KindFailOpen)}}, m)
	require.NoError(t, err)
	for range 3 {
		assert.Equal(t, ownership.KindFailOpen, s.Learn(edgeB, true), "declared")
	}
	assert.Equal(t, ownership.KindUnknown, s.Learn(edgeA, true), "learning")
	s.Learn(edgeA, true)
	s.Learn(edgeA, true)
	assert.Equal(t, ownership.KindFailClose, s.Learn(edgeA, true), "learned")
	views := m.Edges()
	require.Len(t, views, 2)
	assert.Equal(t, int64(3), views[0].CalleeFailures, "the declared edge observed too: %+v", views[0])
	assert.Equal(t, int64(4), views[1].CalleeFailures)

	alone, err := NewStatic([]depmem.Declaration{{Service: "cache", Kind: new(ownership.KindFailOpen)}}, nil)
	require.NoError(t, err)
	assert.Equal(t, ownership.KindFailOpen, alone.Learn(edgeB, true))
	assert.Equal(t, ownership.KindUnknown, alone.Learn(edgeA, true), "nothing learns behind it")
}

func TestNewMemoryRefusesWhatValidateDoes(t *testing.T) {
	for _, give := range []depmem.Config{
		{Window: -time.Second},
		{Fleet: depmem.FleetConfig{URL: "ftp://x", Selector: `a="b"`}},
		{Snapshot: depmem.SnapshotConfig{Interval: -time.Second}},
		{},
	} {
		_, err := NewMemory(give)
		assert.Equal(t, give.Validate(), err, "%+v", give)
	}
}

func errorStrings(err error) []string {
	var out []string
	for _, e := range multierr.Errors(err) {
		out = append(out, e.Error())
	}
	return out
}

// A long outage on a fake clock: for six hours (36 windows) a callee
// fails 30 times a minute and every caller fails with it, then it is
// back. The edge is fail-close throughout, its window holding exactly
// the last ten minutes' failures; once the callee is back the window
// empties a bucket a minute and the edge is unknown a window after the
// last failure, without a restart; then traffic whose callers survive
// the callee's failures makes it fail-open at the 20th.
func TestMemoryLongOutage(t *testing.T) {
	const perMinute = 30
	m, clock := newMemory(t, depmem.Config{Window: 10 * time.Minute, Buckets: 10, MinSamples: 20})
	view := func() depmem.EdgeView {
		t.Helper()
		edges := m.Edges()
		require.Len(t, edges, 1)
		return edges[0]
	}
	for minute := range 6 * 60 {
		for range perMinute {
			m.Learn(edgeA, true)
		}
		v := view()
		want := int64(perMinute * min(minute+1, 10))
		if v.CalleeFailures != want || v.JointFailures != want || v.Kind != ownership.KindFailClose {
			t.Fatalf("minute %d of the outage: %+v, want %d callee failures, all joint, fail-close", minute, v, want)
		}
		clock.Add(time.Minute)
	}

	for minute := 1; minute <= 10; minute++ { // the callee is back: no failure
		want, wantKind := int64(perMinute*(10-minute)), ownership.KindFailClose
		if minute == 10 {
			wantKind = ownership.KindUnknown
		}
		if v := view(); v.CalleeFailures != want || v.Kind != wantKind || m.Kind(edgeA) != wantKind {
			t.Fatalf("minute %d after the outage: %+v, Kind %v, want %d callee failures, %v", minute, v, m.Kind(edgeA), want, wantKind)
		}
		clock.Add(time.Minute)
	}

	for i := 1; i <= 20; i++ { // the callee fails, its callers do not
		want := ownership.KindUnknown
		if i == 20 {
			want = ownership.KindFailOpen
		}
		m.Learn(edgeA, false)
		if got := m.Kind(edgeA); got != want {
			t.Fatalf("after %d coincidental failures: %v, want %v", i, got, want)
		}
	}
	assert.Equal(t, depmem.EdgeView{Edge: edgeA, Kind: ownership.KindFailOpen, CalleeFailures: 20, Source: depmem.SourceLocal}, view())
}
