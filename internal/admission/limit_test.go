package admission

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNext(t *testing.T) {
	b := bounds{min: 2, max: 100}
	ms := time.Millisecond
	tests := []struct {
		name      string
		e         estimate
		w         window
		b         bounds
		wantLimit float64
		wantFloor time.Duration
	}{
		{"first window sets the floor", estimate{limit: 20}, window{mean: 10 * ms, inflight: 20}, b, 20*0.8 + (20+4.47213595499958)*0.2, 10 * ms},
		{"at the floor grows by the square root", estimate{limit: 16, floor: 10 * ms}, window{mean: 10 * ms, inflight: 16}, b, 16*0.8 + (16+4)*0.2, 10 * ms},
		{"within tolerance grows", estimate{limit: 16, floor: 10 * ms}, window{mean: 15 * ms, inflight: 16}, b, 16*0.8 + (16+4)*0.2, 10 * ms},
		{"queueing shrinks", estimate{limit: 16, floor: 10 * ms}, window{mean: 20 * ms, inflight: 16}, b, 16*0.8 + (12+4)*0.2, 10 * ms},
		{"by half at most", estimate{limit: 16, floor: 10 * ms}, window{mean: 100 * ms, inflight: 16}, b, 16*0.8 + (8+4)*0.2, 10 * ms},
		{"a quicker window lowers the floor", estimate{limit: 16, floor: 10 * ms}, window{mean: 5 * ms, inflight: 16}, b, 16*0.8 + (16+4)*0.2, 5 * ms},
		{"an unused limit does not grow", estimate{limit: 16, floor: 10 * ms}, window{mean: 10 * ms, inflight: 7}, b, 16, 10 * ms},
		{"an unused limit still shrinks", estimate{limit: 16, floor: 10 * ms}, window{mean: 100 * ms, inflight: 1}, b, 16*0.8 + (8+4)*0.2, 10 * ms},
		{"the floor of the limit holds", estimate{limit: 10, floor: 10 * ms}, window{mean: 100 * ms, inflight: 10}, bounds{min: 9.8, max: 100}, 9.8, 10 * ms},
		{"the ceiling holds", estimate{limit: 100, floor: 10 * ms}, window{mean: 10 * ms, inflight: 100}, b, 100, 10 * ms},
		{"the probe resets the floor, the limit stays", estimate{limit: 16, floor: 10 * ms, windows: _probeEvery - 1}, window{mean: 30 * ms, inflight: 8}, b, 16, 30 * ms},
		{"no sample changes nothing", estimate{limit: 16, floor: 10 * ms, short: 3 * ms}, window{}, b, 16, 10 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := next(tt.e, tt.w, tt.b)
			assert.InDelta(t, tt.wantLimit, got.limit, 1e-9)
			assert.Equal(t, tt.wantFloor, got.floor)
			if tt.w.mean > 0 {
				assert.Equal(t, tt.w.mean, got.short)
				assert.Equal(t, tt.e.windows+1, got.windows)
			}
		})
	}
}

func TestEnforced(t *testing.T) {
	b := bounds{min: 2, max: 100}
	assert.Equal(t, 16.0, estimate{limit: 16, windows: 3}.enforced(b))
	assert.Equal(t, 8.0, estimate{limit: 16, windows: _probeEvery - 1}.enforced(b))
	assert.Equal(t, 2.0, estimate{limit: 3, windows: 2*_probeEvery - 1}.enforced(b))
}

// TestNextFollowsTheService runs the limit against a service of capacity
// 10 at once (past it, each request queues behind the others), whose
// service time rises tenfold and falls back: the limit stays within a
// small multiple of the capacity, never at the ceiling or far below the
// capacity, once a probe cycle or two has passed after each change.
func TestNextFollowsTheService(t *testing.T) {
	b := bounds{min: 1, max: 1000}
	e := estimate{limit: 20}
	for i := range 3000 {
		base := 10 * time.Millisecond
		if i >= 1000 && i < 2000 {
			base *= 10
		}
		l := e.enforced(b)
		mean := base
		if l > 10 {
			mean = time.Duration(float64(base) * l / 10)
		}
		e = next(e, window{mean: mean, inflight: int(l)}, b)
		if i%1000 > 4*_probeEvery {
			assert.True(t, e.limit >= 10 && e.limit <= 30, "window %d: limit %v", i, e.limit)
		}
	}
}

func TestExpectedWait(t *testing.T) {
	tests := []struct {
		ahead   int
		limit   float64
		service time.Duration
		want    time.Duration
	}{
		{0, 10, 100 * time.Millisecond, 0},
		{1, 10, 100 * time.Millisecond, 10 * time.Millisecond},
		{20, 10, 100 * time.Millisecond, 200 * time.Millisecond},
		{5, 0, 100 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, expectedWait(tt.ahead, tt.limit, tt.service), "%+v", tt)
	}
}

func TestFits(t *testing.T) {
	tests := []struct {
		remaining     time.Duration
		timed         bool
		wait, service time.Duration
		want          bool
	}{
		{0, false, time.Second, time.Second, true},
		{time.Second, true, 0, 0, true},
		{time.Second, true, 500 * time.Millisecond, 500 * time.Millisecond, true},
		{time.Second, true, 500 * time.Millisecond, 501 * time.Millisecond, false},
		{-time.Second, true, 0, time.Millisecond, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, fits(tt.remaining, tt.timed, tt.wait, tt.service), "%+v", tt)
	}
}
