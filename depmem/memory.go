package depmem

import (
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
type Memory struct {
	cfg        Config
	thresholds Thresholds
	width      int64 // bucket width in nanoseconds
	now        func() time.Time
	logger     *zap.Logger
	scope      tally.Scope

	mu    sync.RWMutex
	edges map[egresslog.Edge]*edgeState

	overflow       tally.Counter
	snapshotErrors tally.Counter
	fleet          *fleet

	lifecycle
}

type edgeState struct {
	mu   sync.Mutex
	w    window
	kind ownership.EdgeKind // classification at the last observation, for hysteresis

	failures tally.Counter
	joint    tally.Counter
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
	o.scope = o.scope.SubScope("depmem")
	m := &Memory{
		cfg:        cfg,
		thresholds: cfg.thresholds(),
		width:      int64(cfg.Window) / int64(cfg.Buckets),
		now:        o.now,
		logger:     o.logger,
		scope:      o.scope,
		edges:      make(map[egresslog.Edge]*edgeState),
		overflow:   o.scope.Counter("edges_overflow"),
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
	s := m.edge(e, true)
	if s == nil {
		m.overflow.Inc(1)
		return
	}
	fleetCounts, inFleet := m.fleet.counts(e)
	now := m.slice()
	s.mu.Lock()
	s.w.add(now, callerFailed)
	// The edge's kind moves here, on an observation, and nowhere else:
	// reads classify from it without changing it (see classify).
	failures, joint, _ := s.counts(now, fleetCounts, inFleet)
	s.kind = Classify(s.kind, failures, joint, m.thresholds)
	s.mu.Unlock()
	s.failures.Inc(1)
	if callerFailed {
		s.joint.Inc(1)
	}
}

// edge returns the state of e, creating it when create is set and there is
// room. It returns nil for an unknown edge it did not create.
func (m *Memory) edge(e egresslog.Edge, create bool) *edgeState {
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
	if len(m.edges) >= m.cfg.MaxEdges {
		return nil
	}
	s = m.newEdgeState(e)
	m.edges[e] = s
	return s
}

func (m *Memory) newEdgeState(e egresslog.Edge) *edgeState {
	tagged := m.scope.Tagged(map[string]string{
		"caller_procedure": orNone(e.CallerProcedure),
		"callee_service":   orNone(e.Service),
		"callee_procedure": orNone(e.Procedure),
	})
	return &edgeState{
		w:        newWindow(m.cfg.Buckets),
		failures: tagged.Counter("callee_failures"),
		joint:    tagged.Counter("joint_failures"),
	}
}

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
	s := m.edge(e, false)
	if s == nil && !inFleet {
		return EdgeView{Edge: e, Kind: ownership.KindUnknown, Source: SourceLocal}, false
	}
	if s == nil {
		// Known only to the fleet. No local state is made for it: only
		// this service's own failures take a place under maxEdges.
		return fleetView(e, fleetCounts, m.thresholds), true
	}
	now := m.slice()
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
