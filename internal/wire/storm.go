package wire

import (
	"strconv"

	"go.uber.org/yarpc/api/transport"
)

// One is the Storm of a call that reached one request and went no further
// with anything to report: a leaf's success, or an answer.
var One = Storm{Served: 1, Blind: 1}

// Figures is the storm telemetry of a subtree as it travels up the call
// graph: its Storm, or unknown (a hop below runs no errown, its header was
// lost or garbled, or a figure is out of bounds). The zero value is
// unknown. Storm is read only when Known: the unknown Figures errown
// returns hold the zero Storm.
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
// an incident: unknown, or a retry spent or suppressed somewhere below.
func (f Figures) Stormy() bool {
	return !f.Known || f.Storm.Retries > 0 || f.Storm.BlindRadius > 0
}

// ParseStorm reads a Storm header value. It returns unknown Figures for
// StormUnknownValue and for anything that is not exactly five plain
// decimals (no sign, no leading zero, no space) within the bounds, with at
// least one request served, fewer retries than requests served, no fewer
// blind than served, and a blind radius no smaller than the radius: a figure errown cannot trust is unknown,
// never a guess.
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

// ResponseStorm returns the storm Figures of one attempt's response of
// class class, read from its header under name header. A response
// without the header is One when it is a success or an answer: a callee's
// success or answer says nothing only when there was nothing to say. A
// failure without one (no errown below, a timeout) is unknown, since
// every errown callee sends its Storm on a failure; so is any error that
// came without a response at all (a call cancelled or cut short before
// the callee answered), whatever its class: what the callee served before
// is out of sight.
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

// Bounds of a Storm header value. A value outside them is unreadable:
// unknown, never clamped.
const (
	// MaxStormServed is the largest request count a Storm carries.
	MaxStormServed = 1 << 50
	// MaxStormRadius is the largest radius a Storm carries.
	MaxStormRadius = 255
)

// StormUnknownValue is the Storm header value of a subtree whose figures
// errown could not read: a hop below runs no errown, or its header was lost
// or garbled. Everything above it is unknown too.
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
