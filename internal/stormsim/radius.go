package stormsim

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Radius is the retry storm radius measured over the root requests that
// failed: for each, the largest number of hops on one call path (root →
// ... → leaf) over which at least one retry was spent on it. Retries on
// sibling paths do not add up: a fan-out whose two leaves are each retried
// once by their own callers has radius 1. A call path is a path of logical
// calls from the root request (every attempt of a call shares it, see
// callPath), so a chain of n services has one, of n-1 hops; the
// simulator's client, which never retries, is not counted.
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

// radiusLog records the logical calls on which retries were spent, per
// root request, and the retries per hop. It is safe for concurrent use.
type radiusLog struct {
	mu      sync.Mutex
	roots   map[int64]map[string]struct{} // call paths of the retried calls, by root request
	retries []atomic.Int64                // by edge
}

func newRadiusLog(edges int) *radiusLog {
	return &radiusLog{roots: make(map[int64]map[string]struct{}), retries: make([]atomic.Int64, edges)}
}

// record counts one retry of root request root on edge e, spent on the
// logical call whose call path (see callPath: the path of the request the
// call sends, without attempt numbers) is call.
func (l *radiusLog) record(root int64, call string, e int) {
	l.retries[e].Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	calls := l.roots[root]
	if calls == nil {
		calls = make(map[string]struct{})
		l.roots[root] = calls
	}
	calls[call] = struct{}{}
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
		n := pathRadius(l.roots[id])
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

// pathRadius returns the largest number of retried calls on one call path
// of a root request whose retried calls are calls: a call path through a
// call passes through every call whose path is a prefix of its own (at a
// '/'), and the longest count ends at a retried call.
func pathRadius(calls map[string]struct{}) int {
	most := 0
	for call := range calls {
		n := 1
		for i := strings.IndexByte(call, '/'); i >= 0; {
			if _, ok := calls[call[:i]]; ok {
				n++
			}
			next := strings.IndexByte(call[i+1:], '/')
			if next < 0 {
				break
			}
			i += 1 + next
		}
		most = max(most, n)
	}
	return most
}
