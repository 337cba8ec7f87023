package reqlog

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// _cacheLine is the padding unit that keeps data written by different
// cores apart. 128 rather than 64 bytes: x86 prefetches lines in pairs.
const _cacheLine = 128

// Map bounds the requests in flight: it counts the Logs it holds (a
// request carries its Log in its context), up to MaxInFlight, and refuses
// more. Each shard counts its own Logs, up to its share of MaxInFlight, in
// one atomic word of a block of its own, and each request starts in a
// shard picked at random (see homeOf), so that concurrent requests rarely
// meet: a request costs two atomic additions (Insert, Remove).
type Map struct {
	shards []*shard // each allocated alone: see shard
	mask   uint64
	// parker, now and base are set by WatchCalls: the admission the
	// Logs' calls park and resume, the clock of timed Logs. Nil when
	// the Map watches no calls. Only read once set.
	parker Parker
	now    func() time.Time
	base   time.Time
	// mint, set by MintRoots, mints the root keys of Logs that came
	// with none (Log.Root). Only read once set.
	mint func() uint64
	_    [_cacheLine]byte
	// full counts the shards holding their share, so that a full Map
	// refuses without looking at any shard. Written only when a shard's
	// count reaches its share or leaves it.
	full atomic.Int64
}

// _removed is the shard of a Log after Remove.
const _removed = math.MaxUint32

// Parker is admission as a request's outbound calls see it: a request
// parks its slot as it starts waiting for its calls (none was under way),
// and takes it back, unconditionally, as it stops (none is any more), so
// that only the requests doing their own work count against the limit:
// a service waiting on a slow callee is not the one overloaded.
type Parker interface {
	Park()
	Unpark()
}

// WatchCalls has every Log of the Map park and resume its request's slot
// with p as its calls start and end (see Parker; EndCalls ends it), and
// the Logs timed (Log.TimeCalls) measure their calls on the clock now
// (monotonic). Call it before the Map is used.
func (m *Map) WatchCalls(p Parker, now func() time.Time) {
	m.parker, m.now, m.base = p, now, now()
}

// MintRoots has the Map's Logs that were given no root key mint one with
// mint, which never returns 0, when a call first asks for it (Log.Root).
// Call it before the Map takes any Log.
func (m *Map) MintRoots(mint func() uint64) { m.mint = mint }

// micros reads the clock of timed Logs: microseconds since the Map's
// WatchCalls, modulo 2^32.
func (m *Map) micros() uint32 {
	return uint32(m.now().Sub(m.base) / time.Microsecond)
}

// shard is one count of Logs and its share of MaxInFlight, in one block of
// _cacheLine bytes. Shards are allocated one by one, each at the start of
// its own block (an array's elements could straddle two).
type shard struct {
	// n counts the Logs the shard holds, and for a moment an Insert that
	// found it full and takes its addition back: at most max of them are
	// held.
	n   atomic.Int64
	max int64 // the shard's share of MaxInFlight
	_   [_cacheLine - 16]byte
}

// NewMap returns an empty Map.
//
// It uses at most MaxInFlight shards (rounded down to a power of two), so
// that each shard may hold at least one Log.
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

// Full reports whether every shard held its share a moment ago, or looked
// as if it did: a caller asks it before it allocates a Log. Under churn at
// the bound a shard can be counted full twice for a moment, so Full can
// report true while one slot is free: that request is served untracked,
// as one past the bound is.
func (m *Map) Full() bool {
	return m.full.Load() == int64(len(m.shards))
}

// Open counts a fresh Log for procedure and returns it, or nil when it
// finds every shard full (see insertFrom).
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

// OpenContext counts a fresh Log for procedure and returns it with a
// child of ctx that carries it, in one allocation. It returns ctx and nil
// when it finds every shard full (see insertFrom).
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

// Insert counts l, a fresh Log the caller allocated and no Map holds, in a
// shard with room, trying l's home first (see homeOf). It reports false
// when it finds every shard full; a caller asks Full first, before it
// allocates.
func (m *Map) Insert(l *Log) bool {
	_, ok := m.insertFrom(m.homeOf(l), l)
	return ok
}

// homeOf returns the shard to try first for l: one picked at random
// (math/rand/v2's generator is per thread, so picking one writes nothing
// shared). A shard per core, by a hash of the allocator page l lives in,
// gains nothing over it (BenchmarkHome; figures in bench/README.md).
func (m *Map) homeOf(*Log) uint64 {
	return rand.Uint64() & m.mask
}

// insertFrom is insert starting from shard start, which returns the shard
// l went to.
//
// A refusal is not a snapshot: a Remove in a shard already looked at may
// free a slot while the others are looked at, and an Insert that finds a
// shard full adds to its count for a moment. The bound itself is exact: a
// shard takes a Log only when its addition brings its count to its share
// at most, and the shares add up to MaxInFlight.
//
// Every addition that brings a shard's count to its share counts the
// shard full, and every subtraction that takes it below its share counts
// it full no more: a shard's count moves one step at a time, so for each
// shard the two alternate, whichever Insert or Remove makes them, and once
// the Inserts and Removes under way are done the count of full shards is
// exact. Meanwhile it can be one too high for a shard (see Full).
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

// fullUnless counts s full no more when n, its count after a
// subtraction, is below its share by one: it just left it.
func (m *Map) fullUnless(n int64, s *shard) {
	if n == s.max-1 {
		m.full.Add(-1)
	}
}

// Remove takes l out of the Map's count. Removing a Log twice does
// nothing, nor does removing a Log the Map does not hold. A Log is
// inserted and removed by one goroutine (its request's), never
// concurrently. l keeps its owner (a call its handler left under way may
// still read the Map's clock): only its shard says it was removed.
func (m *Map) Remove(l *Log) {
	if l.owner != m || l.shard == _removed {
		return
	}
	s := m.shards[l.shard]
	l.shard = _removed
	m.fullUnless(s.n.Add(-1), s)
}

// Len returns the number of Logs held. Under concurrent Inserts and
// Removes it is a sum of counts taken one shard at a time, never above
// MaxInFlight.
func (m *Map) Len() int {
	n := int64(0)
	for _, s := range m.shards {
		n += min(s.n.Load(), s.max)
	}
	return int(n)
}
