package wire

import "strconv"

// MaxAttempt is the largest attempt number ParseAttempt accepts.
const MaxAttempt = 100

// FormatAttempt returns the attempt header value for attempt n (1-based).
func FormatAttempt(n int) string {
	return strconv.Itoa(n)
}

// ParseAttempt reads an attempt header value: a plain decimal from 1 to
// MaxAttempt, else 0 and false.
func ParseAttempt(v string) (int, bool) {
	if len(v) == 0 || len(v) > 3 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > MaxAttempt {
		return 0, false
	}
	return n, true
}
