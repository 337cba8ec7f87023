package ingresslog

import (
	"context"
	"sync"
	"sync/atomic"
)

// _cacheLine is the padding unit that keeps data written by different
// cores apart. 128 rather than 64 bytes: x86 prefetches lines in pairs.
const _cacheLine = 128

// Map holds the Logs of the requests in flight, keyed by ID.
type Map struct {
	shards []shard
	mask   uint64
	max    int64

	// Written by every Open and Remove: kept off the read-only fields'
	// cache line.
	_        [_cacheLine]byte
	inFlight atomic.Int64
	next     atomic.Uint64
	_        [_cacheLine - 16]byte
}

// shard is one lock and the Logs under it, in one block of _cacheLine
// bytes: a request touches only its shard's block, and no other shard's.
// The first _inlineLogs Logs live in the block itself (logs points at
// inline); past that logs moves to the heap. Each Log knows its index in
// logs, so Remove needs no search.
type shard struct {
	mu     sync.Mutex
	logs   []*Log
	inline [_inlineLogs]*Log
}

// _inlineLogs fills a shard's block: 128 bytes less the lock (8) and the
// slice header (24).
const _inlineLogs = (_cacheLine - 32) / 8

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
		s := &m.shards[i]
		s.logs = s.inline[:0]
	}
	return m, nil
}

func (m *Map) shard(id ID) *shard {
	return &m.shards[uint64(id)&m.mask]
}

// Open mints a new ID and stores a fresh Log for procedure under it. It
// returns nil when MaxInFlight logs are already held.
func (m *Map) Open(procedure string) *Log {
	if !m.reserve() {
		return nil
	}
	l := &Log{Procedure: procedure}
	m.insert(l)
	return l
}

// OpenContext is Open followed by NewContext, in one allocation: the Log
// lives in the context node that carries it. It returns ctx and nil when
// MaxInFlight logs are already held.
func (m *Map) OpenContext(ctx context.Context, procedure string) (context.Context, *Log) {
	if !m.reserve() {
		return ctx, nil
	}
	c := &logContext{Context: ctx, log: Log{Procedure: procedure}}
	m.insert(&c.log)
	return c, &c.log
}

// reserve counts one more Log in flight, unless MaxInFlight are held.
func (m *Map) reserve() bool {
	if m.inFlight.Add(1) > m.max {
		m.inFlight.Add(-1)
		return false
	}
	return true
}

// insert gives l a new ID and stores it.
func (m *Map) insert(l *Log) {
	l.ID = ID(m.next.Add(1))
	s := m.shard(l.ID)
	s.mu.Lock()
	l.slot = len(s.logs)
	s.logs = append(s.logs, l)
	s.mu.Unlock()
}

// Get returns the Log stored under id, or nil. It searches id's shard: it
// is for tests and operators, not for the request path.
func (m *Map) Get(id ID) *Log {
	s := m.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.logs {
		if l.ID == id {
			return l
		}
	}
	return nil
}

// Remove deletes l from the Map. Removing a Log twice, or one the Map does
// not hold, does nothing.
func (m *Map) Remove(l *Log) {
	s := m.shard(l.ID)
	s.mu.Lock()
	i := l.slot
	removed := i < len(s.logs) && s.logs[i] == l
	if removed {
		// Move the last Log into l's place.
		last := len(s.logs) - 1
		s.logs[i] = s.logs[last]
		s.logs[i].slot = i
		s.logs[last] = nil
		s.logs = s.logs[:last]
	}
	s.mu.Unlock()
	if removed {
		m.inFlight.Add(-1)
	}
}

// Len returns the number of Logs held.
func (m *Map) Len() int {
	return int(m.inFlight.Load())
}
