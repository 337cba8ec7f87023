package stormsim

import (
	"container/list"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/yarpc/yarpcerrors"
)

// capacityQueue is a node's finite capacity (Node.Capacity): workers
// that each spend the service time on one request at a time, behind a
// bounded FIFO queue. A worker is a token the handler holds while it
// sleeps the service time; a worker that finishes hands itself to the
// head of the queue. It is safe for concurrent use.
//
// Service times are kept on a virtual clock per worker: a worker handed
// on by the queue starts where its last request ended, even if its sleep
// ran late, so that a loaded machine's late timers do not cut the
// capacity of a busy node (an idle worker starts now).
type capacityQueue struct {
	node        string
	workers     int
	serviceTime time.Duration
	limit       int  // the most requests waiting
	leave       bool // abandoned requests leave the queue
	factor      atomic.Uint64
	stats       *nodeSeries // nil: not recorded

	mu      sync.Mutex
	free    int       // idle workers
	waiting list.List // of *waiter, oldest first
	down    bool      // crashed: nothing is admitted, the queue is lost
}

// waiter is one request in the queue.
type waiter struct {
	ready chan struct{} // closed when granted a worker or dropped
	elem  *list.Element // its place in the queue, while it waits
	// Set under the queue's lock before ready is closed:
	granted bool      // it holds a worker
	start   time.Time // where its service starts on the worker's clock
}

func newCapacityQueue(node string, c Capacity, leave bool, stats *nodeSeries) *capacityQueue {
	q := &capacityQueue{node: node, workers: c.Workers, serviceTime: c.ServiceTime, limit: c.Queue, leave: leave, free: c.Workers, stats: stats}
	q.setFactor(1)
	return q
}

// setFactor multiplies the service time of the requests that reach a
// worker from now on by f (a slow trigger; 1 ends it).
func (q *capacityQueue) setFactor(f float64) { q.factor.Store(math.Float64bits(f)) }

func (q *capacityQueue) service() time.Duration {
	return time.Duration(float64(q.serviceTime) * math.Float64frombits(q.factor.Load()))
}

// serve waits for a worker and spends the service time on the request
// of ctx. It returns a resource-exhausted error at once when the queue is
// full, an unavailable one when the node is down or goes down while the
// request waits, and, when abandoned requests leave the queue, the
// context's error as soon as it is done while the request waits. A
// request whose caller gave up while it waited is otherwise served anyway.
func (q *capacityQueue) serve(ctx context.Context) error {
	_, err := q.serveTimed(ctx)
	return err
}

// serveTimed is serve, and returns when the request's service ended on
// its worker's clock (zero when it was not served): the time its answer
// was ready, whatever a loaded machine's timers made of the sleep.
func (q *capacityQueue) serveTimed(ctx context.Context) (time.Time, error) {
	w, err := q.admit()
	if err != nil {
		return time.Time{}, err
	}
	if w != nil {
		if err := q.wait(ctx, w); err != nil {
			return time.Time{}, err
		}
	}
	service := q.service()
	start := time.Now()
	if w != nil && w.start.Before(start) {
		// A busy worker's clock, which catches up at most one service
		// time of a late timer.
		start = maxTime(w.start, start.Add(-service))
	}
	if ctx.Err() != nil {
		q.stats.count(_abandoned)
	}
	end := start.Add(service)
	time.Sleep(time.Until(end))
	q.stats.count(_worked)
	if d, ok := ctx.Deadline(); !ok || !end.After(d) {
		q.stats.count(_inTime)
	}
	q.release(end)
	return end, nil
}

// admit takes an idle worker (nil, nil) or queues the request.
func (q *capacityQueue) admit() (*waiter, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.down:
		return nil, yarpcerrors.Newf(yarpcerrors.CodeUnavailable, "stormsim: %s is down", q.node)
	case q.free > 0:
		q.free--
		return nil, nil
	case q.waiting.Len() >= q.limit:
		q.stats.count(_rejected)
		return nil, yarpcerrors.Newf(yarpcerrors.CodeResourceExhausted, "stormsim: %s's queue is full (%d)", q.node, q.limit)
	}
	w := &waiter{ready: make(chan struct{})}
	w.elem = q.waiting.PushBack(w)
	q.stats.queued(q.waiting.Len())
	return w, nil
}

// wait waits until w is granted a worker, or dropped.
func (q *capacityQueue) wait(ctx context.Context, w *waiter) error {
	if !q.leave {
		<-w.ready // blocked: the caller's going changes nothing
		return q.granted(w)
	}
	select {
	case <-w.ready:
		return q.granted(w)
	case <-ctx.Done():
	}
	q.mu.Lock()
	if w.granted {
		// Granted as its context ended: it leaves all the same, and the
		// worker goes to the next in the queue.
		q.mu.Unlock()
		q.stats.count(_left)
		q.release(w.start)
		return yarpcerrors.FromError(ctx.Err())
	}
	q.waiting.Remove(w.elem)
	q.mu.Unlock()
	q.stats.count(_left)
	return yarpcerrors.Newf(yarpcerrors.CodeDeadlineExceeded, "stormsim: %s: left the queue: %v", q.node, ctx.Err())
}

// granted returns nil when w holds a worker, else the error of a dropped
// request.
func (q *capacityQueue) granted(w *waiter) error {
	if w.granted { // set before ready was closed
		return nil
	}
	return yarpcerrors.Newf(yarpcerrors.CodeUnavailable, "stormsim: %s went down", q.node)
}

// release hands a worker whose last request ended at end to the head of
// the queue, or makes it idle.
func (q *capacityQueue) release(end time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.waiting.Front(); e != nil {
		w := q.waiting.Remove(e).(*waiter)
		w.granted, w.start = true, end
		close(w.ready)
		return
	}
	q.free++
}

// setDown takes the node down (a crash: the queued requests are lost,
// answered unavailable, and nothing more is admitted) or back up. The
// requests being served finish their service time.
func (q *capacityQueue) setDown(down bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.down = down
	if !down {
		return
	}
	for e := q.waiting.Front(); e != nil; e = q.waiting.Front() {
		close(q.waiting.Remove(e).(*waiter).ready)
	}
}

// length returns the number of requests waiting.
func (q *capacityQueue) length() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting.Len()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
