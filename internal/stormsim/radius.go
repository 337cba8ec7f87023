package stormsim

import (
	"sync"
	"sync/atomic"
)

// Radius is the retry storm radius measured over the root requests that
// failed: for each, the number of distinct hops (caller→callee edges)
// over which at least one retry was spent on it. A chain of n services has
// n-1 hops; the simulator's client, which never retries, is not counted.
type Radius struct {
	// Failed is the number of root requests that failed.
	Failed int `json:"failed"`
	// Max is the largest radius of a failed root request.
	Max int `json:"max"`
	// Mean is the mean radius over the failed root requests, those that
	// saw no retry at all (radius 0) included.
	Mean float64 `json:"mean"`
	// Retried is the number of failed root requests with a retry on at
	// least one hop.
	Retried int `json:"retried"`
	// MeanRetried is the mean radius over those Retried.
	MeanRetried float64 `json:"meanRetried"`
}

// radiusLog records the hops on which retries were spent, per root
// request, and the retries per hop. It is safe for concurrent use.
type radiusLog struct {
	mu      sync.Mutex
	roots   map[int64][]int // distinct edges, by root request
	retries []atomic.Int64  // by edge
}

func newRadiusLog(edges int) *radiusLog {
	return &radiusLog{roots: make(map[int64][]int), retries: make([]atomic.Int64, edges)}
}

// record counts one retry of root request root on edge e.
func (l *radiusLog) record(root int64, e int) {
	l.retries[e].Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, seen := range l.roots[root] {
		if seen == e {
			return
		}
	}
	l.roots[root] = append(l.roots[root], e)
}

// reset forgets everything recorded.
func (l *radiusLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.roots)
	for i := range l.retries {
		l.retries[i].Store(0)
	}
}

// radius returns the Radius over the failed root requests.
func (l *radiusLog) radius(failed []int64) Radius {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := Radius{Failed: len(failed)}
	sum := 0
	for _, id := range failed {
		n := len(l.roots[id])
		sum += n
		r.Max = max(r.Max, n)
		if n > 0 {
			r.Retried++
		}
	}
	if r.Failed > 0 {
		r.Mean = float64(sum) / float64(r.Failed)
	}
	if r.Retried > 0 {
		r.MeanRetried = float64(sum) / float64(r.Retried)
	}
	return r
}
