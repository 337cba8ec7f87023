package reqlog

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// _cacheLine keeps data written by different cores apart: 128 bytes, as
// x86 prefetches lines in pairs.
const _cacheLine = 128

// Map bounds the requests in flight: it counts the Logs it holds, up to
// MaxInFlight, and refuses more. Each shard counts its Logs, up to its
// share, in one atomic word of its own block, and a request starts in a
// random shard (homeOf), so requests rarely meet: two atomic adds each
// (Insert, Remove).
type Map struct {
	shards []*shard // each allocated alone: see shard
	mask   uint64
	// parker, now and base are set by WatchCalls (the admission calls
	// park, the timed Logs' clock); nil when no calls are watched. Only
	// read once set.
	parker Parker
	now    func() time.Time
	base   time.Time
	// mint, set by MintRoots, mints root keys (Log.Root). Only read once
	// set.
	mint func() uint64
	_    [_cacheLine]byte
	// full counts the shards at their share, so a full Map refuses
	// without reading shards. Written only as a shard reaches or leaves
	// its share.
	full atomic.Int64
}

// _removed is the shard of a Log after Remove.
const _removed = math.MaxUint32

// Parker is admission as a request's outbound calls see it: the request
// parks its slot as its first call starts and takes it back,
// unconditionally, once none is under way, so only requests doing their
// own work count against the limit (waiting on a slow callee is not
// being overloaded).
type Parker interface {
	Park()
	Unpark()
}

// WatchCalls has every Log park and resume its slot with p as its calls
// start and end (Parker; EndCalls stops it), and timed Logs measure their
// calls on now (monotonic). Call it before the Map is used.
func (m *Map) WatchCalls(p Parker, now func() time.Time) {
	m.parker, m.now, m.base = p, now, now()
}

// MintRoots has Logs without a root key mint one with mint (never 0) on
// first use (Log.Root). Call it before the Map takes any Log.
func (m *Map) MintRoots(mint func() uint64) { m.mint = mint }

// micros reads the timed Logs' clock: microseconds since WatchCalls,
// modulo 2^32.
func (m *Map) micros() uint32 {
	return uint32(m.now().Sub(m.base) / time.Microsecond)
}

// shard is one count of Logs and its share of MaxInFlight in its own
// _cacheLine block, allocated one by one (array elements could straddle
// two blocks).
type shard struct {
	// n counts the Logs held, and briefly an Insert that found it full
	// and takes its addition back; at most max are held.
	n   atomic.Int64
	max int64 // the shard's share of MaxInFlight
	_   [_cacheLine - 16]byte
}

// NewMap returns an empty Map, with at most MaxInFlight shards (rounded
// down to a power of two) so each can hold a Log.
func NewMap(cfg Config) (*Map, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	n := min(cfg.Shards, 1<<(bits.Len(uint(cfg.MaxInFlight))-1))
	m := &Map{
		shards: make([]*shard, n),
		mask:   uint64(n - 1),
	}
	for i := range m.shards {
		s := new(shard)
		m.shards[i] = s
		// MaxInFlight split evenly, the first shards taking the remainder.
		s.max = int64(cfg.MaxInFlight / n)
		if i < cfg.MaxInFlight%n {
			s.max++
		}
	}
	return m, nil
}

// Full reports whether every shard held its share a moment ago; callers
// ask before allocating a Log. Under churn at the bound it can briefly
// report true with one slot free: that request is served untracked.
func (m *Map) Full() bool {
	return m.full.Load() == int64(len(m.shards))
}

// Open counts and returns a fresh Log for procedure, or nil when every
// shard is full.
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

// OpenContext is Open also returning a child of ctx carrying the Log, in
// one allocation; ctx and nil when every shard is full.
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

// Insert counts l, a fresh Log no Map holds, in a shard with room, from
// l's home (homeOf). It reports false when every shard is full; ask Full
// before allocating.
func (m *Map) Insert(l *Log) bool {
	_, ok := m.insertFrom(m.homeOf(l), l)
	return ok
}

// homeOf returns a random shard to try first (math/rand/v2 is per thread,
// writing nothing shared); a per-core choice gains nothing (BenchmarkHome).
func (m *Map) homeOf(*Log) uint64 {
	return rand.Uint64() & m.mask
}

// insertFrom is Insert from shard start, returning l's shard.
//
// A refusal is not a snapshot (a Remove may free a slot meanwhile, and an
// Insert into a full shard briefly adds to its count), but the bound is
// exact: a shard takes a Log only if its count stays within its share,
// and the shares sum to MaxInFlight. Reaching the share counts the shard
// full, dropping below uncounts it; counts move one step at a time, so
// these alternate per shard and full is exact once operations settle,
// meanwhile at most one too high per shard (Full).
func (m *Map) insertFrom(start uint64, l *Log) (uint64, bool) {
	for i := range uint64(len(m.shards)) {
		if i > 0 && m.Full() {
			return 0, false
		}
		idx := (start + i) & m.mask
		s := m.shards[idx]
		if s.n.Load() >= s.max {
			continue // full: no need to add and take back
		}
		n := s.n.Add(1)
		if n <= s.max {
			if n == s.max {
				m.full.Add(1)
			}
			l.owner, l.shard = m, uint32(idx)
			return idx, true
		}
		m.fullUnless(s.n.Add(-1), s)
	}
	return 0, false
}

// fullUnless uncounts s as full when n, its count after a subtraction,
// just dropped below its share.
func (m *Map) fullUnless(n int64, s *shard) {
	if n == s.max-1 {
		m.full.Add(-1)
	}
}

// Remove takes l out of the count; removing twice, or a Log the Map does
// not hold, does nothing. One goroutine (the request's) inserts and
// removes a Log. l keeps its owner (a call left under way may read the
// clock); its shard marks it removed.
func (m *Map) Remove(l *Log) {
	if l.owner != m || l.shard == _removed {
		return
	}
	s := m.shards[l.shard]
	l.shard = _removed
	m.fullUnless(s.n.Add(-1), s)
}

// Len returns the number of Logs held: under concurrency, a sum taken
// shard by shard, never above MaxInFlight.
func (m *Map) Len() int {
	n := int64(0)
	for _, s := range m.shards {
		n += min(s.n.Load(), s.max)
	}
	return int(n)
}
