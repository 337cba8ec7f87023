package retrier

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoffCeiling(t *testing.T) {
	type give struct {
		retry        int
		initial, max time.Duration
	}
	tests := []struct {
		give give
		want time.Duration
	}{
		{give{1, 10 * time.Millisecond, time.Second}, 10 * time.Millisecond},
		{give{2, 10 * time.Millisecond, time.Second}, 20 * time.Millisecond},
		{give{3, 10 * time.Millisecond, time.Second}, 40 * time.Millisecond},
		{give{7, 10 * time.Millisecond, time.Second}, 640 * time.Millisecond},
		{give{8, 10 * time.Millisecond, time.Second}, time.Second},
		{give{9, 10 * time.Millisecond, time.Second}, time.Second},
		{give{1, time.Second, time.Second}, time.Second},
		{give{5, time.Second, time.Second}, time.Second},
		{give{1, 0, time.Second}, 0},
		{give{9, 0, time.Second}, 0},
		{give{3, 0, 0}, 0},
		{give{0, 10 * time.Millisecond, time.Second}, 10 * time.Millisecond},
		// No overflow near the top of time.Duration.
		{give{2, 1 << 62, math.MaxInt64}, math.MaxInt64},
		{give{100, 1, math.MaxInt64}, math.MaxInt64},
		{give{63, 1, math.MaxInt64}, 1 << 62},
	}
	for _, tt := range tests {
		g := tt.give
		t.Run(fmt.Sprintf("retry_%d_initial_%v_max_%v", g.retry, g.initial, g.max), func(t *testing.T) {
			assert.Equal(t, tt.want, backoffCeiling(g.retry, g.initial, g.max), "backoffCeiling(%d, %v, %v)", g.retry, g.initial, g.max)
		})
	}
}

func TestBackoff(t *testing.T) {
	const (
		initial = 100 * time.Millisecond
		max     = time.Second
	)
	justBelowOne := math.Nextafter(1, 0)
	tests := []struct {
		giveRetry int
		giveU     float64
		want      time.Duration
	}{
		{1, 0, 0},
		{1, 0.5, 50 * time.Millisecond},
		{1, 0.25, 25 * time.Millisecond},
		{2, 0.5, 100 * time.Millisecond},
		{3, 0.5, 200 * time.Millisecond},
		{4, 0.5, 400 * time.Millisecond},
		{5, 0.5, 500 * time.Millisecond},
		{9, 0.5, 500 * time.Millisecond},
		{1, justBelowOne, 100*time.Millisecond - 1},
		{9, justBelowOne, time.Second - 1},
		// Out of range sources are clamped.
		{1, 1, 100*time.Millisecond - 1},
		{1, 7, 100*time.Millisecond - 1},
		{1, -0.5, 0},
		{1, math.NaN(), 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("retry_%d_u_%v", tt.giveRetry, tt.giveU), func(t *testing.T) {
			assert.Equal(t, tt.want, backoff(tt.giveRetry, initial, max, tt.giveU), "backoff(%d, u=%v)", tt.giveRetry, tt.giveU)
		})
	}
}

func TestBackoffBounds(t *testing.T) {
	// Every retry a policy can make, a spread of jitter values: the wait is
	// in [0, ceiling), also for a ceiling too large for float64 to hold.
	maxes := []time.Duration{time.Millisecond, time.Second, time.Hour, math.MaxInt64}
	us := []float64{0, 1e-9, 0.1, 0.5, 0.9, 0.999999, math.Nextafter(1, 0)}
	for _, max := range maxes {
		for n := 1; n < 10; n++ {
			for _, u := range us {
				c := backoffCeiling(n, max/7, max)
				got := backoff(n, max/7, max, u)
				assert.GreaterOrEqual(t, got, time.Duration(0), "backoff(%d, %v, %v, %v), want in [0, %v)", n, max/7, max, u, c)
				assert.Less(t, got, c, "backoff(%d, %v, %v, %v), want in [0, %v)", n, max/7, max, u, c)
			}
		}
	}
}
