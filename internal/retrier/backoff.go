package retrier

import "time"

// backoffCeiling returns the upper bound of the backoff before retry number
// retry (1 for the first retry, i.e. the second attempt):
// min(max, initial × 2^(retry-1)), without overflowing.
func backoffCeiling(retry int, initial, max time.Duration) time.Duration {
	c := initial
	for i := 1; i < retry && c < max; i++ {
		if c > max/2 {
			return max
		}
		c *= 2
	}
	return min(c, max)
}

// backoff returns the wait before retry number retry with full jitter: u
// (uniform in [0, 1)) scaled into [0, backoffCeiling). A zero ceiling means
// no wait. u outside [0, 1) is clamped into the range.
func backoff(retry int, initial, max time.Duration, u float64) time.Duration {
	c := backoffCeiling(retry, initial, max)
	if c <= 0 || !(u > 0) { // also catches NaN
		return 0
	}
	d := time.Duration(u * float64(c))
	if d >= c { // u >= 1, or rounding of a u just below 1
		d = c - 1
	}
	return d
}
