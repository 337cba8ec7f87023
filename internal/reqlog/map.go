package reqlog

import (
	"context"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/errown/errown/ingresslog"
	"github.com/errown/errown/internal/defaults"
)

// _cacheLine is the padding unit that keeps data written by different
// cores apart. 128 rather than 64 bytes: x86 prefetches lines in pairs.
const _cacheLine = 128

// Map holds the Logs of the requests in flight, keyed by ID.
//
// Nothing in a Map is written by every request (except, at the bound, the
// count of full shards): each shard keeps its own Logs, share of
// MaxInFlight and ID sequence under its own lock, and each request starts
// in a shard picked at random (see homeOf), so that concurrent requests
// rarely meet in one shard.
type Map struct {
	shards []*shard // each allocated alone: see shard
	mask   uint64
	shift  uint // bits of an ID that name its shard
	_      [_cacheLine]byte
	// full counts the shards holding their share, so that a full Map
	// refuses without looking at any shard. Written, under the shard's
	// lock, only when a shard fills or stops being full.
	full atomic.Int64
}

// shard is one lock, the Logs under it, its share of MaxInFlight and its
// ID sequence, in one block of _cacheLine bytes. Shards are allocated one
// by one, which puts each at the start of its own block (an array of them
// may start past a block's start, so that every shard would straddle two
// blocks and share one with its neighbour). The first _inlineLogs
// Logs live in the block itself (logs points at inline); past that logs
// moves to the heap. Each Log knows its index in logs, so Remove needs no
// search.
type shard struct {
	mu     sync.Mutex
	max    int    // the shard's share of MaxInFlight
	seq    uint64 // under mu
	logs   []*Log // under mu
	inline [_inlineLogs]*Log
}

// _inlineLogs fills a shard's block: 128 bytes less the lock (8), the
// share (8), the sequence (8) and the slice header (24).
const _inlineLogs = (_cacheLine - 48) / 8

// New returns an empty Map.
//
// It uses at most MaxInFlight shards (rounded down to a power of two), so
// that each shard may hold at least one Log.
func NewMap(cfg ingresslog.Config) (*Map, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = defaults.Apply(cfg)
	n := min(cfg.Shards, 1<<(bits.Len(uint(cfg.MaxInFlight))-1))
	m := &Map{
		shards: make([]*shard, n),
		mask:   uint64(n - 1),
		shift:  uint(bits.TrailingZeros(uint(n))),
	}
	for i := range m.shards {
		s := new(shard)
		m.shards[i] = s
		s.logs = s.inline[:0]
		// MaxInFlight split evenly, the first shards taking the remainder.
		s.max = cfg.MaxInFlight / n
		if i < cfg.MaxInFlight%n {
			s.max++
		}
	}
	return m, nil
}

func (m *Map) shard(id ID) *shard {
	return m.shards[uint64(id)&m.mask]
}

// Full reports whether every shard held its share a moment ago: a caller
// that allocates its Log itself (see Insert) asks first, and allocates
// nothing for a request the Map would refuse.
func (m *Map) Full() bool {
	return m.full.Load() == int64(len(m.shards))
}

// Open mints a new ID and stores a fresh Log for procedure under it. It
// returns nil when it finds every shard full: MaxInFlight logs are held,
// or were a moment ago (see insertFrom).
func (m *Map) Open(procedure string) *Log {
	if m.Full() {
		return nil
	}
	l := &Log{Procedure: procedure}
	if !m.Insert(l) {
		return nil
	}
	return l
}

// OpenContext is Open with a child of ctx that carries the Log, in one
// allocation: the Log lives in the context node that carries it. It returns ctx and nil when
// it finds every shard full, as Open does.
func (m *Map) OpenContext(ctx context.Context, procedure string) (context.Context, *Log) {
	if m.Full() {
		return ctx, nil
	}
	c := &Node{Context: ctx, Log: Log{Procedure: procedure}}
	if !m.Insert(&c.Log) {
		return ctx, nil
	}
	return c, &c.Log
}

// Insert stores l, a fresh Log the caller allocated (in a larger struct of
// its own, with what else the request needs), under a new ID in a shard
// with room, trying l's home first (see homeOf), as Open does. It reports
// false when it finds every shard full; a caller asks Full first, before
// it allocates.
func (m *Map) Insert(l *Log) bool {
	_, ok := m.insertFrom(m.homeOf(l), l)
	return ok
}

// homeOf returns the shard to try first for l: one picked at random
// (math/rand/v2's generator is per thread, so picking one writes nothing
// shared). It used to hash the allocator's page l lives in, through
// unsafe, to keep each core in a shard of its own; BenchmarkHome showed no
// gain from it (AMD EPYC, 2 shared vCPUs, medians of 6, an open and a
// remove: 153 against 159 ns/op with GOMAXPROCS 1, 101 against 82 with
// 2), so a random shard it is.
func (m *Map) homeOf(*Log) uint64 {
	return rand.Uint64() & m.mask
}

// insertFrom is insert starting from shard start, which returns the shard
// l went to. The ID's low bits are the shard's index, the rest the
// shard's sequence.
//
// A refusal is not a snapshot: a Remove in a shard already looked at may
// free a slot while the others are looked at. The bound itself is exact:
// a shard takes a Log only below its share, and the shares add up to
// MaxInFlight.
func (m *Map) insertFrom(start uint64, l *Log) (uint64, bool) {
	for i := range uint64(len(m.shards)) {
		if i > 0 && m.Full() {
			return 0, false
		}
		idx := (start + i) & m.mask
		s := m.shards[idx]
		s.mu.Lock()
		if len(s.logs) < s.max {
			s.seq++
			l.ID = ID(s.seq<<m.shift | idx)
			l.Slot = len(s.logs)
			s.logs = append(s.logs, l)
			if len(s.logs) == s.max {
				m.full.Add(1)
			}
			s.mu.Unlock()
			return idx, true
		}
		s.mu.Unlock()
	}
	return 0, false
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

// Remove deletes l from the Map. Removing a Log twice does nothing, nor
// does removing a Log of another Map that nothing else is using.
func (m *Map) Remove(l *Log) {
	s := m.shard(l.ID)
	s.mu.Lock()
	if i := l.Slot; i < len(s.logs) && s.logs[i] == l {
		if len(s.logs) == s.max {
			m.full.Add(-1)
		}
		// Move the last Log into l's place.
		last := len(s.logs) - 1
		s.logs[i] = s.logs[last]
		s.logs[i].Slot = i
		s.logs[last] = nil
		s.logs = s.logs[:last]
	}
	s.mu.Unlock()
}

// Len returns the number of Logs held. Under concurrent Opens and Removes
// it is a sum of counts taken one shard at a time, never above
// MaxInFlight.
func (m *Map) Len() int {
	n := 0
	for _, s := range m.shards {
		s.mu.Lock()
		n += len(s.logs)
		s.mu.Unlock()
	}
	return n
}
