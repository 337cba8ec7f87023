package admission

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestNextLateAnswers: a window with answers past their callers'
// deadline cuts the limit at once, unsmoothed, whatever the gradient
// says (the old smoothed gradient took it from 16 to 15.2 at most).
func TestNextLateAnswers(t *testing.T) {
	b := bounds{min: 2, max: 100}
	ms := time.Millisecond
	tests := []struct {
		name      string
		e         estimate
		w         window
		wantLimit float64
	}{
		{"to where the latency fits the deadline", estimate{limit: 16, floor: 10 * ms}, window{mean: 80 * ms, inflight: 16, timed: 10, late: 2, remaining: 60 * ms}, 16 * 0.9 * 60 / 80},
		{"by half the share of late answers at least", estimate{limit: 16, floor: 10 * ms}, window{mean: 50 * ms, inflight: 16, timed: 10, late: 8, remaining: 60 * ms}, 16 * 0.6},
		{"by half at most", estimate{limit: 16, floor: 10 * ms}, window{mean: time.Second, inflight: 16, timed: 10, late: 10, remaining: 60 * ms}, 8},
		{"within the bounds", estimate{limit: 3, floor: 10 * ms}, window{mean: time.Second, inflight: 3, timed: 10, late: 10, remaining: 60 * ms}, 2},
		{"in the probe too", estimate{limit: 16, floor: 10 * ms, windows: _probeEvery - 1}, window{mean: time.Second, inflight: 8, timed: 4, late: 4, remaining: 60 * ms}, 8},
		{"never up", estimate{limit: 16, floor: 10 * ms}, window{mean: 10 * ms, inflight: 16, timed: 10, late: 1, remaining: time.Second}, 16 * 0.95},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := next(tt.e, tt.w, b)
			assert.InDelta(t, tt.wantLimit, got.limit, 1e-9)
			assert.Equal(t, tt.e.limit, got.before, "the limit it fell from")
		})
	}
}

// TestNextBackAfterAStall: after a fall for late answers, a window at
// the floor that used the limit brings it back halfway to where it fell
// from at once; a window with queueing delay forgets where it was.
func TestNextBackAfterAStall(t *testing.T) {
	b := bounds{min: 2, max: 100}
	ms := time.Millisecond
	e := next(estimate{limit: 64, floor: 10 * ms}, window{mean: time.Second, inflight: 64, timed: 8, late: 8, remaining: 60 * ms}, b)
	e = next(e, window{mean: time.Second, inflight: 32, timed: 8, late: 8, remaining: 60 * ms}, b)
	require.Equal(t, 16.0, e.limit)
	require.Equal(t, 64.0, e.before, "the limit before the first fall")

	back := next(e, window{mean: 10 * ms, inflight: 16}, b)
	assert.Equal(t, 40.0, back.limit, "halfway back to 64")
	back = next(back, window{mean: 10 * ms, inflight: 40}, b)
	assert.Equal(t, 52.0, back.limit)

	unused := next(e, window{mean: 10 * ms, inflight: 1}, b)
	assert.Equal(t, 16.0, unused.limit, "an unused limit is not proved")

	queued := next(e, window{mean: 30 * ms, inflight: 16}, b)
	assert.InDelta(t, 16*0.8+(8+4)*0.2, queued.limit, 1e-9)
	assert.Zero(t, queued.before, "forgotten")
	l := queued.limit
	assert.InDelta(t, l*0.8+(l+math.Sqrt(l))*0.2, next(queued, window{mean: 10 * ms, inflight: 16}, b).limit, 1e-9, "smoothed again")
}
