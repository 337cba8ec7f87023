package wire

import (
	"strconv"

	"go.uber.org/yarpc/api/transport"
)

// One is the Storm of a call that reached one request with nothing to
// report: a leaf's success, or an answer.
var One = Storm{Served: 1, Blind: 1}

// Figures is a subtree's storm telemetry as it travels up: its Storm, or
// unknown (no errown below, a lost or garbled header, an out-of-bounds
// figure). The zero value is unknown; Storm is read only when Known.
type Figures struct {
	Storm Storm
	Known bool
}

// KnownFigures returns the Figures that say s.
func KnownFigures(s Storm) Figures { return Figures{Storm: s, Known: true} }

// Trivial reports whether f is known and its Storm says nothing a caller
// could not assume (Storm.Trivial).
func (f Figures) Trivial() bool { return f.Known && f.Storm.Trivial() }

// Stormy reports whether f is worth a root's record and puts a caller in
// an incident: unknown, or a retry spent or suppressed below.
func (f Figures) Stormy() bool {
	return !f.Known || f.Storm.Retries > 0 || f.Storm.BlindRadius > 0
}

// ParseStorm reads a Storm header value: exactly five plain decimals (no
// sign, leading zero or space) within bounds, with served ≥ 1, retries <
// served ≤ blind and radius ≤ blindRadius. Anything else, and
// StormUnknownValue, is unknown, never a guess.
func ParseStorm(v string) Figures {
	var f [5]uint64
	for i := range f {
		n, rest, ok := parseDecimal(v, MaxStormServed)
		if !ok {
			return Figures{}
		}
		f[i] = n
		if i < len(f)-1 {
			if len(rest) == 0 || rest[0] != ',' {
				return Figures{}
			}
			rest = rest[1:]
		} else if len(rest) != 0 {
			return Figures{}
		}
		v = rest
	}
	s := Storm{Served: f[0], Blind: f[1], Retries: f[2]}
	if f[3] > MaxStormRadius || f[4] > MaxStormRadius {
		return Figures{}
	}
	s.Radius, s.BlindRadius = uint8(f[3]), uint8(f[4])
	if s.Served < 1 || s.Retries >= s.Served || s.Blind < s.Served || s.BlindRadius < s.Radius {
		return Figures{}
	}
	return KnownFigures(s)
}

// parseDecimal reads a plain decimal at the start of v, at most limit, and
// returns it with the rest of v.
func parseDecimal(v string, limit uint64) (uint64, string, bool) {
	i := 0
	var n uint64
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		if i == 1 && v[0] == '0' {
			return 0, "", false // a leading zero
		}
		n = n*10 + uint64(v[i]-'0')
		if n > limit {
			return 0, "", false
		}
		i++
	}
	if i == 0 {
		return 0, "", false
	}
	return n, v[i:], true
}

// ResponseStorm returns an attempt response's storm Figures from header.
// Without the header, a success or answer is One (nothing to say), but a
// failure is unknown, since every errown callee reports on failure. An
// error without a response (cancelled or cut short) is unknown whatever
// its class.
func ResponseStorm(res *transport.Response, class Class, header string) Figures {
	if res == nil {
		if class != ClassOK {
			return Figures{}
		}
		return KnownFigures(One)
	}
	if v, ok := res.Headers.Items()[header]; ok {
		return ParseStorm(v)
	}
	if class == ClassFailure {
		return Figures{}
	}
	return KnownFigures(One)
}

// Bounds of a Storm header value; a value outside is unknown, not clamped.
const (
	// MaxStormServed is the largest request count a Storm carries.
	MaxStormServed = 1 << 50
	// MaxStormRadius is the largest radius a Storm carries.
	MaxStormRadius = 255
)

// StormUnknownValue is the Storm header value of a subtree with unreadable
// figures (no errown below, a lost or garbled header); all above is
// unknown too.
const StormUnknownValue = "unknown"

// FormatStorm returns s as a header value: five decimals separated by
// commas, "served,blind,retries,radius,blindRadius".
func FormatStorm(s Storm) string {
	var buf [64]byte
	b := strconv.AppendUint(buf[:0], s.Served, 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, s.Blind, 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, s.Retries, 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(s.Radius), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(s.BlindRadius), 10)
	return string(b)
}
