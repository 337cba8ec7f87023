package memory

import (
	"math"
	"sync"
	"sync/atomic"
)

// bucket holds the counts of one time slice of the window.
type bucket struct {
	// slice is the index of the time slice (time / bucket width) the
	// counts belong to.
	slice    int64
	failures int64
	joint    int64
}

// liveBucket is a bucket of a window: its slice and counts are atomics,
// so that counting in a current bucket takes no lock.
type liveBucket struct {
	slice    atomic.Int64
	failures atomic.Int64
	joint    atomic.Int64 // counted after failures: at most failures but across a reset
}

// _evicted is a window's touched slice once its edge was evicted.
const _evicted = math.MinInt64

// window is a ring of buckets: a sliding window of counts. It is safe for
// concurrent use. Counting in a bucket that holds the current slice is
// lock-free (two atomic additions), as are reads; emptying a bucket for a
// new slice, and restoring one, happen under mu, once per bucket width,
// as in the retry budget (retry/budget.go).
type window struct {
	ring []liveBucket
	// touched is the newest time slice the window was made, counted or
	// restored in, or _evicted. Every bucket with counts is at or before
	// it. It only grows, until the window is evicted: see touch and
	// evictIdle.
	touched atomic.Int64
	mu      sync.Mutex // emptying and restoring buckets
}

// newWindow returns an empty window of buckets slices, touched at time
// slice now.
func newWindow(buckets int, now int64) *window {
	w := &window{ring: make([]liveBucket, buckets)}
	w.touched.Store(now)
	return w
}

// touch notes an observation in time slice now. It reports false when the
// window was evicted: an observation must then find its edge again. A
// window touched can no longer be evicted as idle before its slice now
// has left it.
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

// evictIdle marks the window evicted when it was not touched for a full
// window at time slice now: it holds no counts inside the window, and
// nothing has been counted in it since before the window's oldest slice.
// It reports whether it did, and else the slice the window was last
// touched in. An observation that touched the window first keeps it; one
// that comes after finds it evicted (touch).
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

// add counts one callee failure, joint when the caller failed too, in the
// time slice now. Only the first count of a slice in its bucket takes the
// lock, to empty the bucket of the slice it held before. A count for a
// slice older than the one its bucket holds is dropped: it read the clock
// a whole window ago, and is outside the window already. It reports
// whether it counted.
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

// load returns the bucket of b as inside the window at time slice now,
// and whether it is. A bucket read while it is emptied for a new slice
// can read low: it is leaving the window.
func (b *liveBucket) load(now, span int64) (bucket, bool) {
	s := b.slice.Load()
	if s > now || s <= now-span {
		return bucket{}, false
	}
	joint := b.joint.Load() // before failures: each joint count's failure is then in
	failures := b.failures.Load()
	return bucket{slice: s, failures: failures, joint: min(joint, failures)}, true
}

// sums returns the counts of the buckets still inside the window at time
// slice now.
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

// live returns copies of the buckets still inside the window at now.
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

// restore puts b back into the window, unless a newer slice holds its
// place.
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
