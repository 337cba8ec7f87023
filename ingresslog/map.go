package ingresslog

import (
	"sync"
	"sync/atomic"
)

// Map holds the Logs of the requests in flight, keyed by ID.
type Map struct {
	shards   []shard
	mask     uint64
	max      int64
	inFlight atomic.Int64
	next     atomic.Uint64
}

type shard struct {
	mu   sync.Mutex
	logs map[ID]*Log
	// Keep neighbouring shards' locks on separate cache lines.
	_ [40]byte
}

// New returns an empty Map.
func New(cfg Config) (*Map, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m := &Map{
		shards: make([]shard, cfg.Shards),
		mask:   uint64(cfg.Shards - 1),
		max:    int64(cfg.MaxInFlight),
	}
	for i := range m.shards {
		m.shards[i].logs = make(map[ID]*Log)
	}
	return m, nil
}

func (m *Map) shard(id ID) *shard {
	return &m.shards[uint64(id)&m.mask]
}

// Open mints a new ID and stores a fresh Log for procedure under it. It
// returns nil when MaxInFlight logs are already held.
func (m *Map) Open(procedure string) *Log {
	if m.inFlight.Add(1) > m.max {
		m.inFlight.Add(-1)
		return nil
	}
	l := &Log{ID: ID(m.next.Add(1)), Procedure: procedure}
	s := m.shard(l.ID)
	s.mu.Lock()
	s.logs[l.ID] = l
	s.mu.Unlock()
	return l
}

// Get returns the Log stored under id, or nil.
func (m *Map) Get(id ID) *Log {
	s := m.shard(id)
	s.mu.Lock()
	l := s.logs[id]
	s.mu.Unlock()
	return l
}

// Remove deletes l from the Map. Removing a Log twice, or one the Map does
// not hold, does nothing.
func (m *Map) Remove(l *Log) {
	s := m.shard(l.ID)
	s.mu.Lock()
	_, ok := s.logs[l.ID]
	if ok {
		delete(s.logs, l.ID)
	}
	s.mu.Unlock()
	if ok {
		m.inFlight.Add(-1)
	}
}

// Len returns the number of Logs held.
func (m *Map) Len() int {
	return int(m.inFlight.Load())
}
