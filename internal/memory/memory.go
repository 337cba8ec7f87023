package memory

import (
	"io"
	"maps"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/depcontract"
	"github.com/errown/errown/ownership"
	"github.com/uber-go/tally/v4"
	"go.uber.org/zap"
)

// Observer is told of every callee failure seen serving a request, once
// the request finished.
type Observer interface {
	// Observe counts one failed call on edge e; callerFailed reports
	// whether the request it was made for failed too.
	Observe(e ownership.Edge, callerFailed bool)
}

// Memory learns edge kinds from traffic over a sliding window. It is safe
// for concurrent use. Observing a failure on a known edge neither
// allocates nor locks (a copy of the edge set, atomic counts and kind);
// only a time slice's first failure locks the edge's window to empty the
// bucket. Kind takes no lock.
//
// It tracks at most Config.MaxEdges edges, evicting idle ones (package
// depmem, "Bounded state") at most once per bucket width.
type Memory struct {
	cfg        depmem.Config
	thresholds Thresholds
	width      int64 // bucket width in nanoseconds
	clock      *clock
	logger     *zap.Logger
	scope      tally.Scope
	gauges     gauges // UpdateGauges
	// noop: the scope is tally.NoopScope, so no edge gets a tagged scope
	// tally would keep for nothing.
	noop bool

	// mu guards edges (scanned by eviction, listed by views) and
	// noIdleBefore.
	mu    sync.RWMutex
	edges map[ownership.Edge]*edgeState
	// read is a lock-free copy of edges for the request path, replaced
	// under mu after an eviction and after as many misses as edges holds
	// (sync.Map's scheme, without reflection-hashed interface keys).
	read   atomic.Pointer[map[ownership.Edge]*edgeState]
	misses atomic.Int64
	// last is the edge a failure was last observed on (an outage's
	// failures are mostly on one edge); it may be evicted: touch says so.
	last atomic.Pointer[edgeState]
	// noIdleBefore is the earliest slice an edge can have gone idle; no
	// eviction pass runs before it. Under mu.
	noIdleBefore int64

	overflow       tally.Counter
	evicted        tally.Counter
	snapshotErrors tally.Counter
	fleet          *fleet

	lifecycle
}

type edgeState struct {
	edge ownership.Edge
	// w holds the counts and last observation; once the edge is
	// evicted, a stale observation finds so (w.touch) and looks again.
	w *window
	// kind is the EdgeKind as of the last observation, where the
	// hysteresis starts; only observations and a restore write it.
	kind atomic.Uint32

	failures tally.Counter
	joint    tally.Counter
	series   io.Closer // the edge's tagged scope, closed on eviction; or nil
}

// loadKind returns the kind as of the last observation.
func (s *edgeState) loadKind() ownership.EdgeKind {
	return ownership.EdgeKind(s.kind.Load())
}

var _ Learner = (*Memory)(nil)

// NewMemory returns an empty Memory. Start loads its snapshot and starts
// background work; Stop ends it.
func NewMemory(cfg depmem.Config, opts ...Option) (*Memory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = defaults.Fill(cfg, depmem.DefaultConfig())
	o := newOptions(opts)
	noop := o.Scope == tally.NoopScope
	o.Scope = o.Scope.SubScope("depmem")
	m := &Memory{
		noop:       noop,
		cfg:        cfg,
		thresholds: ThresholdsOf(cfg),
		width:      int64(cfg.Window) / int64(cfg.Buckets),
		clock:      newClock(o.now, cfg.Window/time.Duration(cfg.Buckets)),
		logger:     o.Logger,
		scope:      o.Scope,
		edges:      make(map[ownership.Edge]*edgeState),
		overflow:   o.Scope.Counter("edges_overflow"),
		evicted:    o.Scope.Counter("edges_evicted"),
		// Always created, so dashboards find them.
		snapshotErrors: o.Scope.Counter("snapshot_errors"),
		gauges:         newGauges(o.Scope),
	}
	m.publish()
	if err := depcontract.CheckTally(); err != nil && !noop {
		// Evicted edges would keep their series in tally: say so at start.
		o.Logger.Error("errown: the dependency memory cannot drop the series of evicted edges", zap.Error(err))
		o.Scope.Gauge("series_unclosable").Update(1)
	}
	queries, errors := o.Scope.Counter("fleet_queries"), o.Scope.Counter("fleet_errors")
	if cfg.Fleet.URL != "" {
		fc := cfg.Fleet
		fc.FailuresQuery, fc.JointQuery = cfg.FleetQueries()
		m.fleet = newFleet(fc, o, queries, errors)
	}
	return m, nil
}

// Now returns the memory's time: its clock's last tick while started (at
// most a tenth of a bucket, and 100ms, behind), exact otherwise. It has
// no monotonic reading.
func (m *Memory) Now() time.Time {
	return time.Unix(0, m.clock.nanos())
}

