package ingress

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// _ringSize is how many values a ring keeps.
const _ringSize = 64

// _cacheLine is the cache block size a ring's cursor keeps to itself.
const _cacheLine = 64

// ring keeps the latest _ringSize values, for operators. A writer takes a
// place from an atomic cursor and locks only it; a reader locks each place
// in turn, skipping a value being written. addNew keeps a value only if it
// differs from the newest, time included, so an outage's repeats under a
// coarse clock cost one shared read each.
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

// addNew adds v unless sig (v's signature, time included) is the newest's.
// Racing writers may keep a repeat or both values: it is for operators.
func (r *ring[T]) addNew(v T, sig uint64) {
	if r.last.Load() == sig {
		return
	}
	r.last.Store(sig)
	r.add(v)
}

// _signatureSeed seeds the hash of a procedure's name (procedureHash).
var _signatureSeed = maphash.MakeSeed()

// procedureHash returns procedure's hash, computed once per request for
// its decision and storm signatures.
func procedureHash(procedure string) uint64 {
	return maphash.String(_signatureSeed, procedure)
}

// _signatureMul are odd constants (from xxHash, SplitMix64 and
// murmur3), one per word of a signature.
var _signatureMul = [...]uint64{
	0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
	0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53,
}

// signatureWords are the words of a signature, zero past those a value
// has.
type signatureWords [len(_signatureMul)]uint64

// signature returns an addNew signature: ph plus each word, high half
// folded in, times its odd constant, mixed by SplitMix64's finalizer. A
// collision only lists a value less.
func signature(ph uint64, words signatureWords) uint64 {
	x := ph
	for i, w := range words {
		x += (w ^ w>>32) * _signatureMul[i] // the high half folded in: a product keeps only what is below its top bit
	}
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
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
