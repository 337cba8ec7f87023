package wire

import "strconv"

// FormatRoot returns the root header value of root key k: k in lower-case
// hexadecimal, without leading zeros.
func FormatRoot(k uint64) string { return strconv.FormatUint(k, 16) }

// ParseRoot reads a root header value: 1 to 16 hex digits (either case)
// of a non-zero key; else 0 and false (no key).
func ParseRoot(v string) (uint64, bool) {
	if len(v) == 0 || len(v) > 16 {
		return 0, false
	}
	var k uint64
	for i := 0; i < len(v); i++ {
		c := v[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		k = k<<4 | uint64(d)
	}
	if k == 0 {
		return 0, false
	}
	return k, true
}
