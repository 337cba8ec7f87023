package tallyv3

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uber-go/tally/v4"
)

// Late is a tally v4 Scope whose instruments report to the scope Bind is
// given, and to nothing before: errown builds its instruments with its
// middleware, and errown.Module learns yarpc's scope only later, from the
// yarpc.Config it decorates. Each instrument use loads one more pointer.
type Late struct {
	lateScope
}

// NewLate returns a Late scope that reports to nothing until Bind.
func NewLate() *Late {
	return &Late{lateScope{b: new(binder), path: func(s tally.Scope) tally.Scope { return s }}}
}

// Bind has every instrument of l and its sub-scopes and tagged scopes,
// built before or after, report to the instrument of the same name and
// tags of to. Only the first Bind counts.
func (l *Late) Bind(to tally.Scope) { l.b.bind(to) }

// Bound reports whether Bind was called.
func (l *Late) Bound() bool { return l.b.root.Load() != nil }

// binder binds the instruments of a Late scope and its descendants.
type binder struct {
	mu    sync.Mutex
	root  atomic.Pointer[tally.Scope]
	binds []func(root tally.Scope) // each instrument's, until bound
}

func (b *binder) bind(root tally.Scope) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.root.Load() != nil || root == nil {
		return
	}
	for _, f := range b.binds {
		f(root)
	}
	b.binds = nil
	b.root.Store(&root)
}

// add binds an instrument with f now when b is bound, else on Bind.
func (b *binder) add(f func(root tally.Scope)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.root.Load(); r != nil {
		f(*r)
		return
	}
	b.binds = append(b.binds, f)
}

// lateScope is a Late scope or a descendant of one: path finds it in the
// scope bound.
type lateScope struct {
	b    *binder
	path func(root tally.Scope) tally.Scope
}

var _ tally.Scope = lateScope{}

func (s lateScope) Counter(name string) tally.Counter {
	c := new(lateCounter)
	s.b.add(func(root tally.Scope) { t := s.path(root).Counter(name); c.t.Store(&t) })
	return c
}

func (s lateScope) Gauge(name string) tally.Gauge {
	g := new(lateGauge)
	s.b.add(func(root tally.Scope) { t := s.path(root).Gauge(name); g.t.Store(&t) })
	return g
}

func (s lateScope) Timer(name string) tally.Timer {
	t := new(lateTimer)
	s.b.add(func(root tally.Scope) { to := s.path(root).Timer(name); t.t.Store(&to) })
	return t
}

func (s lateScope) Histogram(name string, b tally.Buckets) tally.Histogram {
	h := new(lateHistogram)
	s.b.add(func(root tally.Scope) { to := s.path(root).Histogram(name, b); h.t.Store(&to) })
	return h
}

func (s lateScope) Tagged(tags map[string]string) tally.Scope {
	tags = maps.Clone(tags)
	return lateScope{b: s.b, path: func(root tally.Scope) tally.Scope { return s.path(root).Tagged(tags) }}
}

func (s lateScope) SubScope(name string) tally.Scope {
	return lateScope{b: s.b, path: func(root tally.Scope) tally.Scope { return s.path(root).SubScope(name) }}
}

// Capabilities are those of the scope bound; none before.
func (s lateScope) Capabilities() tally.Capabilities {
	if r := s.b.root.Load(); r != nil {
		return s.path(*r).Capabilities()
	}
	return tally.NoopScope.Capabilities()
}

type lateCounter struct{ t atomic.Pointer[tally.Counter] }

func (c *lateCounter) Inc(d int64) {
	if t := c.t.Load(); t != nil {
		(*t).Inc(d)
	}
}

type lateGauge struct{ t atomic.Pointer[tally.Gauge] }

func (g *lateGauge) Update(v float64) {
	if t := g.t.Load(); t != nil {
		(*t).Update(v)
	}
}

type lateTimer struct{ t atomic.Pointer[tally.Timer] }

func (t *lateTimer) Record(d time.Duration) {
	if to := t.t.Load(); to != nil {
		(*to).Record(d)
	}
}

func (t *lateTimer) Start() tally.Stopwatch { return tally.NewStopwatch(time.Now(), t) }

func (t *lateTimer) RecordStopwatch(start time.Time) { t.Record(time.Since(start)) }

type lateHistogram struct {
	t atomic.Pointer[tally.Histogram]
}

func (h *lateHistogram) RecordValue(v float64) {
	if to := h.t.Load(); to != nil {
		(*to).RecordValue(v)
	}
}

func (h *lateHistogram) RecordDuration(d time.Duration) {
	if to := h.t.Load(); to != nil {
		(*to).RecordDuration(d)
	}
}

func (h *lateHistogram) Start() tally.Stopwatch { return tally.NewStopwatch(time.Now(), h) }

func (h *lateHistogram) RecordStopwatch(start time.Time) { h.RecordDuration(time.Since(start)) }
