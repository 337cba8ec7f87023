package stormsim

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/testtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/yarpcerrors"
)

// newTestQueue returns a capacity queue recording on a clock of 100ms bins
// started now.
func newTestQueue(c Capacity, leave bool) (*capacityQueue, *nodeSeries) {
	clk := &clock{bin: 100 * time.Millisecond, bins: 100}
	clk.begin(time.Now())
	s := newNodeSeries(clk)
	return newCapacityQueue("D", c, leave, s), s
}

// serveAll serves one request per context on q, each started once the
// one before it is queued or in service, and returns their errors and
// the order they finished in.
func serveAll(q *capacityQueue, ctxs []context.Context) ([]error, []int) {
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	errs := make([]error, len(ctxs))
	for i, ctx := range ctxs {
		wg.Go(func() {
			errs[i] = q.serve(ctx)
			mu.Lock()
			defer mu.Unlock()
			order = append(order, i)
		})
		waitFor(func() bool { return q.length()+q.busy() > i || finished(&mu, &order, i) })
	}
	wg.Wait()
	return errs, order
}

func finished(mu *sync.Mutex, order *[]int, i int) bool {
	mu.Lock()
	defer mu.Unlock()
	for _, j := range *order {
		if j == i {
			return true
		}
	}
	return false
}

// busy returns the workers serving a request.
func (q *capacityQueue) busy() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.workers - q.free
}

func waitFor(cond func() bool) {
	for deadline := time.Now().Add(5 * time.Second); !cond() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
}

func TestCapacityQueueBoundedFIFO(t *testing.T) {
	// One worker, 20ms a request, two may wait: the fourth request finds
	// the queue full and is refused at once; the others are served in
	// the order they came.
	q, s := newTestQueue(Capacity{Workers: 1, ServiceTime: 20 * time.Millisecond, Queue: 2}, false)
	bg := context.Background()
	start := time.Now()
	errs, order := serveAll(q, []context.Context{bg, bg, bg, bg})
	took := time.Since(start)

	assert.NoError(t, errs[0])
	assert.NoError(t, errs[1])
	assert.NoError(t, errs[2])
	require.Error(t, errs[3])
	assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(errs[3]).Code())
	assert.Equal(t, []int{3, 0, 1, 2}, order, "refused at once, then first in first out")
	assert.GreaterOrEqual(t, took, 60*time.Millisecond, "one worker: three requests one after the other")
	assert.Equal(t, []int64{3, 1, 0, 0}, []int64{s.events[_worked].total.Load(), s.events[_rejected].total.Load(), s.events[_abandoned].total.Load(), s.events[_left].total.Load()})
	assert.Equal(t, int64(2), maxOf(s.queue.values()), "the most waiting at once")
	assert.Equal(t, 0, q.length())
	assert.Equal(t, 1, q.free, "the worker is idle again")
}

func TestCapacityQueueAbandoned(t *testing.T) {
	// One worker busy for 60ms; the second request's caller gives up
	// after 10ms; the third waits behind it: served at 60ms when the
	// second left, at 120ms when the worker served the second anyway.
	tests := []struct {
		name          string
		leave         bool
		wantCode      yarpcerrors.Code // of the second request; CodeOK: served
		wantAbandoned int64            // served after its caller had gone
		wantLeft      int64
		wantThirdMin  time.Duration // when the third finishes, at least
		wantThirdMax  time.Duration // and at most
	}{
		{name: "serve", wantCode: yarpcerrors.CodeOK, wantAbandoned: 1, wantThirdMin: 180 * time.Millisecond, wantThirdMax: time.Hour},
		{name: "leave", leave: true, wantCode: yarpcerrors.CodeDeadlineExceeded, wantLeft: 1, wantThirdMin: 120 * time.Millisecond, wantThirdMax: 175 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, s := newTestQueue(Capacity{Workers: 1, ServiceTime: 60 * time.Millisecond, Queue: 5}, tt.leave)
			gone, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			start := time.Now()
			var third time.Duration
			var wg sync.WaitGroup
			errs := make([]error, 3)
			wg.Go(func() { errs[0] = q.serve(context.Background()) })
			waitFor(func() bool { return q.busy() == 1 })
			wg.Go(func() { errs[1] = q.serve(gone) })
			waitFor(func() bool { return q.length() == 1 })
			wg.Go(func() {
				errs[2] = q.serve(context.Background())
				third = time.Since(start)
			})
			wg.Wait()

			assert.NoError(t, errs[0])
			assert.Equal(t, tt.wantCode, yarpcerrors.FromError(errs[1]).Code(), "%v", errs[1])
			assert.NoError(t, errs[2])
			assert.Equal(t, []int64{tt.wantAbandoned, tt.wantLeft}, []int64{s.events[_abandoned].total.Load(), s.events[_left].total.Load()})
			assert.GreaterOrEqual(t, third, tt.wantThirdMin, "the third waits for what is served before it")
			assert.LessOrEqual(t, third, testtime.Scale(tt.wantThirdMax))
		})
	}
}

func TestCapacityQueueSlowAndDown(t *testing.T) {
	q, s := newTestQueue(Capacity{Workers: 1, ServiceTime: 10 * time.Millisecond, Queue: 5}, false)
	q.setFactor(4)
	start := time.Now()
	require.NoError(t, q.serve(context.Background()))
	assert.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond, "a slow trigger multiplies the service time")
	q.setFactor(1)

	// Down: the queued requests are lost, new ones refused, the one
	// being served finishes.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() { errs[0] = q.serve(context.Background()) })
	waitFor(func() bool { return q.busy() == 1 })
	wg.Go(func() { errs[1] = q.serve(context.Background()) })
	waitFor(func() bool { return q.length() == 1 })
	q.setDown(true)
	errs[2] = q.serve(context.Background())
	wg.Wait()
	assert.NoError(t, errs[0], "served before the crash")
	assert.Equal(t, yarpcerrors.CodeUnavailable, yarpcerrors.FromError(errs[1]).Code(), "lost from the queue")
	assert.Equal(t, yarpcerrors.CodeUnavailable, yarpcerrors.FromError(errs[2]).Code(), "refused while down")
	assert.Equal(t, 0, q.length())

	q.setDown(false)
	assert.NoError(t, q.serve(context.Background()), "up again")
	assert.Equal(t, int64(3), s.events[_worked].total.Load())
	assert.Equal(t, 1, q.free)
}

func TestCapacityQueueWorkersAndClock(t *testing.T) {
	// Two workers, 10ms a request, 20 requests at once: about 100ms, the
	// workers' clocks keeping the capacity whatever the timers' delays.
	q, s := newTestQueue(Capacity{Workers: 2, ServiceTime: 10 * time.Millisecond, Queue: 100}, false)
	start := time.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { assert.NoError(t, q.serve(context.Background())) })
	}
	wg.Wait()
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 90*time.Millisecond, "two at a time")
	assert.Less(t, took, testtime.Scale(400*time.Millisecond))
	assert.Equal(t, int64(20), s.events[_worked].total.Load())
	assert.LessOrEqual(t, maxOf(s.queue.values()), int64(18))
}

func maxOf(v []int64) int64 {
	var m int64
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
