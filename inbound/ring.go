package inbound

import (
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
type ring[T any] struct {
	next  atomic.Uint64 // how many values were ever added
	_     [_cacheLine - 8]byte
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
