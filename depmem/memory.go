package depmem

import (
	"io"
	"math"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/errown/errown/egresslog"
	"github.com/errown/errown/ownership"
	"github.com/uber-go/tally/v4"
	"go.uber.org/zap"
)

// Observer is told of every callee failure seen while serving a request,
// once the request has finished.
type Observer interface {
	// Observe counts one failed call on edge e; callerFailed reports
	// whether the request it was made for failed too.
	Observe(e egresslog.Edge, callerFailed bool)
}

// Source names where an edge's kind came from.
type Source string

// Sources, in order of trust.
const (
	SourceStatic Source = "static"
	SourceFleet  Source = "fleet"
	SourceLocal  Source = "local"
)

// Memory learns edge kinds from traffic over a sliding window. It is safe
// for concurrent use. Observing a failure on an edge it already knows
// allocates nothing.
//
// It tracks at most Config.MaxEdges edges. When a new edge needs room and
// every place is taken, the edges not observed for a full window (whose
// window is empty, so whose kind is unknown anyway) are evicted; only when
// none is evictable is the observation dropped, and counted in
// depmem.edges_overflow. Eviction runs only then, off the path of known
// edges: one pass over the edges evicts every idle one and notes when the
// next one can go idle at the earliest, and until then a full memory drops
// new edges without scanning, so a full memory is scanned at most once
// per bucket width.
type Memory struct {
	cfg        Config
	thresholds Thresholds
	width      int64 // bucket width in nanoseconds
	now        func() time.Time
	logger     *zap.Logger
	scope      tally.Scope
	// noop is set when the scope is tally.NoopScope: then no edge gets
	// a tagged scope of its own, which tally would keep for nothing.
	noop bool

	mu    sync.RWMutex
	edges map[egresslog.Edge]*edgeState
	// noIdleBefore is the earliest time slice at which an edge can have
	// gone idle: no eviction pass runs before it. Under mu.
	noIdleBefore int64

	overflow       tally.Counter
	evicted        tally.Counter
	snapshotErrors tally.Counter
	fleet          *fleet

	lifecycle
}

type edgeState struct {
	mu   sync.Mutex
	w    window
	kind ownership.EdgeKind // classification at the last observation, for hysteresis
	// gone is set, under mu, when the edge is evicted: an observation
	// that looked the state up before then looks the edge up again.
	gone bool

	failures tally.Counter
	joint    tally.Counter
	series   io.Closer // the edge's tagged scope, closed on eviction; or nil
}

var (
	_ Classifier = (*Memory)(nil)
	_ Observer   = (*Memory)(nil)
)

// NewMemory returns an empty Memory. Call Start to load its snapshot and
// start its background work, and Stop to end it.
func NewMemory(cfg Config, opts ...Option) (*Memory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := newOptions(opts)
	noop := o.scope == tally.NoopScope
	o.scope = o.scope.SubScope("depmem")
	m := &Memory{
		noop:       noop,
		cfg:        cfg,
		thresholds: cfg.thresholds(),
		width:      int64(cfg.Window) / int64(cfg.Buckets),
		now:        o.now,
		logger:     o.logger,
		scope:      o.scope,
		edges:      make(map[egresslog.Edge]*edgeState),
		overflow:   o.scope.Counter("edges_overflow"),
		evicted:    o.scope.Counter("edges_evicted"),
		// Created whether or not a snapshot or fleet is configured, so
		// that dashboards always find them.
		snapshotErrors: o.scope.Counter("snapshot_errors"),
	}
	queries, errors := o.scope.Counter("fleet_queries"), o.scope.Counter("fleet_errors")
	if cfg.Fleet.URL != "" {
		m.fleet = newFleet(cfg.Fleet, o, queries, errors)
	}
	return m, nil
}

func (m *Memory) slice() int64 {
	return m.now().UnixNano() / m.width
}

