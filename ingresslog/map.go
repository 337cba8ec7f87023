package ingresslog

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
)

// _cacheLine is the padding unit that keeps data written by different
// cores apart. 128 rather than 64 bytes: x86 prefetches lines in pairs.
const _cacheLine = 128

// Map holds the Logs of the requests in flight, keyed by ID.
//
// Nothing in a Map is written by every request: each shard keeps its own
// count, bound and ID sequence, and each core keeps to one home shard (see
// reserve), so on a busy server a request's writes stay in one cache
// block that the other cores rarely touch.
type Map struct {
	shards []shard
	mask   uint64
	shift  uint // bits of an ID that name its shard
	homes  sync.Pool
	// nextHome hands new homes out in turn, so that cores start in
	// different shards. Written only when the pool makes a home.
	nextHome atomic.Uint64
}

// shard is one lock, the Logs under it, its share of MaxInFlight and its
// ID sequence, in one block of _cacheLine bytes. The first _inlineLogs
// Logs live in the block itself (logs points at inline); past that logs
// moves to the heap. Each Log knows its index in logs, so Remove needs no
// search.
type shard struct {
	// inFlight counts the Logs held and reserved. It only grows below max
	// (reserve), so summing the shards never exceeds MaxInFlight.
	inFlight atomic.Int64
	max      int64
	mu       sync.Mutex
	seq      uint64 // under mu
	logs     []*Log // under mu
	inline   [_inlineLogs]*Log
}

// _inlineLogs fills a shard's block: 128 bytes less the count and bound
// (16), the lock (8), the sequence (8) and the slice header (24).
const _inlineLogs = (_cacheLine - 56) / 8

// home is a shard index remembered per core (see reserve), alone in its
// cache block so that no other core's writes land next to it.
type home struct {
	shard uint64
	_     [_cacheLine - 8]byte
}

// New returns an empty Map.
//
// It uses at most MaxInFlight shards (rounded down to a power of two), so
// that each shard may hold at least one Log.
func New(cfg Config) (*Map, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	n := min(cfg.Shards, 1<<(bits.Len(uint(cfg.MaxInFlight))-1))
	m := &Map{
		shards: make([]shard, n),
		mask:   uint64(n - 1),
		shift:  uint(bits.TrailingZeros(uint(n))),
	}
	m.homes.New = func() any { return &home{shard: m.nextHome.Add(1) & m.mask} }
	for i := range m.shards {
		s := &m.shards[i]
		s.logs = s.inline[:0]
		// MaxInFlight split evenly, the first shards taking the remainder.
		s.max = int64(cfg.MaxInFlight / n)
		if i < cfg.MaxInFlight%n {
			s.max++
		}
	}
	return m, nil
}

func (m *Map) shard(id ID) *shard {
	return &m.shards[uint64(id)&m.mask]
}

// Open mints a new ID and stores a fresh Log for procedure under it. It
// returns nil when MaxInFlight logs are already held.
func (m *Map) Open(procedure string) *Log {
	idx, ok := m.reserve()
	if !ok {
		return nil
	}
	l := &Log{Procedure: procedure}
	m.insert(idx, l)
	return l
}

// OpenContext is Open followed by NewContext, in one allocation: the Log
// lives in the context node that carries it. It returns ctx and nil when
// MaxInFlight logs are already held.
func (m *Map) OpenContext(ctx context.Context, procedure string) (context.Context, *Log) {
	idx, ok := m.reserve()
	if !ok {
		return ctx, nil
	}
	c := &logContext{Context: ctx, log: Log{Procedure: procedure}}
	m.insert(idx, &c.log)
	return c, &c.log
}

// reserve counts one more Log in a shard with room and returns that
// shard's index, or false when every shard is full.
//
// The shard tried first is the calling core's home: sync.Pool keeps one
// object per P (a core running Go code), so the home taken from m.homes
// is almost always the one this core put back last, with no shared
// write. Requests on one core thus share one shard, and the cores do not
// move each other's cache blocks. A full home moves to the next shard
// with room.
func (m *Map) reserve() (uint64, bool) {
	h := m.homes.Get().(*home)
	idx, ok := m.reserveFrom(h)
	m.homes.Put(h)
	return idx, ok
}

func (m *Map) reserveFrom(h *home) (uint64, bool) {
	for i := range uint64(len(m.shards)) {
		idx := (h.shard + i) & m.mask
		s := &m.shards[idx]
		for {
			n := s.inFlight.Load()
			if n >= s.max {
				break
			}
			if s.inFlight.CompareAndSwap(n, n+1) {
				if h.shard != idx {
					h.shard = idx
				}
				return idx, true
			}
		}
	}
	return 0, false
}

// insert gives l a new ID in shard idx, which reserve returned, and
// stores it. The ID's low bits are the shard's index, the rest the
// shard's sequence.
func (m *Map) insert(idx uint64, l *Log) {
	s := &m.shards[idx]
	s.mu.Lock()
	s.seq++
	l.ID = ID(s.seq<<m.shift | idx)
	l.slot = len(s.logs)
	s.logs = append(s.logs, l)
	s.mu.Unlock()
}

// Get returns the Log stored under id, or nil. It searches id's shard: it
// is for tests and operators, not for the request path, which carries its
// Log in the context.
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
		s.inFlight.Add(-1)
	}
}

// Len returns the number of Logs held. Under concurrent Opens and Removes
// it is a sum of counts read one shard at a time, never above MaxInFlight.
func (m *Map) Len() int {
	var n int64
	for i := range m.shards {
		n += m.shards[i].inFlight.Load()
	}
	return int(n)
}
