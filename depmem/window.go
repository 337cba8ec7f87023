package depmem

// bucket holds the counts of one time slice of the window.
type bucket struct {
	// slice is the index of the time slice (time / bucket width) the
	// counts belong to.
	slice    int64
	failures int64
	joint    int64
}

// window is a ring of buckets: a sliding window of counts. It is not safe
// for concurrent use; its owner locks.
type window struct {
	ring []bucket
	// touched is the newest time slice the window was made, counted or
	// restored in. Every bucket with counts is at or before it.
	touched int64
}

// newWindow returns an empty window of buckets slices, touched at time
// slice now.
func newWindow(buckets int, now int64) window {
	return window{ring: make([]bucket, buckets), touched: now}
}

// idle reports whether the window was not touched for a full window at
// time slice now: it holds no counts inside the window, and nothing has
// been counted in it since before the window's oldest slice.
func (w *window) idle(now int64) bool {
	return now-w.touched >= int64(len(w.ring))
}

// add counts one callee failure, joint when the caller failed too, in the
// time slice now.
func (w *window) add(now int64, joint bool) {
	b := &w.ring[uint64(now)%uint64(len(w.ring))]
	if b.slice != now {
		*b = bucket{slice: now}
	}
	b.failures++
	if joint {
		b.joint++
	}
	w.touched = max(w.touched, now)
}

// sums returns the counts of the buckets still inside the window at time
// slice now.
func (w *window) sums(now int64) (failures, joint int64) {
	oldest := now - int64(len(w.ring)) + 1
	for _, b := range w.ring {
		if b.slice >= oldest && b.slice <= now {
			failures += b.failures
			joint += b.joint
		}
	}
	return failures, joint
}

// live returns copies of the buckets still inside the window at now.
func (w *window) live(now int64) []bucket {
	oldest := now - int64(len(w.ring)) + 1
	var out []bucket
	for _, b := range w.ring {
		if b.slice >= oldest && b.slice <= now && b.failures > 0 {
			out = append(out, b)
		}
	}
	return out
}

// restore puts b back into the window, unless a newer slice holds its
// place.
func (w *window) restore(b bucket) {
	slot := &w.ring[uint64(b.slice)%uint64(len(w.ring))]
	if slot.slice > b.slice && slot.failures > 0 {
		return
	}
	*slot = b
	if b.failures > 0 {
		w.touched = max(w.touched, b.slice)
	}
}