// Observe implements Observer.
func (m *Memory) Observe(e egresslog.Edge, callerFailed bool) {
	if m.cfg.Disabled {
		return
	}
	fleetCounts, inFleet := m.fleet.counts(e)
	now := m.slice()
	s := m.lockedEdge(e, now)
	if s == nil {
		m.overflow.Inc(1)
		return
	}
	s.w.add(now, callerFailed)
	// The edge's kind moves here, on an observation, and nowhere else:
	// reads classify from it without changing it (see classify).
	failures, joint, _ := s.counts(now, fleetCounts, inFleet)
	s.kind = Classify(s.kind, failures, joint, m.thresholds)
	// Counted under the lock: never in a series closed by an eviction.
	s.failures.Inc(1)
	if callerFailed {
		s.joint.Inc(1)
	}
	s.mu.Unlock()
}

// edge returns the state of e, creating it, as touched at time slice now,
// when create is set and there is room, or room can be made by evicting
// idle edges. It returns nil for an unknown edge it did not create.
func (m *Memory) edge(e egresslog.Edge, now int64, create bool) *edgeState {
	m.mu.RLock()
	s := m.edges[e]
	m.mu.RUnlock()
	if s != nil || !create {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.edges[e]; s != nil {
		return s
	}
	if len(m.edges) >= m.cfg.MaxEdges && !m.evictIdle(now) {
		return nil
	}
	s = m.newEdgeState(e, now)
	m.edges[e] = s
	return s
}

// lockedEdge returns the state of e, created as edge creates it, with its
// lock held, or nil when there is no room for e.
func (m *Memory) lockedEdge(e egresslog.Edge, now int64) *edgeState {
	for {
		s := m.edge(e, now, true)
		if s == nil {
			return nil
		}
		s.mu.Lock()
		if !s.gone {
			return s
		}
		// Evicted between the lookup and the lock: look again.
		s.mu.Unlock()
	}
}

// evictIdle evicts every edge not touched for a full window at time slice
// now, and reports whether that made room. It scans only when an edge can
// have gone idle since the last scan. m.mu must be held for writing.
func (m *Memory) evictIdle(now int64) bool {
	span := int64(m.cfg.Buckets)
	// Nothing can be idle before noIdleBefore, unless the clock went back
	// (then noIdleBefore is more than a window ahead): scan again.
	if now < m.noIdleBefore && m.noIdleBefore-now <= span {
		return false
	}
	oldest := int64(math.MaxInt64) // the least recently touched edge kept
	evicted := 0
	for e, s := range m.edges {
		s.mu.Lock()
		if s.w.idle(now) {
			s.gone = true
			delete(m.edges, e)
			if s.series != nil {
				_ = s.series.Close() // never fails
			}
			evicted++
		} else {
			oldest = min(oldest, s.w.touched)
		}
		s.mu.Unlock()
	}
	// An edge touched in slice t is idle from slice t+span on; edges
	// created from now on are touched now or later.
	m.noIdleBefore = min(oldest, now) + span
	m.evicted.Inc(int64(evicted))
	return len(m.edges) < m.cfg.MaxEdges
}

// newEdgeState returns the state of a new edge e, touched at time slice
// now, with its counters in a scope tagged with the edge. Eviction closes
// that scope, and tally drops a closed scope at its next report, so tally
// holds no more than the edges tracked plus those evicted since the last
// report. An edge seen again gets a fresh scope with the same name and
// tags: the same series for the reporter, which keeps counting it
// (Prometheus's reporter, for one, keeps every series it was given).
func (m *Memory) newEdgeState(e egresslog.Edge, now int64) *edgeState {
	s := &edgeState{w: newWindow(m.cfg.Buckets, now)}
	if m.noop {
		s.failures, s.joint = tally.NoopScope.Counter("callee_failures"), tally.NoopScope.Counter("joint_failures")
		return s
	}
	tagged := m.scope.Tagged(map[string]string{
		"caller_procedure": orNone(e.CallerProcedure),
		"callee_service":   orNone(e.Service),
		"callee_procedure": orNone(e.Procedure),
	})
	s.failures, s.joint = tagged.Counter("callee_failures"), tagged.Counter("joint_failures")
	if reflect.TypeOf(tagged) == _tallyScope {
		// Only tally's own scopes are closed: another Scope's Close
		// may mean something else.
		s.series = tagged.(io.Closer)
	}
	return s
}

// _tallyScope is the type of tally's own scopes.
var _tallyScope = reflect.TypeOf(tally.NoopScope)

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Kind implements Classifier: the kind learned for e, from the fleet's
// counts where they hold more callee failures than the local window, else
// from the local window.
func (m *Memory) Kind(e egresslog.Edge) ownership.EdgeKind {
	if m.cfg.Disabled {
		return ownership.KindUnknown
	}
	v, _ := m.classify(e)
	return v.Kind
}

func (m *Memory) classify(e egresslog.Edge) (EdgeView, bool) {
	fleetCounts, inFleet := m.fleet.counts(e)
	now := m.slice()
	s := m.edge(e, now, false)
	if s == nil && !inFleet {
		return EdgeView{Edge: e, Kind: ownership.KindUnknown, Source: SourceLocal}, false
	}
	if s == nil {
		// Known only to the fleet. No local state is made for it: only
		// this service's own failures take a place under maxEdges.
		return fleetView(e, fleetCounts, m.thresholds), true
	}
	s.mu.Lock()
	failures, joint, src := s.counts(now, fleetCounts, inFleet)
	// A read is pure: the hysteresis starts from the kind the last
	// observation left, and what is read here is not kept, so the kind
	// never depends on who looked at it, or how often.
	kind := Classify(s.kind, failures, joint, m.thresholds)
	s.mu.Unlock()
	return EdgeView{
		Edge:           e,
		Kind:           kind,
		Ratio:          Ratio(failures, joint),
		CalleeFailures: failures,
		JointFailures:  joint,
		Source:         src,
	}, true
}

// counts returns the counts an edge is classified from at time slice now:
// the fleet's when they hold more callee failures than the local window,
// else the local window's. s.mu must be held.
func (s *edgeState) counts(now int64, fleet counts, inFleet bool) (failures, joint int64, src Source) {
	failures, joint = s.w.sums(now)
	if inFleet && fleet.failures > failures {
		return fleet.failures, fleet.joint, SourceFleet
	}
	return failures, joint, SourceLocal
}

func fleetView(e egresslog.Edge, c counts, t Thresholds) EdgeView {
	return EdgeView{
		Edge:           e,
		Kind:           Classify(ownership.KindUnknown, c.failures, c.joint, t),
		Ratio:          Ratio(c.failures, c.joint),
		CalleeFailures: c.failures,
		JointFailures:  c.joint,
		Source:         SourceFleet,
	}
}

// EdgeView is what the memory knows of one edge, for operators.
type EdgeView struct {
	Edge           egresslog.Edge     `json:"edge"`
	Kind           ownership.EdgeKind `json:"kind"`
	Ratio          float64            `json:"ratio"`
	CalleeFailures int64              `json:"calleeFailures"`
	JointFailures  int64              `json:"jointFailures"`
	Source         Source             `json:"source"`
}

// Edges returns a view of every edge the memory knows, locally or from
// the fleet, sorted by edge.
func (m *Memory) Edges() []EdgeView {
	seen := map[egresslog.Edge]bool{}
	m.mu.RLock()
	for e := range m.edges {
		seen[e] = true
	}
	m.mu.RUnlock()
	for _, e := range m.fleet.edges() {
		seen[e] = true
	}
	out := make([]EdgeView, 0, len(seen))
	for e := range seen {
		if v, ok := m.classify(e); ok {
			out = append(out, v)
		}
	}
	sortViews(out)
	return out
}

func sortViews(vs []EdgeView) {
	sort.Slice(vs, func(i, j int) bool { return edgeLess(vs[i].Edge, vs[j].Edge) })
}

// edgeLess orders edges by caller procedure, callee service, callee
// procedure: the order of every list the memory returns.
func edgeLess(a, b egresslog.Edge) bool {
	if a.CallerProcedure != b.CallerProcedure {
		return a.CallerProcedure < b.CallerProcedure
	}
	if a.Service != b.Service {
		return a.Service < b.Service
	}
	return a.Procedure < b.Procedure
}
