package ownership

import "fmt"

// EdgeKind says how a caller depends on a callee on one edge.
type EdgeKind uint8

const (
	// KindUnknown: not enough evidence, or in between the thresholds.
	KindUnknown EdgeKind = iota
	// KindFailClose: when the callee fails the caller fails (a hard
	// dependency).
	KindFailClose
	// KindFailOpen: the caller survives the callee's failures (a soft
	// dependency).
	KindFailOpen
)

// String returns "unknown", "fail-close" or "fail-open".
func (k EdgeKind) String() string {
	switch k {
	case KindFailClose:
		return "fail-close"
	case KindFailOpen:
		return "fail-open"
	default:
		return "unknown"
	}
}

// parseEdgeKind reads the names String returns.
func parseEdgeKind(s string) (EdgeKind, error) {
	switch s {
	case "fail-close":
		return KindFailClose, nil
	case "fail-open":
		return KindFailOpen, nil
	case "unknown":
		return KindUnknown, nil
	default:
		return KindUnknown, fmt.Errorf("unknown edge kind %q (want fail-close, fail-open or unknown)", s)
	}
}

// MarshalText implements encoding.TextMarshaler.
func (k EdgeKind) MarshalText() ([]byte, error) {
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *EdgeKind) UnmarshalText(b []byte) error {
	v, err := parseEdgeKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}
