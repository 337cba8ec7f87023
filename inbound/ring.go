package inbound

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// _ringSize is how many values a ring keeps.
const _ringSize = 64

// _cacheLine is the size of a cache block, which a ring's cursor keeps to
// itself (and each place of the decisions ring, by its padding): two cores
// writing would otherwise take turns at one block.
const _cacheLine = 64

// ring keeps the latest _ringSize values added, for operators. It takes no
// lock that all writers share: a writer takes the next place from an
// atomic cursor and locks only that place, which the next writer to want
// it takes _ringSize values later; a reader locks each place in turn. A
// value still being written when the ring is read is left out.
//
// During an outage every request writes the same value, but for its time:
// addNew keeps a value only when it differs from the newest one added, its
// time included, so that under a coarse clock the repeats of one clock
// reading are kept once and cost one shared read each.
type ring[T any] struct {
	next  atomic.Uint64 // how many values were ever added
	last  atomic.Uint64 // the signature of the newest value added by addNew
	_     [_cacheLine - 16]byte
	slots [_ringSize]ringSlot[T]
}

// ringSlot is one place of a ring.
type ringSlot[T any] struct {
	mu sync.Mutex
	n  uint64 // v is the n-th value added; 0: none yet
	v  T
}

func (r *ring[T]) add(v T) {
	n := r.next.Add(1)
	s := &r.slots[(n-1)%_ringSize]
	s.mu.Lock()
	if s.n < n { // else a writer that took the place a lap later was first
		s.n, s.v = n, v
	}
	s.mu.Unlock()
}

// addNew adds v unless sig, a signature of v and its time, is the
// newest value's: a repeat. Two writers adding different values at once
// may both be kept, or a repeat twice: the ring is for operators.
func (r *ring[T]) addNew(v T, sig uint64) {
	if r.last.Load() == sig {
		return
	}
	r.last.Store(sig)
	r.add(v)
}

// signature mixes a string (with maphash) and words into a signature for
// addNew.
type signature struct{ h uint64 }

var _signatureSeed = maphash.MakeSeed()

func newSignature(s string) signature {
	return signature{maphash.String(_signatureSeed, s)}
}

// with mixes w in (the finalizer of SplitMix64 over the running hash).
func (g signature) with(w uint64) signature {
	x := g.h ^ w
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return signature{x ^ x>>31}
}

// each calls f with the values held, newest first.
func (r *ring[T]) each(f func(T)) {
	n := r.next.Load()
	for i := n; i > n-min(n, _ringSize); i-- {
		s := &r.slots[(i-1)%_ringSize]
		s.mu.Lock()
		v, ok := s.v, s.n == i
		s.mu.Unlock()
		if ok {
			f(v)
		}
	}
}

// held returns how many values the ring holds at most now.
func (r *ring[T]) held() int { return int(min(r.next.Load(), _ringSize)) }