// slice returns the current time slice: time / bucket width.
func (m *Memory) slice() int64 {
	return m.clock.nanos() / m.width
}

// Observe implements Observer.
func (m *Memory) Observe(e ownership.Edge, callerFailed bool) {
	m.Learn(e, callerFailed)
}

// Learn implements Learner: Kind and Observe in one edge lookup and one
// window sum.
func (m *Memory) Learn(e ownership.Edge, callerFailed bool) ownership.EdgeKind {
	if m.cfg.Disabled {
		return ownership.KindUnknown
	}
	fleetCounts, inFleet := m.fleet.counts(e)
	now := m.slice()
	s := m.touchedEdge(e, now)
	if s == nil {
		m.overflow.Inc(1)
		if inFleet { // as Kind reads an edge known only to the fleet
			return m.fleetKind(fleetCounts)
		}
		return ownership.KindUnknown
	}
	local, localJoint := s.w.sums(now)
	failures, joint, _ := pick(local, localJoint, fleetCounts, inFleet)
	kind := Classify(s.loadKind(), failures, joint, m.thresholds) // Kind's, before this failure
	if s.w.add(now, callerFailed) {
		local++
		if callerFailed {
			localJoint++
		}
	}
	// Only an observation moves the kind; reads classify from it
	// without changing it. Each observation classifies from the counts
	// it sees, its own included; concurrent ones chain.
	failures, joint, _ = pick(local, localJoint, fleetCounts, inFleet)
	for {
		prev := s.kind.Load()
		next := uint32(Classify(ownership.EdgeKind(prev), failures, joint, m.thresholds))
		if next == prev || s.kind.CompareAndSwap(prev, next) {
			break
		}
	}
	// Counted while touched, before any eviction closes the series.
	s.failures.Inc(1)
	if callerFailed {
		s.joint.Inc(1)
	}
	return kind
}

// edge returns e's state, or nil if untracked. Misses count towards
// replacing read, which never changes what was learned.
func (m *Memory) edge(e ownership.Edge) *edgeState {
	if s := (*m.read.Load())[e]; s != nil {
		return s
	}
	m.mu.RLock()
	s := m.edges[e]
	publish := s != nil && m.misses.Add(1) >= int64(len(m.edges))
	m.mu.RUnlock()
	if publish {
		m.mu.Lock()
		if m.misses.Load() >= int64(len(m.edges)) {
			m.publish()
		}
		m.mu.Unlock()
	}
	return s
}

// touchedEdge returns e's state touched at slice now (window.touch),
// creating it if there is room or eviction makes room; else nil.
func (m *Memory) touchedEdge(e ownership.Edge, now int64) *edgeState {
	if s := m.last.Load(); s != nil && s.edge == e && s.w.touch(now) {
		return s
	}
	if s := (*m.read.Load())[e]; s != nil && s.w.touch(now) {
		m.last.Store(s)
		return s
	}
	// New since read was made, evicted, or untracked: look again
	// under the lock eviction takes too.
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.edges[e]
	if s == nil {
		if len(m.edges) >= m.cfg.MaxEdges && !m.evictIdle(now) {
			return nil
		}
		s = m.newEdgeState(e, now)
		m.edges[e] = s
	}
	if m.misses.Add(1) >= int64(len(m.edges)) {
		m.publish()
	}
	s.w.touch(now) // true: what eviction evicts leaves edges at once
	m.last.Store(s)
	return s
}

// publish replaces read with a copy of edges. m.mu must be held for
// writing.
func (m *Memory) publish() {
	read := maps.Clone(m.edges)
	m.read.Store(&read)
	m.misses.Store(0)
}

// evictIdle evicts every edge untouched for a full window at slice now
// and reports whether that made room. It scans only when an edge can
// have gone idle since the last scan. m.mu must be held for writing.
func (m *Memory) evictIdle(now int64) bool {
	span := int64(m.cfg.Buckets)
	// Nothing is idle before noIdleBefore, unless the clock went back
	// (then it is more than a window ahead).
	if now < m.noIdleBefore && m.noIdleBefore-now <= span {
		return false
	}
	oldest := int64(math.MaxInt64) // the least recently touched edge kept
	evicted := 0
	for e, s := range m.edges {
		idle, touched := s.w.evictIdle(now)
		if !idle {
			oldest = min(oldest, touched)
			continue
		}
		delete(m.edges, e)
		if s.series != nil {
			_ = s.series.Close() // never fails
		}
		evicted++
	}
	if evicted > 0 {
		m.publish() // before the lock is let go: no lookup after it finds an evicted edge
	}
	// An edge touched in slice t is idle from t+span; new edges are
	// touched now or later.
	m.noIdleBefore = min(oldest, now) + span
	m.evicted.Inc(int64(evicted))
	return len(m.edges) < m.cfg.MaxEdges
}

