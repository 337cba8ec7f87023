package stormsim

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/admission"
	"github.com/stretchr/testify/assert"
)

// A service that starts busy: admission, with the inbound defaults, in
// front of a service with room for all its requests (200 workers × 50ms)
// that gets 1000 a second (about 50 at once) from its start, each with a
// second to live. The limit starts at a guess of 8 with a queue of 32, so
// some of the first requests are shed; slow start (the limit growing by
// one an answer until the first cut) finds the 50 within a few round
// trips. With the limit growing one a limit's worth of answers at a time
// it shed 1090 of 2110 requests, 151 in the last 500ms.
func TestAdmissionColdStart(t *testing.T) {
	const (
		rate    = 1000.0
		total   = 2 * time.Second
		quarter = total / 4
	)
	d := inbound.DefaultConfig().Admission
	c := admission.New(admission.Config{MaxQueue: d.MaxQueue, MinLimit: d.MinLimit, MaxLimit: d.MaxLimit})
	q := newCapacityQueue("S", Capacity{Workers: 200, ServiceTime: 50 * time.Millisecond, Queue: 1000}, false, nil)
	admit := controlled(c)
	var sent, good atomic.Int64
	var shed [4]atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, at := range arrivals(rate, total, 1) {
		time.Sleep(time.Until(start.Add(at)))
		part := min(3, int(at/quarter))
		sent.Add(1)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			done, _ := admit(ctx)
			if done == nil {
				shed[part].Add(1)
				return
			}
			if _, err := q.serveTimed(ctx); err == nil {
				good.Add(1)
			}
			done()
		})
	}
	wg.Wait()
	var shedAll int64
	for i := range shed {
		shedAll += shed[i].Load()
	}
	t.Logf("%d sent, %d good, shed per 500ms %d %d %d %d; limit now %.1f", sent.Load(), good.Load(), shed[0].Load(), shed[1].Load(), shed[2].Load(), shed[3].Load(), c.Limit())
	assert.LessOrEqual(t, float64(shedAll), 0.1*float64(sent.Load()), "shed over the start")
	assert.Zero(t, shed[2].Load()+shed[3].Load(), "shed in the second second: the limit has found the requests at once")
}
