package memory

import (
	"math"
	"sync"
	"sync/atomic"
)

// bucket holds the counts of one time slice of the window.
type bucket struct {
	// slice is the time slice (time / bucket width) of the counts.
	slice    int64
	failures int64
	joint    int64
}

// liveBucket is a window's bucket, atomic so counting in a current
// bucket takes no lock.
type liveBucket struct {
	slice    atomic.Int64
	failures atomic.Int64
	joint    atomic.Int64 // counted after failures: at most failures but across a reset
}

// _evicted is a window's touched slice once its edge was evicted.
const _evicted = math.MinInt64

// window is a ring of buckets: a sliding window of counts, safe for
// concurrent use. Counting in the current slice's bucket and reading are
// lock-free; emptying a bucket for a new slice, and restoring, take mu,
// once per bucket width (as retry/budget.go does).
type window struct {
	ring []liveBucket
	// touched is the newest slice the window was made, counted or
	// restored in (every bucket with counts is at or before it), or
	// _evicted. It only grows until eviction (touch, evictIdle).
	touched atomic.Int64
	mu      sync.Mutex // emptying and restoring buckets
}

// newWindow returns an empty window of buckets slices, touched at now.
func newWindow(buckets int, now int64) *window {
	w := &window{ring: make([]liveBucket, buckets)}
	w.touched.Store(now)
	return w
}

// touch notes an observation in slice now. It reports false if the
// window was evicted (the edge must be found again); once touched, the
// window cannot be evicted as idle until slice now has left it.
func (w *window) touch(now int64) bool {
	for {
		t := w.touched.Load()
		switch {
		case t == _evicted:
			return false
		case t >= now:
			return true
		case w.touched.CompareAndSwap(t, now):
			return true
		}
	}
}

// evictIdle marks the window evicted if untouched for a full window at
// now (no counts inside it). It reports whether it did, else the slice
// last touched. An observation that touched first keeps the window; a
// later one finds it evicted (touch).
func (w *window) evictIdle(now int64) (bool, int64) {
	for {
		t := w.touched.Load()
		if t == _evicted {
			return true, t
		}
		if now-t < int64(len(w.ring)) {
			return false, t
		}
		if w.touched.CompareAndSwap(t, _evicted) {
			return true, t
		}
	}
}

// add counts a callee failure, joint if the caller failed too, in slice
// now. Only a slice's first count in its bucket locks, to empty it. A
// count for a slice older than its bucket's is dropped (it read the
// clock a window ago) and add reports false.
func (w *window) add(now int64, joint bool) bool {
	b := &w.ring[uint64(now)%uint64(len(w.ring))]
	if b.slice.Load() != now {
		w.mu.Lock()
		s := b.slice.Load()
		if s < now {
			b.failures.Store(0)
			b.joint.Store(0)
			b.slice.Store(now) // last: a count that sees now counts in the emptied bucket
		}
		w.mu.Unlock()
		if s > now {
			return false
		}
	}
	b.failures.Add(1)
	if joint {
		b.joint.Add(1)
	}
	return true
}

// load returns b as inside the window at now, and whether it is. A bucket
// read while being emptied may read low: it is leaving the window.
func (b *liveBucket) load(now, span int64) (bucket, bool) {
	s := b.slice.Load()
	if s > now || s <= now-span {
		return bucket{}, false
	}
	joint := b.joint.Load() // before failures: each joint count's failure is then in
	failures := b.failures.Load()
	return bucket{slice: s, failures: failures, joint: min(joint, failures)}, true
}

// sums returns the counts of the buckets inside the window at now.
func (w *window) sums(now int64) (failures, joint int64) {
	span := int64(len(w.ring))
	for i := range w.ring {
		if b, ok := w.ring[i].load(now, span); ok {
			failures += b.failures
			joint += b.joint
		}
	}
	return failures, joint
}

// live returns copies of the non-empty buckets inside the window at now.
func (w *window) live(now int64) []bucket {
	span := int64(len(w.ring))
	var out []bucket
	for i := range w.ring {
		if b, ok := w.ring[i].load(now, span); ok && b.failures > 0 {
			out = append(out, b)
		}
	}
	return out
}

// restore puts b back unless a newer slice holds its place.
func (w *window) restore(b bucket) {
	w.mu.Lock()
	defer w.mu.Unlock()
	slot := &w.ring[uint64(b.slice)%uint64(len(w.ring))]
	if slot.slice.Load() > b.slice && slot.failures.Load() > 0 {
		return
	}
	slot.failures.Store(b.failures)
	slot.joint.Store(b.joint)
	slot.slice.Store(b.slice)
	if b.failures > 0 {
		w.touch(b.slice)
	}
}