// newEdgeState returns a new edge e's state, touched at now, its counters
// in an edge-tagged scope that eviction closes so tally drops it. An edge
// seen again gets a fresh scope: the same series to the reporter.
func (m *Memory) newEdgeState(e ownership.Edge, now int64) *edgeState {
	s := &edgeState{edge: e, w: newWindow(m.cfg.Buckets, now)}
	if m.noop {
		s.failures, s.joint = tally.NoopScope.Counter("callee_failures"), tally.NoopScope.Counter("joint_failures")
		return s
	}
	tagged := m.scope.Tagged(map[string]string{
		defaults.LabelCallerProcedure: orNone(e.CallerProcedure),
		defaults.LabelCalleeService:   orNone(e.Service),
		defaults.LabelCalleeProcedure: orNone(e.Procedure),
	})
	s.failures, s.joint = tagged.Counter("callee_failures"), tagged.Counter("joint_failures")
	// Only tally's own scopes are closed: another Scope's Close may
	// mean something else.
	s.series, _ = depcontract.TallyCloser(tagged)
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Kind implements Classifier: e's kind from the fleet's counts where they
// hold more callee failures than the local window, else the local ones.
func (m *Memory) Kind(e ownership.Edge) ownership.EdgeKind {
	if m.cfg.Disabled {
		return ownership.KindUnknown
	}
	kind, _, _, _, _ := m.look(e)
	return kind
}

func (m *Memory) classify(e ownership.Edge) (depmem.EdgeView, bool) {
	kind, failures, joint, src, ok := m.look(e)
	return depmem.EdgeView{
		Edge:           e,
		Kind:           kind,
		Ratio:          Ratio(failures, joint),
		CalleeFailures: failures,
		JointFailures:  joint,
		Source:         src,
	}, ok
}

// look returns e's kind and the counts it is classified from, or false
// when neither the memory nor the fleet knows e. A read is pure: it
// starts from the kind the last observation left and keeps nothing, so
// the kind never depends on who looked or how often.
func (m *Memory) look(e ownership.Edge) (kind ownership.EdgeKind, failures, joint int64, src depmem.Source, ok bool) {
	fleetCounts, inFleet := m.fleet.counts(e)
	switch s := m.edge(e); {
	case s != nil:
		local, localJoint := s.w.sums(m.slice())
		failures, joint, src = pick(local, localJoint, fleetCounts, inFleet)
		return Classify(s.loadKind(), failures, joint, m.thresholds), failures, joint, src, true
	case inFleet:
		// Fleet-only: no local state, so only this service's own
		// failures take a place under maxEdges.
		return m.fleetKind(fleetCounts), fleetCounts.failures, fleetCounts.joint, depmem.SourceFleet, true
	}
	return ownership.KindUnknown, 0, 0, depmem.SourceLocal, false
}

// pick returns the counts to classify from and their source: the fleet's
// when they hold more callee failures than the local window's.
func pick(failures, joint int64, fleet counts, inFleet bool) (int64, int64, depmem.Source) {
	if inFleet && fleet.failures > failures {
		return fleet.failures, fleet.joint, depmem.SourceFleet
	}
	return failures, joint, depmem.SourceLocal
}

// fleetKind is the kind of an edge known only from the fleet's counts c.
func (m *Memory) fleetKind(c counts) ownership.EdgeKind {
	return Classify(ownership.KindUnknown, c.failures, c.joint, m.thresholds)
}

// Edges returns a view of every edge known locally or to the fleet,
// sorted by edge.
func (m *Memory) Edges() []depmem.EdgeView {
	seen := map[ownership.Edge]bool{}
	m.mu.RLock()
	for e := range m.edges {
		seen[e] = true
	}
	m.mu.RUnlock()
	for _, e := range m.fleet.edges() {
		seen[e] = true
	}
	out := make([]depmem.EdgeView, 0, len(seen))
	for e := range seen {
		if v, ok := m.classify(e); ok {
			out = append(out, v)
		}
	}
	sortViews(out)
	return out
}

func sortViews(vs []depmem.EdgeView) {
	sort.Slice(vs, func(i, j int) bool { return edgeLess(vs[i].Edge, vs[j].Edge) })
}

// edgeLess orders edges by caller procedure, callee service, callee
// procedure: every list's order.
func edgeLess(a, b ownership.Edge) bool {
	if a.CallerProcedure != b.CallerProcedure {
		return a.CallerProcedure < b.CallerProcedure
	}
	if a.Service != b.Service {
		return a.Service < b.Service
	}
	return a.Procedure < b.Procedure
}
